"""Agreement of a merged run of shard slices (``evalkit merge``, or the slices of a matrix
that wrote one DuckLake store): measured again over all its items."""

from __future__ import annotations

import os

from evalkit._json import stored_config
from evalkit.agreement._labels import parse_labels
from evalkit.agreement._measure import ScorerAgreement
from evalkit.agreement._record import measure_stability_stored, measure_stored
from evalkit.store import read_experiment


def measure_merged(store: str | os.PathLike[str], experiment_id: str) -> dict[str, ScorerAgreement]:
    """Measure a merged run of several slices against its human labels, and its repeated
    judges against themselves, as a run does at its end: each slice's figures covered its own
    items only, so the store kept none of them. Returns the agreement with the labels (for
    the run's agreement gates; empty without labels, or for a run of one slice)."""
    run = read_experiment(store, experiment_id)
    config = stored_config(run["config"])
    if len(config.get("merged_from") or ()) < 2 or run["status"] == "cancelled":
        return {}
    labels = parse_labels(config.get("labels"), None)
    measured: dict[str, ScorerAgreement] = {}
    if labels:
        source = (config.get("dataset") or {}).get("source") or "labels"
        measured = measure_stored(store, experiment_id, labels, source=source)
    # Measured whenever the slices stored repeats (none: nothing is written).
    measure_stability_stored(store, experiment_id, labels)
    return measured
