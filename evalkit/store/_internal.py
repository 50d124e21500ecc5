"""What is left of the store's seam, not sorted yet: the run's writer and resume readers,
which the run imports from here (each import is listed by name in tests/test_boundaries.py, a
list that only shrinks). Not for users: the store's public names are those of `evalkit.store`,
each in the API reference. Why, and what is left to decide:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.store._arrow import ARROW_SCHEMAS
    from evalkit.store._read import RunCounts, ScorerCounts, read_run_counts
    from evalkit.store._shard_writer import ShardRecord, ShardWriter
    from evalkit.store._stored import (
        StoredExperiment,
        StoredOutput,
        read_done_shards,
        read_for_resume,
        read_outputs,
        read_shard_failures,
    )
    from evalkit.store._verdicts import StoredVerdict
    from evalkit.store._writer import (
        ExperimentRecord,
        RowBatch,
        ScorerRecord,
        StoreWriter,
    )

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.store._arrow": ("ARROW_SCHEMAS",),
        "evalkit.store._location": (),
        "evalkit.store._read": (
            "RunCounts",
            "ScorerCounts",
            "read_run_counts",
        ),
        "evalkit.store._shard_writer": (
            "ShardRecord",
            "ShardWriter",
        ),
        "evalkit.store._stored": (
            "StoredExperiment",
            "StoredOutput",
            "read_done_shards",
            "read_for_resume",
            "read_outputs",
            "read_shard_failures",
        ),
        "evalkit.store._verdicts": ("StoredVerdict",),
        "evalkit.store._writer": (
            "ExperimentRecord",
            "RowBatch",
            "ScorerRecord",
            "StoreWriter",
        ),
    },
)

__all__ = [
    "ARROW_SCHEMAS",
    "ExperimentRecord",
    "RowBatch",
    "RunCounts",
    "ScorerCounts",
    "ScorerRecord",
    "ShardRecord",
    "ShardWriter",
    "StoreWriter",
    "StoredExperiment",
    "StoredOutput",
    "StoredVerdict",
    "read_done_shards",
    "read_for_resume",
    "read_outputs",
    "read_run_counts",
    "read_shard_failures",
]
