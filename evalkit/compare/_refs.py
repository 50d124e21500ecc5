"""Finding a stored run from what a user types: an id, a run name, an id prefix, or latest;
the baseline such a reference designates, and pinning the run it names.

The order is fixed so a reference never means two things: an exact id, then an exact run
name (its newest finished run), then a unique id prefix. A name that looks like an id prefix
(``6b7``) is the run of that name, never another run whose id starts so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.compare._baseline import (
    LATEST,
    LATEST_COMPLETE,
    Baseline,
    baseline_candidates,
    choose_baseline,
    not_eligible,
    pairs_with,
)
from evalkit.errors import BaselineError, StoreError
from evalkit.store import (
    BaselinePin,
    ExperimentRow,
    ListedExperiment,
    list_experiments,
    read_experiment,
)
from evalkit.store._pins import pin_baseline

#: Runs that finished (possibly with failed items).
FINISHED = ("completed", "completed_with_errors")


def _describe(rows: Sequence[ListedExperiment]) -> str:
    shown = ", ".join(f"{r['id']} ({r['name']}, {r['status']}, {r['started_at']:%Y-%m-%d %H:%M})"
                      for r in rows[:5])  # fmt: skip
    return shown + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")


def _full(store: str | os.PathLike[str], run: ListedExperiment) -> ExperimentRow:
    """The run's whole row (with its config), as ``show --json`` prints it."""
    return read_experiment(store, run["id"])


def find_experiment(
    store: str | os.PathLike[str],
    ref: str,
    *,
    name: str | None = None,
    exclude: str | None = None,
) -> ExperimentRow | None:
    """The stored run ``ref`` designates, or None when ``ref`` is ``"latest"`` and none exists.

    ``"latest"`` is the newest finished run named ``name`` (of any name without one), other
    than ``exclude``. Otherwise ``ref`` is an exact id, else a run name (its newest finished
    run other than ``exclude``), else a unique id prefix.

    Raises:
        StoreError: ``ref`` matches nothing, names only unfinished runs, or is an id prefix
            of several runs (they are listed).
    """
    runs: list[ListedExperiment] = list_experiments(store).to_pylist()
    if ref == "latest":
        finished = [r for r in runs if r["status"] in FINISHED and r["id"] != exclude]
        if name is not None:
            finished = [r for r in finished if r["name"] == name]
        return _full(store, finished[0]) if finished else None
    for run in runs:
        if run["id"] == ref:
            return _full(store, run)
    named = [r for r in runs if r["name"] == ref]
    if named:
        finished = [r for r in named if r["status"] in FINISHED and r["id"] != exclude]
        if finished:
            return _full(store, finished[0])
        raise StoreError(f"{store}: no finished run is named {ref!r}; its runs: {_describe(named)}")
    prefixed = [r for r in runs if r["id"].startswith(ref)]
    if len(prefixed) == 1:
        return _full(store, prefixed[0])
    if prefixed:
        raise StoreError(
            f"{store}: {ref!r} is the id prefix of {len(prefixed)} runs: {_describe(prefixed)};"
            " type more of the id"
        )
    raise StoreError(f"{store}: no experiment has the id {ref!r}, and no run is named {ref!r}")


def baseline_for(
    store: str, ref: str, named: ListedExperiment | None, candidate: Mapping[str, Any],
    *, min_paired: float,
) -> Baseline:  # fmt: skip
    """The baseline ``ref`` designates for ``candidate`` in ``compare`` and ``diff``: for
    ``latest`` (and ``latest-complete``) the run ``evalkit run`` would judge it against (the
    newest passing run of its name, or the pin), never itself; otherwise ``named``, the run
    ``ref`` names.

    Raises:
        BaselineError: No run can be the baseline, or the named one does not pair.
        StoreError: ``ref`` named no run.
    """
    if ref in (LATEST, LATEST_COMPLETE):
        options = baseline_candidates(store, ref, name=candidate["name"], exclude=candidate["id"])
        chosen = choose_baseline(store, options, ref=ref, candidate=candidate,
                                 min_paired=min_paired)  # fmt: skip
        if chosen.run is None:
            raise BaselineError(ref, f"{chosen.note} (candidate {candidate['id']})")
        return chosen
    if named is None:
        raise StoreError(f"{store}: no finished experiment to compare")
    reason = pairs_with(store, named, candidate, min_paired=min_paired)
    if reason is not None:
        raise BaselineError(ref, reason)
    return Baseline(named, reason="named explicitly")


def pin_run(
    store: str | os.PathLike[str], ref: str, *, by: str | None = None, note: str | None = None
) -> BaselinePin:
    """Pin the run ``ref`` designates (`find_experiment`) as the baseline of its name: the bar
    of ``baseline = "latest"`` until a run started after the pin passes. A failed run may be
    pinned (that is the point: "this is the new normal"), a partial or unfinished one not.

    Args:
        store: The store.
        ref: The run: an id, a run name (its newest finished run) or a unique id prefix.
        by: Who pins (default: the user name from the environment).
        note: Why, e.g. ``"v2 is the new normal"``.

    Raises:
        StoreError: ``ref`` names no run, or only unfinished ones.
        BaselineError: The run cannot be a baseline (unfinished, or partial).
    """
    run = find_experiment(store, ref)
    if run is None:
        raise StoreError(f"{store}: no finished run to pin")
    reason = not_eligible(run)
    if reason is not None:
        raise BaselineError(ref, reason)
    return pin_baseline(store, run["id"], by=by, note=note)
