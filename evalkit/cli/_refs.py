"""Finding a stored run from what a user types: an id, an id prefix, a run name, or latest."""

from __future__ import annotations

import os
from typing import Any

from evalkit.errors import StoreError
from evalkit.store import list_experiments, read_experiment

#: Runs that finished (possibly with failed items) and can serve as a baseline.
FINISHED = ["completed", "completed_with_errors"]


def find_experiment(
    store: str | os.PathLike[str],
    ref: str,
    *,
    name: str | None = None,
    exclude: str | None = None,
) -> dict[str, Any] | None:
    """The stored run ``ref`` designates, or None when ``ref`` is ``"latest"`` and none exists.

    ``"latest"`` is the newest finished run named ``name`` (other than ``exclude``). Otherwise
    ``ref`` is tried as an id or id prefix, then as a run name (its newest finished run).

    Raises:
        StoreError: ``ref`` matches nothing, or an id prefix matches several runs.
    """
    rows: list[dict[str, Any]] = list_experiments(
        store, name=name if ref == "latest" else ref, status=FINISHED
    ).to_pylist()
    finished = [r for r in rows if r["id"] != exclude]
    if ref == "latest":
        return finished[0] if finished else None
    try:
        found: dict[str, Any] = read_experiment(store, ref)
        return found
    except StoreError as exc:
        if finished:
            return finished[0]
        if "matches several" in str(exc):
            raise
        raise StoreError(
            f"{store}: no experiment has the id {ref!r}, and no finished run is named {ref!r}"
        ) from None
