"""``evalkit cache stats|clear``: look at or empty the judge call cache beside the store."""

from __future__ import annotations

import argparse
import math
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from evalkit.cli._exit import EXIT_OK
from evalkit.cli._format import json_text, one_line
from evalkit.errors import ConfigError

if TYPE_CHECKING:
    from evalkit.judge import JudgeCache


def _cache(args: argparse.Namespace) -> JudgeCache:
    from evalkit._defaults import DEFAULT_STORE
    from evalkit.judge import JudgeCache, default_cache_path  # not at import: `evalkit --help`

    path = args.cache or default_cache_path(args.store or DEFAULT_STORE)
    return JudgeCache(path)


def cmd_cache_stats(args: argparse.Namespace) -> int:
    """Entries, expired entries, size and age of the cache, per judge model."""
    stats = _cache(args).stats()
    if args.json:
        print(json_text(stats))
        return EXIT_OK
    print(f"cache: {one_line(str(stats.path))}")
    print(f"entries: {stats.entries} live, {stats.expired} expired, {stats.size_bytes:,} bytes")
    if stats.oldest is not None:
        print(f"written: {stats.oldest:%Y-%m-%d %H:%M} to {stats.newest:%Y-%m-%d %H:%M}")
    for model, count in sorted(stats.by_model.items()):
        print(f"  {one_line(model)}: {count}")
    return EXIT_OK


def cmd_cache_clear(args: argparse.Namespace) -> int:
    """Delete every entry, or only those older than ``--older-than`` days."""
    older = None
    if args.older_than is not None:
        days = args.older_than
        if not math.isfinite(days) or days < 0:
            raise ConfigError(f"--older-than must be a number of days, 0 or more, got {days:g}")
        # An entry is never older than the epoch its time is counted from: a longer age
        # (1e308 days) deletes nothing, instead of a date before year 1.
        older = timedelta(seconds=min(days * 86_400, time.time()))
    deleted = _cache(args).clear(older_than=older)
    print(f"deleted {deleted} cached judge repl{'y' if deleted == 1 else 'ies'}")
    return EXIT_OK


def add_cache_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``cache`` subcommand with ``stats`` and ``clear``."""
    cache = commands.add_parser("cache", help="look at or clear the judge call cache")
    actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, handler, help in (
        ("stats", cmd_cache_stats, "what the cache holds"),
        ("clear", cmd_cache_clear, "delete cached replies"),
    ):
        action = actions.add_parser(name, help=help)
        action.add_argument("--store", metavar="PATH", help="the store the cache sits beside")
        action.add_argument("--cache", metavar="PATH", help="the cache file itself")
        action.set_defaults(handler=handler)
        if name == "stats":
            action.add_argument("--json", action="store_true", help="print JSON")
        else:
            action.add_argument(
                "--older-than", type=float, metavar="DAYS", help="only entries older than this"
            )
