"""Writing one experiment to the store: its record, then batches of items, then its outcome.

Every call opens the file, does its work in one transaction and closes it again, so other
processes can read the store between flushes (DuckDB allows one writing process *or* several
readers at a time). A batch holds whole items only, so a crash never leaves half an item.
See docs/pages/design/store-rows-via-arrow.md; the batches come as Arrow tables
(docs/pages/design/store-takes-arrow.md, their types in ``_batch_io.py``). A store locked by
another process is retried and, past ``lock_timeout``, the unwritten batches are spilled
beside it (docs/pages/design/locked-store-recovery.md).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from evalkit._defaults import DEFAULT_LOCK_TIMEOUT
from evalkit._json import json_text
from evalkit._redaction import redact
from evalkit.errors import StoreError
from evalkit.store._batch_io import (
    ExperimentRecord,
    RowBatch,
    ScorerRecord,
    Transaction,
    insert_views,
    naive_utc,
    registered,
    writer_config,
)
from evalkit.store._claim import ClaimState, claim, maybe_alive
from evalkit.store._commit_lock import CatalogTurns
from evalkit.store._connect import StoreLockedError, connection, retry_busy
from evalkit.store._experiment_rows import add_missing_scorers, insert_experiment, record_outcome
from evalkit.store._lake_errors import CatalogUnreachableError
from evalkit.store._lake_stage import Layout, append_to_lake, discard_files, read_layout, sweep
from evalkit.store._location import is_lake
from evalkit.store._migrate import migrate
from evalkit.store._pending import Kept, PendingWrites
from evalkit.store._recovery import recover, recovery_dir, spill
from evalkit.store._replace import final_status, recount_experiment, write_replacing
from evalkit.store._verdicts import VerdictRecord, replace_verdict

#: Seconds between a DuckLake writer's refreshes of its experiment's counts and heartbeat.
#: Its data commits are pure appends, which DuckLake commits beside other writers' appends;
#: an UPDATE of ``experiments`` in each of them made concurrent writers' commits conflict
#: (docs/pages/design/store-location.md).
LAKE_PROGRESS_S = 5.0

#: Seconds a DuckLake writer runs a flush again at once while its commit keeps losing to
#: other writers', before it keeps the batch for a later flush (as for a locked store file).
LAKE_RETRY_S = 10.0


__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "ExperimentRecord",
    "RowBatch",
    "ScorerRecord",
    "StoreWriter",
    "insert_views",
    "registered",
    "writer_config",
]


class StoreWriter:
    """Writes one experiment's rows to a DuckDB store file.

    Args:
        path: The store file; created (with its schema) when missing.
        lock_timeout: Seconds a locked store is waited for: at `begin`, and by the
            retries of kept batches before they are spilled to the recovery folder (default
            `DEFAULT_LOCK_TIMEOUT`, 300 s).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    ) -> None:
        self.path = str(path)
        self.lock_timeout = lock_timeout
        self.experiment_id: str | None = None
        self.succeeded = 0
        self.failed = 0
        #: Set by :meth:`reopen`: writes replace a pair's older rows, counts come from the store.
        self.resuming = False
        #: The status :meth:`finish` recorded.
        self.final_status: str | None = None
        #: Whether :meth:`finish` kept the run's verdict with its outcome.
        self.verdict_kept = False
        self._pending = PendingWrites(self.path, lock_timeout)
        #: The recovery folder the kept batches were spilled to, once the store stayed locked.
        self._spilled: Path | None = None
        #: Flushes refused (the store locked, or a DuckLake commit lost to another writer's)
        #: and kept to be written again.
        self.retried_flushes = 0
        #: DuckLake commits of this writer that lost to another writer's (or found the
        #: catalog busy) and were run again.
        self.lost_commits = 0
        self._lake = is_lake(self.path)
        self._turns = CatalogTurns(self.path, lock_timeout)
        self._progress_at = time.monotonic()
        #: A lake's tables, read at its first flush (``_lake_stage.py``).
        self._layout: Layout | None = None

    def begin(self, record: ExperimentRecord, scorers: Sequence[ScorerRecord]) -> None:
        """Create or migrate the store (loading rows spilled there earlier, see
        [`recover`][evalkit.store.recover]), and record the experiment as ``running``."""
        recover(self.path, lock_timeout=self.lock_timeout)
        retry_busy(lambda: self._begin(record, scorers), timeout=self.lock_timeout)
        self.experiment_id = record.id

    def _begin(self, record: ExperimentRecord, scorers: Sequence[ScorerRecord]) -> None:
        with self._turns.turn(), connection(self.path, lock_timeout=self.lock_timeout) as con:
            migrate(con, where=self.path, timeout=self.lock_timeout)
            with Transaction(con):
                insert_experiment(con, record, scorers)

    def reopen(
        self,
        experiment_id: str,
        *,
        total_items: int,
        scorers: Sequence[ScorerRecord] = (),
        config: Mapping[str, Any] | None = None,
        expected: ClaimState | None = None,
    ) -> None:
        """Take over a stored experiment to resume it: ``running`` again, by this process.

        ``scorers`` the experiment lacks are added (a forced resume with a new scorer);
        ``config``, when given (a forced resume), replaces the stored one. ``expected`` is the
        row as the resume read it (`StoredExperiment.claim_state`): the take-over
        happens only if the row is still so, in the same transaction.

        Raises:
            ConfigError: Another resume claimed the experiment since ``expected`` was read.
        """
        recover(self.path, lock_timeout=self.lock_timeout)

        def take_over() -> None:
            self._take_over(experiment_id, total_items, scorers, config, expected)

        retry_busy(take_over, timeout=self.lock_timeout)
        self.experiment_id = experiment_id
        self.resuming = True
        if self._lake and not maybe_alive(expected):
            self._sweep()

    def _sweep(self) -> None:
        """Delete the staged files an earlier writer of the experiment left in the lake's
        data path (killed, or its rows spilled): the experiment is this writer's now."""
        assert self.experiment_id is not None
        with self._turns.turn(), connection(self.path, lock_timeout=self.lock_timeout) as con:
            if self._layout is None:
                self._layout = read_layout(con)
            sweep(con, self._layout, self.experiment_id)

    def _take_over(
        self,
        experiment_id: str,
        total_items: int,
        scorers: Sequence[ScorerRecord],
        config: Mapping[str, Any] | None,
        expected: ClaimState | None,
    ) -> None:
        with self._turns.turn(), connection(self.path, lock_timeout=self.lock_timeout) as con:
            migrate(con, where=self.path, timeout=self.lock_timeout)
            with Transaction(con):
                claim(
                    con,
                    experiment_id,
                    expected,
                    total_items=total_items,
                    config=json_text(redact(config)) if config is not None else None,
                )
                add_missing_scorers(con, experiment_id, scorers)

    def write(self, batch: RowBatch) -> None:
        """Insert a batch of finished items and update the experiment's counts, atomically.

        The batch's tables are built here, on the writer's thread. When resuming, the batch's
        items and (item, scorer) pairs replace their older rows in the same transaction, so a
        pair always ends as exactly one score or one failure.

        A store locked by another process does not stop the run: the batch is kept and
        written by a later call (retried with back-off, see ``_pending.py``). Once the store
        has refused every attempt for ``lock_timeout`` s, the kept batches are spilled to the
        recovery folder beside the store and [`StoreError`][evalkit.errors.StoreError] says where. A
        write that fails otherwise (an I/O error, a file that cannot be opened) is kept the same
        way.
        """
        self.keep(batch)
        self._drain(final=False)

    def keep(self, batch: RowBatch) -> None:
        """Take a batch of finished items to be written by the next `write` or by `finish`,
        without writing it now. The batch's tables are built here, on the caller's thread.

        A run's last batch is kept so: `finish` writes it with the run's outcome in one
        transaction, through one open of the store and one checkpoint instead of two
        (docs/pages/design/one-database-per-process.md, "The last batch and the outcome").
        """
        if self.experiment_id is None:
            raise StoreError(f"{self.path}: write() called before begin()")
        tables = batch.tables()
        if tables:
            self._pending.batches.append(Kept(tables, batch.succeeded, batch.failed))

    def _drain(self, *, final: bool, outcome: _Outcome | None = None) -> str | None:
        """Write the kept batches in order; with ``final``, wait for a locked store (up to
        ``lock_timeout``) instead of leaving them for a later call. With ``outcome``, a store
        file's last batch is written with it, in the same transaction: returns the status
        recorded then (None when no batch carried it)."""
        pending = self._pending
        recorded: str | None = None
        if self._spilled is not None:
            self._spill()
        while pending.batches:
            if not pending.due():
                if not final:
                    return None
                pending.wait()
            last = outcome if len(pending.batches) == 1 and not self._lake else None
            try:
                recorded = self._write_kept(pending.batches[0], last)
            except StoreError as exc:  # locked or not (an I/O error): kept, never dropped
                if last is not None and _verdict_refused(last, exc):
                    outcome = self._without_verdict(last)
                    continue
                self.retried_flushes += 1
                pending.refused(exc)
                if pending.expired():
                    self._spill()
                continue
            pending.batches.pop(0)
            pending.written()
        if self._lake and not final and time.monotonic() - self._progress_at >= LAKE_PROGRESS_S:
            self._write_progress()
        return recorded

    def _write_progress(self) -> None:
        """A DuckLake writer's counts and heartbeat, in a small transaction of their own;
        skipped (until the next one is due) when it loses to another writer's commit."""
        assert self.experiment_id is not None
        self._progress_at = time.monotonic()
        try:
            turn = self._turns.turn()
            with turn, connection(self.path, lock_timeout=0.0) as con, Transaction(con):
                con.execute(
                    "UPDATE experiments SET succeeded_count = ?, failed_count = ?,"
                    " heartbeat_at = ? WHERE id = ?",
                    [
                        self.succeeded,
                        self.failed,
                        naive_utc(dt.datetime.now(dt.UTC)),
                        self.experiment_id,
                    ],
                )
        except StoreError:  # locked, busy, or the catalog out of reach: done next time
            return

    def _spill(self) -> None:
        """Spill the kept batches to the recovery folder and raise the error that says so."""
        pending, experiment_id = self._pending, self.experiment_id
        assert experiment_id is not None
        items, rows = pending.items(), pending.rows()
        last = pending.last_error
        if pending.batches:
            try:
                spilled = spill(self.path, experiment_id, [k.tables for k in pending.batches])
            except (OSError, pa.ArrowException) as exc:
                pending.batches.clear()  # the run ends here: resume runs these items again
                raise StoreError(
                    f"{self.path}: every write to the score store failed ({last}), and the"
                    f" {items} finished items not yet written ({rows} rows) could not be kept"
                    f" in {recovery_dir(self.path)} either ({exc}): they are not stored;"
                    f" `evalkit run --resume {experiment_id}` runs them again once the store"
                    " can be written"
                ) from exc
            self._spilled = spilled
            pending.batches.clear()
        cause = f"every write to the score store failed ({last})"
        if isinstance(last, CatalogUnreachableError):
            cause = f"the DuckLake store's catalog stayed out of reach ({last})"
        elif last is None or isinstance(last, StoreLockedError):
            cause = "the score store stayed locked by another process"
        raise StoreError(
            f"{self.path}: {cause} for {self.lock_timeout:g} s (lock_timeout, --lock-timeout);"
            f" the {items} finished"
            f" items not yet written ({rows} rows) are kept in {self._spilled}: they are loaded"
            f" into the store by `evalkit run --resume {experiment_id}` (or"
            f" evalkit.store.recover({self.path!r}), or the next run writing this store)"
        )

    def _write_kept(self, kept: Kept, outcome: _Outcome | None = None) -> str | None:
        """One attempt at writing ``kept`` (with a store file's ``outcome``: the status
        recorded); raises `StoreLockedError` at once when the
        store is locked. A DuckLake commit that lost to another writer's (or found the catalog
        busy) is tried again at once, after a short jittered wait, for up to
        `LAKE_RETRY_S`, before the batch is kept."""
        if not self._lake:
            return self._write_once(kept, outcome)

        def attempt() -> None:
            self.lost_commits += 1
            self._write_once(kept)
            self.lost_commits -= 1

        retry_busy(attempt, timeout=min(LAKE_RETRY_S, self.lock_timeout))
        return None

    def _write_once(self, kept: Kept, outcome: _Outcome | None = None) -> str | None:
        """Write ``kept`` in one transaction; with ``outcome`` (a store file's last batch),
        record the run's end in the same transaction, and return the status recorded."""
        experiment_id = self.experiment_id
        assert experiment_id is not None
        recorded: str | None = None
        tables = kept.tables
        config = writer_config(sum(t.nbytes for t in tables.values()))
        with ExitStack() as stack:
            with self._turns.turn():  # opening a lake reads its catalog
                con = stack.enter_context(connection(self.path, lock_timeout=0.0, config=config))
                if self._lake and self._layout is None:
                    self._layout = read_layout(con)
            if self.resuming:
                with self._turns.transaction(con):
                    self.succeeded, self.failed = write_replacing(con, experiment_id, tables)
                    if outcome is not None:
                        recorded = self._record(con, outcome)
                return recorded
            if self._layout is not None:  # a pure append: counts apart (_write_progress)
                if kept.tried and _landed(con, experiment_id, tables):
                    # The COMMIT of an attempt that failed went through (the catalog was
                    # lost as it answered): writing it again would store it twice.
                    kept.staged.clear()
                else:
                    discard_files(kept.staged)  # nobody's: that attempt did not commit
                    kept.staged.clear()
                    kept.tried = True
                    transaction = self._turns.transaction(con)
                    append_to_lake(con, self._layout, tables, transaction, kept.staged)
            else:
                counts = (self.succeeded + kept.succeeded, self.failed + kept.failed)
                with registered(con, tables) as views, self._turns.transaction(con):
                    insert_views(con, views)
                    if outcome is not None:
                        recorded = self._record(con, outcome, counts)
                    else:
                        con.execute(
                            "UPDATE experiments SET succeeded_count = ?, failed_count = ?,"
                            " heartbeat_at = ? WHERE id = ?",
                            [*counts, naive_utc(dt.datetime.now(dt.UTC)), experiment_id],
                        )
        self.succeeded += kept.succeeded
        self.failed += kept.failed
        return recorded

    def finish(
        self,
        *,
        status: str,
        completed_at: dt.datetime,
        dataset_fingerprint: str | None,
        verdict: VerdictRecord | None = None,
    ) -> None:
        """Record the experiment's final status, end time and dataset fingerprint, with the
        kept batches (the last one in the same transaction) and, given one, the run's
        ``verdict`` (also in that transaction: the run never reads finished without it).

        A resumed experiment's counts and finished status are recomputed from the whole
        store (``failed`` / ``completed_with_errors`` / ``completed``), not from the last pass.
        """
        if self.experiment_id is None:
            raise StoreError(f"{self.path}: finish() called before begin()")
        outcome = _Outcome(status, completed_at, dataset_fingerprint, verdict)
        recorded = self._drain(final=True, outcome=outcome)
        if recorded is not None:  # with the last batch (a store file)
            self.final_status = recorded
            return
        # A lake's catalog lost now is waited for as a busy one: the rows are in, only the
        # run's status is left to record.
        try:
            self.final_status = retry_busy(
                lambda: self._finish(outcome), timeout=self.lock_timeout, outage=True
            )
        except StoreError as exc:
            if not _verdict_refused(outcome, exc):
                raise
            bare = self._without_verdict(outcome)
            self.final_status = retry_busy(
                lambda: self._finish(bare), timeout=self.lock_timeout, outage=True
            )

    def _without_verdict(self, outcome: _Outcome) -> _Outcome:
        """``outcome`` to be recorded again without the verdict the store refused: the
        caller keeps the verdict apart (``run_evals`` warns when it cannot), the run is not
        lost for it."""
        self.verdict_kept = False
        return replace(outcome, verdict=None)

    def _finish(self, outcome: _Outcome) -> str:
        with (
            self._turns.turn(),
            connection(self.path, lock_timeout=self.lock_timeout) as con,
            Transaction(con),
        ):
            return self._record(con, outcome)

    def _record(
        self,
        con: duckdb.DuckDBPyConnection,
        outcome: _Outcome,
        counts: tuple[int, int] | None = None,
    ) -> str:
        """Record ``outcome`` in ``con``'s open transaction (``counts``: the succeeded and
        failed items, default the writer's); the status recorded."""
        assert self.experiment_id is not None
        status = outcome.status
        if self.resuming:
            self.succeeded, self.failed = recount_experiment(con, self.experiment_id)
            status = final_status(con, self.experiment_id, status)
            counts = None
        record_outcome(
            con,
            self.experiment_id,
            status=status,
            completed_at=outcome.completed_at,
            dataset_fingerprint=outcome.dataset_fingerprint,
            counts=counts or (self.succeeded, self.failed),
        )
        if outcome.verdict is not None:
            replace_verdict(con, self.experiment_id, outcome.verdict)
            self.verdict_kept = True
        return status


def _verdict_refused(outcome: _Outcome, exc: StoreError) -> bool:
    """Whether a write carrying ``outcome``'s verdict may have failed for the verdict (its
    gate rows held by another connection), not for a lock on the whole store."""
    return outcome.verdict is not None and not isinstance(exc, StoreLockedError)


@dataclass(frozen=True, slots=True)
class _Outcome:
    """How a run ended, as `StoreWriter.finish` records it."""

    status: str
    completed_at: dt.datetime
    dataset_fingerprint: str | None
    verdict: VerdictRecord | None = None


def _landed(
    con: duckdb.DuckDBPyConnection, experiment_id: str, tables: Mapping[str, pa.Table]
) -> bool:
    """Whether a batch of a new experiment (not a resume: its items are stored once) is in
    the store already: a batch commits whole, so one of its items tells."""
    items = tables.get("experiment_items")
    if items is None or not items.num_rows:
        return False
    row = con.execute(
        "SELECT count(*) FROM experiment_items WHERE experiment_id = ? AND item_id = ?",
        [experiment_id, items.column("item_id")[0].as_py()],
    ).fetchone()
    return bool(row and row[0])
