"""``evalkit run FILE``: run an experiment file, judge it against its gates, write reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evalkit._ceilings import check_workers_ceiling
from evalkit.agreement import REPEATS
from evalkit.cli._agreement import agreement_table, noise_shares, stability_table
from evalkit.cli._file_run import run_experiment_file
from evalkit.cli._format import json_text, one_line
from evalkit.cli._main import EXIT_FAILED_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from evalkit.cli._reports import write_reports
from evalkit.cli._slices import slices_table
from evalkit.errors import ConfigError
from evalkit.report import console_failure_groups, console_table
from evalkit.store import read_agreement


def _sharding(args: argparse.Namespace) -> dict[str, Any]:
    """The executor options of ``evalkit run``; none for a plain local run."""
    executor = getattr(args, "executor", "local")
    options: dict[str, Any] = {}
    if executor != "local":
        options["executor"] = executor
    if getattr(args, "workers", None) is not None:
        if args.workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {args.workers}")
        check_workers_ceiling("--workers", args.workers)
        options["workers"] = args.workers
    if getattr(args, "shard", None) is not None:
        options["shard"] = args.shard
    if getattr(args, "ray_address", None) is not None:
        options["ray_address"] = args.ray_address
    return options


def cmd_run(args: argparse.Namespace) -> int:
    """Run the experiment; 0 when every gate passed, 1 when a threshold or regression failed."""
    report_dir = Path(args.report_dir)
    run = run_experiment_file(
        args.file,
        report_dir=report_dir,
        store=args.store,
        store_data_path=args.store_data_path,
        baseline=args.baseline,
        limit=args.limit,
        concurrency=args.concurrency,
        progress=not args.no_progress,
        cache=not args.no_cache,
        preflight=not args.no_preflight,
        resume=args.resume,
        retry_errors=args.retry_errors,
        regenerate=args.regenerate,
        force=args.force,
        lock_timeout=args.lock_timeout,
        repeats=args.repeat,
        **_sharding(args),
    )
    result, report, comparison, error = run.result, run.report, run.comparison, run.baseline_error
    store, baseline = run.store, run.baseline
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
    shares: dict[str, float | None] = {}
    if result.stability:
        shares = noise_shares(result.stability, comparison, _baseline_noise(store, baseline))
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
                    "baseline": baseline["id"] if baseline else None,
                    "baseline_error": str(error) if error is not None else None,
                    "reports": {kind: str(path) for kind, path in paths.items()}
                    if paths is not None
                    else None,
                    "report_error": report_error,
                    "failure_groups": [group.to_dict() for group in report.failure_groups],
                    "agreement": {sid: a.to_dict() for sid, a in result.agreement.items()},
                    "stability": {
                        sid: {**st.to_dict(), "noise_share": shares.get(sid)}
                        for sid, st in result.stability.items()
                    },
                }
            )
        )
    else:
        print(console_table(report))
        if result.agreement:
            print(agreement_table(result.agreement, result.min_agreement))
        if result.stability:
            print(
                stability_table(
                    result.stability,
                    shares,
                    (c.scorer_id for c in compared.values() if c.regressed),
                )
            )
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


def _baseline_noise(store: str, baseline: dict[str, Any] | None) -> dict[str, float]:
    """The judge noise of the baseline's repeated scorers, from its stored stability."""
    if baseline is None:
        return {}
    rows = read_agreement(store, baseline["id"])
    return {r["scorer_id"]: r["value"] for r in rows
            if r["compared_with"] == REPEATS and r["metric"] == "noise_variance"
            and r["value"] is not None}  # fmt: skip
