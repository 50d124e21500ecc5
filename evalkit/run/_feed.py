"""Handing dataset items to workers, one batch read at a time."""

from __future__ import annotations

import anyio

from evalkit.dataset import Item, ItemBatches
from evalkit.run._resume_plan import ResumeBatches


class ItemFeed:
    """Items for the workers of a run, read lazily in batches.

    Workers take items one by one without any await while the current batch lasts; reading
    the next batch happens under a lock, so only one batch is ever held besides the items in
    flight. A dataset error raised while reading reaches the worker that asked.
    """

    def __init__(self, batches: ItemBatches | ResumeBatches) -> None:
        self.batches = batches
        self._buffer: list[Item] = []
        self._position = 0
        self._exhausted = False
        self._lock = anyio.Lock()

    @property
    def fingerprint(self) -> str | None:
        """The dataset fingerprint, once every row was read."""
        return self.batches.fingerprint

    async def next(self) -> Item | None:
        """The next item, or None when the dataset is exhausted."""
        while True:
            if self._position < len(self._buffer):
                item = self._buffer[self._position]
                self._position += 1
                return item
            if self._exhausted:
                return None
            async with self._lock:
                if self._position < len(self._buffer) or self._exhausted:
                    continue
                batch = next(self.batches, None)
                if batch is None:
                    self._exhausted = True
                else:
                    self._buffer, self._position = batch, 0
