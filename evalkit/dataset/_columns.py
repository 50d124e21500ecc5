"""Which dataset column plays which role (``input``, ``ground_truth``…), with camelCase aliases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalkit._ceilings import MAX_DATASET_COLUMNS
from evalkit.errors import ConfigError, DatasetError

Role = Literal["id", "input", "ground_truth", "output", "request_context", "metadata"]

ROLES: tuple[Role, ...] = ("id", "input", "ground_truth", "output", "request_context", "metadata")

#: Column names accepted for each role, in the spelling users write them.
ALIASES: Mapping[Role, tuple[str, ...]] = {
    "id": ("id",),
    "input": ("input",),
    "ground_truth": ("groundTruth", "ground_truth"),
    "output": ("output",),
    "request_context": ("requestContext", "request_context"),
    "metadata": ("metadata",),
}


@dataclass(frozen=True, slots=True)
class ColumnMap:
    """The column each role is read from (None when absent), and the remaining columns.

    ``metadata_columns`` are the columns kept together as each item's ``metadata`` dict
    (``columns={"metadata": ["category", "lang"]}``), merged into the ``metadata`` column's
    own dict when there is one.
    """

    id: str | None
    input: str
    ground_truth: str | None
    output: str | None
    request_context: str | None
    metadata: str | None
    extra: tuple[str, ...] = ()
    metadata_columns: tuple[str, ...] = ()

    def role_columns(self) -> dict[Role, str]:
        """The roles present, mapped to their column names."""
        found = {role: getattr(self, role) for role in ROLES}
        return {role: name for role, name in found.items() if name is not None}

    def all_columns(self) -> list[str]:
        """Every column to read: the role columns, then the extra ones."""
        return [*self.role_columns().values(), *self.metadata_columns, *self.extra]


#: A checked ``columns=`` mapping: role → column, ``metadata`` → a column or a tuple of them.
Overrides = dict[Role, str | tuple[str, ...]]


def check_overrides(overrides: Mapping[str, Any] | None) -> Overrides:
    """Validate a ``columns={"input": "question", ...}`` mapping of role → column name
    (``"metadata"`` may map to a list of columns kept as the item's metadata dict)."""
    if not overrides:
        return {}
    if not isinstance(overrides, Mapping):
        raise ConfigError(
            f"columns must map roles to column names, e.g. {{'input': 'question'}}, "
            f"not {type(overrides).__name__}"
        )
    checked: Overrides = {}
    for role, column in overrides.items():
        if role not in ROLES:
            raise ConfigError(
                f"columns: unknown role {role!r}; roles are {', '.join(ROLES)} "
                "(map a role to the column that holds it)"
            )
        if role == "metadata" and isinstance(column, (list, tuple)):
            if not column or not all(isinstance(c, str) and c for c in column):
                raise ConfigError(
                    f"columns: 'metadata' must be a column name or a non-empty list of them, "
                    f"got {column!r}"
                )
            checked[role] = tuple(dict.fromkeys(column))
            continue
        if not isinstance(column, str) or not column:
            raise ConfigError(f"columns: the column for {role!r} must be a name, got {column!r}")
        checked[role] = column
    return checked


def check_column_count(source: str, count: int, *, line: int | None = None) -> None:
    """Refuse a dataset of more than `MAX_DATASET_COLUMNS` columns.

    Raises:
        DatasetError: ``count`` is above the ceiling, naming ``source`` (and its header line).
    """
    if count > MAX_DATASET_COLUMNS:
        raise DatasetError(
            source,
            f"has {count:,} columns, above the ceiling of {MAX_DATASET_COLUMNS:,} columns a "
            "dataset may have (see docs/pages/design/ceilings-on-inputs.md)",
            line=line,
        )


def resolve_columns(
    names: Sequence[str], source: str, overrides: Overrides | None = None
) -> ColumnMap:
    """Find each role's column among ``names``.

    Raises:
        DatasetError: ``input`` is missing, an overridden column does not exist, or both
            spellings of a role are present.
    """
    present = list(names)
    repeated = sorted({n for n in present if present.count(n) > 1})
    if repeated:
        raise DatasetError(
            source, f"the column name {repeated[0]!r} appears more than once", column=repeated[0]
        )
    found: dict[Role, str | None] = {}
    kept: tuple[str, ...] = ()
    for role in ROLES:
        mapped = overrides.get(role) if overrides else None
        if isinstance(mapped, tuple):
            kept = mapped
            mapped = None
        for column in kept if role == "metadata" else ():
            if column not in present:
                raise DatasetError(
                    source,
                    "no such column (listed in 'metadata' or 'labels'); columns: "
                    + _listing(present),
                    column=column,
                )
        if mapped is not None:
            column = mapped
            if column not in present:
                raise DatasetError(
                    source,
                    f"no such column (mapped to {role!r}); columns: {_listing(present)}",
                    column=column,
                )
            found[role] = column
            continue
        matches = [alias for alias in ALIASES[role] if alias in present]
        if len(matches) > 1:
            raise DatasetError(
                source, f"has both {matches[0]!r} and {matches[1]!r}; keep one", column=matches[0]
            )
        found[role] = matches[0] if matches else None
    if found["input"] is None:
        raise DatasetError(
            source, f"missing the required column (columns: {_listing(present)})", column="input"
        )
    used = {c for c in found.values() if c is not None}
    overlap = sorted(used & set(kept))
    if overlap:
        raise DatasetError(
            source,
            "listed in 'metadata' or 'labels' but also plays a role; keep it in one",
            column=overlap[0],
        )
    used |= set(kept)
    return ColumnMap(
        id=found["id"],
        input=found["input"],
        ground_truth=found["ground_truth"],
        output=found["output"],
        request_context=found["request_context"],
        metadata=found["metadata"],
        extra=tuple(c for c in present if c not in used),
        metadata_columns=kept,
    )


def _listing(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names) if names else "none"
