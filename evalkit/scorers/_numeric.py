"""``numeric_match``: the number in the output against the expected number, within tolerance."""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Literal

from evalkit._json import to_jsonable
from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, ground_truth, param_error
from evalkit.scorers._registry import prebuilt

# A number not glued to a word or to a decimal point on its left (so "2024-05-01" reads 2024,
# 5, 1 and "H2O" reads nothing), with optional sign, comma thousands groups, decimals and an
# exponent.
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
)
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-"})


def extract_numbers(text: str) -> list[float]:
    """Every number written in ``text``, in order (``"1,234.5"`` → 1234.5; Unicode minus too)."""
    found = _NUMBER.findall(text.translate(_MINUS_SIGNS))
    return [float(match.replace(",", "")) for match in found]


def _plain_number(value: Any) -> float | None:
    # numpy and Arrow scalars are numbers.Real or convert to one; bool is not a number here.
    plain: Any = value if isinstance(value, (str, numbers.Real)) else to_jsonable(value)
    if isinstance(plain, bool) or not isinstance(plain, numbers.Real):
        return None
    return float(plain)


def _expected(run: ScorerRun) -> float:
    value = ground_truth(run, "numeric_match")
    number = _plain_number(value)
    if number is None and isinstance(value, str):
        found = extract_numbers(value)
        number = found[-1] if found else None
    if number is None or not math.isfinite(number):
        raise ScorerInputError(
            "numeric_match", "ground_truth", f"no finite number in {as_text(value)[:60]!r}"
        )
    return number


@prebuilt("numeric_match", title="Numeric Match", inputs=("output", "ground_truth"), version=1)
def numeric_match(
    scorer: Scorer,
    *,
    abs_tol: float = 0.0,
    rel_tol: float = 1e-9,
    extract: Literal["last", "first", "any"] = "last",
) -> Scorer:
    """1 when the number in the output equals the expected number within tolerance, else 0.

    Range 0 or 1, higher is better. Two numbers ``a`` and ``b`` match when
    ``|a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)`` (``math.isclose``). A numeric output
    is used as is; text has its numbers extracted (signs, ``1,234.5`` thousands groups,
    decimals and exponents; a ``%`` sign is ignored and a comma is never a decimal point).
    The ground truth is a number or a text whose last number is the expected one. An output
    without a number scores 0; a ground truth without one (or missing) fails the run.

    Args:
        abs_tol: Largest absolute difference accepted (≥ 0).
        rel_tol: Largest difference accepted relative to the larger magnitude (≥ 0); the
            default only absorbs floating-point rounding.
        extract: Which number of a text output is compared: the ``"last"`` (the usual place
            of a final answer), the ``"first"``, or ``"any"`` (1 when any number matches).
    """
    for name, tol in (("abs_tol", abs_tol), ("rel_tol", rel_tol)):
        if not math.isfinite(tol) or tol < 0:
            raise param_error("numeric_match", name, f"must be a finite number ≥ 0, got {tol!r}")

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        expected = _expected(run)
        direct = _plain_number(run.output) if not isinstance(run.output, str) else None
        found = [direct] if direct is not None else extract_numbers(as_text(run.output))
        if extract == "any":
            hits = [n for n in found if math.isclose(n, expected, rel_tol=rel_tol, abs_tol=abs_tol)]
            candidate = hits[0] if hits else None
        else:
            candidate = (found[-1] if extract == "last" else found[0]) if found else None
        return {"expected": expected, "numbers": found, "candidate": candidate}

    def score(results: StepResults) -> float:
        pre = results.preprocess_step_result
        candidate = pre["candidate"]
        if candidate is None:
            return 0.0
        close = math.isclose(candidate, pre["expected"], rel_tol=rel_tol, abs_tol=abs_tol)
        return 1.0 if close else 0.0

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        expected, found, candidate = pre["expected"], pre["numbers"], pre["candidate"]
        tolerance = f"abs_tol {abs_tol:g}, rel_tol {rel_tol:g}"
        if not found:
            return f"Expected {expected:g}; the output contains no number."
        if extract == "any":
            if score:
                return f"Expected {expected:g}; the output contains {candidate:g} ({tolerance})."
            shown = ", ".join(f"{n:g}" for n in found[:5])
            return (
                f"Expected {expected:g}; no number of the output ({shown}) is within {tolerance}."
            )
        verdict = "within" if score else "outside"
        return (
            f"Expected {expected:g}; the output's {extract} number is {candidate:g}, "
            f"{verdict} {tolerance}."
        )

    return scorer.preprocess(preprocess).generate_score(score).generate_reason(reason)
