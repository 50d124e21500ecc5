"""Keeping a stored run's verdict in its store (``experiments.verdict``, ``scorer_gates``).

``run_evals`` records the verdict of the run's own gates (coverage, error rate, thresholds,
agreement); ``evalkit run``, ``judge_run`` and the pytest plugin record it again with the
regression gate against the baseline, and which baseline and why. A cancelled or
interrupted run has no verdict (NULL): its gates could not run on the whole dataset. A run
merged from several shard slices is judged on its own gates once merged
(`record_merged_verdict`), from what its config recorded;
[`merge_shard_stores`][evalkit.run.merge_shard_stores] merges and judges, as ``evalkit merge``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from evalkit._defaults import DEFAULT_LOCK_TIMEOUT
from evalkit._json import stored_config
from evalkit.errors import StoreError
from evalkit.run._experiment import ExperimentResult
from evalkit.run._summary import ExperimentStatus, summary_from_counts
from evalkit.run._thresholds import parse_error_rates, parse_thresholds
from evalkit.store import read_experiment
from evalkit.store._merge import merge_stores
from evalkit.store._read import read_run_counts
from evalkit.store._verdicts import GateRecord, VerdictRecord, record_verdict

if TYPE_CHECKING:
    from evalkit.agreement import ScorerAgreement
    from evalkit.compare import Comparison

#: Statuses whose gates could not run: their verdict is NULL.
UNJUDGED = ("cancelled", "interrupted", "running")


def gate_records(
    result: ExperimentResult,
    *,
    comparison: Comparison | None = None,
    reasons: Mapping[str, Sequence[str]] | None = None,
) -> list[GateRecord]:
    """One `GateRecord` per scorer of ``result``: its own gates and,
    with ``comparison``, the regression gate (``reasons``: every scorer's reasons as the
    report gives them, regression included; default the run's own)."""
    compared = {c.scorer_id: c for c in comparison} if comparison is not None else {}
    records = []
    for scorer_id, gate in result.verdict.scorers.items():
        c = compared.get(scorer_id)
        why = tuple(reasons[scorer_id]) if reasons and scorer_id in reasons else gate.reasons
        regressed = c is not None and c.verdict == "regressed"
        records.append(
            GateRecord(
                scorer_id=scorer_id,
                passed=gate.passed and not regressed and not why,
                reasons=why,
                mean=gate.mean,
                threshold_min=gate.threshold.min if gate.threshold else None,
                threshold_max=gate.threshold.max if gate.threshold else None,
                error_rate=gate.error_rate,
                max_error_rate=gate.max_error_rate,
                baseline_mean=c.baseline_mean if c else None,
                delta=c.difference if c else None,
                p_value=c.p_value if c else None,
                regression=c.verdict if c else None,
            )
        )
    return records


def record_run_verdict(
    result: ExperimentResult,
    *,
    comparison: Comparison | None = None,
    reasons: Mapping[str, Sequence[str]] | None = None,
    passed: bool | None = None,
    baseline_id: str | None = None,
    baseline_reason: str | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Keep ``result``'s verdict in its store, replacing the one it had.

    Args:
        result: A stored run (``result.store`` set; nothing is done without one).
        comparison: Its comparison with ``baseline_id``, if it was judged against one.
        reasons: Per scorer, the reasons the report gives (regression included).
        passed: The whole verdict, when the caller judged more than the scorers' gates
            (a named baseline that could not be used fails the run); default: every
            scorer passed.
        baseline_id: The run it was judged against.
        baseline_reason: Why that run (or why none).
        lock_timeout: Seconds a store held by another process is retried.

    Raises:
        StoreError: The store could not be written (the run stays stored as it was).
    """
    if result.store is None:
        return
    record = verdict_record(
        result, comparison=comparison, reasons=reasons, passed=passed,
        baseline_id=baseline_id, baseline_reason=baseline_reason,
    )  # fmt: skip
    record_verdict(
        result.store,
        result.experiment_id,
        record.verdict,
        record.gates,
        baseline_id=record.baseline_id,
        baseline_reason=record.baseline_reason,
        lock_timeout=lock_timeout,
    )


def verdict_record(
    result: ExperimentResult,
    *,
    comparison: Comparison | None = None,
    reasons: Mapping[str, Sequence[str]] | None = None,
    passed: bool | None = None,
    baseline_id: str | None = None,
    baseline_reason: str | None = None,
) -> VerdictRecord:
    """``result``'s verdict as the store keeps it (the arguments as `record_run_verdict`'s):
    NULL with no gate rows for a run whose gates could not run."""
    if result.status in UNJUDGED:
        return VerdictRecord(None, (), baseline_id, baseline_reason)
    gates = tuple(gate_records(result, comparison=comparison, reasons=reasons))
    ok = all(g.passed for g in gates) if passed is None else passed
    return VerdictRecord("passed" if ok else "failed", gates, baseline_id, baseline_reason)


class VerdictNotKeptWarning(RuntimeWarning):
    """``run_evals`` stored the run but the store could not take its verdict (another process
    held it past ``lock_timeout``, a read-only store): the run is returned all the same.

    ``evalkit run`` and the pytest plugin ignore it: they judge the run again and keep that
    verdict with [`evalkit.experiment_file.judge_run`][evalkit.experiment_file.judge_run], and
    report the outcome of that write only.
    """


def verdict_not_kept(result: ExperimentResult, error: StoreError) -> str:
    """The warning of a stored run whose verdict the store could not take."""
    return (
        f"evalkit: the verdict of {result.name!r} ({result.experiment_id}) was not kept in the"
        f" store {result.store}: {error}. The run is stored and returned, but the store's"
        " verdict of it is missing or out of date (`evalkit experiments`, `show` and the next"
        " run's `latest` baseline go by it): evalkit.experiment_file.judge_run(result) keeps it"
        " once the store is writable"
    )


def record_merged_verdict(
    store: str | os.PathLike[str],
    experiment_id: str,
    *,
    agreement: Mapping[str, ScorerAgreement] | None = None,
) -> None:
    """Judge a run merged from several shard slices on its own gates (coverage, error rate,
    thresholds and, with ``agreement`` measured over all its items, agreement), as its
    config recorded them, and keep the verdict: each slice's verdict judged its slice only.

    A run of one slice keeps the slice's verdict (nothing is done).
    """
    run = read_experiment(store, experiment_id)
    config = stored_config(run["config"])
    if len(config.get("merged_from") or ()) < 2:
        return
    scorer_ids = tuple(s["id"] for s in config.get("scorers") or ())
    result = ExperimentResult(
        experiment_id=experiment_id,
        name=run["name"],
        description=run["description"],
        status=cast(ExperimentStatus, run["status"]),
        started_at=run["started_at"],
        completed_at=run["completed_at"] or run["started_at"],
        dataset=run["dataset"],
        dataset_fingerprint=run["dataset_fingerprint"],
        scorer_ids=scorer_ids,
        summary=summary_from_counts(read_run_counts(store, experiment_id), scorer_ids),
        thresholds=parse_thresholds(config.get("thresholds"), scorer_ids),
        items=(),
        config=config,
        store=str(store),
        results_kept=False,
        max_error_rates=parse_error_rates(config.get("max_error_rate"), scorer_ids),
        agreement=dict(agreement or {}),
        min_agreement=config.get("min_agreement") or {},
    )
    record_run_verdict(result)


def merge_shard_stores(
    sources: Sequence[str | os.PathLike[str]], store: str | os.PathLike[str]
) -> list[str]:
    """Join the stores of a sharded run's ``--shard I/N`` jobs into one run each, and judge
    each merged run on its own gates, as ``evalkit merge SOURCES... --store STORE`` does.

    Every complete group of slices found in ``sources`` is merged into ``store`` (a DuckDB
    file or a DuckLake store, as each source may be), then judged over all its items (its
    agreement with human labels measured again over all of them). This is the merge to call
    from Python: the store's own merges (of stores, and of a lake's finished slices) are
    evalkit's internals, which leave a merged run unjudged.

    Args:
        sources: The shard jobs' stores.
        store: The store to merge into (made if missing).

    Returns:
        The merged runs' ids, in ``store``.

    Raises:
        StoreError: A source is unreadable, holds no shard slices (or only slices merged
            already), or a group misses slices (named) or has one twice.
    """
    from evalkit.agreement._merged import measure_merged

    merged = merge_stores(sources, store)
    for experiment_id in merged:
        record_merged_verdict(store, experiment_id, agreement=measure_merged(store, experiment_id))
    return merged
