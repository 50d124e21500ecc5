"""Running an experiment file and judging it as ``evalkit run`` does, without printing.

``evalkit run`` and the pytest plugin (:mod:`evalkit.pytest_plugin`) both call
:func:`run_experiment_file`, so a test and the nightly job judge a run the same way: the
thresholds, the error-rate gates and the regression gate against the file's baseline.

See docs/pages/design/pytest-verdict-after-the-body.md.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa

from evalkit._ceilings import MAX_REPEATS, check_concurrency_ceiling
from evalkit.cli._build import (
    FileBuilder,
    build_directions,
    build_error_rates,
    build_min_agreement,
)
from evalkit.cli._dataset import open_dataset
from evalkit.cli._reports import check_report_dir, explain_from_store
from evalkit.cli._slices import stored_slices
from evalkit.compare import (
    LATEST,
    LATEST_COMPLETE,
    Baseline,
    Comparison,
    SliceComparison,
    baseline_candidates,
    choose_baseline,
    compare_experiments,
)
from evalkit.errors import BaselineError, ConfigError, StoreError
from evalkit.experiment_file import RegressionSection, load_experiment_file
from evalkit.report import ReportData, build_report
from evalkit.run import ExperimentResult, RunInterrupted, record_run_verdict, run_evals_sync
from evalkit.store import (
    latest_resumable,
    read_experiment,
    read_item_scores,
    store_exists,
    store_location,
)


@dataclass(frozen=True, slots=True)
class JudgedRun:
    """A run judged as ``evalkit run`` judges it.

    Attributes:
        result: The run.
        report: The verdict and the report's data (per-scorer rows, worst items, failure
            groups), as ``evalkit run`` prints and writes it.
        comparison: The run against its baseline, or None without one.
        baseline: The baseline run's stored row, or None.
        baseline_note: Why there is no baseline, when there is none.
        baseline_reason: Why the baseline was chosen ("newest passing run", "pinned by
            alice: v2 is the new normal", "named explicitly"), when there is one.
        baseline_error: Why the baseline named explicitly cannot be used (the run is stored).
        store: The store written.
        verdict_error: Why the verdict could not be kept in the store (another process held
            it past the lock timeout, a read-only store): the run is stored and judged, its
            stored verdict is missing or covers its own gates only. ``evalkit run`` still
            writes the reports and prints the verdict, says so and exits 2 (1 if a gate
            failed).
    """

    result: ExperimentResult
    report: ReportData
    comparison: Comparison | None
    baseline: dict[str, Any] | None
    baseline_note: str | None
    baseline_error: BaselineError | None
    store: str
    baseline_reason: str | None = None
    verdict_error: StoreError | None = None

    @property
    def passed(self) -> bool:
        """Every gate passed and the baseline, if one was named, could be used."""
        return self.report.passed and self.baseline_error is None


class InterruptedRun(KeyboardInterrupt):
    """Ctrl-C stopped the run of an experiment file before every item was scored.

    Attributes:
        judged: The run as it stopped (status ``cancelled``), judged on its own gates with no
            baseline, for its partial reports; None when nothing of it was recorded.
    """

    def __init__(self, judged: JudgedRun | None) -> None:
        super().__init__(*(() if judged is None else (judged.result.experiment_id,)))
        self.judged = judged


#: What a Ctrl-C that came while a finished run was judged or reported leads to.
FINISHING_CTRL_C = (
    "evalkit: Ctrl-C after every item was scored: the run is finished (its verdict and"
    " reports are written)"
)


@contextlib.contextmanager
def ctrl_c_noted() -> Iterator[list[int]]:
    """Inside the block a Ctrl-C is noted in the list yielded, not obeyed.

    For the moments after a run was recorded: a run that scored every item is being judged
    and reported (stopping that would leave a finished run without its verdict and reports),
    or a stopped run is being reported. See docs/pages/design/ctrl-c-once.md. In the main
    thread only; elsewhere, nothing changes.
    """
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def note(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _compare(
    store: str,
    baseline: dict[str, Any],
    result: ExperimentResult,
    directions: dict[str, Any],
    gate: RegressionSection,
) -> tuple[Comparison, tuple[pa.Table, pa.Table]]:
    """The comparison, and the two runs' scores it read (the slices reuse them)."""
    scores = read_item_scores(store, baseline["id"]), read_item_scores(store, result.experiment_id)
    return compare_experiments(
        *scores,
        directions=directions,
        max_drop=gate.max_drop,
        confidence=gate.confidence,
        resamples=gate.resamples,
    ), scores


def _judge_against(
    store: str,
    ref: str,
    runs: list[Baseline],
    result: ExperimentResult,
    directions: dict[str, Any],
    gate: RegressionSection,
) -> tuple[Baseline, Comparison | None, tuple[pa.Table, pa.Table] | None]:
    """The baseline this run pairs with, the comparison with it and the scores it read.

    Raises:
        BaselineError: The baseline was named explicitly and cannot be compared.
    """
    candidate = {
        "id": result.experiment_id,
        "name": result.name,
        "dataset_fingerprint": result.dataset_fingerprint,
    }
    baseline = choose_baseline(
        store, runs, ref=ref, candidate=candidate, min_paired=gate.min_paired
    )
    if baseline.run is None:
        return baseline, None, None
    comparison, scores = _compare(store, baseline.run, result, directions, gate)
    if all(c.verdict == "not_comparable" for c in comparison):
        reason = f"run {baseline.run['id']} has no item scored by the same scorer in both runs"
        if ref not in (LATEST, LATEST_COMPLETE):
            raise BaselineError(ref, reason)
        return Baseline(None, f"no baseline: {reason}; judged on its own gates only"), None, None
    return baseline, comparison, scores


def _resume_id(
    resume: str | None, store: str, name: str, *, retry_errors: bool, others: bool
) -> str | None:
    """The experiment ``resume`` designates ("" for the newest unfinished one), or None."""
    if resume is None:
        if retry_errors or others:
            raise ConfigError("--retry-errors, --regenerate and --force only apply with --resume")
        return None
    if not store_exists(store):
        raise StoreError(f"{store}: no score store yet, so no run to resume")
    if resume:
        found: str = read_experiment(store, resume)["id"]
        return found
    return latest_resumable(store, name=name, retry_errors=retry_errors)


def run_experiment_file(
    path: str | os.PathLike[str],
    *,
    store: str | os.PathLike[str] | None = None,
    store_data_path: str | os.PathLike[str] | None = None,
    baseline: str | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    progress: bool = False,
    cache: bool = True,
    preflight: bool = True,
    resume: str | None = None,
    retry_errors: bool = False,
    regenerate: bool = False,
    force: bool = False,
    lock_timeout: float = 300.0,
    report_dir: str | os.PathLike[str] | None = None,
    repeats: int | None = None,
    **executor: Any,
) -> JudgedRun:
    """Run an experiment file into its store and judge it on every gate of ``evalkit run``.

    Args:
        path: The experiment's TOML file.
        store: Another store than the file's (a file, or a ``ducklake:`` attach string).
        store_data_path: Another data path than the file's, for a new DuckLake store.
        baseline: Another baseline than the file's ``[regression] baseline``.
        limit: Evaluate only the first rows.
        concurrency: Items in flight (default: the file's, else 8).
        progress: Show a progress bar.
        cache: Use the judge call cache.
        preflight: Check the judges' and the target's keys and endpoints first.
        resume: Finish a stored run (an id or prefix; "" for the newest unfinished one).
        retry_errors: With ``resume``: re-run only the failed pairs.
        regenerate: With ``resume``: ask the target again for items with a failed pair.
        force: With ``resume``: resume even if the setup changed.
        lock_timeout: Seconds to keep retrying a store another process holds before the
            unwritten rows are spilled to its recovery folder (``run_evals(lock_timeout=)``).
        report_dir: A folder the reports will be written to, checked before the run starts
            (the reports themselves are the caller's to write).
        repeats: Executions of each LLM-judged pair (default: the file's, else 1).
        **executor: ``executor``, ``workers``, ``shard``, ``ray_address`` of ``run_evals``.

    Raises:
        ExperimentFileError: The file is not a valid experiment.
        EvalkitError: The run could not start (data, store, preflight, a missing baseline).
        InterruptedRun: Ctrl-C stopped the run (a ``KeyboardInterrupt`` carrying it, judged
            on its own gates, for its partial reports). A Ctrl-C after every item was scored
            lets the run finish and be judged instead.
    """
    built = FileBuilder()
    # Scorer names, imports and thresholds are checked with the schema: one error lists all.
    file = load_experiment_file(path, check=built)
    config = file.config
    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be zero or more, got {limit}")
    if concurrency is not None and concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    if concurrency is not None:
        check_concurrency_ceiling("--concurrency", concurrency)
    if repeats is not None and not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"--repeat must be from 1 to {MAX_REPEATS}, got {repeats}")
    if not math.isfinite(lock_timeout) or lock_timeout < 0:
        raise ConfigError(f"--lock-timeout must be a number of seconds >= 0, got {lock_timeout}")
    where = store_location(store if store is not None else config.experiment.store).text
    scorers = built.scorers
    directions = build_directions(file, scorers)
    gate = config.regression or RegressionSection()
    ref = baseline or (config.regression.baseline if config.regression else None)
    resume_id = _resume_id(
        resume,
        where,
        config.experiment.name,
        retry_errors=retry_errors,
        others=regenerate or force,
    )
    # Found before the run starts, so a missing or unusable named baseline fails fast.
    runs = (
        baseline_candidates(where, ref, name=config.experiment.name, exclude=resume_id)
        if ref is not None
        else []
    )
    if report_dir is not None:
        check_report_dir(Path(report_dir))
    data, columns = open_dataset(file, sharded=bool(executor))
    try:
        result = run_evals_sync(
            data,
            scorers,
            columns=columns,
            target=built.target,
            concurrency=concurrency or config.experiment.concurrency or 8,
            store=where,
            store_data_path=(
                store_data_path
                if store_data_path is not None
                else config.experiment.store_data_path
            ),
            experiment=config.experiment.name,
            description=config.experiment.description,
            thresholds=built.thresholds,
            max_error_rate=build_error_rates(file, scorers),
            progress=progress,
            limit=limit,
            metadata={"experiment_file": str(file.path)},
            cache=False if not cache else None,
            resume=resume_id,
            retry_errors=retry_errors,
            regenerate=regenerate,
            force=force,
            preflight=preflight,
            lock_timeout=lock_timeout,
            slices=config.experiment.slices,
            labels=config.experiment.labels or None,
            min_agreement=build_min_agreement(file, scorers) or None,
            repeats=repeats if repeats is not None else config.experiment.repeats or 1,
            **executor,
        )
    except RunInterrupted as stop:
        judged = None
        if stop.result is not None:
            with ctrl_c_noted():  # the stop is under way: another Ctrl-C changes nothing
                judged = _judged(stop.result, where, None, [], directions, gate, lock_timeout)
        raise InterruptedRun(judged) from stop
    with ctrl_c_noted() as late:
        run = _judged(result, where, ref, runs, directions, gate, lock_timeout)
    if late:
        warnings.warn(FINISHING_CTRL_C, RuntimeWarning, stacklevel=2)
    return run


def _judged(
    result: ExperimentResult,
    store: str,
    ref: str | None,
    runs: list[Baseline],
    directions: dict[str, Any],
    gate: RegressionSection,
    lock_timeout: float = 300.0,
) -> JudgedRun:
    chosen, comparison, error = Baseline(None), None, None
    scores: tuple[pa.Table, pa.Table] | None = None
    if ref is not None and result.status != "cancelled":
        try:
            chosen, comparison, scores = _judge_against(store, ref, runs, result, directions, gate)
        except BaselineError as exc:
            error = exc
    label = f"{chosen.run['name']} ({chosen.run['id']})" if chosen.run else None
    slices: tuple[SliceComparison, ...] = ()
    explain: dict[str, Any] = {}
    if chosen.run is not None and comparison is not None:
        slices = stored_slices(
            store, chosen.run["id"], result.experiment_id, result.slices,
            directions=directions, max_drop=gate.max_drop, confidence=gate.confidence,
            resamples=gate.resamples, overall=comparison, scores=scores,
        )  # fmt: skip
        explain = explain_from_store(
            store, chosen.run["id"], result.experiment_id, slices=list(result.slices)
        )
    report = build_report(
        result,
        comparison=comparison,
        baseline=label,
        baseline_note=chosen.note,
        baseline_reason=chosen.reason,
        directions=directions,
        slices=slices,
        **explain,
    )
    judged = JudgedRun(
        result=result,
        report=report,
        comparison=comparison,
        baseline=chosen.run,
        baseline_note=chosen.note,
        baseline_error=error,
        store=store,
        baseline_reason=chosen.reason,
    )
    # The whole verdict, regression gate included, replaces the one run_evals kept.
    try:
        record_run_verdict(
            result,
            comparison=comparison,
            reasons={row.scorer_id: row.reasons for row in report.scorers},
            passed=judged.passed,
            baseline_id=chosen.run["id"] if chosen.run is not None else None,
            baseline_reason=chosen.reason or (str(error) if error is not None else chosen.note),
            lock_timeout=lock_timeout,
        )
    except StoreError as exc:
        # The run is stored and judged: its reports and verdict are still given (the caller
        # says the verdict was not kept), never lost for want of this write.
        return replace(judged, verdict_error=exc)
    return judged


def judge_run(
    result: ExperimentResult,
    *,
    baseline: str | None = None,
    max_drop: float = 0.0,
    directions: dict[str, Any] | None = None,
    lock_timeout: float = 300.0,
) -> JudgedRun:
    """Judge a stored run from Python on every gate of ``evalkit run``.

    Args:
        result: A run written to a store (``run_evals(..., store=...)``).
        baseline: ``"latest"`` (the newest complete, full run of the same name that passed
            and pairs with it, or the pinned run; none on the first run),
            ``"latest-complete"`` (the newest such run whatever its verdict), a run name or
            an id; None for no regression gate.
        max_drop: The drop in a scorer's mean the regression gate tolerates.
        directions: ``"higher"`` or ``"lower"`` per scorer id (default higher).
        lock_timeout: Seconds a store held by another process is retried when the verdict
            is kept; past them the verdict is returned with ``verdict_error`` set.

    Raises:
        ConfigError: The run was not stored.
    """
    if result.store is None:
        raise ConfigError(f"experiment {result.name!r} was not stored: no baseline to judge by")
    store = result.store
    runs = (
        baseline_candidates(store, baseline, name=result.name, exclude=result.experiment_id)
        if baseline is not None
        else []
    )
    gate = RegressionSection(max_drop=max_drop)
    return _judged(result, store, baseline, runs, dict(directions or {}), gate, lock_timeout)
