"""Choosing the baseline a run is judged against, and saying why a run cannot be one.

A baseline must be complete (not cancelled, interrupted or failed), full (not run with
``--limit`` or one ``--shard`` slice) and must pair with the candidate: the same dataset
fingerprint, or at least ``min_paired`` of the candidate's items. ``"latest"`` takes the
newest run of the experiment's name that qualifies and, on the first night, none; a baseline
named explicitly that does not qualify is an error, never a silent pass.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evalkit.cli._refs import FINISHED, find_experiment
from evalkit.errors import BaselineError, StoreError
from evalkit.store import connection, list_experiments, store_exists


@dataclass(frozen=True, slots=True)
class Baseline:
    """The run chosen as baseline, or None with the line that says why there is none."""

    run: dict[str, Any] | None
    note: str | None = None


def not_eligible(run: dict[str, Any]) -> str | None:
    """Why a stored run cannot be a baseline whatever it is compared with, or None."""
    if run["status"] not in FINISHED:
        return f"run {run['id']} is {run['status']}, not complete"
    if run.get("partial"):
        return f"run {run['id']} covered part of its dataset (--limit or --shard)"
    return None


def candidates(store: str, ref: str, *, name: str) -> list[dict[str, Any]]:
    """The runs that may be the baseline of a run of ``name``, newest first, found before the
    run starts (so never the run itself).

    Raises:
        BaselineError: ``ref`` names a run (or a run name) with no run that can serve.
    """
    if not store_exists(store):
        if ref == "latest":
            return []
        raise BaselineError(ref, f"{store} holds no runs yet")
    if ref == "latest":
        runs = list_experiments(store, name=name).to_pylist()
        return [r for r in runs if not_eligible(r) is None]
    runs = list_experiments(store).to_pylist()
    if not any(r["id"] == ref for r in runs):
        named = [r for r in runs if r["name"] == ref]
        if named:
            usable = [r for r in named if not_eligible(r) is None]
            if not usable:
                raise BaselineError(ref, "; ".join(str(not_eligible(r)) for r in named[:3]))
            return usable[:1]
    try:
        run = find_experiment(store, ref)
    except StoreError as exc:
        raise BaselineError(ref, str(exc)) from None
    assert run is not None
    reason = not_eligible(run)
    if reason is not None:
        raise BaselineError(ref, reason)
    return [run]


def pairing(store: str | os.PathLike[str], baseline_id: str, candidate_id: str) -> tuple[int, int]:
    """``(paired, total)``: how many of the candidate's items the baseline also holds."""
    with connection(store, read_only=True) as con:
        row = con.execute(
            "SELECT count(*), count(b.item_id) FROM experiment_items c"
            " LEFT JOIN (SELECT DISTINCT item_id FROM experiment_items WHERE experiment_id = ?)"
            " b USING (item_id) WHERE c.experiment_id = ?",
            [baseline_id, candidate_id],
        ).fetchone()
    assert row is not None
    return int(row[1]), int(row[0])


def pairs_with(
    store: str | os.PathLike[str],
    run: dict[str, Any],
    candidate: dict[str, Any],
    *,
    min_paired: float,
) -> str | None:
    """Why ``run`` does not pair with ``candidate`` (both stored rows), or None if it does."""
    fingerprint = run.get("dataset_fingerprint")
    if fingerprint is not None and fingerprint == candidate.get("dataset_fingerprint"):
        return None
    paired, total = pairing(store, run["id"], candidate["id"])
    if total == 0:
        return f"this run ({candidate['id']}) has no items to pair"
    if paired / total >= min_paired:
        return None
    return (
        f"run {run['id']} holds {paired} of this run's {total} items ({paired / total:.0%}),"
        f" below min_paired {min_paired:.0%}"
    )


def choose(
    store: str,
    runs: list[dict[str, Any]],
    *,
    ref: str,
    candidate: dict[str, Any],
    min_paired: float,
) -> Baseline:
    """The first of ``runs`` that pairs with ``candidate``.

    Raises:
        BaselineError: ``ref`` was named explicitly and its run does not pair.
    """
    skipped = []
    for run in runs:
        reason = pairs_with(store, run, candidate, min_paired=min_paired)
        if reason is None:
            return Baseline(run)
        if ref != "latest":
            raise BaselineError(ref, reason)
        skipped.append(reason)
    note = f"no baseline: no earlier complete, full run of {candidate['name']!r}"
    if skipped:
        note = f"no baseline: {skipped[0]}" + (
            f" (and {len(skipped) - 1} older runs)" if len(skipped) > 1 else ""
        )
    return Baseline(None, note + "; judged on its own gates only")
