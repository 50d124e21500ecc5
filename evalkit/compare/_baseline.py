"""Choosing the baseline a run is judged against, saying why, and why a run cannot be one.

A baseline must be complete (not cancelled, interrupted or failed), full (not run with
``--limit`` or one ``--shard`` slice) and must pair with the candidate: the same dataset
fingerprint, or at least ``min_paired`` of the candidate's items.

- ``"latest"``: the newest such run of the experiment's name whose stored verdict passed
  (a run stored before verdicts were kept, verdict NULL, counts as passing: it was the bar
  then). A failed night is never the bar. With a pin in force (``evalkit baseline pin``),
  the pinned run is the bar until a run started after the pin passes.
- ``"latest-complete"``: the newest such run whatever its verdict and any pin (what
  ``"latest"`` meant before verdicts were stored).
- a run name or id: that run, named explicitly; one that does not qualify is an error,
  never a silent pass.

See docs/pages/design/failed-nights-never-the-bar.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.errors import BaselineError, StoreError
from evalkit.store import (
    ListedExperiment,
    connection,
    list_experiments,
    read_experiment,
    read_pin,
    store_exists,
)

LATEST = "latest"
"""The newest passing run (or the pinned one): a failed night never becomes the bar."""
LATEST_COMPLETE = "latest-complete"
"""The newest complete, full run whatever its verdict (what "latest" meant before schema 8)."""

_FINISHED = ("completed", "completed_with_errors")


@dataclass(frozen=True, slots=True)
class Baseline:
    """A run chosen as baseline and why, or None with the line that says why there is none.

    Attributes:
        run: The baseline's stored row (as
            [`evalkit.store.list_experiments`][evalkit.list_experiments] gives it), or None.
        note: Why there is no baseline, when there is none.
        reason: Why this run: ``"newest passing run"``, ``"pinned by alice: v2 is the new
            normal"``, ``"named explicitly"``, …
    """

    run: ListedExperiment | None
    note: str | None = None
    reason: str | None = None


def not_eligible(run: ListedExperiment) -> str | None:
    """Why a stored run cannot be a baseline whatever it is compared with, or None."""
    if run["status"] not in _FINISHED:
        return f"run {run['id']} is {run['status']}, not complete"
    if run.get("partial"):
        return f"run {run['id']} covered part of its dataset (--limit or --shard)"
    return None


def _why(run: ListedExperiment) -> str:
    if run.get("verdict") == "passed":
        return "newest passing run"
    return "newest run stored before verdicts were kept"


def _latest(store: str, name: str, runs: list[ListedExperiment]) -> list[Baseline]:
    pin = read_pin(store, name)
    if pin is None:
        return [Baseline(r, reason=_why(r)) for r in runs if r.get("verdict") != "failed"]
    newer = [
        Baseline(r, reason=f"newest passing run since {pin.experiment_id} was pinned")
        for r in runs
        if r.get("verdict") == "passed"
        and r["id"] != pin.experiment_id
        and r["started_at"] > pin.created_at
    ]
    pinned = [Baseline(r, reason=pin.reason) for r in runs if r["id"] == pin.experiment_id]
    return newer + pinned


def baseline_candidates(
    store: str | os.PathLike[str], ref: str, *, name: str, exclude: str | None = None
) -> list[Baseline]:
    """The runs that may be the baseline of a run of ``name``, in order of preference, each
    with why it would be chosen (``exclude``: the run being judged).

    Raises:
        BaselineError: ``ref`` names a run (or a run name) with no run that can serve.
    """
    store = str(store)
    if not store_exists(store):
        if ref in (LATEST, LATEST_COMPLETE):
            return []
        raise BaselineError(ref, f"{store} holds no runs yet")
    if ref in (LATEST, LATEST_COMPLETE):
        listed = list_experiments(store, name=name).to_pylist()
        runs = [r for r in listed if r["id"] != exclude and not_eligible(r) is None]
        if ref == LATEST_COMPLETE:
            return [Baseline(r, reason="newest complete run (latest-complete)") for r in runs]
        return _latest(store, name, runs)
    runs = list_experiments(store).to_pylist()
    if not any(r["id"] == ref for r in runs):
        named = [r for r in runs if r["name"] == ref and r["id"] != exclude]
        if named:
            usable = [r for r in named if not_eligible(r) is None]
            if not usable:
                raise BaselineError(ref, "; ".join(str(not_eligible(r)) for r in named[:3]))
            return [Baseline(usable[0], reason="named explicitly")]
    try:
        found = read_experiment(store, ref)
    except StoreError as exc:
        raise BaselineError(ref, str(exc)) from None
    run = next(r for r in runs if r["id"] == found["id"])
    if run["id"] == exclude:
        raise BaselineError(ref, f"run {run['id']} is the run being judged, not a baseline")
    reason = not_eligible(run)
    if reason is not None:
        raise BaselineError(ref, reason)
    return [Baseline(run, reason="named explicitly")]


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
    run: ListedExperiment,
    candidate: Mapping[str, Any],
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


def choose_baseline(
    store: str | os.PathLike[str],
    candidates: list[Baseline],
    *,
    ref: str,
    candidate: Mapping[str, Any],
    min_paired: float,
) -> Baseline:
    """The first of ``candidates`` ([`baseline_candidates`][evalkit.compare.baseline_candidates])
    that pairs with ``candidate`` (a stored row: ``id``, ``name``, ``dataset_fingerprint``); never
    the candidate itself.

    Raises:
        BaselineError: ``ref`` was named explicitly and its run does not pair.
    """
    lenient = ref in (LATEST, LATEST_COMPLETE)
    skipped = []
    for option in candidates:
        run = option.run
        if run is None or run["id"] == candidate["id"]:
            continue
        reason = pairs_with(store, run, candidate, min_paired=min_paired)
        if reason is None:
            return option
        if not lenient:
            raise BaselineError(ref, reason)
        skipped.append(reason)
    note = f"no baseline: no earlier complete, full run of {candidate['name']!r}"
    if ref == LATEST:
        note += " that passed"
    if skipped:
        note = f"no baseline: {skipped[0]}" + (
            f" (and {len(skipped) - 1} older runs)" if len(skipped) > 1 else ""
        )
    return Baseline(None, note + "; judged on its own gates only")
