"""A compact set of 64-bit ids: which content hashes a streamed dataset has already produced.

A Python ``set`` of a million 16-character ids costs ~100 MB; this keeps 8 bytes per id in
sorted numpy runs whose sizes halve from one to the next (a log-structured merge), so a
membership query is a binary search per run and an insert is amortised O(log n). See
docs/pages/design/seen-ids-in-numpy-runs.md.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]


class SeenIds:
    """Membership of uint64 values, added batch by batch."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: list[U64] = []

    def contains(self, values: U64) -> npt.NDArray[np.bool_]:
        """For each value, whether it was added before."""
        found = np.zeros(len(values), dtype=bool)
        for run in self._runs:
            at = np.searchsorted(run, values)
            inside = at < len(run)
            found[inside] |= run[at[inside]] == values[inside]
        return found

    def add(self, values: U64) -> None:
        """Add values (duplicates among them or with earlier values are harmless)."""
        if not len(values):
            return
        self._runs.append(np.unique(values))
        # Merge while the newest run is at least half the size of the one before it.
        while len(self._runs) > 1 and 2 * len(self._runs[-1]) >= len(self._runs[-2]):
            newest = self._runs.pop()
            self._runs[-1] = np.union1d(self._runs[-1], newest)
