"""``evalkit store copy SRC DST``: experiments from one store to another (a DuckDB file, a
DuckLake store), so a team can start with a file and grow into a lake, or take runs back."""

from __future__ import annotations

import argparse
from typing import Any

from evalkit.cli._exit import EXIT_OK
from evalkit.cli._format import one_line


def add_store_commands(commands: Any) -> None:
    """Register ``evalkit store copy``."""
    store = commands.add_parser("store", help="work on whole stores (copy runs between them)")
    actions = store.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    copy = actions.add_parser(
        "copy",
        help="copy runs from one store to another (DuckDB file or DuckLake, either way)",
        description="Copy every run of SRC (or the ones named with --experiment) into DST,"
        " created when missing. A run DST already holds is not copied again; one still being"
        " written is left for later.",
    )
    copy.add_argument("source", metavar="SRC", help="the store to copy from (file or ducklake:…)")
    copy.add_argument(
        "destination", metavar="DST", help="the store to copy to (file or ducklake:…)"
    )
    copy.add_argument(
        "--experiment",
        action="append",
        metavar="ID",
        help="copy only this run (an id or prefix; repeat for several)",
    )
    copy.set_defaults(handler=cmd_store_copy)


def cmd_store_copy(args: argparse.Namespace) -> int:
    """Copy the runs and print what was copied, and what was not and why."""
    from evalkit.store import copy_experiments  # not at import: `evalkit --help` stays light

    done = copy_experiments(args.source, args.destination, experiments=args.experiment)
    rows = sum(done.rows.values())
    what = f"{len(done.copied)} run{'s' if len(done.copied) != 1 else ''}"
    detail = ", ".join(
        f"{count:,} {table}" for table, count in done.rows.items() if table != "experiments"
    )
    print(
        f"copied {what} ({rows:,} rows: {detail or 'none'}) from {one_line(args.source)}"
        f" to {one_line(args.destination)}"
    )
    for experiment_id in done.copied:
        print(f"  copied {one_line(experiment_id)}")
    for experiment_id in done.already_there:
        print(f"  already there, not copied again: {one_line(experiment_id)}")
    for experiment_id in done.running:
        print(f"  still being written, not copied: {one_line(experiment_id)}")
    return EXIT_OK
