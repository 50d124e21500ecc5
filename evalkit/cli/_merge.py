"""``evalkit merge STORE...``: join the stores of ``--shard i/n`` jobs into one experiment."""

from __future__ import annotations

import argparse

from evalkit._defaults import DEFAULT_STORE
from evalkit.cli._exit import EXIT_OK
from evalkit.cli._format import one_line
from evalkit.run import merge_shard_stores


def cmd_merge(args: argparse.Namespace) -> int:
    """Merge every complete set of slices into ``--store``; print the new experiment ids."""
    output = args.store or DEFAULT_STORE
    for experiment_id in merge_shard_stores(args.sources, output):
        print(f"merged into {one_line(output)}: {one_line(experiment_id)}")
    return EXIT_OK
