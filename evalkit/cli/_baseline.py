"""``evalkit baseline pin|unpin|show``: a team's "this run is the new normal", in the store."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from evalkit.cli._exit import EXIT_OK
from evalkit.cli._format import json_text, one_line, text_table


def add_baseline_commands(commands: Any, add_store: Callable[..., None]) -> None:
    """Register ``evalkit baseline pin``, ``unpin`` and ``show``."""
    baseline = commands.add_parser(
        "baseline",
        help='pin the run that baseline = "latest" compares with (and unpin it)',
        description='A pinned run is the bar of baseline = "latest" for its experiment name'
        " until a run started after the pin passes; then that newer passing run is.",
    )
    actions = baseline.add_subparsers(dest="baseline_command", metavar="ACTION", required=True)
    pin = actions.add_parser("pin", help="pin a run as its experiment's baseline")
    pin.add_argument("run", metavar="RUN", help="the run: an id (or prefix), or a run name")
    pin.add_argument("--note", help='why, e.g. "v2 is the new normal"')
    pin.add_argument("--by", help="who pins (default: the user name from the environment)")
    add_store(pin)
    pin.set_defaults(handler=cmd_pin)
    unpin = actions.add_parser("unpin", help="end the pin of an experiment name")
    unpin.add_argument("name", metavar="NAME", help="the experiment name")
    unpin.add_argument("--note", help="why")
    unpin.add_argument("--by", help="who unpins (default: the user name from the environment)")
    add_store(unpin)
    unpin.set_defaults(handler=cmd_unpin)
    show = actions.add_parser(
        "show", help='the pin in force, its history, and the run "latest" would take now'
    )
    show.add_argument("name", metavar="NAME", help="the experiment name")
    add_store(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=cmd_show_baseline)


def cmd_pin(args: argparse.Namespace) -> int:
    """Pin a complete, full run (a failed night too: that is the point) as the bar."""
    from evalkit._defaults import DEFAULT_STORE
    from evalkit.compare import pin_run  # not at import: `evalkit --help` stays light

    pin = pin_run(args.store or DEFAULT_STORE, args.run, by=args.by, note=args.note)
    print(
        f"pinned {one_line(pin.experiment_id or '')} as the baseline of"
        f" {one_line(pin.experiment_name)!r} ({one_line(pin.reason)})"
    )
    return EXIT_OK


def cmd_unpin(args: argparse.Namespace) -> int:
    """End the pin of a name: "latest" is the newest passing run again."""
    from evalkit._defaults import DEFAULT_STORE
    from evalkit.store import unpin_baseline

    store = args.store or DEFAULT_STORE
    unpin = unpin_baseline(store, args.name, by=args.by, note=args.note)
    who = f" by {one_line(unpin.pinned_by)}" if unpin.pinned_by else ""
    print(f"unpinned the baseline of {one_line(args.name)!r}{who}")
    return EXIT_OK


def cmd_show_baseline(args: argparse.Namespace) -> int:
    """The pin in force, the history of pins, and what "latest" takes now."""
    from evalkit._defaults import DEFAULT_STORE
    from evalkit.compare import LATEST, baseline_candidates
    from evalkit.store import pin_history, read_pin

    store = args.store or DEFAULT_STORE
    pin = read_pin(store, args.name)
    history = pin_history(store, args.name)
    options = baseline_candidates(store, LATEST, name=args.name)
    latest = options[0] if options else None
    if args.json:
        print(
            json_text(
                {
                    "name": args.name,
                    "pinned": None if pin is None else pin.to_dict(),
                    "latest": None
                    if latest is None or latest.run is None
                    else {"id": latest.run["id"], "reason": latest.reason},
                    "history": [p.to_dict() for p in history],
                }
            )
        )
        return EXIT_OK
    name = one_line(args.name)
    if pin is None:
        print(f"{name}: no pinned baseline")
    else:
        print(f"{name}: pinned {one_line(pin.experiment_id)} ({one_line(pin.reason)})")
    if latest is None or latest.run is None:
        print(f'baseline = "latest" takes: none yet (no complete, full run of {name!r} passed)')
    else:
        print(
            f'baseline = "latest" takes: {one_line(latest.run["id"])}'
            f" ({one_line(latest.reason)}), if it pairs with the run judged"
        )
    if history:
        rows = [
            [p.created_at, "pin" if p.experiment_id else "unpin", p.experiment_id or "-",
             p.pinned_by or "-", p.note or ""]
            for p in history
        ]  # fmt: skip
        print(text_table(["when", "action", "run", "by", "note"], rows))
    return EXIT_OK
