"""A stored experiment read back for resuming it: its record, scored pairs and outputs.

A resumed pair is scored on the output its item already has (`read_outputs`), so every
score of an item sits beside the one output it was computed from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from evalkit._arrow_arrays import arrow_array
from evalkit._json import stored_config
from evalkit._liveness import effective_status, with_effective_status
from evalkit.errors import StoreError
from evalkit.store._connect import DEFAULT_STORE, connection

#: Statuses a plain ``--resume`` picks up by default.
UNFINISHED = ("interrupted", "cancelled", "failed", "running")


@dataclass(frozen=True, slots=True)
class StoredExperiment:
    """What resuming needs from a stored experiment.

    Attributes:
        id: The experiment id.
        name: Its name.
        status: Its effective status (a dead ``running`` row reads ``interrupted``).
        config: The stored run configuration.
        dataset_fingerprint: The dataset fingerprint, recorded when a pass read every row.
        total_items: Rows the run covers.
        scorer_metadata: Per scorer id, its stored metadata (None when it had none).
        writer: ``(pid, host)`` of the process recorded as writing it.
        scored: Per item id, the scorer ids with a stored score.
        attempted: Item ids with an ``experiment_items`` row (evaluated at least once).
        claim_state: Its stored status, writer pid and host as read: a resume claims the
            experiment only if it is still so (see ``_claim.py``).
    """

    id: str
    name: str
    status: str
    config: Mapping[str, Any]
    dataset_fingerprint: str | None
    total_items: int
    scorer_metadata: Mapping[str, Any]
    writer: tuple[int | None, str | None]
    scored: Mapping[str, frozenset[str]]
    attempted: frozenset[str]
    claim_state: tuple[str, int | None, str | None] | None = None


def read_for_resume(
    store: str | os.PathLike[str], experiment_id: str, *, pairs: bool = True
) -> StoredExperiment:
    """Load an experiment's record, scorers and already-scored pairs.

    Args:
        store: The score store.
        experiment_id: The experiment.
        pairs: Also load the scored pairs and evaluated items; a sharded resume, which skips
            whole shards, does not need them (``scored`` and ``attempted`` are then empty).

    Raises:
        StoreError: No experiment has this id.
    """
    with connection(store, read_only=True) as con:
        found = con.execute(
            "SELECT id, name, status, config, dataset_fingerprint, total_items, writer_pid,"
            " writer_host FROM experiments WHERE id = ?",
            [experiment_id],
        ).fetchall()
        row = found[0] if found else None
        if row is None:
            raise StoreError(f"{store}: no experiment with id {experiment_id!r}")
        scorers = con.execute(
            "SELECT scorer_id, metadata FROM experiment_scorers WHERE experiment_id = ?",
            [experiment_id],
        ).fetchall()
        scored: dict[str, frozenset[str]] = {}
        attempted: frozenset[str] = frozenset()
        if pairs:
            scores = con.sql(
                "SELECT item_id, list(DISTINCT scorer_id) AS scorers FROM scores"
                " WHERE experiment_id = ? GROUP BY item_id",
                params=[experiment_id],
            ).to_arrow_table()
            scored = {
                item: frozenset(ids)
                for item, ids in zip(
                    scores["item_id"].to_pylist(), scores["scorers"].to_pylist(), strict=True
                )
            }
            attempted = frozenset(
                con.sql(
                    "SELECT DISTINCT item_id FROM experiment_items WHERE experiment_id = ?",
                    params=[experiment_id],
                )
                .to_arrow_table()["item_id"]
                .to_pylist()
            )
    ident, name, status, config, fingerprint, total, pid, host = row
    return StoredExperiment(
        id=ident,
        name=name,
        status=effective_status(status, pid, host),
        config=stored_config(config),
        dataset_fingerprint=fingerprint,
        total_items=int(total),
        scorer_metadata={sid: json.loads(meta) if meta else None for sid, meta in scorers},
        writer=(pid, host),
        scored=scored,
        attempted=attempted,
        claim_state=(status, pid, host),
    )


@dataclass(frozen=True, slots=True)
class StoredOutput:
    """The output a target produced for an item in an earlier pass.

    Attributes:
        value: The output decoded from its JSON column: for JSON values (text, numbers, bools,
            None, dicts and lists of them) the very value the scorers saw; a value that is not
            JSON (a tuple, a dataclass) comes back in the JSON form the store holds.
        target_ms: How long that target call took.
    """

    value: Any
    target_ms: float | None


def read_outputs(
    store: str | os.PathLike[str], experiment_id: str, item_ids: Collection[str]
) -> dict[str, StoredOutput]:
    """The stored outputs of those ``item_ids`` whose target produced one.

    Items whose target call failed (they have no output) and items whose output was read from
    the dataset are left out.
    """
    if not item_ids:
        return {}
    with connection(store, read_only=True) as con:
        rows = con.execute(
            "SELECT item_id, output, target_ms FROM experiment_items"
            " WHERE experiment_id = ? AND error IS NULL AND source = 'target'"
            " AND item_id IN (SELECT unnest(?::VARCHAR[]))",
            [experiment_id, list(item_ids)],
        ).fetchall()
    return {
        item: StoredOutput(json.loads(output) if output is not None else None, target_ms)
        for item, output, target_ms in rows
    }


def latest_resumable(
    store: str | os.PathLike[str] = DEFAULT_STORE,
    *,
    name: str,
    retry_errors: bool = False,
) -> str:
    """The id of the newest experiment named ``name`` that a resume would pick up.

    That is one ``interrupted``, ``cancelled``, ``failed`` or stale ``running``; with
    ``retry_errors`` also one ``completed_with_errors``.

    Raises:
        StoreError: There is none.
    """
    wanted = set(UNFINISHED) | ({"completed_with_errors"} if retry_errors else set())
    with connection(store, read_only=True) as con:
        table = con.sql(
            "SELECT id, status, writer_pid, writer_host FROM experiments WHERE name = ?"
            " ORDER BY started_at DESC, id",
            params=[name],
        ).to_arrow_table()
    table = with_effective_status(table)
    ids = table.filter(
        pc.is_in(table["status"], arrow_array(sorted(wanted - {"running"}), pa.string()))
    )
    if ids.num_rows == 0:
        kinds = ", ".join(sorted(wanted - {"running"}))
        raise StoreError(f"{store}: no run named {name!r} to resume (looked for: {kinds})")
    found: str = ids["id"][0].as_py()
    return found


def read_shard_failures(store: str | os.PathLike[str], experiment_id: str) -> dict[int, list[str]]:
    """Per finished shard of a sharded experiment, the ids of its items that did not fully
    succeed (a target failure or a failed scorer), by ``item_index``; shards without one are
    left out."""
    with connection(store, read_only=True) as con:
        rows = con.execute(
            "SELECT d.shard_index, list(i.item_id ORDER BY i.item_index) FROM shards_done d"
            " JOIN experiment_items i ON i.experiment_id = d.experiment_id"
            " AND i.item_index >= d.item_offset AND i.item_index < d.item_offset + d.rows"
            " WHERE d.experiment_id = ? AND i.status <> 'success'"
            " GROUP BY d.shard_index ORDER BY d.shard_index",
            [experiment_id],
        ).fetchall()
    return {int(index): list(items) for index, items in rows}


def read_done_shards(
    store: str | os.PathLike[str], experiment_id: str
) -> list[tuple[int, str, int, int, int]]:
    """The finished shards of a sharded experiment as recorded: ``(shard_index, file,
    row_group, item_offset, rows)``, by index."""
    with connection(store, read_only=True) as con:
        rows = con.execute(
            "SELECT shard_index, file, row_group, item_offset, rows FROM shards_done"
            " WHERE experiment_id = ? ORDER BY shard_index",
            [experiment_id],
        ).fetchall()
    return [(int(i), str(f), int(g), int(o), int(n)) for i, f, g, o, n in rows]
