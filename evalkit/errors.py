"""The evalkit exception tree.

Every error evalkit raises on purpose is an [`EvalkitError`][evalkit.errors.EvalkitError]; where a
built-in fits, the class also inherits it, so ``except ValueError`` keeps working for callers who
expect one::

    EvalkitError
    ├── ConfigError (ValueError)        a scorer, judge or run is defined wrongly
    │   └── ExperimentFileError         an experiment file is wrong: FILE:LINE: key: problem
    ├── ScorerRunError                  one scorer run failed at one step
    │   ├── (cause) InvalidScoreError (ValueError)   generate_score gave no finite number
    │   └── (cause) ScorerInputError (ValueError)    a row lacks what a scorer needs
    ├── JudgeError                      a judge call failed (transport, format, refusal)
    ├── PreflightError                  a judge or target cannot be used (checked before a run)
    ├── DatasetError (ValueError)       a dataset cannot be read or is malformed
    ├── TargetError                     the target failed to produce an output for an item
    └── StoreError                      the DuckDB score store cannot be opened or written
        └── BaselineError               the named baseline cannot be compared with the run

Each class builds its message from structured fields, and ``to_dict()`` gives a JSON-ready
summary (``name``, ``message`` and the fields) that never includes bulky payloads.

Every error pickles (worker processes send them back): it is rebuilt from its message and
attributes without running ``__init__`` again, whose parameters differ from class to class.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

StepName = Literal["preprocess", "analyze", "generate_score", "generate_reason"]
"""The four steps a scorer may have, named as in its results and the store."""


def _restore(cls: type[EvalkitError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Unpickle an error: ``args`` as built by its ``__init__``, then its attributes."""
    error = cls.__new__(cls)
    BaseException.__init__(error, *args)
    error.__dict__.update(state)
    return error


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


class EvalkitError(Exception):
    """Base class of every error evalkit raises on purpose."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary of the error: its class name and message."""
        return {"name": type(self).__name__, "message": str(self)}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, self._pickled_state()))

    def _pickled_state(self) -> dict[str, Any]:
        return dict(self.__dict__)


class ConfigError(EvalkitError, ValueError):
    """Something was defined wrongly: a scorer, a step, a judge or a run option."""


@dataclass(frozen=True, slots=True)
class ExperimentFileIssue:
    """One problem in an experiment file, located by line and key.

    Attributes:
        file: The file as the user named it.
        line: The 1-based line of the offending key (or of its table when the key is missing);
            None when no line applies, such as a missing top-level table or an unreadable file.
        key: The dotted key path, with array indices (``scorers[1].threshold.min``); None for
            problems of the whole file, such as a TOML syntax error.
        problem: What is wrong, in words.
    """

    file: str
    line: int | None
    key: str | None
    problem: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.problem}" if self.key else f"{where}: {self.problem}"


class ExperimentFileError(ConfigError):
    """An experiment file cannot be read, is not TOML, or breaks the schema.

    The message has one line per problem, each ``FILE:LINE: key: problem``. The attributes
    describe the first problem (the one nearest the top of the file); ``issues`` holds them all.

    Attributes:
        file: The file as the user named it.
        line: The line of the first problem, or None.
        key: The dotted key of the first problem, or None.
        problem: The first problem, in words.
        issues: Every problem, the first included, in file order.
    """

    def __init__(
        self,
        file: str,
        line: int | None,
        key: str | None,
        problem: str,
        *,
        more: Sequence[ExperimentFileIssue] = (),
    ) -> None:
        self.file = file
        self.line = line
        self.key = key
        self.problem = problem
        self.issues = (ExperimentFileIssue(file, line, key, problem), *more)
        super().__init__("\n".join(str(issue) for issue in self.issues))

    @classmethod
    def from_issues(cls, issues: Sequence[ExperimentFileIssue]) -> ExperimentFileError:
        """One error carrying several issues (at least one), the first as its attributes."""
        first, *more = issues
        return cls(first.file, first.line, first.key, first.problem, more=more)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary with the first problem's location and every issue."""
        return {
            **super().to_dict(),
            "file": self.file,
            "line": self.line,
            "key": self.key,
            "problem": self.problem,
            "issues": [
                {"file": i.file, "line": i.line, "key": i.key, "problem": i.problem}
                for i in self.issues
            ],
        }


class InvalidScoreError(EvalkitError, ValueError):
    """``generate_score`` produced something that is not a finite real number."""

    def __init__(self, value: object) -> None:
        self.value = value
        super().__init__(
            f"generate_score returned {value!r} ({type(value).__name__}), not a finite number"
        )

    def _pickled_state(self) -> dict[str, Any]:
        # The value is whatever the step returned; the message already shows it.
        state = super()._pickled_state()
        if not _picklable(self.value):
            state["value"] = None
        return state


class ScorerInputError(EvalkitError, ValueError):
    """A scorer cannot score this row: an input it needs is missing or unusable.

    Raised inside a step (so the run fails as a [`ScorerRunError`][evalkit.errors.ScorerRunError]
    with this as its cause), e.g. when ``exact_match`` meets a row without a ground truth. Scoring
    such a row as 0 would hide a data problem behind a bad score.

    Attributes:
        scorer: The scorer that refused the row (its prebuilt name or id).
        field: The input concerned (``"ground_truth"``, ``"output"``, ``"input"``).
        problem: What is wrong with it.
    """

    def __init__(self, scorer: str, field: str, problem: str) -> None:
        self.scorer = scorer
        self.field = field
        self.problem = problem
        super().__init__(f"{scorer}: {field}: {problem}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary naming the scorer and the input."""
        return {**super().to_dict(), "scorer": self.scorer, "field": self.field}


class ScorerSnapshot(Protocol):
    """What the finished steps of a failed scorer run produced: a
    [`ScorerRunResult`][evalkit.ScorerRunResult], seen through the fields it has.

    Declared here by its fields because this module is the bottom layer that every package
    imports: it imports none of them (docs/pages/design/import-layers.md).
    """

    @property
    def run_id(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def input(self) -> Any: ...
    @property
    def output(self) -> Any: ...
    @property
    def ground_truth(self) -> Any: ...
    @property
    def request_context(self) -> Any: ...
    @property
    def preprocess_step_result(self) -> Any: ...
    @property
    def analyze_step_result(self) -> Any: ...
    @property
    def preprocess_prompt(self) -> str | None: ...
    @property
    def analyze_prompt(self) -> str | None: ...
    @property
    def generate_score_prompt(self) -> str | None: ...
    @property
    def generate_reason_prompt(self) -> str | None: ...
    @property
    def judge(self) -> Mapping[str, Any]: ...
    def to_dict(self) -> dict[str, Any]: ...


class ScorerRunError(EvalkitError):
    """A scorer run failed at one step.

    Attributes:
        scorer_id: The id of the scorer that failed.
        scorer_name: Its display name.
        failed_step: The step that failed (``"preprocess"``, ``"analyze"``,
            ``"generate_score"`` or ``"generate_reason"``).
        completed_steps: The steps that finished before it, in execution order.
        result: A snapshot of what the finished steps produced and of the judge executions of
            every attempted prompt step (the failed one included); ``score`` is set when
            generate_score completed. None when there is nothing to show.

    The original exception is chained as ``__cause__``. ``str()`` and ``to_dict()`` omit
    ``result``; read it explicitly. A pickled error keeps ``result`` when it pickles (it holds
    the step results, which may be anything), else its copy has None.
    """

    def __init__(
        self,
        *,
        scorer_id: str,
        scorer_name: str,
        failed_step: StepName,
        completed_steps: tuple[StepName, ...],
        cause: BaseException,
        result: ScorerSnapshot | None,
    ) -> None:
        self.scorer_id = scorer_id
        self.scorer_name = scorer_name
        self.failed_step: StepName = failed_step
        self.completed_steps: tuple[StepName, ...] = completed_steps
        self.result = result
        self.cause_name = type(cause).__name__
        self.cause_message = str(cause) or self.cause_name
        #: The cause's machine-readable code (a JudgeError's ``code``), or None.
        self.cause_code: str | None = cause.code if isinstance(cause, JudgeError) else None
        super().__init__(f"Scorer {scorer_name!r} failed at {failed_step}: {self.cause_message}")

    def _pickled_state(self) -> dict[str, Any]:
        state = super()._pickled_state()
        if self.result is not None and not _picklable(self.result):
            state["result"] = None
        return state

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary without ``result``; the cause's ``code`` when it has one."""
        cause: dict[str, Any] = {"name": self.cause_name, "message": self.cause_message}
        if self.cause_code is not None:
            cause["code"] = self.cause_code
        return {
            **super().to_dict(),
            "scorer_id": self.scorer_id,
            "failed_step": self.failed_step,
            "completed_steps": list(self.completed_steps),
            "cause": cause,
        }


class JudgeError(EvalkitError):
    """A judge call failed: transport error, unusable reply, or a refusal.

    Attributes:
        code: A short machine-readable code (HTTP status, provider error code, or one of
            ``"format"``, ``"refusal"``, ``"timeout"``, ``"connection"``, ``"bad_response"``,
            and ``"auth"``/``"quota"`` for a call not sent because an earlier authentication
            or quota error stopped the judge, ``"unreachable"`` for one not sent because the
            endpoint's first connections all failed, ``"empty_extraction"`` for a prebuilt
            scorer's extraction that listed nothing in a non-empty text twice), or None.
    """

    def __init__(self, message: str, *, code: str | None = None) -> None:
        self.code = code
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary with the error code."""
        return {**super().to_dict(), "code": self.code}


PreflightKind = Literal["missing_key", "refused", "unreachable"]


@dataclass(frozen=True, slots=True)
class PreflightIssue:
    """One judge or target endpoint that failed the check made before a run.

    Attributes:
        role: ``"judge"`` or ``"target"``.
        model: The model the endpoint was to be asked.
        base_url: The endpoint (credentials in it masked); None for OpenAI's default when no
            client was made (a missing key).
        api_key_env: The environment variable the key is read from; None for a prepared
            client, which carries its own key.
        kind: ``"missing_key"`` (the variable is not set or empty), ``"refused"`` (HTTP 401 or
            403) or ``"unreachable"`` (no answer at all: connection refused, DNS, timeout).
        reason: What is wrong, in words; never the key itself.
    """

    role: str
    model: str
    base_url: str | None
    api_key_env: str | None
    kind: PreflightKind
    reason: str

    def __str__(self) -> str:
        where = "" if self.kind == "missing_key" or not self.base_url else f" at {self.base_url}"
        return f"{self.role} {self.model!r}{where}: {self.reason}"


class PreflightError(EvalkitError):
    """A judge or the target cannot be used: found before the first item, so nothing ran.

    The message has one line per failing endpoint. The attributes describe the first one;
    ``issues`` holds them all.

    Attributes:
        role: ``"judge"`` or ``"target"``.
        model: The model id.
        base_url: The endpoint, credentials masked (None: OpenAI's default).
        api_key_env: The API key's environment variable (None with a prepared client).
        kind: ``"missing_key"``, ``"refused"`` or ``"unreachable"``.
        reason: What is wrong, in words.
        issues: Every failing endpoint, the first included.
    """

    def __init__(self, issues: Sequence[PreflightIssue]) -> None:
        if not issues:
            raise ValueError("PreflightError needs at least one issue")
        first = issues[0]
        self.issues = tuple(issues)
        self.role = first.role
        self.model = first.model
        self.base_url = first.base_url
        self.api_key_env = first.api_key_env
        self.kind: PreflightKind = first.kind
        self.reason = first.reason
        super().__init__("\n".join(str(issue) for issue in self.issues))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary with the first issue's fields and every issue."""
        return {
            **super().to_dict(),
            "role": self.role,
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "kind": self.kind,
            "reason": self.reason,
            "issues": [
                {
                    "role": i.role,
                    "model": i.model,
                    "base_url": i.base_url,
                    "api_key_env": i.api_key_env,
                    "kind": i.kind,
                    "reason": i.reason,
                }
                for i in self.issues
            ],
        }


class DatasetError(EvalkitError, ValueError):
    """A dataset cannot be read, or its content breaks the dataset rules.

    Attributes:
        source: The file, folder or kind of object the dataset came from.
        column: The column concerned, when there is one.
        line: The 1-based line of a text file (CSV, JSON Lines) the problem is on, if known.
        row: The 1-based record of a JSON array (or row of another source), if known.
    """

    def __init__(self, source: str, problem: str, *, column: str | None = None,
                 line: int | None = None, row: int | None = None) -> None:  # fmt: skip
        self.source, self.column, self.line, self.row = source, column, line, row
        self.problem = problem
        where = "".join((source, f", line {line}" if line is not None else "",
                         f", record {row}" if row is not None else "",
                         f", column {column!r}" if column else ""))  # fmt: skip
        super().__init__(f"{where}: {problem}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary naming the source, line or record, and column."""
        where = {"source": self.source, "column": self.column, "line": self.line, "row": self.row}
        return {**super().to_dict(), **where}


class TargetError(EvalkitError):
    """The target failed to produce an output for one item."""


class StoreError(EvalkitError):
    """The DuckDB score store cannot be opened, read or written."""


class BaselineError(StoreError):
    """The baseline a run is to be judged against cannot be compared with it.

    Attributes:
        ref: The baseline as the user named it (``"latest"``, a run name, an id).
        reason: Why it cannot serve: missing, unfinished, partial, or not pairing.
    """

    def __init__(self, ref: str, reason: str) -> None:
        self.ref = ref
        self.reason = reason
        super().__init__(f"baseline {ref!r} cannot be compared: {reason}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary with the reference and the reason."""
        return {**super().to_dict(), "ref": self.ref, "reason": self.reason}
