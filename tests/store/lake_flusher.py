"""A writer process for the DuckLake commit tests: ``python -m tests.store.lake_flusher STORE
NAME BATCHES`` writes BATCHES flushes of 200 items through a :class:`StoreWriter` once it reads
``go`` from stdin, then prints its ``lost_commits`` and ``retried_flushes`` as JSON."""

from __future__ import annotations

import datetime as dt
import json
import sys

from evalkit.run._rows import RowBuffer
from evalkit.store._writer import ExperimentRecord, ScorerRecord, StoreWriter
from tests.benchmarks.bench_store import SCORERS, make_items

_ITEMS = 200


def main(argv: list[str]) -> None:
    store, name, batches = argv[0], argv[1], int(argv[2])
    writer = StoreWriter(store)
    writer.begin(
        ExperimentRecord(name, name, None, "d", {}, None, batches * _ITEMS,
                         dt.datetime.now(dt.UTC), "test"),
        [ScorerRecord(s, s, "", i) for i, s in enumerate(SCORERS)],
    )  # fmt: skip
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(batches):
        buffer = RowBuffer(name, {s: s for s in SCORERS})
        for item in make_items(n * _ITEMS, _ITEMS):
            buffer.add(item)
        writer.write(buffer)
    writer.finish(status="completed", completed_at=dt.datetime.now(dt.UTC),
                  dataset_fingerprint=None)  # fmt: skip
    print(json.dumps({"lost": writer.lost_commits, "retried": writer.retried_flushes}))


if __name__ == "__main__":
    main(sys.argv[1:])
