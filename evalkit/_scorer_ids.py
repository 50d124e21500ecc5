"""Scorer ids: a wrong id named with its close match, and an old stored id paired with its new
spelling (docs/pages/design/one-scorer-id-rule.md).

A prebuilt scorer's id is its registry name (``token_f1``). Until that rule, a prebuilt scorer
built without an ``id`` recorded its name with dashes (``token-f1``); the scores already stored
keep that id, and a comparison pairs it with the new one.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from evalkit.errors import ConfigError

if TYPE_CHECKING:  # imported when used: thresholds are checked without them
    import duckdb
    import pyarrow as pa


def close_id(scorer_id: str, known: Collection[str]) -> str | None:
    """The id among ``known`` that ``scorer_id`` most likely meant: the same but for ``-``/``_``
    and case (``token-f1`` for ``token_f1``), else the closest spelling, else None."""
    folded = _fold(scorer_id)
    same = [k for k in known if _fold(k) == folded]
    if same:
        return same[0]
    close = difflib.get_close_matches(scorer_id, list(known), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_id(where: str, scorer_id: str, known: Collection[str]) -> ConfigError:
    """``thresholds: no scorer with id 'token-f1' (did you mean 'token_f1'? scorers: …)``."""
    close = close_id(scorer_id, known)
    hint = f"did you mean {close!r}? " if close is not None else ""
    listed = ", ".join(repr(s) for s in known) or "none"
    return ConfigError(f"{where}: no scorer with id {scorer_id!r} ({hint}scorers: {listed})")


def _fold(scorer_id: str) -> str:
    return scorer_id.replace("-", "_").casefold()


def current_id(scorer_id: str, metadata: Mapping[str, Any] | str | None) -> str:
    """The id a stored scorer has under today's rule: a prebuilt scorer stored under the old
    default (its name with dashes, ``metadata["prebuilt"]`` its name) is its name; any other
    id is itself."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return scorer_id
    name = metadata.get("prebuilt") if isinstance(metadata, Mapping) else None
    if isinstance(name, str) and "_" in name and scorer_id == name.replace("_", "-"):
        return name
    return scorer_id


def renames(
    baseline: Mapping[str, str], candidate: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """How two runs' scorer ids pair across the id rule's change.

    ``baseline`` and ``candidate`` map each run's stored ids to `current_id`. A stored id
    pairs with the same id in the other run; one that has none pairs with the other run's
    scorer of the same current id, when exactly one is left on each side. Returns the renames
    of each side (stored id → the current id it is compared under), empty when every id pairs
    as it is.
    """
    b_left = {s: c for s, c in baseline.items() if s not in candidate}
    c_left = {s: c for s, c in candidate.items() if s not in baseline}
    b_renames: dict[str, str] = {}
    c_renames: dict[str, str] = {}
    for stored, current in b_left.items():
        matches = [s for s, c in c_left.items() if c == current]
        if len(matches) != 1 or sum(c == current for c in b_left.values()) != 1:
            continue
        if stored != current:
            b_renames[stored] = current
        if matches[0] != current:
            c_renames[matches[0]] = current
    return b_renames, c_renames


def _scorer_ids(con: duckdb.DuckDBPyConnection, experiment_id: str) -> dict[str, str]:
    rows = con.execute(
        "SELECT scorer_id, CAST(metadata AS VARCHAR) FROM experiment_scorers"
        " WHERE experiment_id = ?",
        [experiment_id],
    ).fetchall()
    return {str(sid): current_id(str(sid), meta) for sid, meta in rows}


def scorer_renames(
    con: duckdb.DuckDBPyConnection, baseline: str, candidate: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The renames of the baseline's and the candidate's stored scorer ids that pair an old
    id with its new spelling (stored id → the id it is compared under); empty when every id
    pairs as it is, as it does between runs of the same evalkit. ``con``: the store, opened by
    the caller (this layer opens no store)."""
    return renames(_scorer_ids(con, baseline), _scorer_ids(con, candidate))


def renamed_ids(table: pa.Table, names: dict[str, str]) -> pa.Table:
    """``table`` with its ``scorer_id`` column renamed by ``names``."""
    import pyarrow as pa

    if not names:
        return table
    column = table.column("scorer_id")
    ids = [names.get(s, s) if s is not None else None for s in column.to_pylist()]
    index = table.schema.get_field_index("scorer_id")
    return table.set_column(index, "scorer_id", pa.array(ids, column.type))


def renamed_sql(names: dict[str, str], column: str = "scorer_id") -> tuple[str, list[Any]]:
    """A SQL expression of ``column`` (a scorer id) renamed by ``names``, and its parameters."""
    if not names:
        return column, []
    cases = " ".join("WHEN ? THEN ?" for _ in names)
    return f"CASE {column} {cases} ELSE {column} END", [v for p in names.items() for v in p]


def compared_id(names: tuple[dict[str, str], dict[str, str]], scorer_id: str) -> str:
    """The id ``scorer_id`` is compared under, given either run's stored id or the new one."""
    return names[0].get(scorer_id) or names[1].get(scorer_id) or scorer_id


def stored_id(names: dict[str, str], scorer_id: str) -> str:
    """The stored id that ``names`` renames to ``scorer_id`` (``scorer_id`` itself if none)."""
    return next((s for s, new in names.items() if new == scorer_id), scorer_id)
