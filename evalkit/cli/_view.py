"""``evalkit view``: the read-only web viewer over the store."""

from __future__ import annotations

import argparse

from evalkit.cli._exit import EXIT_OK


def add_view_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``evalkit view``."""
    from evalkit.view import DEFAULT_PORT

    view = commands.add_parser(
        "view",
        help="browse the store in a local web viewer (read-only)",
        description="Serve a read-only web viewer over the store: runs with their verdicts"
        " and trends, one run with its gates and its items, two runs compared item by item,"
        " one item with its judge calls. A run can write the store meanwhile.",
    )
    view.add_argument(
        "--store",
        metavar="STORE",
        help="the score store: a DuckDB file or a ducklake: attach string"
        " (default: evalkit.duckdb)",
    )
    view.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        metavar="N",
        help=f"port ({DEFAULT_PORT}; 0: any free one)",
    )
    view.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (127.0.0.1: this machine only; the viewer has no login)",
    )
    view.add_argument("--no-browser", action="store_true", help="do not open a browser")
    view.set_defaults(handler=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from evalkit._defaults import DEFAULT_STORE
    from evalkit.view import serve

    serve(
        args.store or DEFAULT_STORE,
        host=args.host,
        port=args.port,
        open_browser=not args.no_browser,
    )
    return EXIT_OK
