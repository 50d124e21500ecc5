"""``merge_stores``: join the stores of a CI matrix's ``--shard i/n`` jobs into one experiment.

Each job records its slice as an experiment whose config carries ``shard`` (index, count and a
group naming the experiment and dataset). Merging finds, across the given stores, every group
whose slices ``0..n-1`` are all present, and writes one experiment with a fresh id holding all
their rows (run ids renamed to the new id, as a single run would have them), summed counts and
the worst status (``_merge_write.py``).

Sources and the destination are DuckDB files or DuckLake stores. A lake keeps the history of
many runs, so from a lake source the slices not merged yet count, the newest run of each
(a finished one first); slices the lake merged already (``merged_into``, written by its own
merge when the last slice finished) are left out, and a source holding only those is pointed
to ``evalkit store copy``, which takes the merged run itself. Merging into a lake that holds
some of the slices marks them ``merged_into`` there.

The slices' ``scorer_agreement`` rows each measure one slice's items against their labels: they
are copied only when the slice is the whole experiment (a group of ``0/1``). The agreement of a
merged group of several slices is measured again over all its items by whoever can measure
(``evalkit merge`` does, with `evalkit.agreement.measure_stored`, and the repeated
judges' stability with `measure_stability_stored`); the store does not
compute statistics.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from evalkit._json import stored_config
from evalkit.errors import StoreError
from evalkit.store._commit_lock import CatalogTurns
from evalkit.store._connect import DEFAULT_BUSY_TIMEOUT, connection, retry_busy
from evalkit.store._location import StoreLocation, store_location
from evalkit.store._merge_write import merge_group
from evalkit.store._migrate import migrate

_FINISHED = ("completed", "completed_with_errors")
#: (group, count) -> slice index -> (the lake it was merged in, the merged run's id).
_Merged = dict[tuple[str, int], dict[int, tuple[str, str]]]


def _slices(location: StoreLocation, name: str, merged: _Merged) -> list[dict[str, Any]]:
    """The slices of the store at ``location`` (named ``name``); a lake's slices merged there
    already go to ``merged`` instead."""
    turns = CatalogTurns(location, DEFAULT_BUSY_TIMEOUT)

    def read() -> list[tuple[Any, ...]]:
        with turns.turn(), connection(location, read_only=True) as con:
            return con.execute(
                "SELECT id, status, config FROM experiments ORDER BY started_at DESC, id"
            ).fetchall()

    rows = retry_busy(read, timeout=DEFAULT_BUSY_TIMEOUT)
    found: dict[tuple[str, int, int], dict[str, Any]] = {}
    pieces = []
    for experiment_id, status, text in rows:
        config = stored_config(text)
        shard = config.get("shard")
        if not isinstance(shard, dict):
            continue
        piece = {"store": name, "id": experiment_id, **shard}
        if not location.is_lake:
            pieces.append(piece)
            continue
        key = (shard["group"], shard["count"], shard["index"])
        if config.get("merged_into"):
            merged.setdefault(key[:2], {}).setdefault(key[2], (name, config["merged_into"]))
        elif key not in found or (
            status in _FINISHED and found[key]["status"] not in _FINISHED
        ):  # the newest run of the slice, a finished one first
            found[key] = {**piece, "status": status}
    return pieces + [{k: v for k, v in p.items() if k != "status"} for p in found.values()]


def merge_stores(
    sources: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str]
) -> list[str]:
    """Merge every complete group of shard slices found in ``sources`` into ``output``.

    Each source and ``output`` is a DuckDB file or a DuckLake store (see the module's
    docstring for a lake's slices).

    Returns:
        The ids of the merged experiments written to ``output``.

    Raises:
        StoreError: A source is unreadable, holds no shard slices (or only slices merged
            already), or a group misses slices (named) or has one twice.
    """
    destination = store_location(output)
    groups: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}
    merged: _Merged = {}
    for source in sources:
        location = store_location(source)
        name = location.text if location.is_lake else os.fspath(source)
        if not location.exists():
            raise StoreError(f"{name}: no such store")
        for piece in _slices(location, name, merged):
            slot = groups.setdefault((piece["group"], piece["count"]), {})
            if piece["index"] in slot:
                raise StoreError(
                    f"{name}: slice {piece['index']}/{piece['count']} of {piece['group']!r} "
                    f"is also in {slot[piece['index']]['store']}"
                )
            slot[piece["index"]] = piece
    if not groups:
        raise _nothing_to_merge(sources, merged, destination)
    for key, pieces in groups.items():
        missing = sorted(set(range(key[1])) - set(pieces))
        if missing:
            raise _missing(key, missing, merged.get(key, {}))
    # A lake's SQLite catalog is used in the writers' turns (a catalog used by two processes
    # at once stalls both): to read its slices, to migrate it and to write each merged run.
    turns = CatalogTurns(destination, DEFAULT_BUSY_TIMEOUT)
    retry_busy(lambda: _migrate(destination, turns), timeout=DEFAULT_BUSY_TIMEOUT)
    written: list[str] = []
    for (_, count), pieces in sorted(groups.items()):
        chosen = [pieces[i] for i in range(count)]
        written.append(
            retry_busy(lambda c=chosen: _write(destination, c, turns), timeout=DEFAULT_BUSY_TIMEOUT)  # type: ignore[misc]
        )
    return written


def _migrate(destination: StoreLocation, turns: CatalogTurns) -> None:
    with turns.turn(), connection(destination) as con:
        migrate(con, where=destination.text, timeout=DEFAULT_BUSY_TIMEOUT)


def _write(destination: StoreLocation, pieces: list[dict[str, Any]], turns: CatalogTurns) -> str:
    with turns.turn(), connection(destination) as con:
        return merge_group(con, pieces, destination=destination)


def _nothing_to_merge(
    sources: Sequence[str | os.PathLike[str]], merged: _Merged, destination: StoreLocation
) -> StoreError:
    done = sorted({where_id for slot in merged.values() for where_id in slot.values()})
    if not done:
        return StoreError(f"no sharded runs (--shard i/n) in {', '.join(map(str, sources))}")
    lake, run = done[0]
    return StoreError(
        f"{lake}: its slices were merged there already (into {', '.join(r for _, r in done)});"
        f" to have a merged run in {destination}, copy it: evalkit store copy {lake}"
        f" {destination} --experiment {run}"
    )


def _missing(
    key: tuple[str, int], missing: list[int], merged: dict[int, tuple[str, str]]
) -> StoreError:
    group, count = key
    text = f"{group!r}: slices {', '.join(f'{i}/{count}' for i in missing)} are missing"
    done = [f"{i}/{count} in {merged[i][0]} was merged there already, into {merged[i][1]}"
            for i in missing if i in merged]  # fmt: skip
    return StoreError(text + (f" ({'; '.join(done)})" if done else ""))
