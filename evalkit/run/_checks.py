"""Checking a run's options, scorers and target, and what its scorers' steps need."""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from typing import Any

from evalkit._ceilings import (
    FLUSH_INTERVAL,
    LOCK_TIMEOUT,
    MAX_REPEATS,
    ROWS,
    check_allowed,
    check_concurrency_ceiling,
)
from evalkit.dataset import Dataset
from evalkit.errors import ConfigError, DatasetError
from evalkit.scorer import Scorer, Step
from evalkit.store import is_lake, store_location
from evalkit.target import DatasetOutput, Target


def check_scorers(scorers: Any) -> tuple[Scorer, ...]:
    """At least one scorer, each with a generate_score step, ids unique."""
    if isinstance(scorers, Scorer):
        scorers = [scorers]
    if not isinstance(scorers, Sequence) or not scorers:
        raise ConfigError("scorers: give a non-empty list of scorers")
    seen: set[str] = set()
    for i, scorer in enumerate(scorers):
        if not isinstance(scorer, Scorer):
            raise ConfigError(
                f"scorers[{i}] is a {type(scorer).__name__}, not a Scorer (build one with "
                "create_scorer)"
            )
        if "generate_score" not in scorer.steps:
            raise ConfigError(f"Scorer {scorer.name!r} has no generate_score step")
        if scorer.id in seen:
            raise ConfigError(f"scorers: two scorers have the id {scorer.id!r}; pass id=...")
        seen.add(scorer.id)
    return tuple(scorers)


def check_target(target: Target, dataset: Dataset) -> None:
    """Without a target the dataset must carry the outputs."""
    if isinstance(target, DatasetOutput) and not dataset.has_output:
        raise DatasetError(
            dataset.source,
            "no output column and no target: add an 'output' column or pass target=...",
            column="output",
        )


def asks_judge(scorer: Scorer) -> bool:
    """Whether a scorer has prompt steps (so a judge cache can serve it)."""
    return any(isinstance(step, Step) for step in scorer.steps.values())


def may_suspend(scorer: Scorer) -> bool:
    """Whether a scorer can wait on I/O (async function or prompt steps).

    Such scorers of one item run as concurrent tasks; the others run one after the other
    inline, which is far cheaper than a task each.
    """
    for step in scorer.steps.values():
        if isinstance(step, Step):
            return True
        call = None if inspect.isroutine(step) else type(step).__call__
        if inspect.iscoroutinefunction(step) or inspect.iscoroutinefunction(call):
            return True
    return False


def check_resume_options(
    resume: str | None,
    store: str | os.PathLike[str] | None,
    *,
    retry_errors: bool,
    force: bool,
    regenerate: bool,
) -> None:
    """``retry_errors``, ``force`` and ``regenerate`` need ``resume``, which needs a store."""
    if resume is None and (retry_errors or force or regenerate):
        raise ConfigError("retry_errors, force and regenerate only apply with resume=EXPERIMENT_ID")
    if resume is not None and store is None:
        raise ConfigError("resume needs the store that holds the experiment (store=None given)")


def refuse_for_sharded(regenerate: bool, on_item_complete: object) -> None:
    """Refuse the options only an in-process run can honour."""
    if regenerate:
        raise ConfigError(
            "regenerate (--regenerate) gives the failed items of a single-process run new"
            " outputs; a sharded run (executor=/shard=, --executor/--shard) re-runs its failed"
            " pairs (retry_errors, --retry-errors), on their stored outputs where the target"
            " succeeded, and cannot regenerate them"
        )
    if on_item_complete is not None:
        raise ConfigError(
            "on_item_complete is not available with executor=/shard=: a sharded run's "
            "items finish in worker processes (read them from the store afterwards)"
        )


def check_run_options(
    concurrency: Any, limit: Any, flush_interval: float, repeats: Any = 1
) -> None:
    """A positive integer ``concurrency`` up to the ceiling, a ``limit`` and a flush interval
    in their ranges (``evalkit/_ceilings.py``), ``repeats`` from 1 to `MAX_REPEATS`."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be a positive integer, got {concurrency!r}")
    check_concurrency_ceiling("concurrency", concurrency)
    if limit is not None:
        check_allowed("limit", limit, ROWS)
    check_allowed("flush_interval", flush_interval, FLUSH_INTERVAL)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(
            f"repeats must be an integer from 1 to {MAX_REPEATS} (executions of each LLM-judged"
            f" pair), got {repeats!r}"
        )


def check_repeats_kept(repeats: int, store: object, kept: bool) -> None:
    """Repeated executions are measured from the store or the kept results: one of them."""
    if repeats > 1 and store is None and not kept:
        raise ConfigError(
            "repeats needs somewhere to keep the executions it measures: a store, or "
            "keep_results=True (an in-process run)"
        )


def check_lock_timeout(lock_timeout: Any) -> None:
    """A number of seconds from 0 to a day (`evalkit._ceilings.LOCK_TIMEOUT`)."""
    check_allowed("lock_timeout", lock_timeout, LOCK_TIMEOUT)


def check_store_data_path(
    store: str | os.PathLike[str] | None, data_path: str | os.PathLike[str] | None
) -> None:
    """A DuckLake attach string is well formed (before anything runs), and a data path is a
    DuckLake store's only (``store = "ducklake:…"``)."""
    if store is not None:
        store_location(store)
    if data_path is None:
        return
    if store is None or not is_lake(store):
        where = "no store" if store is None else f"the store {os.fspath(store)!r} is a DuckDB file"
        raise ConfigError(
            f"store_data_path {os.fspath(data_path)!r}: only a DuckLake store"
            f' (store="ducklake:…") has a data path, and {where}'
        )
