"""``evalkit run FILE``: run an experiment file, judge it against its gates, write reports.

A folder that cannot hold the reports is a usage error before any item is evaluated (nothing
is stored, nothing is paid for: `run_experiment_file` checks it); one that fails after the run
is stored is a warning, and the exit code stays what the gates say: the run is in the store
either way.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from evalkit._ceilings import check_workers_ceiling
from evalkit._ctrl_c import FINISHING_CTRL_C, ctrl_c_noted
from evalkit.cli._exit import EXIT_FAILED_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from evalkit.cli._format import json_text, one_line
from evalkit.cli._slices import slices_table
from evalkit.errors import ConfigError
from evalkit.experiment_file import InterruptedRun, JudgedRun, run_experiment_file
from evalkit.report import write_reports
from evalkit.report._text import console_failure_groups, console_table


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
    try:
        run = _run_file(args, report_dir)
    except InterruptedRun as stop:
        return _interrupted(args, stop.judged, report_dir)
    # Every item is scored and the run stored: a Ctrl-C now would only lose its reports.
    with ctrl_c_noted() as late:
        code = report_run(args, run, report_dir)
    if late:
        print(FINISHING_CTRL_C, file=sys.stderr)
    return code


def _run_file(args: argparse.Namespace, report_dir: Path) -> JudgedRun:
    return run_experiment_file(
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


def report_run(args: argparse.Namespace, run: JudgedRun, report_dir: Path) -> int:
    """Print the finished run's verdict and write its reports; the exit code (2 when the
    verdict could not be kept in the store and no gate failed)."""
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
    if result.agreement or result.stability:
        # Only a run with labels or repeats prints these (numpy, the agreement package).
        from evalkit.agreement import noise_shares
        from evalkit.cli._agreement import agreement_table, stability_table
    if result.stability:
        if baseline is None:
            shares = noise_shares(result.stability, comparison)
        else:
            shares = noise_shares(
                result.stability, comparison, store=store, baseline_id=baseline["id"]
            )
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
                    "verdict_error": str(run.verdict_error) if run.verdict_error else None,
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
    if run.verdict_error is not None:
        print(not_kept(run), file=sys.stderr)
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
    if not report.passed:
        return EXIT_FAILED_GATE
    # A passing run whose verdict the store does not hold is not a success to report.
    return EXIT_USAGE if run.verdict_error is not None else EXIT_OK


def not_kept(run: JudgedRun) -> str:
    """The stderr line of a run whose verdict could not be kept in its store."""
    result = run.result
    verdict = "passed" if run.passed else "failed"
    return (
        f"evalkit: error: cannot keep the verdict of {one_line(result.name)!r}"
        f" ({result.experiment_id}), {verdict}, in the store {one_line(run.store)}:"
        f" {one_line(str(run.verdict_error))}. The run and its reports are kept, but its stored"
        " verdict is missing or covers its own gates only (no regression gate), so"
        " `evalkit experiments`, `show` and the next run's `latest` baseline do not know it."
        " No command judges a stored run again: run the experiment again once the store is"
        " writable."
    )


def _interrupted(args: argparse.Namespace, stopped: JudgedRun | None, report_dir: Path) -> int:
    """Ctrl-C stopped the run: write its partial reports and say how to resume it (stderr)."""
    # From here on the process only reports and exits: later Ctrl-Cs are absorbed
    # (docs/pages/design/ctrl-c-once.md).
    with contextlib.suppress(ValueError):  # not the main thread: nothing to absorb
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if stopped is None:  # stopped before its experiment was written: nothing to resume
        print("evalkit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    result = stopped.result
    summary = result.summary
    print(
        f"evalkit: interrupted: {result.name!r} ({result.experiment_id}) is stored"
        f" {result.status} after {summary.processed} of {summary.total_items} items",
        file=sys.stderr,
    )
    try:
        paths = write_reports(stopped.report, report_dir)
        print("evalkit: partial reports: " + "  ".join(one_line(str(p)) for p in paths.values()),
              file=sys.stderr)  # fmt: skip
    except OSError as exc:
        print(f"evalkit: warning: cannot write the partial reports to {report_dir}:"
              f" {exc.strerror or exc}", file=sys.stderr)  # fmt: skip
    print(f"evalkit: resume it with: {resume_command(args, result.experiment_id)}",
          file=sys.stderr)  # fmt: skip
    return EXIT_INTERRUPTED


def resume_command(args: argparse.Namespace, experiment_id: str) -> str:
    """The ``evalkit run`` command line that resumes ``experiment_id`` as ``args`` ran it:
    the options a resume needs to find the run (``--store``), to be allowed to resume it
    (``--limit``, ``--repeat``; a sharded run's ``--executor``, ``--workers``, ``--shard``,
    ``--ray-address``), and that shape what it does or writes (``--retry-errors``,
    ``--regenerate``, ``--baseline``, ``--report-dir``)."""
    words = ["evalkit", "run", args.file, "--resume", experiment_id]
    valued = [
        ("--store", args.store),
        ("--limit", args.limit),
        ("--repeat", args.repeat),
        ("--executor", None if args.executor == "local" else args.executor),
        ("--workers", args.workers),
        ("--shard", args.shard),
        ("--ray-address", args.ray_address),
        ("--baseline", args.baseline),
        ("--report-dir", None if args.report_dir == "reports" else args.report_dir),
    ]
    for flag, value in valued:
        if value is not None:
            words += [flag, str(value)]
    words += [flag for flag, on in (("--retry-errors", args.retry_errors),
                                    ("--regenerate", args.regenerate)) if on]  # fmt: skip
    return shlex.join(words)
