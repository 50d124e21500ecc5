"""Where the judge cache lives by default.

Kept apart from the cache itself: the cache only needs a path, and the default next to a
score store is the run's convention (``run_evals`` and ``evalkit cache`` pass the store).
"""

from __future__ import annotations

import os
from pathlib import Path

from evalkit.store import store_location

CACHE_FILE_NAME = "evalkit-cache.duckdb"


def default_cache_path(store: str | os.PathLike[str] | None = None) -> Path:
    """Where the judge cache lives by default.

    ``evalkit-cache.duckdb`` in the score store's folder; without a store, ``judge-cache.duckdb``
    in ``$XDG_CACHE_HOME/evalkit`` (``~/.cache/evalkit``).

    Args:
        store: The score store (a file, or a ``ducklake:`` attach string), if any.
    """
    if store is not None:
        # Beside the store file, or a DuckLake store's catalog file (else the working folder).
        return store_location(store).local_dir().absolute() / CACHE_FILE_NAME
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "evalkit" / "judge-cache.duckdb"
