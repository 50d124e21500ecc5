"""What the LLM-judged prebuilt scorers share: judge steps, row lookups, verdicts, rounding.

Every LLM-judged prebuilt scorer follows the same rules (see docs/pages/reference/scorers.md,
"LLM-judged scorers"):

- **Its own instructions.** Each judge step is a [`PromptStep`][evalkit.PromptStep] whose step judge
  sets only ``instructions``, so the scorer's judge (the experiment's default judge or
  ``judge=``) gives the model, endpoint and limits while the system message stays the scorer's
  own, versioned with its prompts (docs/pages/design/system-message-belongs-to-scorer.md).
- **Nothing to judge, no call.** A step with nothing to send (an empty output, no statements
  extracted) is answered in code with what the judge would be told to return, so empty rows
  cost no judge call and score deterministically; such a step has no ``judge`` entry
  (nothing-to-judge-no-call.md).
- **Nothing found in a non-empty text is asked again.** An extraction step whose reply lists
  nothing although its text is not empty is asked once more with a note; a second empty list
  fails the row (``JudgeError`` code ``empty_extraction``) unless the scorer's
  ``empty_extraction="score"`` keeps it (``_extraction.py``, empty-extraction-asked-again.md).
- **Scores in code.** generate_score is a function of the verdicts, multiplied by ``scale``,
  then rounded half-up to two decimals (as Mastra's ``roundToTwoDecimals``); see
  judge-judges-code-counts.md and rounding-half-up.md.
- **Text.** Values are read as text like the code scorers read them: strings as is, ``None``
  as empty, anything else as canonical JSON.
- **Context from the row.** Scorers judged against a context take it from a parameter, else
  from a key of the row's request context, else from that key of the input when the input is
  a mapping; a row with none fails with [`ScorerInputError`][evalkit.errors.ScorerInputError].
- **One answer per item sent.** A step that sends numbered items (claims, statements,
  context pieces) and asks for one verdict each declares how many it sent (``JudgeStep(
  items=...)``) and a reply schema derived from `OnePerItem`; a reply with more or
  fewer entries fails the schema, which is a format failure: the JSON-mode fallback asks
  once more, then the step fails. Scores divide by the items sent, so a judge that drops
  verdicts cannot inflate them (miscounted-verdicts-fail.md).

The design pages named here are under docs/pages/design/.
"""

from __future__ import annotations

import contextlib
import json
import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, Strict

from evalkit._ceilings import SCALE, check_allowed
from evalkit._json import to_jsonable
from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, is_missing, param_error
from evalkit.scorers._extraction import EmptyExtraction as EmptyExtraction
from evalkit.scorers._extraction import Extraction as Extraction
from evalkit.scorers._extraction import Listed as Listed
from evalkit.scorers._judge_step import JudgeStep as JudgeStep
from evalkit.scorers._judge_step import OnePerItem as OnePerItem


def finish(
    scorer: Scorer,
    score: Callable[..., float],
    reason: JudgeStep | Callable[..., str],
    *,
    explain: bool,
) -> Scorer:
    """Add the generate_score function and, when ``explain``, the generate_reason step."""
    scorer = scorer.generate_score(score)
    return scorer.generate_reason(reason) if explain else scorer


def round_score(value: float) -> float:
    """``value`` rounded half-up to two decimals: 0.665 → 0.67, 3.3 / 5 → 0.66.

    Float noise is dropped first (nine decimals), so a weighted sum that is 0.795 on paper but
    0.79499999… in binary rounds to 0.8, as by hand (and as Mastra's ``roundToTwoDecimals``).
    """
    exact = Decimal(f"{float(value):.9f}")
    return float(exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def check_scale(scorer: str, scale: float) -> None:
    """Refuse a ``scale`` outside `evalkit._ceilings.SCALE` (above 0, at most 1e12)."""
    check_allowed(f"scorer {scorer!r}, parameter 'scale'", scale, SCALE)


def check_weight(scorer: str, param: str, value: float, *, upper: float = 1.0) -> None:
    """Refuse a weight or penalty outside ``0..upper``."""
    if not (math.isfinite(value) and 0.0 <= value <= upper):
        raise param_error(scorer, param, f"must be between 0 and {upper:g}, got {value!r}")


def is_blank(text: str) -> bool:
    """True for text with nothing but whitespace."""
    return not text.strip()


def as_mapping(value: Any) -> Mapping[str, Any] | None:
    """``value`` as a mapping: a mapping, JSON object text, or a pydantic model; else None."""
    if isinstance(value, str):
        if not value.lstrip().startswith("{"):
            return None
        try:
            value = json.loads(value)
        except ValueError:
            return None
    elif callable(getattr(value, "model_dump", None)):
        value = to_jsonable(value)
    return value if isinstance(value, Mapping) else None


def row_value(run: ScorerRun, key: str) -> Any:
    """The row's ``key``: from the request context, else from the input if it is a mapping."""
    for source in (run.request_context, run.input):
        mapping = as_mapping(source)
        if mapping is not None and not is_missing(value := mapping.get(key)):
            return value
    return None


def pieces(value: Any) -> list[str]:
    """The non-blank texts of ``value``: one for a string, each item's for a list.

    A string holding a JSON array is read as that array; other values are canonical JSON.
    """
    if isinstance(value, str) and value.lstrip().startswith("["):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    plain = value if isinstance(value, str) else to_jsonable(value)
    items = plain if isinstance(plain, list) else [plain]
    return [text for item in items if not is_blank(text := as_text(item))]


def row_context(run: ScorerRun, scorer: str, *, fixed: Sequence[str] | None, key: str) -> list[str]:
    """The context pieces to judge against: ``fixed`` if given, else the row's ``key``.

    Raises:
        ScorerInputError: The row has no such key, or its value has no text.
    """
    if fixed is not None:
        return list(fixed)
    value = row_value(run, key)
    if value is None:
        raise ScorerInputError(
            scorer,
            "request_context",
            f"no {key!r} key in the request context or the input (pass context=[...] or add "
            f"{key!r} to the rows)",
        )
    found = pieces(value)
    if not found:
        raise ScorerInputError(scorer, "request_context", f"{key!r} holds no text")
    return found


def fixed_context(scorer: str, context: Sequence[str] | None) -> tuple[str, ...] | None:
    """A ``context`` parameter checked at build time (None: read each row's)."""
    if context is None:
        return None
    found = tuple(text for text in context if not is_blank(text))
    if not found:
        raise param_error(scorer, "context", "holds no text; give None to read it from each row")
    return found


def numbered(items: Sequence[str], *, empty: str = "(none)") -> str:
    """``"1. first\\n2. second"``, or ``empty`` for no items."""
    if not items:
        return empty
    return "\n".join(f"{number}. {item}" for number, item in enumerate(items, start=1))


def show(score: float) -> str:
    """A score as prompts and reasons print it: ``0.66``, ``1``."""
    return f"{score:g}"


def lowercase(value: Any) -> Any:
    """A pydantic before-validator for enum answers: ``" Yes"`` → ``"yes"``.

    Native structured output keeps to the enum; the JSON-mode fallback may not.
    """
    return value.strip().lower() if isinstance(value, str) else value


def _unit(value: float) -> float:
    # Not a JSON Schema minimum/maximum: some providers' strict modes reject those keywords
    # (docs/pages/design/bounds-validated-not-declared.md).
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"must be between 0 and 1, got {value}")
    return value


#: A judge's score from 0 to 1; outside is a format failure (so the fallback asks again).
#: Strict: a JSON boolean or string is not a number, so ``true`` or ``"1"`` fails the schema
#: instead of being coerced to 1.0 (an integer is still a number).
Unit = Annotated[float, Strict(), AfterValidator(_unit)]
YesNo = Annotated[Literal["yes", "no"], BeforeValidator(lowercase)]
YesNoUnsure = Annotated[Literal["yes", "no", "unsure"], BeforeValidator(lowercase)]


class Statements(BaseModel):
    """The statements extracted from a text."""

    statements: list[str] = Field(description="One entry per statement, in order.")


class Claims(BaseModel):
    """The claims extracted from a text."""

    claims: list[str] = Field(description="One entry per claim, in order.")


def verdict_lines(verdicts: Sequence[Mapping[str, Any]], *, text: str = "statement") -> str:
    """``"1. [yes] the statement: the reason"`` per verdict, for reason prompts."""
    lines = [
        f"[{verdict['verdict']}] {verdict.get(text, '')}: {verdict.get('reason', '')}"
        for verdict in verdicts
    ]
    return numbered(lines)


def count(verdicts: Sequence[Mapping[str, Any]], value: str) -> int:
    """How many ``verdicts`` say ``value``."""
    return sum(1 for verdict in verdicts if verdict["verdict"] == value)


def verdicts_of(results: StepResults) -> list[dict[str, Any]]:
    """The verdicts the analyze step gave, one per entry judged."""
    return list(results.analyze_step_result["verdicts"])


def share_of_yes(
    verdicts: Sequence[Mapping[str, Any]], scale: float, *, unsure: float = 0.0
) -> float:
    """``(yes + unsure * "unsure") / verdicts * scale``, rounded; 0 when there is no verdict.

    The verdicts are one per item sent (see `OnePerItem`), so this is the share of the
    items sent, not of the answers a judge chose to return.
    """
    if not verdicts:
        return 0.0
    weighed = count(verdicts, "yes") + (unsure * count(verdicts, "unsure") if unsure else 0.0)
    return round_score(weighed / len(verdicts) * scale)


T = TypeVar("T")


class PerRun(Generic[T]):
    """Memoise a function of the run for the run in progress.

    Helpers such as the row's context pieces are needed by several steps of one run; this
    computes them once per run instead of once per step. It remembers only the last run, by
    a weak reference (a scorer outlives its rows), in one tuple: interleaved runs stay
    correct and only recompute.
    """

    __slots__ = ("_fn", "_last")

    def __init__(self, fn: Callable[[ScorerRun], T]) -> None:
        self._fn = fn
        self._last: tuple[weakref.ref[ScorerRun], T] | None = None

    def __call__(self, run: ScorerRun) -> T:
        last = self._last
        if last is not None and last[0]() is run:
            return last[1]
        value = self._fn(run)
        self._last = (weakref.ref(run), value)
        return value
