"""``copy_experiments``: experiments from one store to another, a DuckDB file or a DuckLake.

A team that started with an ``evalkit.duckdb`` file grows into a DuckLake store (and a lake's
experiments can be taken back into a file): every row of each experiment, in every table that
holds an experiment's rows, is streamed from the source to the destination as Arrow batches,
one experiment per transaction (a failure leaves no half experiment); then the baseline pins
of the copied experiments' names that the destination lacks. An experiment the
destination already holds (same id) is skipped, so copying again copies nothing twice; one
still being written (``running`` by a live process) is skipped too, as its rows are not all
there yet.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalkit._liveness import effective_status
from evalkit._sql import quote_ident
from evalkit.errors import StoreError
from evalkit.store._connect import DEFAULT_BUSY_TIMEOUT, connection, retry_busy
from evalkit.store._location import StoreLocation, store_location
from evalkit.store._merge_write import base_tables
from evalkit.store._migrate import migrate
from evalkit.store._pins import copy_pins

#: The tables holding an experiment's rows (``experiments`` by ``id``, the others by
#: ``experiment_id``), in the order they are copied.
COPIED_TABLES = ("experiments", "experiment_scorers", "experiment_items", "scores",
                 "scorer_errors", "judge_executions", "score_repeats", "shards_done",
                 "scorer_agreement", "scorer_gates")  # fmt: skip

_BATCH_ROWS = 100_000


@dataclass(frozen=True, slots=True)
class CopySummary:
    """What [`copy_experiments`][evalkit.store.copy_experiments] did.

    Attributes:
        copied: The ids of the experiments copied, in the order they were.
        rows: Rows copied per table, over all the copied experiments.
        already_there: Ids the destination held already (not copied again).
        running: Ids skipped because a live process is still writing them.
    """

    copied: tuple[str, ...]
    rows: dict[str, int] = field(default_factory=dict)
    already_there: tuple[str, ...] = ()
    running: tuple[str, ...] = ()


def copy_experiments(
    source: str | os.PathLike[str] | StoreLocation,
    destination: str | os.PathLike[str] | StoreLocation,
    *,
    experiments: Sequence[str] | None = None,
) -> CopySummary:
    """Copy experiments (all, or the ids or id prefixes in ``experiments``) from ``source``
    to ``destination`` (created when missing, with the schema of this evalkit).

    Raises:
        StoreError: A store cannot be opened, source and destination are the same store, or an
            experiment named is not in the source (or its prefix names several).
    """
    src, dst = store_location(source), store_location(destination)
    if src.target == dst.target:
        raise StoreError(f"{src}: the source and the destination are the same store")
    with connection(src, read_only=True) as con:
        heads = con.execute(
            "SELECT id, status, writer_pid, writer_host FROM experiments ORDER BY started_at, id"
        ).fetchall()
        present = base_tables(con)
    chosen = _choose(src, [h[0] for h in heads], experiments)
    running = tuple(
        h[0] for h in heads if h[0] in chosen and effective_status(h[1], h[2], h[3]) == "running"
    )
    with connection(dst) as con:
        migrate(con, where=str(dst), timeout=DEFAULT_BUSY_TIMEOUT)
        held = {r[0] for r in con.execute("SELECT id FROM experiments").fetchall()}
    copied: list[str] = []
    rows: dict[str, int] = {}
    for experiment_id in chosen:
        if experiment_id in held or experiment_id in running:
            continue
        counts = retry_busy(
            lambda e=experiment_id: _copy_one(src, dst, e, present),  # type: ignore[misc]
            timeout=DEFAULT_BUSY_TIMEOUT,
        )
        for table, count in counts.items():
            rows[table] = rows.get(table, 0) + count
        copied.append(experiment_id)
    already = tuple(e for e in chosen if e in held)
    if "baseline_pins" in present:
        pinned = retry_busy(lambda: copy_pins(src, dst, chosen), timeout=DEFAULT_BUSY_TIMEOUT)
        if pinned:
            rows["baseline_pins"] = pinned
    return CopySummary(tuple(copied), rows, already, running)


def _choose(src: StoreLocation, ids: list[str], wanted: Sequence[str] | None) -> list[str]:
    if wanted is None:
        return ids
    chosen: list[str] = []
    for ref in wanted:
        matches = [i for i in ids if i == ref] or [i for i in ids if i.startswith(ref)]
        if not matches:
            raise StoreError(f"{src}: no experiment {ref!r}")
        if len(matches) > 1:
            raise StoreError(f"{src}: {ref!r} is the prefix of several experiments")
        if matches[0] not in chosen:
            chosen.append(matches[0])
    return chosen


def _copy_one(
    src: StoreLocation, dst: StoreLocation, experiment_id: str, present: set[str]
) -> dict[str, int]:
    counts: dict[str, int] = {}
    view = f"_evalkit_copy_{uuid.uuid4().hex[:8]}"
    with connection(src, read_only=True) as source, connection(dst) as target:
        target.execute("BEGIN TRANSACTION")
        try:
            for table in COPIED_TABLES:
                if table not in present:
                    continue  # an older source store without it
                key = "id" if table == "experiments" else "experiment_id"
                reader = source.execute(
                    f"SELECT * FROM {quote_ident(table)} WHERE {quote_ident(key)} = ?",
                    [experiment_id],
                ).to_arrow_reader(_BATCH_ROWS)
                target.register(view, reader)
                try:
                    target.execute(
                        f"INSERT INTO {quote_ident(table)} BY NAME"
                        f" SELECT * FROM {quote_ident(view)}"
                    )
                finally:
                    target.unregister(view)
                found = target.execute(
                    f"SELECT count(*) FROM {quote_ident(table)} WHERE {quote_ident(key)} = ?",
                    [experiment_id],
                ).fetchall()
                counts[table] = int(found[0][0])
        except BaseException:
            target.execute("ROLLBACK")
            raise
        # A COMMIT that fails has ended the transaction itself.
        target.execute("COMMIT")
    return counts
