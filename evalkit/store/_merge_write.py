"""Writing one merged experiment from its slices, wherever each slice is stored.

A slice in the destination store itself (a DuckLake store whose slices were written there) is
copied by SQL inside it; a slice in another store, a DuckDB file or a DuckLake, is read through
a read-only connection of its own and streamed into the destination as Arrow batches (as
``evalkit store copy`` does), so no store is attached into another. The whole merged
experiment is one transaction of the destination: a failure leaves nothing of it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import duckdb

from evalkit._json import stored_config
from evalkit._sql import quote_ident
from evalkit.errors import StoreError
from evalkit.store._connect import connection
from evalkit.store._location import StoreLocation, store_location

#: Tables whose rows are copied, each keyed by ``experiment_id``.
_TABLES = ("experiment_scorers", "experiment_items", "scores", "scorer_errors",
           "judge_executions", "score_repeats", "shards_done", "scorer_agreement",
           "scorer_gates")  # fmt: skip
#: Tables an older source store may lack (it is read as it is, never migrated).
_OPTIONAL = {"shards_done", "scorer_agreement", "score_repeats", "scorer_gates"}
#: Copied for a group of one slice only (see ``_merge.py``): a slice's agreement and verdict
#: judge that slice, not the merged run.
_WHOLE_ONLY = {"scorer_agreement", "scorer_gates"}
_HAS_RUN_ID = {"experiment_items", "scores", "scorer_errors", "judge_executions",
               "score_repeats"}  # fmt: skip
_STATUS_RANK = ["completed", "completed_with_errors", "running", "cancelled", "failed"]
_HEAD = ("SELECT name, description, dataset, config, metadata, status, total_items,"
         " succeeded_count, failed_count, started_at, completed_at, evalkit_version"
         " FROM experiments WHERE id = ?")  # fmt: skip
_BATCH_ROWS = 100_000


def merge_group(
    con: duckdb.DuckDBPyConnection, pieces: list[dict[str, Any]], *, destination: StoreLocation
) -> str:
    """Write the merged experiment of ``pieces`` (slices ``0..n-1``, each a dict with its
    ``store`` and ``id``) into ``destination`` through ``con``; returns its new id.

    In a DuckLake destination, the slices stored there are marked ``merged_into`` in the same
    transaction, so the lake's own merge (``_lake_merge.py``) never takes them again.

    Raises:
        StoreError: A slice of the destination was merged meanwhile (by another process).
    """
    new_id = uuid.uuid4().hex[:12]
    here = [store_location(p["store"]).target == destination.target for p in pieces]
    con.execute("BEGIN TRANSACTION")
    try:
        heads = []
        for n, piece in enumerate(pieces):
            if here[n]:
                heads.append(_copy_here(con, piece, new_id, first=not n, whole=len(pieces) == 1))
                continue
            with connection(piece["store"], read_only=True) as source:
                heads.append(
                    _copy_from(source, con, piece, new_id, first=not n, whole=len(pieces) == 1)
                )
        _insert_head(con, pieces, heads, new_id)
        marked = [p["id"] for p, h in zip(pieces, here, strict=True) if h]
        if marked and destination.is_lake:
            # Two processes merging the same slices at once both update these rows: DuckLake
            # lets one commit, the other's fails and, retried, finds the slices merged.
            con.execute(
                "UPDATE experiments SET config = json_merge_patch(config, ?)"
                f" WHERE id IN ({', '.join('?' for _ in marked)})",
                [json.dumps({"merged_into": new_id}), *marked],
            )
    except BaseException:
        con.execute("ROLLBACK")
        raise
    # A COMMIT that fails has ended the transaction itself: nothing to roll back.
    con.execute("COMMIT")
    return new_id


def base_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The tables of ``con``'s store (its current catalog and schema)."""
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
        " AND table_catalog = current_database() AND table_schema = current_schema()"
    ).fetchall()
    return {r[0] for r in rows}


def _selects(
    present: set[str], piece: dict[str, Any], new_id: str, *, first: bool, whole: bool
) -> list[tuple[str, str, list[Any]]]:
    """(table, SELECT of the slice's rows renamed to ``new_id``, its parameters) per table."""
    found = []
    for table in _TABLES:
        if (
            (table == "experiment_scorers" and not first)
            or (table in _OPTIONAL and table not in present)
            or (table in _WHOLE_ONLY and not whole)
        ):
            continue
        replace = "? AS experiment_id"
        params: list[Any] = [new_id]
        if table in _HAS_RUN_ID:
            replace += ", ? || substr(run_id, length(experiment_id) + 1) AS run_id"
            params.append(new_id)
        rows = f"FROM {quote_ident(table)} WHERE experiment_id = ?"
        found.append((table, f"SELECT * REPLACE ({replace}) {rows}", [*params, piece["id"]]))
    return found


def _copy_here(
    con: duckdb.DuckDBPyConnection, piece: dict[str, Any], new_id: str, *, first: bool,
    whole: bool,
) -> tuple[Any, ...]:  # fmt: skip
    into = con.execute(
        "SELECT config->>'$.merged_into' FROM experiments WHERE id = ?", [piece["id"]]
    ).fetchall()
    if into and into[0][0]:
        raise StoreError(
            f"{piece['store']}: slice {piece['index']}/{piece['count']} ({piece['id']}) was"
            f" merged there meanwhile, into {into[0][0]}"
        )
    for table, select, params in _selects(base_tables(con), piece, new_id, first=first,
                                          whole=whole):  # fmt: skip
        con.execute(f"INSERT INTO {quote_ident(table)} BY NAME {select}", params)
    return _head(con, piece)


def _copy_from(
    source: duckdb.DuckDBPyConnection, con: duckdb.DuckDBPyConnection, piece: dict[str, Any],
    new_id: str, *, first: bool, whole: bool,
) -> tuple[Any, ...]:  # fmt: skip
    view = f"_evalkit_merge_{uuid.uuid4().hex[:8]}"
    for table, select, params in _selects(base_tables(source), piece, new_id, first=first,
                                          whole=whole):  # fmt: skip
        con.register(view, source.execute(select, params).to_arrow_reader(_BATCH_ROWS))
        try:
            con.execute(f"INSERT INTO {quote_ident(table)} BY NAME SELECT * FROM {view}")
        finally:
            con.unregister(view)
    return _head(source, piece)


def _head(con: duckdb.DuckDBPyConnection, piece: dict[str, Any]) -> tuple[Any, ...]:
    rows = con.execute(_HEAD, [piece["id"]]).fetchall()
    verdict: tuple[Any, ...] = (None, None, None)
    if "scorer_gates" in base_tables(con):  # schema 8 or later
        verdict = tuple(
            con.execute(
                "SELECT verdict, baseline_id, baseline_reason FROM experiments WHERE id = ?",
                [piece["id"]],
            ).fetchall()[0]
        )
    return (*rows[0], *verdict)


def _insert_head(
    con: duckdb.DuckDBPyConnection,
    pieces: list[dict[str, Any]],
    heads: list[tuple[Any, ...]],
    new_id: str,
) -> None:
    first = heads[0]
    config = stored_config(first[3])
    config["shard"] = None
    config.pop("merged_into", None)
    config["merged_from"] = [f"{p['store']}:{p['id']}" for p in pieces]
    status = max((h[5] for h in heads), key=_rank)
    ends = [h[10] for h in heads if h[10] is not None]
    # A run of one slice keeps its verdict; slices' verdicts are not the merged run's.
    verdict = heads[0][12:15] if len(heads) == 1 else (None, None, None)
    con.execute(
        "INSERT INTO experiments (id, name, description, dataset, config, metadata, status,"
        " total_items, succeeded_count, failed_count, started_at, completed_at,"
        " evalkit_version, partial, verdict, baseline_id, baseline_reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            new_id, first[0], first[1], first[2], json.dumps(config), first[4], status,
            sum(h[6] for h in heads), sum(h[7] for h in heads), sum(h[8] for h in heads),
            min(h[9] for h in heads),
            max(ends) if len(ends) == len(heads) else None, first[11],
            config.get("limit") is not None, *verdict,
        ],
    )  # fmt: skip


def _rank(status: str) -> int:
    return _STATUS_RANK.index(status) if status in _STATUS_RANK else len(_STATUS_RANK)
