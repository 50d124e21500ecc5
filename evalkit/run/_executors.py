"""Executors of a sharded run: ``local`` (in this process), ``process`` (a process pool) and
``ray`` (Ray core tasks with retries).

Each runs `run_shard` on every shard and hands the results back to the driver as they
finish; the driver alone writes the store. ``process`` and ``ray`` ship the target and the
scorers to the workers with cloudpickle (which also pickles lambdas and closures by value);
an object that cannot be pickled (an open connection, a lock, a client) is reported by name
before any worker starts.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import anyio
import pyarrow as pa

from evalkit.dataset import ColumnMap, Dataset, ItemBatches
from evalkit.errors import ConfigError, EvalkitError
from evalkit.judge import use_judge_cache
from evalkit.judge._cache import WorkerCache
from evalkit.judge.policy._registry import use_rate_share
from evalkit.run._feed import ItemFeed
from evalkit.run._item import ItemEvaluator
from evalkit.run._options import EXECUTORS, ExecutorName
from evalkit.run._progress import Progress
from evalkit.run._resume_plan import ResumeBatches
from evalkit.run._rows import RowBuffer
from evalkit.run._runner import Runner
from evalkit.run._shard_retry import ShardRetry
from evalkit.run._shards import RowGroupSource, Shard
from evalkit.run._summary import SummaryBuilder
from evalkit.run._worker import start_worker
from evalkit.scorer import Scorer
from evalkit.target import Target

#: Times a shard is run again after its worker died.
MAX_RETRIES = 3

#: Seconds between two looks at the driver's stop request while shards run.
_STOP_POLL = 0.2


@dataclass(frozen=True, slots=True)
class ShardConfig:
    """What every worker needs to run a shard (small; shipped once per worker or task).

    Attributes:
        experiment_id: The experiment the rows belong to (and the run id prefix).
        columns: The dataset's role columns, resolved on the driver.
        batch_size: Rows read at a time.
        concurrency: Items in flight at once inside a worker.
        scorer_ids: The scorers' ids, in order.
        scorer_names: Scorer names by id (for the ``scores`` rows).
        rate_share: Workers sharing each judge's rpm/tpm/max_concurrency budget.
        payload: The target and the scorers, cloudpickled (see `pack`).
        cache_path: The judge cache file workers read (None: no cache); the driver writes
            the entries they collect.
        repeats: Executions of each LLM-judged pair (``run_evals(repeats=)``).
    """

    experiment_id: str
    columns: ColumnMap
    batch_size: int
    concurrency: int
    scorer_ids: tuple[str, ...]
    scorer_names: dict[str, str]
    rate_share: int
    payload: bytes
    cache_path: str | None = None
    repeats: int = 1


@dataclass(frozen=True, slots=True)
class ShardResult:
    """A finished shard: its store rows as Arrow tables, its summary counts and the judge
    cache entries its calls collected."""

    shard: Shard
    tables: dict[str, pa.Table]
    summary: SummaryBuilder
    cache_rows: list[Any] = field(default_factory=list)


def pack(target: Target, scorers: Sequence[Scorer]) -> bytes:
    """The target and scorers as bytes for the workers.

    Raises:
        ConfigError: cloudpickle is missing, or an object cannot be pickled (named).
    """
    try:
        import cloudpickle
    except ImportError as exc:  # pragma: no cover - a dependency
        raise ConfigError("the process and ray executors need cloudpickle") from exc
    for label, obj in [("target", target), *((f"scorer {s.id!r}", s) for s in scorers)]:
        try:
            # Loaded back too: an object whose pickle cannot be read fails here, by name,
            # not in every worker after the experiment was recorded.
            cloudpickle.loads(cloudpickle.dumps(obj))
        except Exception as exc:
            raise ConfigError(
                f"{label} cannot be shipped to workers ({type(exc).__name__}: {exc}); build "
                "it from picklable parts (functions, judges, plain data), or create clients "
                "and connections lazily inside the step, or use executor='local'"
            ) from exc
    data: bytes = cloudpickle.dumps((target, tuple(scorers)))
    return data


def run_shard(shard: Shard, config: ShardConfig, retry: ShardRetry | None = None) -> ShardResult:
    """Evaluate one shard in this process with the single-machine pipeline (with ``retry``,
    only its failed pairs)."""
    import cloudpickle

    target, scorers = cloudpickle.loads(config.payload)
    with use_rate_share(config.rate_share):
        return anyio.run(_run_shard, shard, config, target, scorers, retry)


async def _run_shard(
    shard: Shard,
    config: ShardConfig,
    target: Target,
    scorers: Sequence[Scorer],
    retry: ShardRetry | None = None,
) -> ShardResult:
    dataset = Dataset(RowGroupSource(shard), config.columns, batch_size=config.batch_size)
    rows = dataset.batches(limit=shard.rows, first_index=shard.offset)
    batches: ItemBatches | ResumeBatches = rows
    items = shard.rows
    if retry is not None:
        batches, items = ResumeBatches(rows, retry.wanted), retry.items
    summary = SummaryBuilder(config.scorer_ids, items)
    buffer = RowBuffer(config.experiment_id, config.scorer_names)
    cache = None if config.cache_path is None else WorkerCache(config.cache_path)
    runner = Runner(
        experiment_id=config.experiment_id,
        feed=ItemFeed(batches),
        evaluator=ItemEvaluator(
            target,
            scorers,
            run_prefix=config.experiment_id,
            skip=retry.skip if retry is not None else None,
            outputs=retry.outputs if retry is not None else None,
            repeats=config.repeats,
        ),
        summary=summary,
        progress=Progress(items, name=f"shard {shard.index}", enabled=False),
        writer=None,
        scorer_names=config.scorer_names,
        concurrency=config.concurrency,
        max_items=items,
        keep_results=False,
        on_item_complete=buffer.add,
        flush_interval=3600.0,
    )
    async with use_judge_cache(cache):
        await runner.run()
    collected = cache.collected if cache is not None else []
    return ShardResult(shard, buffer.tables(), summary, collected)


def execute(
    shards: Sequence[Shard],
    config: ShardConfig,
    *,
    executor: ExecutorName,
    workers: int,
    target: Target,
    scorers: Sequence[Scorer],
    ray_address: str | None = None,
    stop: threading.Event | None = None,
    retries: Mapping[int, ShardRetry] | None = None,
) -> Iterator[ShardResult]:
    """Run every shard on ``executor``; yield the results in the order they finish.

    Setting ``stop`` ends it within a moment (it raises `Stopped`): pending shards
    are cancelled and running workers are ended, their shards left for a resume. With
    ``retries`` (a ``retry_errors`` pass), each shard runs only its failed pairs.
    """
    if not shards:
        return
    stop = stop if stop is not None else threading.Event()
    retries = retries or {}
    if executor == "local":
        for shard in shards:
            if stop.is_set():
                raise Stopped
            yield anyio.run(_run_shard, shard, config, target, scorers, retries.get(shard.index))
    elif executor == "process":
        yield from _process(shards, config, workers, stop, retries)
    elif executor == "ray":
        yield from _ray(shards, config, workers, ray_address, stop, retries)
    else:
        raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")


def _process(
    shards: Sequence[Shard],
    config: ShardConfig,
    workers: int,
    stop: threading.Event,
    retries: Mapping[int, ShardRetry],
) -> Iterator[ShardResult]:
    pending = {s.index: s for s in shards}
    deaths = 0
    while pending:
        # spawn: the driver runs threads (anyio), which fork must not copy; and unlike a
        # forkserver started earlier, each worker sees the environment (API keys) as it is now.
        context = multiprocessing.get_context("spawn")
        pool = concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=start_worker
        )
        with contextlib.ExitStack() as leaving:
            leaving.callback(_end_pool, pool, stop)
            futures = {
                pool.submit(run_shard, s, config, retries.get(s.index)): s for s in pending.values()
            }
            try:
                for future in _as_completed(futures, stop):
                    result: ShardResult = future.result()
                    del pending[result.shard.index]
                    yield result
            except BrokenProcessPool as exc:
                deaths += 1
                if deaths > MAX_RETRIES:
                    message = (
                        f"a worker process died {deaths} times; shards left: {sorted(pending)}"
                    )
                    if len(pending) == len(shards):
                        message += _NO_SHARD_FINISHED
                    raise EvalkitError(message) from exc
                # The pool is unusable once a worker died: the unfinished shards run again
                # in a fresh one (finished ones were already yielded and recorded).
                for future in futures:
                    future.cancel()


class Stopped(Exception):
    """The driver asked the executor to stop (the run is being cancelled)."""


def _as_completed(
    futures: Iterable[concurrent.futures.Future[Any]], stop: threading.Event
) -> Iterator[concurrent.futures.Future[Any]]:
    """The futures as they finish, looking at ``stop`` every moment in between (see
    docs/pages/design/sharded-stop.md)."""
    waiting = set(futures)
    while waiting:
        done, waiting = concurrent.futures.wait(
            waiting, timeout=_STOP_POLL, return_when=concurrent.futures.FIRST_COMPLETED
        )
        if stop.is_set():
            raise Stopped
        yield from done


def _end_pool(pool: concurrent.futures.ProcessPoolExecutor, stop: threading.Event) -> None:
    """Shut the pool down; when stopping, end its workers instead of waiting for them."""
    if not stop.is_set():
        pool.shutdown(wait=True)
        return
    processes = list(getattr(pool, "_processes", {}).values())  # no public way to end them
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()


_NO_SHARD_FINISHED = (
    " (no shard finished, so the workers fail as they start; their errors are printed above."
    " A script calling run_evals at its top level must do so under"
    ' `if __name__ == "__main__":`, because each worker imports the main module again)'
)

_RAY_ENV = {
    # Bind loopback only, keep no token file in the home folder, send no usage data.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
}


def start_local_ray(workers: int) -> None:
    """Start a local Ray cluster for this process, as ``executor="ray"`` does without an
    address: loopback only, ``workers`` CPUs, a small object store, no dashboard, quiet.

    A cluster started here stays up until ``ray.shutdown()`` (or the process ends); runs made
    meanwhile use it instead of starting their own.

    Raises:
        ConfigError: Ray is not installed.
    """
    ray = _import_ray()
    # AF_UNIX socket paths must stay under 108 bytes: a short temp folder.
    temp = tempfile.mkdtemp(prefix="ekray", dir="/tmp")
    with _quiet_ray_init():
        ray.init(
            num_cpus=workers,
            include_dashboard=False,
            object_store_memory=128 * 2**20,
            _temp_dir=temp,
            log_to_driver=False,
            configure_logging=False,
        )


def _import_ray() -> Any:
    for key, value in _RAY_ENV.items():
        os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("executor='ray' needs Ray: pip install 'evalkit-runner[ray]'") from exc
    return ray


@contextlib.contextmanager
def _quiet_ray_init() -> Iterator[None]:
    """Hide the warning Ray logs when ``init`` runs outside the main thread (the driver's
    shard loop runs in a worker thread, and SIGTERM handling is the caller's business)."""
    logger = logging.getLogger("ray._private.worker")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _ray(
    shards: Sequence[Shard],
    config: ShardConfig,
    workers: int,
    address: str | None,
    stop: threading.Event,
    retries: Mapping[int, ShardRetry],
) -> Iterator[ShardResult]:
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        if address is None:
            start_local_ray(workers)
        else:
            with _quiet_ray_init():
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        started = True
    try:
        task = ray.remote(max_retries=MAX_RETRIES)(run_shard)
        shared = ray.put(config)
        queue = list(shards)
        running: list[Any] = []
        # A bounded number of tasks in flight, so millions of shards never queue at once.
        while queue or running:
            while queue and len(running) < 2 * workers:
                shard = queue.pop(0)
                running.append(task.remote(shard, shared, retries.get(shard.index)))
            done, running = ray.wait(running, num_returns=1, timeout=_STOP_POLL)
            if stop.is_set():
                for ref in running:
                    ray.cancel(ref, force=True)
                raise Stopped
            for ref in done:
                yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()
