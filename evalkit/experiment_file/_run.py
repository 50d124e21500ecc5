"""Running an experiment file as ``evalkit run`` does, without printing.

``evalkit run`` and the pytest plugin (`evalkit.pytest_plugin`) both call
[`run_experiment_file`][evalkit.experiment_file.run_experiment_file], and so can any Python
code: it checks the file and the options, finds the baseline's candidates before the run starts
(a missing named baseline fails fast), runs the file into its store and has the run judged on
every gate (``_judge_run.py``). A Ctrl-C stops the run as `InterruptedRun`, carrying what was
recorded; one that comes after every item was scored lets the run finish and be judged
(docs/pages/design/ctrl-c-once.md).

See docs/pages/design/pytest-verdict-after-the-body.md.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from evalkit._ceilings import (
    LOCK_TIMEOUT,
    MAX_REPEATS,
    ROWS,
    check_allowed,
    check_concurrency_ceiling,
)
from evalkit._ctrl_c import FINISHING_CTRL_C, ctrl_c_noted
from evalkit.compare import baseline_candidates
from evalkit.errors import ConfigError, StoreError
from evalkit.experiment_file._build import (
    FileBuilder,
    build_directions,
    build_error_rates,
    build_min_agreement,
)
from evalkit.experiment_file._dataset import open_dataset
from evalkit.experiment_file._judge_run import JudgedRun, judge_result
from evalkit.experiment_file._load import load_experiment_file
from evalkit.experiment_file._regression import RegressionSection
from evalkit.run import RunInterrupted, RunOptions, VerdictNotKeptWarning, run_evals_sync
from evalkit.store import latest_resumable, read_experiment, store_exists, store_location

#: ``run_evals``' defaults, for the options neither the call nor the file sets.
_DEFAULTS = RunOptions()


class InterruptedRun(KeyboardInterrupt):
    """Ctrl-C stopped the run of an experiment file before every item was scored.

    Attributes:
        judged: The run as it stopped (status ``cancelled``), judged on its own gates with no
            baseline, for its partial reports; None when nothing of it was recorded.
    """

    def __init__(self, judged: JudgedRun | None) -> None:
        super().__init__(*(() if judged is None else (judged.result.experiment_id,)))
        self.judged = judged


def check_report_dir(folder: Path) -> None:
    """Make ``folder`` (with its parents) and check a file can be created in it.

    Raises:
        ConfigError: ``folder`` or a parent is a file, or nothing can be written there.
    """
    for path in (folder, *folder.parents):
        if path.exists():
            if not path.is_dir():
                shown = "this path" if path == folder else str(path)
                raise ConfigError(f"--report-dir {folder}: {shown} is not a folder")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".evalkit-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(
            f"--report-dir {folder}: cannot write reports there ({exc.strerror or exc})"
        ) from exc


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
    lock_timeout: float = _DEFAULTS.lock_timeout,
    report_dir: str | os.PathLike[str] | None = None,
    repeats: int | None = None,
    executor: str = _DEFAULTS.executor,
    workers: int | None = None,
    shard: str | None = None,
    ray_address: str | None = None,
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
        executor: Where shards run: ``"local"``, ``"process"`` or ``"ray"`` (``run_evals``).
        workers: Worker processes of a sharded run (``run_evals``).
        shard: ``"i/n"``: run only slice ``i`` of ``n`` of the shards (``run_evals``).
        ray_address: An existing Ray cluster's address (``run_evals``).

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
    if limit is not None:
        check_allowed("--limit", limit, ROWS)
    if concurrency is not None and concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    if concurrency is not None:
        check_concurrency_ceiling("--concurrency", concurrency)
    if repeats is not None and not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"--repeat must be from 1 to {MAX_REPEATS}, got {repeats}")
    check_allowed("--lock-timeout", lock_timeout, LOCK_TIMEOUT)
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
    # The executor options given: any of them reads the dataset as a sharded run does (its
    # path, for the row groups).
    given: dict[str, Any] = {"workers": workers, "shard": shard, "ray_address": ray_address}
    given = {key: value for key, value in given.items() if value is not None}
    if executor != _DEFAULTS.executor:
        given["executor"] = executor
    data, columns = open_dataset(file, sharded=bool(given))
    try:
        with warnings.catch_warnings():
            # judge_result keeps the verdict again and says if it could not: one message.
            warnings.simplefilter("ignore", VerdictNotKeptWarning)
            result = run_evals_sync(
                data,
                scorers,
                columns=columns,
                target=built.target,
                concurrency=concurrency or config.experiment.concurrency or _DEFAULTS.concurrency,
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
                repeats=(
                    repeats
                    if repeats is not None
                    else config.experiment.repeats or _DEFAULTS.repeats
                ),
                **given,
            )
    except RunInterrupted as stop:
        judged = None
        if stop.result is not None:
            with ctrl_c_noted():  # the stop is under way: another Ctrl-C changes nothing
                judged = judge_result(stop.result, where, None, [], directions, gate, lock_timeout)
        raise InterruptedRun(judged) from stop
    with ctrl_c_noted() as late:
        run = judge_result(result, where, ref, runs, directions, gate, lock_timeout)
    if late:
        warnings.warn(FINISHING_CTRL_C, RuntimeWarning, stacklevel=2)
    return run
