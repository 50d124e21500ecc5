"""Human labels as data: which dataset columns hold the people's judgement of which scorer.

``labels={"rubric": "human_polite"}`` says the column ``human_polite`` holds what a person
scored for the pairs of scorer ``rubric``, on the scorer's own scale. A label set names the
values in order and maps them evenly onto the scorer's scale: ``{"columns": ["rater_a",
"rater_b"], "levels": ["bad", "ok", "good"]}`` reads ``bad`` as 0.0, ``ok`` as 0.5 and
``good`` as 1.0 (``scale = [1, 5]`` for a 1-5 scorer). The label columns are kept as item
metadata (so they are in the store, ``experiment_items.metadata``, for SQL).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

import numpy as np
import numpy.typing as npt

from evalkit._scorer_ids import unknown_id
from evalkit.agreement._arguments import LabelKind
from evalkit.errors import ConfigError, DatasetError

KINDS: tuple[LabelKind, ...] = get_args(LabelKind)

_SPEC_KEYS = ("columns", "levels", "kind", "scale")


@dataclass(frozen=True, slots=True)
class LabelSpec:
    """Where a scorer's human labels are and how to read them.

    Attributes:
        scorer_id: The scorer the labels judge.
        columns: The label columns, one per person (several: their consensus is compared,
            and their agreement with each other measured).
        levels: The label values in order (a label set), or None for numbers on the scale.
        kind: ``binary``, ``categorical``, ``ordinal`` or ``continuous``; None to infer it
            (a label set: ``binary`` with two levels, else ``ordinal``; numbers: ``binary``
            when they take at most two values, else ``continuous``).
        scale: The scorer's scale ``(low, high)``, onto which ``levels`` are spread evenly.
    """

    scorer_id: str
    columns: tuple[str, ...]
    levels: tuple[str | float, ...] | None = None
    kind: LabelKind | None = None
    scale: tuple[float, float] = (0.0, 1.0)

    def level_values(self) -> tuple[float, ...] | None:
        """The levels on the scorer's scale, or None without a label set."""
        if self.levels is None:
            return None
        low, high = self.scale
        last = len(self.levels) - 1
        return tuple(low + (high - low) * i / last for i in range(len(self.levels)))

    def to_dict(self) -> dict[str, Any]:
        """The spec as recorded in the run's config."""
        recorded: dict[str, Any] = {"columns": list(self.columns), "scale": list(self.scale)}
        if self.levels is not None:
            recorded["levels"] = list(self.levels)
        if self.kind is not None:
            recorded["kind"] = self.kind
        return recorded

    def values(
        self, column: str, raw: Iterable[Any], ids: Sequence[str], *, source: str = "labels"
    ) -> npt.NDArray[np.float64]:
        """The labels of ``column`` on the scorer's scale, NaN where missing (``source``: the
        dataset, named by the errors).

        Raises:
            DatasetError: A label is not one of the levels, or not a number without levels;
                the error names the column, the item and the value.
        """
        by_key = None
        if self.levels is not None:
            values = self.level_values()
            assert values is not None
            by_key = {_key(level): value for level, value in zip(self.levels, values, strict=True)}
        out = []
        for item_id, value in zip(ids, raw, strict=True):
            if _missing(value):
                out.append(math.nan)
            elif by_key is not None:
                found = by_key.get(_key(value))
                if found is None:
                    raise DatasetError(
                        source,
                        f"label {value!r} of item {item_id!r} (scorer {self.scorer_id!r}) is "
                        f"not one of the levels {list(self.levels or ())!r}",
                        column=column,
                    )
                out.append(found)
            else:
                number = _key(value)
                if not isinstance(number, float) or not math.isfinite(number):
                    raise DatasetError(
                        source,
                        f"label {value!r} of item {item_id!r} (scorer {self.scorer_id!r}) is "
                        "not a number (give 'levels' for a label set)",
                        column=column,
                    )
                out.append(number)
        return np.asarray(out, dtype=np.float64)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _key(value: Any) -> str | float:
    """One spelling for a label: numbers (and text that reads as one) as floats, else text."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Real):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        return text


def parse_labels(
    labels: Mapping[str, Any] | None, scorer_ids: Collection[str] | None
) -> dict[str, LabelSpec]:
    """Check ``labels=`` (scorer id → a column, a list of columns, or a spec mapping) against
    the run's scorer ids (None: the ids are checked later, as an experiment file does).

    Raises:
        ConfigError: An unknown scorer or key, a bad kind, levels or scale, named.
    """
    if labels is None:
        return {}
    if not isinstance(labels, Mapping):
        raise ConfigError(
            f"labels must map scorer ids to label columns, e.g. {{'rubric': 'human'}}, "
            f"not {type(labels).__name__}"
        )
    specs: dict[str, LabelSpec] = {}
    for scorer_id, given in labels.items():
        if scorer_ids is not None and scorer_id not in scorer_ids:
            raise unknown_id("labels", scorer_id, list(scorer_ids))
        specs[scorer_id] = _spec(scorer_id, given)
    return specs


def _spec(scorer_id: str, given: Any) -> LabelSpec:
    where = f"labels[{scorer_id!r}]"
    spec = given if isinstance(given, Mapping) else {"columns": given}
    unknown = sorted(set(spec) - set(_SPEC_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; keys are {', '.join(_SPEC_KEYS)}")
    if "columns" not in spec:
        raise ConfigError(f"{where}: give 'columns' (the label column or columns)")
    columns = _columns(spec["columns"], where)
    levels = _levels(spec["levels"], where) if "levels" in spec else None
    kind = spec.get("kind")
    if kind is not None and kind not in KINDS:
        raise ConfigError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "binary" and levels is not None and len(levels) != 2:
        raise ConfigError(f"{where}: a binary label set has two levels, got {len(levels)}")
    if kind in ("categorical", "ordinal") and levels is None:
        raise ConfigError(f"{where}: kind {kind!r} needs 'levels' (the label values in order)")
    if kind == "continuous" and levels is not None:
        raise ConfigError(f"{where}: continuous labels are numbers; leave out 'levels'")
    scale = _scale(spec["scale"], where) if "scale" in spec else (0.0, 1.0)
    return LabelSpec(scorer_id, columns, levels, kind, scale)


def _columns(given: Any, where: str) -> tuple[str, ...]:
    columns = [given] if isinstance(given, str) else given
    if (
        not isinstance(columns, list | tuple)
        or not columns
        or not all(isinstance(c, str) and c.strip() for c in columns)
    ):
        raise ConfigError(
            f"{where}: columns must be a column name or a list of them, got {given!r}"
        )
    if len(set(columns)) != len(columns):
        raise ConfigError(f"{where}: a column appears twice in {list(columns)!r}")
    reserved = [c for c in columns if c in _RESERVED]
    if reserved:
        # scorer_agreement.compared_with names a label column, or one of these.
        raise ConfigError(
            f"{where}: a label column cannot be named {reserved[0]!r} (reserved: "
            f"{', '.join(_RESERVED)}); rename it with columns="
        )
    return tuple(columns)


_RESERVED = ("consensus", "raters", "repeats")


def _levels(given: Any, where: str) -> tuple[str | float, ...]:
    if isinstance(given, str) or not isinstance(given, list | tuple) or len(given) < 2:
        raise ConfigError(
            f"{where}: levels must be a list of at least two label values, got {given!r}"
        )
    levels: list[str | float] = []
    for level in given:
        if isinstance(level, bool) or not isinstance(level, str | numbers.Real):
            raise ConfigError(f"{where}: a level is text or a number, got {level!r}")
        levels.append(level if isinstance(level, str) else float(level))
    keys = [_key(level) for level in levels]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"{where}: a level appears twice in {list(given)!r}")
    return tuple(levels)


def _scale(given: Any, where: str) -> tuple[float, float]:
    if (
        not isinstance(given, list | tuple)
        or len(given) != 2
        or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in given)
        or not all(math.isfinite(float(v)) for v in given)
        or float(given[0]) >= float(given[1])
    ):
        raise ConfigError(f"{where}: scale must be [low, high] with low < high, got {given!r}")
    return float(given[0]), float(given[1])


def with_label_columns(
    columns: Mapping[str, str | Sequence[str]] | None, labels: Mapping[str, LabelSpec]
) -> Mapping[str, str | Sequence[str]] | None:
    """``columns=`` with every label column added to the columns kept as item metadata.

    Raises:
        ConfigError: ``columns`` maps ``metadata`` to one column (a dict column): the label
            columns could not be kept beside it.
    """
    wanted = [c for spec in labels.values() for c in spec.columns]
    if not wanted:
        return columns
    given = dict(columns or {})
    kept = given.get("metadata")
    if isinstance(kept, str):
        raise ConfigError(
            f"labels: columns maps 'metadata' to the column {kept!r}; list the columns to keep "
            "as metadata instead (the label columns are kept beside them)"
        )
    given["metadata"] = list(dict.fromkeys([*(kept or ()), *wanted]))
    return given


def check_label_columns(kept: Sequence[str], labels: Mapping[str, LabelSpec], source: str) -> None:
    """A dataset loaded before the run keeps the label columns only if it was asked to.

    Raises:
        ConfigError: A label column is not among the dataset's ``kept`` metadata columns.
    """
    missing = [c for spec in labels.values() for c in spec.columns if c not in kept]
    if missing:
        raise ConfigError(
            f"labels: the dataset {source} was loaded without the label column(s) "
            f"{', '.join(repr(c) for c in missing)} kept as metadata; load it with "
            f"columns={{'metadata': {missing!r}}}, or give run_evals the file or table itself"
        )


def config_of(
    labels: Mapping[str, LabelSpec], min_agreement: Mapping[str, Mapping[str, float]]
) -> dict[str, Any]:
    """What a run records of its labels and agreement gates in its config (none without)."""
    recorded: dict[str, Any] = {}
    if labels:
        recorded["labels"] = {sid: spec.to_dict() for sid, spec in labels.items()}
    if min_agreement:
        recorded["min_agreement"] = {sid: dict(b) for sid, b in min_agreement.items()}
    return recorded
