"""A sharded run's setup: its executor and workers checked, its shards chosen, its target and
scorers packed for the workers.

`prepare` sets one up when a run goes shard by shard (``executor=``
or ``shard=``); the sharded driver (``_sharded.py``) runs what it describes. Why shards are
row groups: docs/pages/design/sharding-by-row-group.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalkit._ceilings import check_workers_ceiling
from evalkit.dataset import DatasetLike
from evalkit.errors import ConfigError
from evalkit.run._options import EXECUTORS, ExecutorName
from evalkit.run._shard_retry import ShardRetry
from evalkit.run._shards import Shard, parse_shard_spec, plan_shards, select_shards
from evalkit.scorer import Scorer
from evalkit.target import Target


@dataclass(frozen=True, slots=True)
class Sharding:
    """How a sharded run splits its Parquet dataset and where the shards run.

    Attributes:
        executor: ``"local"``, ``"process"`` or ``"ray"``.
        workers: Worker processes (each judge's rate budget is divided among them).
        slice: ``(i, n)`` for slice ``i`` of ``n`` of the shards, or None for all of them.
        shards: The shards of this run (the slice's, after any ``limit``).
        ray_address: An existing Ray cluster's address, or None.
        payload: The target and scorers cloudpickled for the workers (empty for ``local``).
        retries: With ``retry_errors``, per shard index the failed pairs a retry pass runs
            again in that finished shard (see ``_shard_retry.py``); None otherwise.
    """

    executor: ExecutorName
    workers: int
    slice: tuple[int, int] | None
    shards: tuple[Shard, ...]
    ray_address: str | None
    payload: bytes
    retries: Mapping[int, ShardRetry] | None = None


def check_sharding(
    data: DatasetLike, executor: str, workers: int | None, shard: str | tuple[int, int] | None
) -> tuple[int, tuple[int, int] | None]:
    """The workers and the slice of a sharded run, checked."""
    if executor not in EXECUTORS:
        raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    count = workers if workers is not None else (1 if executor == "local" else _cpus())
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    check_workers_ceiling("workers", count)
    if not isinstance(data, (str, Path)):
        raise ConfigError(
            f"executor={executor!r} and shard need a Parquet file or folder path as data "
            f"(shards are its row groups), not a {type(data).__name__}"
        )
    return count, parse_shard_spec(shard)


def plan_sharding(
    source: str,
    *,
    executor: ExecutorName,
    workers: int,
    piece: tuple[int, int] | None,
    limit: int | None,
    ray_address: str | None,
    target: Target,
    scorers: Sequence[Scorer],
) -> Sharding:
    """The shards of the dataset at ``source`` this run evaluates, and how they run."""
    shards = select_shards(plan_shards(source, limit=limit), piece)
    if executor == "local":
        payload = b""
    else:
        # The process machinery (multiprocessing, the worker) only for a run that uses it.
        from evalkit.run._executors import pack

        payload = pack(target, scorers)
    return Sharding(executor, workers, piece, shards, ray_address, payload)


def _cpus() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
