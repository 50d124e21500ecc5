"""``evalkit run FILE``: run an experiment file, judge it against its gates, write reports."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from evalkit.cli._build import build_directions, build_scorers, build_target, build_thresholds
from evalkit.cli._format import json_text
from evalkit.cli._main import EXIT_FAILED_GATE, EXIT_INTERRUPTED, EXIT_OK
from evalkit.cli._refs import find_experiment
from evalkit.compare import Comparison, compare_experiments
from evalkit.errors import ConfigError, StoreError
from evalkit.experiment_file import load_experiment_file
from evalkit.experiment_file._schema import RegressionSection
from evalkit.report import (
    console_failure_groups,
    console_table,
    html_report,
    junit_xml,
    markdown_summary,
)
from evalkit.report._build import build_report
from evalkit.report._model import ReportData
from evalkit.run import ExperimentResult, run_evals_sync
from evalkit.store import latest_resumable, read_experiment, read_item_scores


def _baseline(store: Path, ref: str | None, name: str) -> dict[str, Any] | None:
    """The run to compare against, found before this run starts (so it is never itself)."""
    if ref is None:
        return None
    if not store.exists():
        if ref == "latest":
            return None
        raise StoreError(f"{store}: no score store yet, so no baseline {ref!r} to compare with")
    return find_experiment(store, ref, name=name)


def write_reports(report: ReportData, folder: Path) -> dict[str, Path]:
    """Write the HTML, Markdown and JUnit reports of ``report`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", report.name).strip("-") or "experiment"
    stem = f"{stem}-{report.experiment_id}"
    paths = {
        "html": folder / f"{stem}.html",
        "markdown": folder / f"{stem}.md",
        "junit": folder / f"{stem}.junit.xml",
    }
    paths["html"].write_text(html_report(report), encoding="utf-8")
    paths["markdown"].write_text(markdown_summary(report), encoding="utf-8")
    paths["junit"].write_text(junit_xml(report), encoding="utf-8")
    return paths


def _compare(
    store: Path,
    baseline: dict[str, Any],
    result: ExperimentResult,
    directions: dict[str, Any],
    gate: RegressionSection,
) -> Comparison:
    return compare_experiments(
        read_item_scores(store, baseline["id"]),
        read_item_scores(store, result.experiment_id),
        directions=directions,
        max_drop=gate.max_drop,
        confidence=gate.confidence,
        resamples=gate.resamples,
    )


def _resume_id(args: argparse.Namespace, store: Path, name: str) -> str | None:
    """The experiment ``--resume`` designates, or None without ``--resume``."""
    if args.resume is None:
        if args.retry_errors or args.force:
            raise ConfigError("--retry-errors and --force only apply with --resume")
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
    baseline = _baseline(store, ref, config.experiment.name)
    resume = _resume_id(args, store, config.experiment.name)

    result = run_evals_sync(
        config.experiment.dataset,
        scorers,
        target=build_target(file),
        concurrency=args.concurrency or config.experiment.concurrency or 8,
        store=store,
        experiment=config.experiment.name,
        description=config.experiment.description,
        thresholds=build_thresholds(file, scorers),
        progress=not args.no_progress,
        limit=args.limit,
        metadata={"experiment_file": str(file.path)},
        cache=False if args.no_cache else None,
        resume=resume,
        retry_errors=args.retry_errors,
        force=args.force,
        preflight=not args.no_preflight,
        **_sharding(args),
    )
    comparison = None
    if baseline is not None:
        comparison = _compare(store, baseline, result, directions, gate)
    label = f"{baseline['name']} ({baseline['id']})" if baseline is not None else None
    report = build_report(result, comparison=comparison, baseline=label, directions=directions)
    paths = write_reports(report, Path(args.report_dir))

    passed = report.passed and result.status != "failed"
    compared = {c.scorer_id: c for c in comparison} if comparison is not None else {}
    if args.json:
        print(
            json_text(
                {
                    "experiment_id": result.experiment_id,
                    "name": result.name,
                    "status": result.status,
                    "passed": passed,
                    "store": str(store),
                    "baseline": baseline["id"] if baseline is not None else None,
                    "scorers": [
                        {**row.to_dict(), "comparison": compared[row.scorer_id].to_dict()}
                        if row.scorer_id in compared
                        else row.to_dict()
                        for row in report.scorers
                    ],
                    "reports": {kind: str(path) for kind, path in paths.items()},
                    "failure_groups": [group.to_dict() for group in report.failure_groups],
                }
            )
        )
    else:
        print(console_table(report))
        if report.failure_groups:
            print(console_failure_groups(report))
        if ref is not None and baseline is None:
            print(f"no earlier finished run of {config.experiment.name!r}: no regression gate")
        print(f"reports: {paths['html']}  {paths['markdown']}  {paths['junit']}")
    if result.status == "cancelled":
        return EXIT_INTERRUPTED
    if result.status == "failed":
        print(f"evalkit: every item of {result.name!r} failed", file=sys.stderr)
    return EXIT_OK if passed else EXIT_FAILED_GATE
