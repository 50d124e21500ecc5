"""Which scorer of one stored run pairs with which of another, across the scorer id rule.

A prebuilt scorer's id is its registry name (``token_f1``); runs stored before that rule hold
its name with dashes (``token-f1``). The stored ids stay as they are; a comparison of an old run
with a new one pairs the two spellings (docs/pages/design/one-scorer-id-rule.md).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from evalkit._scorer_ids import renamed_ids, scorer_renames

if TYPE_CHECKING:
    from evalkit.compare._compare import Direction


@contextlib.contextmanager
def _reading(
    store: str | os.PathLike[str] | duckdb.DuckDBPyConnection,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection the caller holds (the viewer's read-only one: the compare page computes
    with the compare package, docs/pages/design/one-statistics-module.md) as it is, or the
    store opened read-only for the block."""
    if isinstance(store, duckdb.DuckDBPyConnection):
        yield store
        return
    from evalkit.store import connection

    with connection(store, read_only=True) as con:
        yield con


def read_paired_scores(
    store: str | os.PathLike[str] | duckdb.DuckDBPyConnection, baseline: str, candidate: str
) -> tuple[pa.Table, pa.Table]:
    """Two stored runs' per-item scores
    ([`read_item_scores`][evalkit.store.read_item_scores]), ready for
    [`compare_experiments`][evalkit.compare_experiments]: a prebuilt scorer stored under the old
    id (``token-f1``) in one run and the new one (``token_f1``) in the other is compared under
    the new one. ``store`` may be a connection to it that the caller keeps open.

    Raises:
        StoreError: No experiment has one of the ids.
    """
    from evalkit.store import read_item_scores

    with _reading(store) as con:  # one open for the five reads
        before, after = read_item_scores(con, baseline), read_item_scores(con, candidate)
        b_names, c_names = scorer_renames(con, baseline, candidate)
    return renamed_ids(before, b_names), renamed_ids(after, c_names)


def scorer_directions(
    store: str | os.PathLike[str] | duckdb.DuckDBPyConnection,
    experiment_id: str,
    *,
    paired_with: str | None = None,
) -> dict[str, Direction]:
    """``"higher"`` or ``"lower"`` per scorer of a stored run (which way is better), as
    recorded when it ran: the ``directions`` of
    [`compare_experiments`][evalkit.compare_experiments] and
    [`stored_slices`][evalkit.compare.stored_slices].

    Args:
        store: The store, or a connection to it that the caller keeps open.
        experiment_id: The run's id.
        paired_with: The id of the run it is compared with: each scorer is then keyed by the
            id [`read_paired_scores`][evalkit.compare.read_paired_scores] compares it under
            (a prebuilt scorer's old stored id, ``token-f1``, as ``token_f1``); None keys each
            by its stored id.

    Raises:
        StoreError: The store cannot be opened.
    """
    with _reading(store) as con:
        rows = con.execute(
            "SELECT scorer_id, higher_is_better FROM experiment_scorers WHERE experiment_id = ?",
            [experiment_id],
        ).fetchall()
        names = {} if paired_with is None else scorer_renames(con, paired_with, experiment_id)[1]
    return {
        names.get(sid, sid): "higher" if better is not False else "lower" for sid, better in rows
    }
