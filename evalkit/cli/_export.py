"""``evalkit export``: one stored run's items, scores and failures to a Parquet, CSV or JSON
Lines file."""

from __future__ import annotations

import argparse
import os
import sys
from typing import get_args

from evalkit.cli._exit import EXIT_OK
from evalkit.cli._format import one_line
from evalkit.errors import StoreError
from evalkit.store import ExportFormat


def add_export_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``evalkit export REF [--format F] [--output PATH]``."""
    export = commands.add_parser(
        "export",
        help="write one stored run's items, scores and failures to a file",
        description="Write one stored run to a file, one row per item and scorer (an item whose"
        " target failed has one row without a scorer): its scores, failures, inputs, outputs"
        " and step results. Text is written as text; nested values stay nested in jsonl and"
        " are JSON text in parquet and csv.",
    )
    export.add_argument("ref", help="an experiment id (or prefix), a run name, or latest")
    export.add_argument("--store", metavar="PATH", help="the DuckDB score store (evalkit.duckdb)")
    export.add_argument("--format", choices=get_args(ExportFormat), default="parquet")
    export.add_argument(
        "--output", metavar="PATH", help="the file to write (default: <run id>.<format>)"
    )
    export.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    """Resolve the run, write it, and say where and how many rows."""
    from evalkit._defaults import DEFAULT_STORE
    from evalkit.compare import find_experiment  # not at import: `evalkit --help` stays light
    from evalkit.store import export_experiment

    store = args.store or DEFAULT_STORE
    run = find_experiment(store, args.ref)
    if run is None:
        raise StoreError(f"{store}: no finished run to export")
    path = args.output or f"{run['id']}.{args.format}"
    try:
        rows = export_experiment(store, run["id"], path, format=args.format)
    except BrokenPipeError:
        # `--output /dev/stdout | head`: the reader ends the output, not the command, as for
        # every other command (evalkit/cli/_output.py); nothing more to say to it.
        return EXIT_OK
    print(
        f"wrote {rows} row{'s' if rows != 1 else ''} of {one_line(run['name'])}"
        f" ({run['id']}) to {one_line(path)}",
        # `--output /dev/stdout`: the data alone on stdout, what was written said beside it.
        file=sys.stderr if _is_stdout(path) else sys.stdout,
    )
    return EXIT_OK


def _is_stdout(path: str) -> bool:
    """Whether ``path`` is the file this process's standard output writes to."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # no such file, or a stdout without one
        return False
