"""Batches a writer could not write yet: kept in order, retried with back-off.

A store held by another process (a notebook's connection, a second run) refuses the writer's
flush (as does a write failing otherwise: an I/O error, a file that cannot be opened, a
DuckLake catalog out of reach, a full or read-only data path). The
batch is kept, the run goes on, and the next flush tries again once the back-off
has passed (doubling from `FIRST_DELAY_S` up to `MAX_DELAY_S`). Past the writer's
``lock_timeout`` of refusals in a row, the kept batches are spilled to the recovery folder
(``_recovery.py``). See docs/pages/design/locked-store-recovery.md.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from evalkit.store._connect import StoreBusyError, StoreLockedError
from evalkit.store._lake_errors import CatalogUnreachableError

FIRST_DELAY_S = 0.2
MAX_DELAY_S = 5.0


@dataclass(slots=True)
class Kept:
    """One unwritten batch: its tables and its item counts."""

    tables: Mapping[str, pa.Table]
    succeeded: int
    failed: int
    #: A DuckLake append of it was tried and failed: its COMMIT may have gone through (the
    #: catalog lost as it answered), so the next attempt first looks whether it landed.
    tried: bool = False
    #: The Parquet files such an attempt staged: the lake's if the batch landed, else
    #: deleted by the next attempt.
    staged: list[str] = field(default_factory=list)


@dataclass(slots=True)
class PendingWrites:
    """The unwritten batches of one writer and the state of the current outage."""

    path: str
    lock_timeout: float
    batches: list[Kept] = field(default_factory=list)
    since: float | None = None
    delay: float = FIRST_DELAY_S
    next_try: float = 0.0
    warned: bool = False
    #: What the last refused attempt raised.
    last_error: BaseException | None = None

    def due(self) -> bool:
        """Whether the back-off allows another attempt now."""
        return time.monotonic() >= self.next_try

    def refused(self, reason: BaseException) -> None:
        """An attempt was refused (the store locked, or the write failed): back off (and say
        so, once per outage)."""
        now = time.monotonic()
        self.last_error = reason
        if self.since is None:
            self.since = now
        self.next_try = now + self.delay
        self.delay = min(self.delay * 2, MAX_DELAY_S)
        if not self.warned:
            self.warned = True
            if isinstance(reason, CatalogUnreachableError):
                cause = f"the catalog of the DuckLake score store {self.path} could not be reached"
            elif isinstance(reason, StoreBusyError):
                cause = (
                    f"a commit to the DuckLake score store {self.path} lost to another"
                    " writer's, or its catalog was busy"
                )
            elif isinstance(reason, StoreLockedError):
                cause = f"the score store {self.path} is locked by another process"
            else:
                cause = f"a write to the score store {self.path} failed"
            warnings.warn(
                f"evalkit: {cause}; the run"
                f" goes on, keeping its finished items and retrying the write for up to"
                f" {self.lock_timeout:g} s (lock_timeout, --lock-timeout) ({reason})",
                RuntimeWarning,
                stacklevel=1,
            )

    def expired(self) -> bool:
        """Whether the store has refused every attempt for ``lock_timeout`` s."""
        return self.since is not None and time.monotonic() - self.since >= self.lock_timeout

    def wait(self) -> None:
        """Sleep until the next attempt is due (never past the deadline)."""
        deadline = (self.since or time.monotonic()) + self.lock_timeout
        time.sleep(max(0.0, min(self.next_try, deadline) - time.monotonic()))

    def written(self) -> None:
        """An attempt succeeded: the outage (if any) is over."""
        if self.since is not None and self.warned:
            warnings.warn(
                f"evalkit: the score store {self.path} is writable again; the kept items"
                " are being written",
                RuntimeWarning,
                stacklevel=1,
            )
        self.since, self.delay, self.next_try, self.warned = None, FIRST_DELAY_S, 0.0, False
        self.last_error = None

    def rows(self) -> int:
        """Rows kept, over every table."""
        return sum(t.num_rows for kept in self.batches for t in kept.tables.values())

    def items(self) -> int:
        """Items kept."""
        return sum(kept.succeeded + kept.failed for kept in self.batches)
