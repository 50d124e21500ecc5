"""Judging a stored run on every gate of ``evalkit run``, and recording the verdict.

The gates are the thresholds, the error-rate gates and the regression gate against the
run's baseline. ``evalkit run`` and the pytest plugin (through
[`run_experiment_file`][evalkit.experiment_file.run_experiment_file], ``_run.py``) and
[`judge_run`][evalkit.experiment_file.judge_run] from Python all judge here, so a test and the
nightly job give a run the same verdict. See docs/pages/design/pytest-verdict-after-the-body.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from evalkit._defaults import DEFAULT_LOCK_TIMEOUT, DEFAULT_MAX_DROP
from evalkit._json import loads_stored
from evalkit.compare import (
    LATEST,
    LATEST_COMPLETE,
    Baseline,
    Comparison,
    Direction,
    SliceComparison,
    baseline_candidates,
    choose_baseline,
    compare_experiments,
    read_paired_scores,
    stored_slices,
)
from evalkit.errors import BaselineError, ConfigError, StoreError
from evalkit.experiment_file._regression import RegressionSection
from evalkit.report import PairView, ReportData, build_report
from evalkit.run import ExperimentResult
from evalkit.run._verdict_record import record_run_verdict
from evalkit.store import ListedExperiment

#: Dropped pairs listed per scorer in a report; the rest are one ``evalkit diff`` away.
REGRESSED_SHOWN = 20


@dataclass(frozen=True, slots=True)
class JudgedRun:
    """A run judged as ``evalkit run`` judges it.

    Attributes:
        result: The run.
        report: The verdict and the report's data (per-scorer rows, worst items, failure
            groups), as ``evalkit run`` prints and writes it.
        comparison: The run against its baseline, or None without one.
        baseline: The baseline run's stored row, or None.
        baseline_note: Why there is no baseline, when there is none.
        baseline_reason: Why the baseline was chosen ("newest passing run", "pinned by
            alice: v2 is the new normal", "named explicitly"), when there is one.
        baseline_error: Why the baseline named explicitly cannot be used (the run is stored).
        store: The store written.
        verdict_error: Why the verdict could not be kept in the store (another process held
            it past the lock timeout, a read-only store): the run is stored and judged, its
            stored verdict is missing or covers its own gates only. ``evalkit run`` still
            writes the reports and prints the verdict, says so and exits 2 (1 if a gate
            failed).
    """

    result: ExperimentResult
    report: ReportData
    comparison: Comparison | None
    baseline: ListedExperiment | None
    baseline_note: str | None
    baseline_error: BaselineError | None
    store: str
    baseline_reason: str | None = None
    verdict_error: StoreError | None = None

    @property
    def passed(self) -> bool:
        """Every gate passed and the baseline, if one was named, could be used."""
        return self.report.passed and self.baseline_error is None


def _compare(
    store: str,
    baseline: ListedExperiment,
    result: ExperimentResult,
    directions: Mapping[str, Direction],
    gate: RegressionSection,
) -> tuple[Comparison, tuple[pa.Table, pa.Table]]:
    """The comparison, and the two runs' scores it read (the slices reuse them)."""
    scores = read_paired_scores(store, baseline["id"], result.experiment_id)
    return compare_experiments(
        *scores,
        directions=directions,
        max_drop=gate.max_drop,
        confidence=gate.confidence,
        resamples=gate.resamples,
    ), scores


def _judge_against(
    store: str,
    ref: str,
    runs: list[Baseline],
    result: ExperimentResult,
    directions: Mapping[str, Direction],
    gate: RegressionSection,
) -> tuple[Baseline, Comparison | None, tuple[pa.Table, pa.Table] | None]:
    """The baseline this run pairs with, the comparison with it and the scores it read.

    Raises:
        BaselineError: The baseline was named explicitly and cannot be compared.
    """
    candidate = {
        "id": result.experiment_id,
        "name": result.name,
        "dataset_fingerprint": result.dataset_fingerprint,
    }
    baseline = choose_baseline(
        store, runs, ref=ref, candidate=candidate, min_paired=gate.min_paired
    )
    if baseline.run is None:
        return baseline, None, None
    comparison, scores = _compare(store, baseline.run, result, directions, gate)
    if all(c.verdict == "not_comparable" for c in comparison):
        reason = f"run {baseline.run['id']} has no item scored by the same scorer in both runs"
        if ref not in (LATEST, LATEST_COMPLETE):
            raise BaselineError(ref, reason)
        return Baseline(None, f"no baseline: {reason}; judged on its own gates only"), None, None
    return baseline, comparison, scores


def explain_from_store(
    store: str | os.PathLike[str],
    baseline_id: str,
    candidate_id: str,
    *,
    slices: list[str],
    changed: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """What a report needs from the store to explain a comparison: per scorer the pairs that
    dropped (the first `REGRESSED_SHOWN`, largest drop first) and their count, and the
    baseline's scores for the histograms. A scorer whose comparison saw no paired score change
    (``changed``: its worse and better counts) has no dropped pair whatever its direction, and
    is not searched: the search's table imports pandas (0.3 s, issue 31)."""
    from evalkit.compare import diff_items
    from evalkit.store import connection

    items: dict[str, list[PairView]] = {}
    totals: dict[str, int] = {}
    with connection(store, read_only=True) as con:
        scorers = [row[0] for row in con.execute(
            "SELECT scorer_id FROM experiment_scorers WHERE experiment_id = ? ORDER BY position",
            [candidate_id]).fetchall()]  # fmt: skip
        for scorer in scorers:
            if changed is not None and changed.get(scorer, 1) == 0:
                totals[scorer], items[scorer] = 0, []
                continue
            diff = diff_items(con, baseline_id, candidate_id, scorer=scorer, dropped=True,
                              limit=REGRESSED_SHOWN, slices=slices)  # fmt: skip
            totals[scorer] = diff.total
            items[scorer] = [
                PairView(
                    p["item_id"], p["scorer_id"], p["baseline_score"], p["candidate_score"],
                    p["delta"], loads_stored(p["input"]), loads_stored(p["ground_truth"]),
                    loads_stored(p["baseline_output"]), loads_stored(p["candidate_output"]),
                    p["baseline_reason"], p["candidate_reason"],
                    tuple((k, p[f"slice:{k}"]) for k in slices),
                    bool(p["baseline_reason_truncated"]), bool(p["candidate_reason_truncated"]),
                )
                for p in diff.pairs.to_dict(orient="records")
            ]  # fmt: skip
        rows = con.execute(
            "SELECT scorer_id, list(score) FROM scores WHERE experiment_id = ? GROUP BY ALL",
            [baseline_id],
        ).fetchall()
    return {
        "regressed_items": items,
        "regressed_totals": totals,
        "baseline_distributions": {sid: list(values) for sid, values in rows},
        "baseline_id": baseline_id,
    }


def judge_result(
    result: ExperimentResult,
    store: str,
    ref: str | None,
    runs: list[Baseline],
    directions: Mapping[str, Direction],
    gate: RegressionSection,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> JudgedRun:
    """Judge ``result`` on every gate, against the baseline ``ref`` picks among ``runs``.

    Records the whole verdict, regression gate included, in ``store`` (retried for
    ``lock_timeout`` s while another process holds it); a verdict the store cannot take is
    returned with ``verdict_error`` set.
    """
    chosen, comparison, error = Baseline(None), None, None
    scores: tuple[pa.Table, pa.Table] | None = None
    if ref is not None and result.status != "cancelled":
        try:
            chosen, comparison, scores = _judge_against(store, ref, runs, result, directions, gate)
        except BaselineError as exc:
            error = exc
    label = f"{chosen.run['name']} ({chosen.run['id']})" if chosen.run else None
    slices: tuple[SliceComparison, ...] = ()
    explain: dict[str, Any] = {}
    if chosen.run is not None and comparison is not None:
        slices = stored_slices(
            store, chosen.run["id"], result.experiment_id, result.slices,
            directions=directions, max_drop=gate.max_drop, confidence=gate.confidence,
            resamples=gate.resamples, overall=comparison, scores=scores,
        )  # fmt: skip
        explain = explain_from_store(
            store, chosen.run["id"], result.experiment_id, slices=list(result.slices),
            changed={row.scorer_id: row.worse + row.better for row in comparison},
        )  # fmt: skip
    report = build_report(
        result,
        comparison=comparison,
        baseline=label,
        baseline_note=chosen.note,
        baseline_reason=chosen.reason,
        directions=directions,
        slices=slices,
        **explain,
    )
    judged = JudgedRun(
        result=result,
        report=report,
        comparison=comparison,
        baseline=chosen.run,
        baseline_note=chosen.note,
        baseline_error=error,
        store=store,
        baseline_reason=chosen.reason,
    )
    # The whole verdict, regression gate included, replaces the one run_evals kept.
    try:
        record_run_verdict(
            result,
            comparison=comparison,
            reasons={row.scorer_id: row.reasons for row in report.scorers},
            passed=judged.passed,
            baseline_id=chosen.run["id"] if chosen.run is not None else None,
            baseline_reason=chosen.reason or (str(error) if error is not None else chosen.note),
            lock_timeout=lock_timeout,
        )
    except StoreError as exc:
        # The run is stored and judged: its reports and verdict are still given (the caller
        # says the verdict was not kept), never lost for want of this write.
        return replace(judged, verdict_error=exc)
    return judged


def judge_run(
    result: ExperimentResult,
    *,
    baseline: str | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
    directions: Mapping[str, Direction] | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> JudgedRun:
    """Judge a stored run from Python on every gate of ``evalkit run``.

    Args:
        result: A run written to a store (``run_evals(..., store=...)``).
        baseline: ``"latest"`` (the newest complete, full run of the same name that passed
            and pairs with it, or the pinned run; none on the first run),
            ``"latest-complete"`` (the newest such run whatever its verdict), a run name or
            an id; None for no regression gate.
        max_drop: The drop in a scorer's mean the regression gate tolerates.
        directions: ``"higher"`` or ``"lower"`` per scorer id (default higher).
        lock_timeout: Seconds a store held by another process is retried when the verdict
            is kept; past them the verdict is returned with ``verdict_error`` set.

    Raises:
        ConfigError: The run was not stored.
    """
    if result.store is None:
        raise ConfigError(f"experiment {result.name!r} was not stored: no baseline to judge by")
    store = result.store
    runs = (
        baseline_candidates(store, baseline, name=result.name, exclude=result.experiment_id)
        if baseline is not None
        else []
    )
    gate = RegressionSection(max_drop=max_drop)
    return judge_result(result, store, baseline, runs, dict(directions or {}), gate, lock_timeout)
