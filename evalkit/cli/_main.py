"""Argument parsing and the one place where errors become messages and exit codes."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Callable, Sequence

from evalkit import _startup_gc
from evalkit._defaults import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_DROP,
    DEFAULT_MIN_PAIRED,
    DEFAULT_RESAMPLES,
)
from evalkit.cli._exit import EXIT_INTERRUPTED, EXIT_USAGE
from evalkit.errors import EvalkitError, ExperimentFileError

Handler = Callable[[argparse.Namespace], int]


#: What ``evalkit sql --help`` says read-only allows.
READ_ONLY_HELP = (
    "Without --write the store is opened read-only, and so is everything else: a query reads"
    " the store's own tables and views (and may create TEMP tables and macros, gone when it"
    " ends), but cannot write any file (COPY ... TO, EXPORT DATABASE), read any other file or"
    " URL (read_csv, read_parquet, glob), ATTACH another database, INSTALL or LOAD an"
    " extension, create a persistent secret, or SET, RESET or unlock any setting. --write"
    " opens the store for writing, as DuckDB itself would: none of these limits apply."
)


def _add_store(parser: argparse.ArgumentParser, help: str = "the score store") -> None:
    parser.add_argument(
        "--store",
        metavar="STORE",
        help=f"{help}: a DuckDB file, or a DuckLake attach string such as"
        " ducklake:sqlite:catalog.sqlite (default: evalkit.duckdb)",
    )


class _Later:
    """A handler imported when it runs: ``--help`` and usage errors then import neither the
    run's libraries (openai, pandas, DuckDB) nor the other commands'."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, args: argparse.Namespace) -> int:
        import importlib

        command: Handler = getattr(importlib.import_module(f"evalkit.cli.{self.module}"), self.name)
        # The command is loaded (docs/pages/design/startup-objects-frozen.md).
        _startup_gc.loaded()
        return command(args)


def _later(module: str, name: str) -> Handler:
    """A handler that imports the command's module when it runs (`_Later`)."""
    return _Later(module, name)


def build_parser() -> argparse.ArgumentParser:
    """The ``evalkit`` argument parser with every subcommand and option, as
    [`main`][evalkit.cli.main] parses the command line: for tools that read a parser (shell
    completion, documentation generators); this site's list of every option is generated
    from it."""
    from evalkit.cli._baseline import add_baseline_commands
    from evalkit.cli._cache import add_cache_commands
    from evalkit.cli._diff import add_diff_command
    from evalkit.cli._export import add_export_command
    from evalkit.cli._store_copy import add_store_commands
    from evalkit.cli._view import add_view_command
    from evalkit.run import RunOptions  # run_evals' options and defaults (no DuckDB, no pandas)

    defaults = RunOptions()

    parser = argparse.ArgumentParser(
        prog="evalkit",
        description="Batch evaluation runner for LLM applications.",
        epilog="Exit codes: 0 passed, 1 a gate failed, 2 usage/config/data error, 130 interrupted.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run an experiment file")
    run.add_argument("file", help="the experiment's TOML file")
    _add_store(run, "override the experiment's store")
    run.add_argument(
        "--store-data-path",
        metavar="PATH",
        help="where a new DuckLake store keeps its Parquet files: a folder or an object-store"
        " URL (overrides the experiment's store_data_path)",
    )
    run.add_argument(
        "--limit", type=int, metavar="N", help="evaluate only the first N rows (0 or more)"
    )
    run.add_argument(
        "--concurrency", type=int, metavar="N", help="items in flight at once (1 to 10000)"
    )
    run.add_argument(
        "--baseline",
        metavar="REF",
        help='"latest" (the newest passing run, or the pinned one), "latest-complete" (the'
        " newest complete run, passed or not), a run name or an id to compare against",
    )
    run.add_argument(
        "--report-dir", metavar="DIR", default="reports", help="where reports go (reports/)"
    )
    run.add_argument(
        "--repeat",
        type=int,
        metavar="K",
        help="judge each LLM-judged pair K times (1 to 20; repeats skip the judge cache) and"
        " measure each judge's agreement with itself",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--no-cache", action="store_true", help="do not use the judge call cache")
    run.add_argument(
        "--lock-timeout",
        type=float,
        metavar="S",
        default=defaults.lock_timeout,
        help="seconds to keep retrying a store locked by another process before the rows not"
        " yet written are kept in <store>.recovery/ for --resume"
        f" (0 to 86400; default: {defaults.lock_timeout:g})",
    )
    run.add_argument(
        "--no-preflight",
        action="store_true",
        help="do not check the judges' and the target's keys and endpoints before the run",
    )
    run.add_argument(
        "--executor",
        choices=("local", "process", "ray"),
        default=defaults.executor,
        help="where shards run: this process, a process pool, or Ray"
        f" (default: {defaults.executor})",
    )
    run.add_argument(
        "--workers", type=int, metavar="N", help="worker processes (process/ray; 1 to 1024)"
    )
    run.add_argument("--ray-address", metavar="ADDR", help="an existing Ray cluster to use")
    run.add_argument("--shard", metavar="I/N", help="run only slice I of N (CI matrix jobs)")
    run.add_argument("--json", action="store_true", help="print a machine-readable summary")
    run.add_argument("--slices", action="store_true", help="print the per-slice comparison table")
    run.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="finish a stored run (an id or prefix; default: the newest unfinished run of"
        " this experiment) instead of starting a new one; a sharded run is resumed with"
        " its --executor/--shard and skips its finished shards",
    )
    run.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume: re-run only the failed (item, scorer) pairs (a sharded run's with"
        " the same --executor/--shard, in the finished shards that hold them)",
    )
    run.add_argument(
        "--regenerate",
        action="store_true",
        help="with --resume: ask the target again for items with a failed pair and re-run"
        " all their scorers (default: score failed pairs on the item's stored output)",
    )
    run.add_argument(
        "--force", action="store_true", help="with --resume: resume even if the setup changed"
    )
    run.set_defaults(handler=_later("_run", "cmd_run"))

    experiments = commands.add_parser("experiments", help="list stored runs, newest first")
    _add_store(experiments)
    experiments.add_argument("--name", help="only runs of this name")
    experiments.add_argument(
        "--limit", type=int, default=20, metavar="N", help="at most N rows (1 or more; 20)"
    )
    experiments.add_argument("--json", action="store_true", help="print JSON")
    experiments.set_defaults(handler=_later("_inspect", "cmd_experiments"))

    show = commands.add_parser("show", help="show one stored run")
    show.add_argument("ref", help="an experiment id (or prefix), a run name, or latest")
    _add_store(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=_later("_inspect", "cmd_show"))

    compare = commands.add_parser("compare", help="compare two stored runs (paired)")
    compare.add_argument("baseline", help="the baseline run: id, prefix or name")
    compare.add_argument("candidate", help="the candidate run: id, prefix or name")
    _add_store(compare)
    compare.add_argument(
        "--max-drop",
        type=float,
        default=DEFAULT_MAX_DROP,
        help=f"tolerated drop in mean ({DEFAULT_MAX_DROP:g})",
    )
    compare.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"CI coverage ({DEFAULT_CONFIDENCE:g})",
    )
    compare.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap resamples ({DEFAULT_RESAMPLES:,})",
    )
    compare.add_argument(
        "--min-paired",
        type=float,
        default=DEFAULT_MIN_PAIRED,
        metavar="SHARE",
        help="share of the candidate's items the baseline must hold unless both ran on the"
        " same dataset (0 to 1; 0.9)",
    )
    compare.add_argument("--json", action="store_true", help="print JSON")
    compare.add_argument(
        "--slices",
        action="append",
        metavar="KEY",
        help="also compare per value of this metadata key (repeatable; default: the"
        " candidate's declared slices, printed with --slices-table)",
    )
    compare.add_argument(
        "--slices-table", action="store_true", help="print the per-slice comparison table"
    )
    compare.add_argument(
        "--judges",
        action="store_true",
        help="compare the LLM judges of every judged scorer, even those whose judge is the same"
        " in both runs (default: only the scorers whose judge model, settings or prompt"
        " version differ)",
    )
    compare.set_defaults(handler=_later("_inspect", "cmd_compare"))

    plan = commands.add_parser(
        "plan",
        help="the drop a comparison of two stored runs can detect, and the items a smaller"
        " drop needs",
    )
    plan.add_argument("baseline", help="the baseline run: id, prefix or name, or latest")
    plan.add_argument("candidate", help="the candidate run: id, prefix or name")
    _add_store(plan)
    plan.add_argument(
        "--drop",
        type=float,
        metavar="X",
        help="also say how many paired items detecting a drop of X (score units) needs",
    )
    plan.add_argument(
        "--power", type=float, default=0.8, help="the chance of detecting it (0 to 1; 0.8)"
    )
    plan.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"the comparison's confidence ({DEFAULT_CONFIDENCE:g})",
    )
    plan.add_argument("--json", action="store_true", help="print JSON")
    plan.set_defaults(handler=_later("_inspect", "cmd_plan"))

    add_diff_command(commands, _add_store)
    add_baseline_commands(commands, _add_store)

    sql = commands.add_parser(
        "sql",
        help="run SQL against the store (read-only by default)",
        description=READ_ONLY_HELP,
    )
    sql.add_argument("query", help="the SQL query")
    _add_store(sql)
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table")
    sql.add_argument(
        "--write",
        action="store_true",
        help="open the store for writing, without the read-only limits",
    )
    sql.set_defaults(handler=_later("_sql", "cmd_sql"))

    scorers = commands.add_parser("scorers", help="list the prebuilt scorers")
    scorers.add_argument("--kind", choices=("code", "llm"), help="only this kind")
    scorers.add_argument("--json", action="store_true", help="print JSON")
    scorers.set_defaults(handler=_later("_inspect", "cmd_scorers"))

    add_export_command(commands)

    merge = commands.add_parser("merge", help="join the stores of --shard I/N jobs into one run")
    merge.add_argument(
        "sources",
        nargs="+",
        metavar="STORE",
        help="the slices' stores: DuckDB files or DuckLake attach strings (from a lake, its"
        " slices not merged there yet; a run it merged already is taken by evalkit store copy)",
    )
    _add_store(merge, "the store to write the merged runs to (a lake holding slices marks them)")
    merge.set_defaults(handler=_later("_merge", "cmd_merge"))

    add_cache_commands(commands)
    add_view_command(commands)
    add_store_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``evalkit`` command line in this process, as the ``evalkit`` command does.

    Args:
        argv: The arguments after ``evalkit`` (``["run", "experiments/nightly.toml"]``);
            None reads ``sys.argv``.

    Returns:
        The exit code: [`EXIT_OK`][evalkit.cli.EXIT_OK],
            [`EXIT_FAILED_GATE`][evalkit.cli.EXIT_FAILED_GATE],
            [`EXIT_USAGE`][evalkit.cli.EXIT_USAGE] or
            [`EXIT_INTERRUPTED`][evalkit.cli.EXIT_INTERRUPTED]. An error is printed to stderr
            and returned as its code, never raised.
    """
    from evalkit.cli._output import guarded_streams

    with guarded_streams():
        try:
            # Inside the try: a Ctrl-C while the command line is still loading is exit 130 too.
            args = build_parser().parse_args(argv)
            handler: Handler = args.handler
            if not isinstance(handler, _Later):
                _startup_gc.loaded()  # a command whose module build_parser imported
            return handler(args)
        except ExperimentFileError as exc:
            print(str(exc), file=sys.stderr)
            return EXIT_USAGE
        except EvalkitError as exc:
            print(f"evalkit: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            return _interrupted()
        except RuntimeError as exc:
            from evalkit._interruptible import interrupted_query

            if not interrupted_query(exc):  # a Ctrl-C inside a DuckDB query (sql, a lookup)
                raise
            return _interrupted()


def _interrupted() -> int:
    # Absorb the Ctrl-Cs still coming until the process has exited (a burst of them must not
    # kill the shutdown by signal; docs/pages/design/ctrl-c-once.md).
    with contextlib.suppress(ValueError):  # not the main thread: nothing to absorb
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("evalkit: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED
