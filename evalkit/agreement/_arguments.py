"""The arguments of the agreement statistics, checked: kinds, options, paired arrays, levels.

Bad arguments are [`ConfigError`][evalkit.errors.ConfigError] naming the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from evalkit._ceilings import check_resamples_ceiling
from evalkit.agreement._resample import FloatArray, IntArray
from evalkit.errors import ConfigError

LabelKind = Literal["binary", "categorical", "ordinal", "continuous"]
"""What the labels are: two classes, unordered classes, ordered levels, or numbers."""

_KINDS: tuple[LabelKind, ...] = get_args(LabelKind)


def check_kind(kind: str) -> None:
    if kind not in _KINDS:
        raise ConfigError(f"kind must be one of {', '.join(_KINDS)}; got {kind!r}")


def check_options(confidence: float, resamples: int) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, float | int):
        raise ConfigError(f"confidence must be a number, got {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ConfigError(f"resamples must be a positive integer, got {resamples!r}")
    check_resamples_ceiling("resamples", resamples)


def paired_arrays(judge: npt.ArrayLike, human: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    j = np.asarray(judge, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    for name, values in (("judge", j), ("human", h)):
        if values.ndim != 1:
            raise ConfigError(f"{name} must be one-dimensional, got shape {values.shape}")
        if np.isinf(values).any():
            raise ConfigError(f"{name} must hold finite numbers or NaN (missing), not infinity")
    if j.size != h.size:
        raise ConfigError(
            f"judge and human must have equal lengths, got {j.size} judge scores and "
            f"{h.size} human labels"
        )
    return j, h


def no_levels(levels: Sequence[float] | None) -> None:
    if levels is not None:
        raise ConfigError(
            f"levels apply to binary, categorical and ordinal labels, not continuous ones; "
            f"got levels={tuple(levels)!r}"
        )


def label_levels(
    kind: LabelKind, levels: Sequence[float] | None, observed: FloatArray, what: str
) -> FloatArray:
    """The levels, increasing: as given, or the distinct ``observed`` values."""
    if levels is None:
        grid = np.unique(observed)
        if grid.size < 2:
            raise ConfigError(
                f"levels=None takes the levels from the {what}, which hold "
                f"{grid.size} distinct value(s) {tuple(float(v) for v in grid)!r}; "
                f"{kind} labels need at least two levels: pass levels="
            )
    else:
        given = np.asarray(levels, dtype=np.float64)
        shown = tuple(float(v) for v in given.ravel())
        if given.ndim != 1 or given.size < 2:
            raise ConfigError(f"levels must be at least two numbers, got {shown!r}")
        if not np.isfinite(given).all():
            raise ConfigError(f"levels must be finite numbers, got {shown!r}")
        grid = np.unique(given)
        if grid.size != given.size:
            raise ConfigError(f"levels must be distinct, got {shown!r}")
    if kind == "binary" and grid.size != 2:
        shown = tuple(float(v) for v in grid)
        raise ConfigError(f"binary labels need exactly two levels, got {grid.size}: {shown!r}")
    return grid


def snap(values: FloatArray, grid: FloatArray) -> IntArray:
    """The index of the nearest level of each value; a value halfway goes to the lower."""
    above = np.clip(np.searchsorted(grid, values), 0, grid.size - 1)
    below = np.clip(above - 1, 0, grid.size - 1)
    nearer_above = (grid[above] - values) < (values - grid[below])
    return np.where(nearer_above, above, below).astype(np.int64)


def label_indices(values: FloatArray, grid: FloatArray, what: str) -> IntArray:
    """The level of each value, which must be one (up to rounding: 1e-9 of the range)."""
    index = snap(values, grid)
    off = np.abs(grid[index] - values) > 1e-9 * float(grid[-1] - grid[0])
    if off.any():
        first = float(values[np.argmax(off)])
        shown = tuple(float(v) for v in grid)
        raise ConfigError(f"{what} {first!r} is not one of the levels {shown!r}")
    return index
