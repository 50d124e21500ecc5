"""How prebuilt scorers read a row: text from any value, references from the ground truth.

The rules every code scorer shares (see docs/pages/reference/scorers.md):

- **Text.** A string is used as is; ``None`` is the empty string; bytes are decoded as UTF-8;
  anything else (dicts, lists, numbers, booleans, pydantic models, numpy values) becomes its
  canonical JSON text (sorted keys, no ASCII escaping), so ``{"b": 1, "a": 2}`` and
  ``{"a": 2, "b": 1}`` read the same.
- **Missing ground truth.** ``None`` (or a float NaN, ``pd.NA`` or ``pd.NaT``, as pandas
  writes missing cells) is not an empty answer but no answer: a scorer that needs one raises
  [`ScorerInputError`][evalkit.errors.ScorerInputError], so the row is recorded as a scorer failure
  rather than a score of 0 (docs/pages/design/unscorable-rows-fail.md).
- **Several references.** A ground truth that is a non-empty list of strings holds alternative
  acceptable answers; text scorers score against each and keep the best (BLEU and chrF use
  them as multiple references). Any other list is one reference, read as JSON text.
"""

from __future__ import annotations

import json
import math
from typing import Any

from evalkit._json import is_pandas_missing, to_jsonable
from evalkit.errors import ConfigError, ScorerInputError
from evalkit.scorer import ScorerRun


def as_text(value: Any) -> str:
    """The text a scorer compares for ``value`` (see the module docstring)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return json.dumps(to_jsonable(value), ensure_ascii=False, sort_keys=True)


def is_missing(value: Any) -> bool:
    """True for the ways a dataset leaves a cell empty: None, float NaN, ``pd.NA``, ``pd.NaT``."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return is_pandas_missing(value)


def ground_truth(run: ScorerRun, scorer: str) -> Any:
    """The row's ground truth; [`ScorerInputError`][evalkit.errors.ScorerInputError] when it has
    none."""
    value = run.ground_truth
    if is_missing(value):
        raise ScorerInputError(scorer, "ground_truth", "missing (this row has no ground truth)")
    return value


def references(value: Any, scorer: str, field: str = "ground_truth") -> tuple[str, ...]:
    """The reference texts in ``value``: each string of a list of strings, else its text."""
    if not isinstance(value, (str, bytes)) and value is not None:
        plain = to_jsonable(value)
        if isinstance(plain, list) and all(isinstance(item, str) for item in plain):
            if not plain:
                raise ScorerInputError(scorer, field, "an empty list gives no reference")
            return tuple(plain)
    return (as_text(value),)


def clip(text: str, limit: int = 60) -> str:
    """``text`` quoted for a reason, shortened with an ellipsis past ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def param_error(scorer: str, param: str, problem: str) -> ConfigError:
    """A [`ConfigError`][evalkit.errors.ConfigError] naming the scorer and the parameter."""
    return ConfigError(f"scorer {scorer!r}, parameter {param!r}: {problem}")


def best_of(scores: list[float]) -> tuple[int, float]:
    """The index and value of the highest score (the first one on ties)."""
    index = max(range(len(scores)), key=scores.__getitem__)
    return index, scores[index]


def against(count: int, index: int) -> str:
    """``" (best of 3 references: #2)"``, or nothing for a single reference."""
    return f" (best of {count} references: #{index + 1})" if count > 1 else ""
