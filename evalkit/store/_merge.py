"""``merge_stores``: join the stores of a CI matrix's ``--shard i/n`` jobs into one experiment.

Each job records its slice as an experiment whose config carries ``shard`` (index, count and a
group naming the experiment and dataset). Merging finds, across the given stores, every group
whose slices ``0..n-1`` are all present, and writes one experiment with a fresh id holding all
their rows (run ids renamed to the new id, as a single run would have them), summed counts and
the worst status.

The slices' ``scorer_agreement`` rows each measure one slice's items against their labels: they
are copied only when the slice is the whole experiment (a group of ``0/1``). The agreement of a
merged group of several slices is measured again over all its items by whoever can measure
(``evalkit merge`` does, with :func:`evalkit.agreement.measure_stored`, and the repeated
judges' stability with :func:`~evalkit.agreement.measure_stability_stored`); the store does not
compute statistics.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from typing import Any

from evalkit.errors import StoreError
from evalkit.store._connect import connection, quote_ident
from evalkit.store._location import is_lake, sql_literal
from evalkit.store._migrate import migrate

#: Tables whose rows are copied, each keyed by ``experiment_id``.
_TABLES = ("experiment_scorers", "experiment_items", "scores", "scorer_errors",
           "judge_executions", "score_repeats", "shards_done", "scorer_agreement")  # fmt: skip
#: Tables an older source store may lack (it is read as it is, never migrated).
_OPTIONAL = {"shards_done", "scorer_agreement", "score_repeats"}
#: Copied for a group of one slice only (see the module's docstring).
_WHOLE_ONLY = {"scorer_agreement"}
_HAS_RUN_ID = {"experiment_items", "scores", "scorer_errors", "judge_executions",
               "score_repeats"}  # fmt: skip
_STATUS_RANK = ["completed", "completed_with_errors", "running", "cancelled", "failed"]


def _slices(path: str) -> list[dict[str, Any]]:
    with connection(path, read_only=True) as con:
        rows = con.execute("SELECT id, config FROM experiments").fetchall()
    found = []
    for experiment_id, config in rows:
        shard = json.loads(config).get("shard") if config else None
        if isinstance(shard, dict):
            found.append({"store": path, "id": experiment_id, **shard})
    return found


def merge_stores(
    sources: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str]
) -> list[str]:
    """Merge every complete group of shard slices found in ``sources`` into ``output``.

    Returns:
        The ids of the merged experiments written to ``output``.

    Raises:
        StoreError: A source is unreadable, holds no shard slices, or a group misses slices
            (named) or has one twice.
    """
    out = str(output)
    groups: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}
    for source in sources:
        path = str(source)
        if is_lake(path):
            raise StoreError(
                f"{path}: evalkit merge reads store files; the slices written to a DuckLake"
                " store are merged there when the last one finishes (evalkit store copy takes"
                " runs between a lake and a file)"
            )
        if not os.path.exists(path):
            raise StoreError(f"{path}: no such store")
        for piece in _slices(path):
            slot = groups.setdefault((piece["group"], piece["count"]), {})
            if piece["index"] in slot:
                raise StoreError(
                    f"{path}: slice {piece['index']}/{piece['count']} of {piece['group']!r} "
                    f"is also in {slot[piece['index']]['store']}"
                )
            slot[piece["index"]] = piece
    if not groups:
        raise StoreError(f"no sharded runs (--shard i/n) in {', '.join(map(str, sources))}")
    for (group, count), pieces in groups.items():
        missing = sorted(set(range(count)) - set(pieces))
        if missing:
            raise StoreError(
                f"{group!r}: slices {', '.join(f'{i}/{count}' for i in missing)} are missing"
            )
    merged: list[str] = []
    with connection(out) as con:
        migrate(con, where=out)
        for (_, count), pieces in sorted(groups.items()):
            merged.append(_merge_group(con, [pieces[i] for i in range(count)]))
    return merged


def _merge_group(con: Any, pieces: list[dict[str, Any]], *, in_place: bool = False) -> str:
    """Write the group's merged experiment; ``in_place``: the slices are in ``con``'s own
    store (a DuckLake store the slices wrote at once), else each is attached read-only."""
    new_id = uuid.uuid4().hex[:12]
    if in_place:
        _copy_group(con, pieces, [None] * len(pieces), new_id, marks=True)
        return new_id
    aliases = [f"_evalkit_src{n}" for n in range(len(pieces))]
    for alias, piece in zip(aliases, pieces, strict=True):
        # A literal, not a parameter: DuckDB before 2.0 takes no parameters in ATTACH.
        con.execute(f"ATTACH {sql_literal(piece['store'])} AS {quote_ident(alias)} (READ_ONLY)")
    try:
        _copy_group(con, pieces, list(aliases), new_id)
    finally:
        for alias in aliases:
            con.execute(f"DETACH {quote_ident(alias)}")
    return new_id


def _copy_group(
    con: Any,
    pieces: list[dict[str, Any]],
    aliases: list[str | None],
    new_id: str,
    *,
    marks: bool = False,
) -> None:
    con.execute("BEGIN TRANSACTION")
    try:
        heads = []
        for n, piece in enumerate(pieces):
            alias = aliases[n]
            where = quote_ident(alias) + "." if alias is not None else ""
            present = {
                row[0]
                for row in con.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE database_name = ?",
                    [alias if alias is not None else _current(con)],
                ).fetchall()
            }
            for table in _TABLES:
                if table == "experiment_scorers" and n:
                    continue
                if table in _OPTIONAL and table not in present:
                    continue
                if table in _WHOLE_ONLY and len(pieces) > 1:
                    continue
                replace = "? AS experiment_id"
                params: list[Any] = [new_id]
                if table in _HAS_RUN_ID:
                    replace += ", ? || substr(run_id, length(experiment_id) + 1) AS run_id"
                    params.append(new_id)
                con.execute(
                    f"INSERT INTO {quote_ident(table)} BY NAME SELECT * REPLACE ({replace})"
                    f" FROM {where}{quote_ident(table)}"
                    " WHERE experiment_id = ?",
                    [*params, piece["id"]],
                )
            heads.append(
                con.execute(
                    "SELECT name, description, dataset, config, metadata, status,"
                    " total_items, succeeded_count, failed_count, started_at, completed_at,"
                    f" evalkit_version FROM {where}experiments WHERE id = ?",
                    [piece["id"]],
                ).fetchone()
            )
        first = heads[0]
        config = json.loads(first[3])
        config["shard"] = None
        config["merged_from"] = [f"{p['store']}:{p['id']}" for p in pieces]
        status = max((h[5] for h in heads), key=_rank)
        ends = [h[10] for h in heads if h[10] is not None]
        con.execute(
            "INSERT INTO experiments (id, name, description, dataset, config, metadata, status,"
            " total_items, succeeded_count, failed_count, started_at, completed_at,"
            " evalkit_version, partial) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                new_id, first[0], first[1], first[2], json.dumps(config), first[4], status,
                sum(h[6] for h in heads), sum(h[7] for h in heads), sum(h[8] for h in heads),
                min(h[9] for h in heads),
                max(ends) if len(ends) == len(heads) else None, first[11],
                config.get("limit") is not None,
            ],
        )  # fmt: skip
        if marks:
            # The slices say which run they were merged into. Two processes merging the same
            # slices at once both update these rows: DuckLake lets one commit, the other's
            # fails and, retried, finds the slices merged (merge_finished_slices).
            con.execute(
                "UPDATE experiments SET config = json_merge_patch(config, ?)"
                f" WHERE id IN ({', '.join('?' for _ in pieces)})",
                [json.dumps({"merged_into": new_id}), *(p["id"] for p in pieces)],
            )
    except BaseException:
        con.execute("ROLLBACK")
        raise
    # A COMMIT that fails has ended the transaction itself: nothing to roll back.
    con.execute("COMMIT")


def _current(con: Any) -> str:
    return str(con.execute("SELECT current_database()").fetchall()[0][0])


def _rank(status: str) -> int:
    return _STATUS_RANK.index(status) if status in _STATUS_RANK else len(_STATUS_RANK)
