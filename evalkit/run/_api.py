"""``run_evals`` and ``run_evals_sync``: prepare the run once, drive it, build its result.

Why one pipeline for both drivers: docs/pages/design/one-run-pipeline.md. The options are
declared once, in `RunOptions`; the signature and docstring of ``run_evals`` are checked
against it (docs/pages/design/run-options-table.md).
"""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import anyio

from evalkit.agreement._merged import measure_merged
from evalkit.dataset import DatasetLike
from evalkit.errors import ConfigError, StoreError
from evalkit.run._checks import check_store_data_path
from evalkit.run._experiment import ExperimentResult
from evalkit.run._interrupt import (
    LATE_CTRL_C,
    CtrlC,
    RunInterrupted,
    keep_partial,
    wants_partial,
)
from evalkit.run._local import drive_local
from evalkit.run._options import DEFAULTS, ExecutorName, ItemCallback, RunOptions
from evalkit.run._result import build_result
from evalkit.run._spec import prepare
from evalkit.run._verdict_record import (
    VerdictNotKeptWarning,
    record_merged_verdict,
    record_run_verdict,
    verdict_not_kept,
)
from evalkit.scorer import Scorer
from evalkit.store._lake import prepare_store
from evalkit.store._lake_merge import merge_finished_slices
from evalkit.store._shard_writer import ShardWriter
from evalkit.store._writer import StoreWriter
from evalkit.target import TargetLike


async def run_evals(
    data: DatasetLike,
    scorers: Sequence[Scorer] | Scorer,
    *,
    target: TargetLike = None,
    concurrency: int = 8,
    store: str | os.PathLike[str] | None = DEFAULTS.store,
    experiment: str | None = None,
    description: str | None = None,
    thresholds: Mapping[str, Any] | None = None,
    max_error_rate: float | Mapping[str, float] | None = None,
    on_item_complete: ItemCallback | None = None,
    progress: bool = True,
    metadata: Mapping[str, Any] | None = None,
    keep_results: bool = True,
    limit: int | None = None,
    columns: Mapping[str, str | Sequence[str]] | None = None,
    flush_interval: float = 2.0,
    cache: bool | str | os.PathLike[str] | None = None,
    resume: str | None = None,
    retry_errors: bool = False,
    force: bool = False,
    regenerate: bool = False,
    executor: ExecutorName = "local",
    workers: int | None = None,
    shard: str | tuple[int, int] | None = None,
    ray_address: str | None = None,
    preflight: bool = True,
    lock_timeout: float = DEFAULTS.lock_timeout,
    slices: Sequence[str] = (),
    labels: Mapping[str, Any] | None = None,
    min_agreement: Mapping[str, Mapping[str, float]] | None = None,
    repeats: int = 1,
    store_data_path: str | os.PathLike[str] | None = None,
) -> ExperimentResult:
    """Run scorers over every item of a dataset and record the results.

    Args:
        data: A path (Parquet file, folder or glob; CSV, TSV, JSON Lines or JSON file; a
            Hugging Face ``save_to_disk`` folder), a pandas DataFrame, a pyarrow Table, a
            ``datasets.Dataset``, a list of dicts, a [`Source`][evalkit.dataset.Source] (e.g.
            ``open_source(query="select …")``) or a [`Dataset`][evalkit.Dataset].
        scorers: The scorers to run on every item (ids must be unique).
        target: What produces the outputs: None (the dataset's ``output`` column), a Python
            callable ``f(input, *, request_context=None)``, sync or async, or a
            [`Target`][evalkit.Target].
        concurrency: Items in flight at once, 1 to 10,000 (the ceiling; more is a
            [`ConfigError`][evalkit.errors.ConfigError]). Never more workers than items are started.
        store: The score store: a DuckDB file, or a DuckLake attach string
            (``"ducklake:sqlite:catalog.sqlite"``, ``"ducklake:postgres:dbname=evals
            host=db"``) that many processes and machines can write at once; None keeps
            everything in memory only. The run's verdict on its own gates is kept there too
            (``experiments.verdict``, ``scorer_gates``; none for a cancelled run).
        experiment: The experiment name; defaults to the dataset file's stem.
        description: Free text stored with the experiment.
        thresholds: Per scorer id, ``0.8`` (mean at least 0.8) or ``{"max": 0.1}`` (mean at
            most 0.1, for lower-is-better scorers), or both bounds.
        max_error_rate: The largest share of a scorer's pairs that may end without a score
            (the scorer failed, or the item's target did) before the scorer fails the run:
            one number for every scorer, or a mapping by scorer id. Default 0.05 for every
            scorer; 1.0 turns the gate off. A scorer with no successful score always fails.
        on_item_complete: Called (or awaited) with each [`ItemResult`][evalkit.ItemResult] as it
            finishes.
        progress: Show a progress bar on stderr.
        metadata: JSON-ready data stored with the experiment (secrets redacted).
        keep_results: Keep every item's results in memory. With False only the summaries are
            kept, so a dataset of any size runs in flat memory (the store still gets every
            row).
        limit: Evaluate only the first ``limit`` rows (0 to ``2**63 - 1``).
        columns: Map roles to differently named columns, e.g. ``{"input": "question"}``;
            ``"metadata"`` may list columns kept as each item's metadata dict.
        flush_interval: Seconds between writes to the store at most (above 0, at most
            3,600).
        cache: The judge call cache: None (default) uses ``evalkit-cache.duckdb`` beside the
            store, or none without a store; True the default file even without a store
            (``~/.cache/evalkit``); False none; a path that file. Only deterministic judges
            (temperature 0, or ``cache=True`` on the judge) are cached.
        resume: The id of a stored experiment to finish instead of starting a new one, in
            the same experiment row. An experiment resumes the way it was run: a
            single-process one by a single-process call (its pairs already scored are
            skipped, its failed and never-run pairs are run), a sharded one by a sharded call
            (``executor`` other than ``"local"``, or ``shard``, the same slice as before; its
            finished shards are skipped). Its fingerprint (dataset, scorers and their
            versions, judges, target, limit) must match this call's. A failed pair of an
            item whose target succeeded is scored on the item's stored output (the target
            is not called again); an item whose target failed is evaluated afresh.
        retry_errors: With ``resume``, run only the failed pairs (items never evaluated
            stay so); also allows resuming a ``completed_with_errors`` experiment. A sharded
            experiment's are run by a sharded call (same ``executor=``/``shard=``), in the
            finished shards that hold them.
        force: With ``resume``, resume even when the fingerprint differs (a sharded
            experiment's scorers still cannot change).
        regenerate: With ``resume`` of a single-process run, give every evaluated item that
            has a pair left to run a new output from the target, and run all of its scorers
            again on it (its earlier scores are replaced). Needs a target.
        executor: ``"local"`` (this process), ``"process"`` (a process pool) or ``"ray"``
            (Ray tasks). Anything but ``"local"``, or ``shard``, runs the Parquet dataset
            shard by shard (one row group each, see docs/pages/how-to/sharding.md); items are
            then not kept in memory and ``on_item_complete`` is refused; workers read the
            judge cache and the driver writes it.
        workers: Worker processes for ``process``/``ray`` (default: the CPUs); each judge's
            rpm, tpm and max_concurrency are divided among them.
        shard: ``"i/n"``: run only slice ``i`` of ``n`` of the shards (CI matrix jobs; join
            the stores with ``evalkit merge``).
        ray_address: An existing Ray cluster's address; None starts a local one.
        preflight: Before the first item, check every judge's API key and endpoint, and an
            OpenAI target's, with one ``GET /models`` per distinct endpoint and key (see
            [`evalkit.judge.preflight`][evalkit.judge.preflight]); False skips the check.
        lock_timeout: Seconds the run waits for a store locked by another process (a
            notebook's connection, another run) before it gives up; default 300, 0 to 86,400
            (a day). While the store is locked the run goes on, keeping its finished items and
            retrying the write with back-off; past ``lock_timeout`` of refusals, the rows not
            yet written are spilled to ``<store>.recovery/<experiment id>/`` and
            [`StoreError`][evalkit.errors.StoreError] says so.
            A resume of the experiment (or the next run writing the store, or
            [`evalkit.store.recover`][evalkit.store.recover]) loads them. The run's verdict, kept in
            the store once the run is stored, waits as long; a verdict the store cannot take is a
            [`VerdictNotKeptWarning`][evalkit.run.VerdictNotKeptWarning] and the run is returned.
        slices: Item metadata keys (``"category"``, or ``"a.b"`` for a nested key) whose
            values split the items into slices: the comparison with a baseline is then also
            made per slice and scorer (``evalkit run --slices``, the reports, ``--json``),
            with a Tarone-Holm correction over the slices. Recorded in the run's config.
        labels: Human labels, per scorer id: the dataset column holding a person's score of
            the pair on the scorer's scale (``{"rubric": "human_polite"}``), a list of columns
            (several people), or ``{"columns": [...], "levels": ["bad", "ok", "good"],
            "kind": "ordinal", "scale": [0, 1]}`` for a label set spread evenly over the
            scale. The label columns are kept as item metadata; after the run each scorer's
            agreement with them (accuracy and Cohen's kappa, quadratic-weighted kappa for
            ordinal labels, Pearson and Spearman correlation and mean absolute error for
            continuous ones, each with a bootstrap interval; Krippendorff's alpha among
            several columns) is in ``ExperimentResult.agreement`` and the store's
            ``scorer_agreement`` table. See docs/pages/how-to/judge-agreement.md.
        min_agreement: Agreement gates per scorer id, ``{"rubric": {"kappa": 0.6}}``: the
            scorer fails the run when a metric's point estimate is below its bound, is
            undefined, or has no labelled pair to be measured on.
        repeats: Executions of each pair of a scorer with prompt steps (an LLM judge), 1 to
            20: with K > 1 the pair is judged K times at once, the K - 1 repeats with the
            judge cache off (the temperature as configured); other scorers run once. A resume
            of a repeated run gives the same ``repeats``. Execution 0 is the pair's score;
            all K are in the store's ``score_repeats`` table (spread per pair in the
            ``pair_spread`` view), and the judge's self-agreement (Krippendorff's alpha
            across the executions, the mean spread, the share of pairs whose executions
            differ) is in ``ExperimentResult.stability`` and the ``judge_stability`` view.
            A judge whose alpha is below 0.667 is flagged: its regressions are not to be
            believed. See docs/pages/how-to/judge-agreement.md.
        store_data_path: Where a new DuckLake ``store`` keeps its Parquet files: a folder
            or an object-store URL (``s3://…``); by default ``<catalog file>.files/``
            beside a local catalog. An existing lake keeps its own (a different one is
            refused). See docs/pages/how-to/team-store-ducklake.md.

    Returns:
        The [`ExperimentResult`][evalkit.ExperimentResult].

    Raises:
        ConfigError: A scorer, threshold or option is invalid, or ``resume`` names an
            experiment this call cannot finish (the message says which options will).
        DatasetError: The dataset cannot be read, lacks ``input``, or lacks ``output`` with
            no target.
        StoreError: The store cannot be written, or has no experiment ``resume``.
        PreflightError: With ``preflight``, a judge's or the target's API key is missing,
            refused (401/403), or its endpoint does not answer; nothing was run or stored.
    """
    options = RunOptions(
        target=target, concurrency=concurrency, store=store, experiment=experiment,
        description=description, thresholds=thresholds, max_error_rate=max_error_rate,
        on_item_complete=on_item_complete, progress=progress, metadata=metadata,
        keep_results=keep_results, limit=limit, columns=columns,
        flush_interval=flush_interval, cache=cache, resume=resume, retry_errors=retry_errors,
        force=force, regenerate=regenerate, executor=executor, workers=workers, shard=shard,
        ray_address=ray_address, preflight=preflight, lock_timeout=lock_timeout,
        slices=tuple(slices) if isinstance(slices, list | tuple) else slices,
        labels=labels, min_agreement=min_agreement, repeats=repeats,
        store_data_path=store_data_path,
    )  # fmt: skip
    check_store_data_path(store, store_data_path)
    spec = await prepare(data, scorers, options)
    if spec.store is not None and store_data_path is not None:
        prepare_store(spec.store, data_path=store_data_path)
    writer: StoreWriter | None
    if spec.sharding is None:
        writer = None if spec.store is None else StoreWriter(spec.store, lock_timeout=lock_timeout)
        driven = await drive_local(spec, writer)
    else:
        shard_writer = (
            None if spec.store is None else ShardWriter(spec.store, lock_timeout=lock_timeout)
        )
        from evalkit.run._sharded import drive_sharded  # the process machinery, when sharded

        driven = await drive_sharded(spec, spec.sharding, shard_writer)
        writer = shard_writer
    if driven.stop is not None:
        # Cancelled, and recorded so: run_evals_sync keeps what the run did for its caller
        # (evalkit run writes its reports and says how to resume it); the stop goes on.
        if wants_partial():
            with anyio.CancelScope(shield=True):
                try:
                    keep_partial(await build_result(spec, driven, writer))
                except Exception as exc:
                    driven.stop.add_note(f"evalkit: the stopped run's result was lost: {exc}")
        raise driven.stop
    result = await build_result(spec, driven, writer)
    if spec.store is not None and not (isinstance(writer, StoreWriter) and writer.verdict_kept):
        # The run's own gates, unless its writer kept them with its outcome; ``evalkit run``
        # records it again with its regression gate.
        record = functools.partial(record_run_verdict, result, lock_timeout=lock_timeout)
        try:
            await anyio.to_thread.run_sync(record)
        except StoreError as exc:
            # Every item is scored and stored: the run is returned, never lost for its verdict.
            warnings.warn(verdict_not_kept(result, exc), VerdictNotKeptWarning, stacklevel=2)
    if spec.sharding is not None and spec.sharding.slice is not None and spec.store is not None:
        # The slices of a matrix writing one DuckLake store: the last to finish merges them.
        merged = merge_finished_slices(spec.store, result.experiment_id)
        if merged is not None:
            record_merged_verdict(spec.store, merged, agreement=measure_merged(spec.store, merged))
    return result


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _arguments_of(
    coroutine_function: Callable[_P, Coroutine[Any, Any, _T]],
) -> Callable[[Callable[..., _T]], Callable[_P, _T]]:
    """Give the decorated function the parameters of ``coroutine_function``: for type checkers
    (a wrong keyword is an error there too) and for ``inspect.signature``/``help()``."""

    def take(function: Callable[..., _T]) -> Callable[_P, _T]:
        signature = inspect.signature(coroutine_function)
        function.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=inspect.signature(function).return_annotation
        )
        return function

    return take


@_arguments_of(run_evals)
def run_evals_sync(
    data: Any,
    scorers: Sequence[Scorer] | Scorer,
    **options: Any,
) -> ExperimentResult:
    """[`run_evals`][evalkit.run_evals] for synchronous code: same arguments, same result.

    Its parameters are those of `run_evals` for type checkers and ``help()`` too: a misspelt
    keyword is a type error.

    A Ctrl-C (SIGINT) cancels the run, which is recorded ``cancelled`` with the items
    finished so far, and raises [`RunInterrupted`][evalkit.run.RunInterrupted] (a
    ``KeyboardInterrupt``) carrying that partial result; later Ctrl-Cs are absorbed until it is
    recorded. A Ctrl-C that comes after every item was scored does not cancel the run: it finishes
    as usual and is returned, with a ``RuntimeWarning`` saying so
    (docs/pages/design/ctrl-c-once.md).

    Raises:
        ConfigError: Called from inside a running event loop (``await run_evals`` there).
        RunInterrupted: Ctrl-C stopped the run before every item was scored.
    """
    call = functools.partial(run_evals, data, scorers, **options)
    ctrl_c = CtrlC()
    try:
        with ctrl_c.installed():
            result = anyio.run(ctrl_c.run, call)
            if result is None:
                raise RunInterrupted(ctrl_c.partial)
        if ctrl_c.interrupted:
            # The run had scored every item when the Ctrl-C came: it finished, and says so.
            warnings.warn(LATE_CTRL_C, RuntimeWarning, stacklevel=2)
        return result
    except RuntimeError as exc:
        if "Already running" not in str(exc):
            raise
        raise ConfigError(
            "run_evals_sync() cannot run inside an event loop; use await run_evals(...)"
        ) from exc
