"""``evalkit merge STORE...``: join the stores of ``--shard i/n`` jobs into one experiment."""

from __future__ import annotations

import argparse
import json

from evalkit.agreement import measure_stability_stored, measure_stored, parse_labels
from evalkit.cli._format import one_line
from evalkit.cli._main import EXIT_OK
from evalkit.store import DEFAULT_STORE, merge_stores, read_experiment


def cmd_merge(args: argparse.Namespace) -> int:
    """Merge every complete set of slices into ``--store``; print the new experiment ids."""
    output = args.store or DEFAULT_STORE
    for experiment_id in merge_stores(args.sources, output):
        _measure_agreement(output, experiment_id)
        print(f"merged into {one_line(output)}: {one_line(experiment_id)}")
    return EXIT_OK


def _measure_agreement(store: str, experiment_id: str) -> None:
    """Measure a merged run of several slices against its human labels, and its repeated
    judges against themselves, as a run does at its end: each slice's figures covered its own
    items only, so the store kept none of them."""
    run = read_experiment(store, experiment_id)
    config = json.loads(run["config"] or "{}")
    if len(config.get("merged_from") or ()) < 2 or run["status"] == "cancelled":
        return
    labels = parse_labels(config.get("labels"), None)
    if labels:
        source = (config.get("dataset") or {}).get("source") or "labels"
        measure_stored(store, experiment_id, labels, source=source)
    # Measured whenever the slices stored repeats (none: nothing is written).
    measure_stability_stored(store, experiment_id, labels)
