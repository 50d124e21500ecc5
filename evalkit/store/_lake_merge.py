"""The ``--shard i/n`` jobs of a CI matrix writing one DuckLake store need no ``evalkit merge``.

Each job records its slice as an experiment of its own (as it does in a store file). When a
job finishes its slice in a DuckLake store, it looks at the slices of its group there: once
every slice ``0..n-1`` has finished, it writes the merged experiment at once, in the same
store, as ``evalkit merge`` would (`merge_stores`), and marks the slices with
``merged_into``. Two jobs finishing together may both try: DuckLake lets one commit, the other
is retried and finds the slices merged. See docs/pages/design/store-location.md.
"""

from __future__ import annotations

import os
from typing import Any

from evalkit._json import stored_config
from evalkit.store._commit_lock import CatalogTurns
from evalkit.store._connect import DEFAULT_BUSY_TIMEOUT, connection, retry_busy
from evalkit.store._location import StoreLocation, store_location
from evalkit.store._merge_write import merge_group

_FINISHED = ("completed", "completed_with_errors")


def merge_finished_slices(
    store: str | os.PathLike[str] | StoreLocation, experiment_id: str
) -> str | None:
    """Merge the group of slice ``experiment_id`` in the DuckLake ``store`` once all its
    slices have finished there; returns the merged experiment's id, or None (not a lake, not
    a slice, a slice not finished yet, or the group merged already)."""
    location = store_location(store)
    if not location.is_lake:
        return None
    return retry_busy(lambda: _attempt(location, experiment_id), timeout=DEFAULT_BUSY_TIMEOUT)


def _attempt(location: StoreLocation, experiment_id: str) -> str | None:
    # In the writers' turn, as the slices' own writers were: the merge reads and writes the
    # catalog (a SQLite catalog used by two processes at once stalls both).
    with CatalogTurns(location, DEFAULT_BUSY_TIMEOUT).turn(), connection(location) as con:
        rows = con.execute(
            "SELECT id, status, config FROM experiments ORDER BY started_at DESC, id"
        ).fetchall()
        shards = {r[0]: _shard(r[2]) for r in rows}
        mine = shards.get(experiment_id)
        if mine is None:
            return None
        group, count = mine["group"], mine["count"]
        chosen: dict[int, dict[str, Any]] = {}
        for run_id, status, config in rows:
            shard = shards[run_id]
            if shard is None or (shard["group"], shard["count"]) != (group, count):
                continue
            if stored_config(config).get("merged_into"):
                return None  # merged already (by the job that finished last)
            if status in _FINISHED and shard["index"] not in chosen:
                # The newest finished run of each slice (a slice may have been run again).
                chosen[shard["index"]] = {"store": location.text, "id": run_id, **shard}
        if sorted(chosen) != list(range(count)):
            return None
        return merge_group(con, [chosen[i] for i in range(count)], destination=location)


def _shard(config: str | None) -> dict[str, Any] | None:
    shard = stored_config(config).get("shard")
    return shard if isinstance(shard, dict) and "group" in shard else None
