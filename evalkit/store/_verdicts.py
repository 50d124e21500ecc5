"""A run's verdict kept with it: ``experiments.verdict``, the baseline it was judged against
and why (``baseline_id``, ``baseline_reason``), and one ``scorer_gates`` row per scorer.

Judging a run again (a resumed run that completes, ``evalkit run`` judging what
``run_evals`` judged on its own gates) replaces the earlier verdict and gate rows, in one
transaction taken in the writers' turns at a DuckLake's SQLite catalog.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast

import duckdb

from evalkit.errors import ConfigError
from evalkit.store._batch_io import Transaction
from evalkit.store._commit_lock import CatalogTurns
from evalkit.store._connect import DEFAULT_BUSY_TIMEOUT, connection, retry_busy
from evalkit.store._migrate import migrate, schema_version

#: What ``experiments.verdict`` holds; NULL (None) when no gate could run.
StoredVerdict = Literal["passed", "failed"]


@dataclass(frozen=True, slots=True)
class GateRecord:
    """One scorer's gate outcome as ``scorer_gates`` keeps it.

    Attributes:
        scorer_id: The scorer.
        passed: True when none of its gates failed.
        reasons: One sentence per failed gate (empty when it passed).
        mean: The mean of its successful scores.
        threshold_min: Its threshold's lower bound, if any.
        threshold_max: Its threshold's upper bound, if any.
        error_rate: The share of its pairs without a score.
        max_error_rate: The largest share that passes.
        baseline_mean: The baseline's mean over the paired items (with a baseline).
        delta: This run's mean minus the baseline's over the paired items.
        p_value: The paired test's p-value.
        regression: The comparison's verdict (``regressed``, ``improved``, ``unchanged``,
            ``not_comparable``), or None without a baseline.
    """

    scorer_id: str
    passed: bool
    reasons: tuple[str, ...] = ()
    mean: float | None = None
    threshold_min: float | None = None
    threshold_max: float | None = None
    error_rate: float | None = None
    max_error_rate: float | None = None
    baseline_mean: float | None = None
    delta: float | None = None
    p_value: float | None = None
    regression: str | None = None


def record_verdict(
    store: str | os.PathLike[str],
    experiment_id: str,
    verdict: StoredVerdict | None,
    gates: Sequence[GateRecord] = (),
    *,
    baseline_id: str | None = None,
    baseline_reason: str | None = None,
    lock_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> None:
    """Keep a run's verdict in the store, replacing any it had (one transaction).

    Args:
        store: The store holding the run.
        experiment_id: The run.
        verdict: ``"passed"``, ``"failed"``, or None when no gate could run (a cancelled run).
        gates: Each scorer's gate outcome (none with a None verdict).
        baseline_id: The run it was judged against, if any.
        baseline_reason: Why that run was the baseline (or why there was none).
        lock_timeout: Seconds a busy store is retried.

    Raises:
        ConfigError: ``verdict`` is none of the three.
    """
    record = VerdictRecord(verdict, tuple(gates), baseline_id, baseline_reason)
    where = str(store)
    turns = CatalogTurns(where, lock_timeout)

    def write() -> None:
        with turns.turn(), connection(where, lock_timeout=lock_timeout) as con:
            migrate(con, where=where)
            with Transaction(con):
                replace_verdict(con, experiment_id, record)

    # Other runs may be writing a DuckLake store: a lost commit runs again.
    retry_busy(write, timeout=lock_timeout)


@dataclass(frozen=True, slots=True)
class VerdictRecord:
    """A run's verdict as the store keeps it (see `record_verdict` for each field).

    Raises:
        ConfigError: ``verdict`` is none of the three.
    """

    verdict: StoredVerdict | None
    gates: tuple[GateRecord, ...] = ()
    baseline_id: str | None = None
    baseline_reason: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in ("passed", "failed", None):
            raise ConfigError(f"verdict must be 'passed', 'failed' or None, got {self.verdict!r}")


def replace_verdict(
    con: duckdb.DuckDBPyConnection, experiment_id: str, record: VerdictRecord
) -> None:
    """Replace the run's verdict and gate rows with ``record``, in ``con``'s open transaction
    (a run's writer keeps its own verdict with its outcome so)."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    baseline_id = record.baseline_id
    rows = [
        (experiment_id, g.scorer_id, g.passed, json.dumps(list(g.reasons)), g.mean,
         g.threshold_min, g.threshold_max, g.error_rate, g.max_error_rate,
         baseline_id if g.regression is not None else None, g.baseline_mean, g.delta,
         g.p_value, g.regression, now)
        for g in record.gates
    ]  # fmt: skip
    head = [record.verdict, baseline_id, record.baseline_reason]
    _replace(con, experiment_id, rows, head)


def _replace(
    con: duckdb.DuckDBPyConnection, experiment_id: str, rows: list[tuple[Any, ...]],
    head: list[Any],
) -> None:  # fmt: skip
    con.execute("DELETE FROM scorer_gates WHERE experiment_id = ?", [experiment_id])
    if rows:
        con.executemany(
            "INSERT INTO scorer_gates (experiment_id, scorer_id, passed, reasons, mean,"
            " threshold_min, threshold_max, error_rate, max_error_rate, baseline_id,"
            " baseline_mean, delta, p_value, regression, judged_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    con.execute(
        "UPDATE experiments SET verdict = ?, baseline_id = ?, baseline_reason = ? WHERE id = ?",
        [*head, experiment_id],
    )


class GateRow(TypedDict):
    """One ``scorer_gates`` row as [`read_gates`][evalkit.store.read_gates] returns it (the
    store schema page describes each column); ``reasons`` decoded from its JSON text."""

    scorer_id: str
    passed: bool
    reasons: list[str]
    mean: float | None
    threshold_min: float | None
    threshold_max: float | None
    error_rate: float | None
    max_error_rate: float | None
    baseline_id: str | None
    baseline_mean: float | None
    delta: float | None
    p_value: float | None
    regression: str | None
    judged_at: dt.datetime


def read_gates(store: str | os.PathLike[str], experiment_id: str) -> list[GateRow]:
    """The run's ``scorer_gates`` rows (``reasons`` as a list), by scorer id; empty for a run
    never judged in the store."""
    with connection(store, read_only=True) as con:
        if schema_version(con) < 8:
            return []
        cursor = con.execute(
            "SELECT * EXCLUDE (experiment_id) FROM scorer_gates WHERE experiment_id = ?"
            " ORDER BY scorer_id",
            [experiment_id],
        )
        names = [d[0] for d in cursor.description or ()]
        found = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for row in found:
        row["reasons"] = json.loads(row["reasons"])
    # SELECT * of scorer_gates less experiment_id: GateRow's keys (tests/store/test_row_types.py).
    return cast(list[GateRow], found)
