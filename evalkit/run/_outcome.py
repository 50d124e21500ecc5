"""Per-item, per-scorer results of a run, held in memory as plain values."""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any, Literal, cast

from evalkit.dataset import Item
from evalkit.errors import EvalkitError, ScorerRunError
from evalkit.scorer import ScorerRunResult, StepName

OutcomeStatus = Literal["success", "failed"]
ItemStatus = Literal["success", "failed"]
OutputSource = Literal["dataset", "target"]

_TRACEBACK_FRAMES = 4


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """An error recorded as data: its class, message and a short traceback.

    For a [`ScorerRunError`][evalkit.errors.ScorerRunError] the ``cause`` is the exception a step
    raised, and the traceback is the cause's (the innermost frames, where the step failed).

    Attributes:
        name: The exception's class name.
        message: Its message.
        cause: The class name of the underlying exception, if any.
        traceback: The last few frames, formatted, or None.
        data: JSON-ready fields of an evalkit error (``to_dict()``), else empty.
    """

    name: str
    message: str
    cause: str | None = None
    traceback: str | None = None
    data: dict[str, Any] | None = None

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorInfo:
        """Record ``exc`` (and its cause) as data; nothing keeps a reference to the frames."""
        cause = exc.__cause__
        shown = cause if cause is not None else exc
        frames = traceback.format_exception(
            type(shown), shown, shown.__traceback__, limit=-_TRACEBACK_FRAMES, chain=False
        )
        return cls(
            name=type(exc).__name__,
            message=str(exc) or type(exc).__name__,
            cause=type(cause).__name__ if cause is not None else None,
            traceback="".join(frames).rstrip(),
            data=exc.to_dict() if isinstance(exc, EvalkitError) else None,
        )

    @property
    def code(self) -> str | None:
        """The error's machine-readable code: its scorer step's cause's (a JudgeError's
        ``code``, e.g. ``"empty_extraction"`` or ``"timeout"``), or its own; None without."""
        data = self.data or {}
        cause = data.get("cause")
        code = cause.get("code") if isinstance(cause, dict) else None
        if code is None:
            code = data.get("code")
        return code if isinstance(code, str) else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: name, message, cause, traceback and the error's own fields."""
        return {
            **(self.data or {}),
            "name": self.name,
            "message": self.message,
            "cause": self.cause,
            "traceback": self.traceback,
        }


@dataclass(frozen=True, slots=True)
class Repeat:
    """One more execution of a repeated LLM-judged pair (``run_evals(repeats=K)``), made with
    the judge cache off; the pair's own outcome is execution 0.

    Attributes:
        index: The execution's number, 1 to K - 1.
        status: ``"success"`` or ``"failed"``.
        score: Its score; None when it failed (a recovered score is never used).
        reason: Its reason, if any.
        error: Why it failed, or None.
        result: Its [`ScorerRunResult`][evalkit.ScorerRunResult] (its judge executions), or None.
        duration_ms: Wall time of the execution.
    """

    index: int
    status: OutcomeStatus
    score: float | None
    reason: str | None
    error: ErrorInfo | None
    result: ScorerRunResult | None
    duration_ms: float

    @classmethod
    def of(cls, index: int, outcome: ScorerOutcome) -> Repeat:
        """The execution ``index`` that ``outcome`` records."""
        ok = outcome.status == "success"
        return cls(index, outcome.status, outcome.score if ok else None, outcome.reason,
                   outcome.error, outcome.result, outcome.duration_ms)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScorerOutcome:
    """What one scorer made of one item.

    A failed scorer keeps what it recovered: ``score`` and ``reason`` come from the failure's
    snapshot (``ScorerRunError.result``) when the steps that produce them completed, but the
    status stays ``"failed"`` and the store never writes that score to ``scores``.

    Attributes:
        item_id: The item scored.
        scorer_id: The scorer's id.
        status: ``"success"`` or ``"failed"``.
        score: The score; for a failure, the recovered score or None.
        reason: The reason, if generate_reason ran (or was recovered).
        error: Why the scorer failed, or None.
        failed_step: The step that failed, or None.
        completed_steps: The steps that finished, in execution order.
        result: The full [`ScorerRunResult`][evalkit.ScorerRunResult] (for a failure, the snapshot;
            None when there was nothing to show).
        duration_ms: Wall time of the scorer run.
        repeats: With ``run_evals(repeats=K)`` and an LLM-judged scorer, its K - 1 further
            executions of the pair (empty otherwise).
    """

    item_id: str
    scorer_id: str
    status: OutcomeStatus
    score: float | None
    reason: str | None
    error: ErrorInfo | None
    failed_step: StepName | None
    completed_steps: tuple[StepName, ...]
    result: ScorerRunResult | None
    duration_ms: float
    repeats: tuple[Repeat, ...] = ()

    @classmethod
    def success(
        cls,
        item_id: str,
        scorer_id: str,
        result: ScorerRunResult,
        steps: tuple[StepName, ...],
        duration_ms: float,
    ) -> ScorerOutcome:
        """The outcome of a scorer run that finished every step."""
        return cls(
            item_id, scorer_id, "success", result.score, result.reason, None, None, steps,
            result, duration_ms,
        )  # fmt: skip

    @classmethod
    def failure(
        cls, item_id: str, scorer_id: str, error: BaseException, duration_ms: float
    ) -> ScorerOutcome:
        """The outcome of a failed run, keeping the snapshot's recovered score and reason."""
        if isinstance(error, ScorerRunError):
            # A Scorer's snapshot is a ScorerRunResult; errors.py types it by its fields only.
            snapshot = cast("ScorerRunResult | None", error.result)
            return cls(
                item_id,
                scorer_id,
                "failed",
                snapshot.score if snapshot is not None else None,
                snapshot.reason if snapshot is not None else None,
                ErrorInfo.from_exception(error),
                error.failed_step,
                error.completed_steps,
                snapshot,
                duration_ms,
            )
        return cls(
            item_id, scorer_id, "failed", None, None, ErrorInfo.from_exception(error), None, (),
            None, duration_ms,
        )  # fmt: skip

    @property
    def succeeded(self) -> bool:
        """Whether the scorer finished every step."""
        return self.status == "success"

    @property
    def reason_truncated(self) -> bool:
        """Whether `reason` is a judge reply cut at its token limit (the generate_reason
        step's execution was flagged ``truncated``)."""
        record = self.result.judge.get("generate_reason") if self.result is not None else None
        return record is not None and any(e.truncated for e in record.executions)


@dataclass(frozen=True, slots=True)
class ItemResult:
    """Everything a run produced for one item.

    Attributes:
        item: The dataset row.
        run_id: ``<experiment id>-<row index>``: the id of this item's scorer runs
            (``ScorerRunResult.run_id``) and of its rows in every table of the store.
        status: ``"success"`` when the output was obtained and every scorer succeeded.
        output: The output scored (None when the target failed).
        source: Where the output came from: ``"dataset"`` or ``"target"``.
        error: Why the target failed, or None.
        outcomes: One [`ScorerOutcome`][evalkit.ScorerOutcome] per scorer, in scorer order; empty
            when the target failed (no scorer ran).
        target_ms: Time spent producing the output.
        duration_ms: Time for the whole item.
        completed_at_us: When the item finished, in microseconds since the epoch (UTC).
    """

    item: Item
    run_id: str
    status: ItemStatus
    output: Any
    source: OutputSource
    error: ErrorInfo | None
    outcomes: tuple[ScorerOutcome, ...]
    target_ms: float
    duration_ms: float
    completed_at_us: int

    @property
    def item_id(self) -> str:
        """The item's id."""
        return self.item.id

    def outcome(self, scorer_id: str) -> ScorerOutcome | None:
        """This item's outcome for ``scorer_id``, or None when no scorer ran."""
        for outcome in self.outcomes:
            if outcome.scorer_id == scorer_id:
                return outcome
        return None
