from __future__ import annotations

import numpy as np

from evalkit.dataset._seen import SeenIds


def test_matches_a_python_set_over_many_batches() -> None:
    rng = np.random.default_rng(7)
    seen = SeenIds()
    reference: set[int] = set()
    for _ in range(200):
        batch = rng.integers(0, 5_000, size=64, dtype=np.uint64)
        expected = [int(v) in reference for v in batch]
        assert seen.contains(batch).tolist() == expected
        seen.add(batch)
        reference.update(int(v) for v in batch)
    everything = np.arange(0, 5_000, dtype=np.uint64)
    assert seen.contains(everything).tolist() == [v in reference for v in range(5_000)]


def test_keeps_few_runs() -> None:
    seen = SeenIds()
    for start in range(0, 100_000, 100):
        seen.add(np.arange(start, start + 100, dtype=np.uint64))
    assert len(seen._runs) <= 20
    assert seen.contains(np.array([0, 99_999, 100_000], dtype=np.uint64)).tolist() == [
        True,
        True,
        False,
    ]
