"""``evalkit run FILE``: run an experiment file, judge it against its gates, write reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalkit.cli._baseline import Baseline, candidates, choose
from evalkit.cli._build import (
    build_directions,
    build_error_rates,
    build_scorers,
    build_target,
    build_thresholds,
)
from evalkit.cli._format import json_text, one_line
from evalkit.cli._main import EXIT_FAILED_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from evalkit.cli._reports import check_report_dir, explain_from_store, write_reports
from evalkit.cli._slices import slices_table, stored_slices
from evalkit.compare import Comparison, SliceComparison, compare_experiments
from evalkit.errors import BaselineError, ConfigError, StoreError
from evalkit.experiment_file import RegressionSection, load_experiment_file
from evalkit.report import (
    build_report,
    console_failure_groups,
    console_table,
)
from evalkit.run import ExperimentResult, run_evals_sync
from evalkit.store import latest_resumable, read_experiment, read_item_scores


def _compare(
    store: Path,
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
    store: Path,
    ref: str,
    runs: list[dict[str, Any]],
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
    others = [r for r in runs if r["id"] != result.experiment_id]
    baseline = choose(store, others, ref=ref, candidate=candidate, min_paired=gate.min_paired)
    if baseline.run is None:
        return baseline, None, None
    comparison, scores = _compare(store, baseline.run, result, directions, gate)
    if all(c.verdict == "not_comparable" for c in comparison):
        reason = f"run {baseline.run['id']} has no item scored by the same scorer in both runs"
        if ref != "latest":
            raise BaselineError(ref, reason)
        return Baseline(None, f"no baseline: {reason}; judged on its own gates only"), None, None
    return baseline, comparison, scores


def _resume_id(args: argparse.Namespace, store: Path, name: str) -> str | None:
    """The experiment ``--resume`` designates, or None without ``--resume``."""
    if args.resume is None:
        if args.retry_errors or args.force or args.regenerate:
            raise ConfigError("--retry-errors, --regenerate and --force only apply with --resume")
        return None
    if not store.exists():
        raise StoreError(f"{store}: no score store yet, so no run to resume")
    if args.resume:
        found: str = read_experiment(store, args.resume)["id"]
        return found
    return latest_resumable(store, name=name, retry_errors=args.retry_errors)


def _sharding(args: argparse.Namespace) -> dict[str, Any]:
    """The executor options of ``evalkit run``; none for a plain local run."""
    executor = getattr(args, "executor", "local")
    options: dict[str, Any] = {}
    if executor != "local":
        options["executor"] = executor
    if getattr(args, "workers", None) is not None:
        if args.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {args.workers}")
        options["workers"] = args.workers
    if getattr(args, "shard", None) is not None:
        options["shard"] = args.shard
    if getattr(args, "ray_address", None) is not None:
        options["ray_address"] = args.ray_address
    return options


def cmd_run(args: argparse.Namespace) -> int:
    """Run the experiment; 0 when every gate passed, 1 when a threshold or regression failed."""
    file = load_experiment_file(args.file)
    config = file.config
    if args.limit is not None and args.limit < 0:
        raise ConfigError(f"--limit must be zero or more, got {args.limit}")
    if args.concurrency is not None and args.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {args.concurrency}")
    store = Path(args.store) if args.store else config.experiment.store
    scorers = build_scorers(file)
    directions = build_directions(file, scorers)
    gate = config.regression or RegressionSection()
    ref = args.baseline or (config.regression.baseline if config.regression else None)
    # Found before the run starts, so a missing or unusable named baseline fails fast.
    runs = candidates(store, ref, name=config.experiment.name) if ref is not None else []
    resume = _resume_id(args, store, config.experiment.name)
    report_dir = Path(args.report_dir)
    check_report_dir(report_dir)

    result = run_evals_sync(
        config.experiment.dataset,
        scorers,
        target=build_target(file),
        concurrency=args.concurrency or config.experiment.concurrency or 8,
        store=store,
        experiment=config.experiment.name,
        description=config.experiment.description,
        thresholds=build_thresholds(file, scorers),
        max_error_rate=build_error_rates(file, scorers),
        progress=not args.no_progress,
        limit=args.limit,
        metadata={"experiment_file": str(file.path)},
        cache=False if args.no_cache else None,
        resume=resume,
        retry_errors=args.retry_errors,
        regenerate=args.regenerate,
        force=args.force,
        preflight=not args.no_preflight,
        slices=config.experiment.slices,
        **_sharding(args),
    )
    baseline, comparison, error = Baseline(None), None, None
    scores: tuple[pa.Table, pa.Table] | None = None
    if ref is not None and result.status != "cancelled":
        try:
            baseline, comparison, scores = _judge_against(
                store, ref, runs, result, directions, gate
            )
        except BaselineError as exc:
            error = exc
    label = f"{baseline.run['name']} ({baseline.run['id']})" if baseline.run else None
    slices: tuple[SliceComparison, ...] = ()
    explain: dict[str, Any] = {}
    if baseline.run is not None and comparison is not None:
        slices = stored_slices(
            store, baseline.run["id"], result.experiment_id, result.slices,
            directions=directions, max_drop=gate.max_drop, confidence=gate.confidence,
            resamples=gate.resamples, overall=comparison, scores=scores,
        )  # fmt: skip
        explain = explain_from_store(
            store, baseline.run["id"], result.experiment_id, slices=list(result.slices)
        )
    report = build_report(
        result,
        comparison=comparison,
        baseline=label,
        baseline_note=baseline.note,
        directions=directions,
        slices=slices,
        **explain,
    )
    paths: dict[str, Path] | None = None
    report_error: str | None = None
    try:
        paths = write_reports(report, report_dir)
    except OSError as exc:
        # The run is stored: a report lost is worth a warning, not the verdict.
        report_error = f"cannot write the reports to {report_dir}: {exc.strerror or exc}"
        print(
            f"evalkit: warning: {report_error} (the run is stored as {result.experiment_id})",
            file=sys.stderr,
        )

    compared = {c.scorer_id: c for c in comparison} if comparison is not None else {}
    if args.json:
        verdict = report.to_dict()
        verdict["scorers"] = [
            {**row, "comparison": compared[row["scorer_id"]].to_dict()}
            if row["scorer_id"] in compared
            else row
            for row in verdict["scorers"]
        ]
        print(
            json_text(
                {
                    **verdict,
                    "store": str(store),
                    "baseline": baseline.run["id"] if baseline.run else None,
                    "baseline_error": str(error) if error is not None else None,
                    "reports": {kind: str(path) for kind, path in paths.items()}
                    if paths is not None
                    else None,
                    "report_error": report_error,
                    "failure_groups": [group.to_dict() for group in report.failure_groups],
                }
            )
        )
    else:
        print(console_table(report))
        if report.slices and (args.slices or any(r.flagged for r in report.slices)):
            print(slices_table(report.slices))
        elif report.slices:
            regressed = sorted({f"{r.key}={r.value}" for r in report.slices
                                if r.verdict == "regressed"})  # fmt: skip
            if regressed:
                print("slices that regressed: " + ", ".join(one_line(s) for s in regressed)
                      + " (--slices for the table)")  # fmt: skip
        if report.failure_groups:
            print(console_failure_groups(report))
        if paths is not None:
            print("reports: " + "  ".join(one_line(str(path)) for path in paths.values()))
    if result.status == "cancelled":
        return EXIT_INTERRUPTED
    if error is not None:
        print(
            f"evalkit: error: {error} (this run is stored as {result.experiment_id})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if result.status == "failed":
        print(f"evalkit: every item of {result.name!r} failed", file=sys.stderr)
    return EXIT_OK if report.passed else EXIT_FAILED_GATE
