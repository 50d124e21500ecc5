"""The result of a whole run: status, summaries, verdict and (optionally) every item."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalkit.agreement import JudgeStability, ScorerAgreement
from evalkit.agreement._gate import agreement_reasons
from evalkit.errors import ConfigError
from evalkit.run import _frame
from evalkit.run._outcome import ItemResult, ScorerOutcome
from evalkit.run._summary import ExperimentStatus, RunSummary
from evalkit.run._thresholds import (
    DEFAULT_MAX_ERROR_RATE,
    Threshold,
    Verdict,
    overall,
    scorer_verdict,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from evalkit.compare import ItemDiff


@dataclass(frozen=True, slots=True, repr=False)
class ExperimentResult:
    """Everything a run produced, held in memory.

    Attributes:
        experiment_id: The experiment's id in the store (``experiments.id``).
        name: The experiment name; runs of the same name form a history.
        description: Free text, or None.
        status: ``"completed"`` (no failures), ``"completed_with_errors"`` (some target or
            scorer failures), ``"failed"`` (nothing could be scored) or ``"cancelled"``.
        started_at: Start time (UTC).
        completed_at: End time (UTC).
        dataset: Where the rows came from.
        dataset_fingerprint: Content hash of the rows evaluated; None if the run stopped early.
        scorer_ids: The scorers, in the order given.
        summary: Item counts and per-scorer statistics.
        thresholds: The thresholds by scorer id.
        items: Every [`ItemResult`][evalkit.ItemResult], in dataset order; empty with
            ``keep_results=False``.
        config: The run's configuration as stored, secrets redacted.
        store: The score store file written, or None.
        results_kept: Whether ``items`` holds the per-item results.
        max_error_rates: Per scorer id, the largest share of its pairs that may end without a
            score (default 5% for any scorer not listed).
        agreement: Per scorer with human labels (``labels=``), its agreement with them.
        min_agreement: The agreement gates, per scorer id (``min_agreement=``).
        stability: With ``repeats=K`` (K > 1), per LLM-judged scorer its judge's agreement
            with itself across the K executions of each pair.
    """

    experiment_id: str
    name: str
    description: str | None
    status: ExperimentStatus
    started_at: dt.datetime
    completed_at: dt.datetime
    dataset: str
    dataset_fingerprint: str | None
    scorer_ids: tuple[str, ...]
    summary: RunSummary
    thresholds: Mapping[str, Threshold]
    items: tuple[ItemResult, ...]
    config: Mapping[str, Any]
    store: str | None
    results_kept: bool = True
    max_error_rates: Mapping[str, float] = field(default_factory=dict)
    agreement: Mapping[str, ScorerAgreement] = field(default_factory=dict)
    min_agreement: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    stability: Mapping[str, JudgeStability] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Compact on purpose: asyncio formats the main task's repr (and so its result) at
        # shutdown, and a full dataclass repr of every item costs seconds and gigabytes
        # (docs/pages/design/compact-result-repr.md).
        return (
            f"ExperimentResult(experiment_id={self.experiment_id!r}, name={self.name!r}, "
            f"status={self.status!r}, items={self.summary.processed}, scores={self.scores!r})"
        )

    @property
    def scores(self) -> dict[str, float | None]:
        """The mean of each scorer's successful scores (None when it has none)."""
        return {sid: s.mean for sid, s in self.summary.scorers.items()}

    @property
    def verdict(self) -> Verdict:
        """Pass/fail of every scorer on its gates (coverage, error rate, threshold, agreement
        with its human labels), and overall."""
        total = self.summary.total_items
        return overall(
            {
                sid: scorer_verdict(
                    sid,
                    threshold=self.thresholds.get(sid),
                    mean=s.mean,
                    scored=s.succeeded,
                    failed=s.failed,
                    not_run=max(total - s.succeeded - s.failed, 0),
                    max_error_rate=self.max_error_rates.get(sid, DEFAULT_MAX_ERROR_RATE),
                    more=agreement_reasons(
                        self.agreement.get(sid), self.min_agreement.get(sid, {})
                    ),
                )
                for sid, s in self.summary.scorers.items()
            }
        )

    @property
    def duration_s(self) -> float:
        """Wall time of the run in seconds."""
        return (self.completed_at - self.started_at).total_seconds()

    def _require_items(self) -> tuple[ItemResult, ...]:
        if not self.results_kept:
            raise ConfigError(
                f"experiment {self.experiment_id}: per-item results were not kept "
                "(keep_results=False); read them from the store"
            )
        return self.items

    def results_for(self, scorer_id: str) -> list[ScorerOutcome]:
        """Every outcome of one scorer, in dataset order.

        Raises:
            KeyError: No scorer has this id.
            ConfigError: The run kept summaries only.
        """
        if scorer_id not in self.scorer_ids:
            raise KeyError(f"no scorer {scorer_id!r}; scorers: {', '.join(self.scorer_ids)}")
        found = []
        for result in self._require_items():
            outcome = result.outcome(scorer_id)
            if outcome is not None:
                found.append(outcome)
        return found

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame with one row per item and scorer, in dataset then scorer order.

        An item whose target failed has one row with empty scorer columns, so no item is
        silently missing.

        Columns: ``item_id``, ``item_index``, ``run_id``, ``scorer_id``, ``status``, ``score``
        (recovered scores of failed scorers included, with status ``failed``), ``reason``,
        ``error``, ``failed_step``, ``completed_steps``, ``duration_ms``, ``input``,
        ``ground_truth``, ``output``, ``source``, ``item_status``, ``target_error``.
        """
        import pandas as pd

        frame = pd.DataFrame(_frame.columns(self._require_items()))
        frame["score"] = frame["score"].astype("float64")
        return frame

    def to_arrow(self) -> pa.Table:
        """An Arrow table of the rows and columns of
        [`to_pandas`][evalkit.ExperimentResult.to_pandas], with Arrow types.

        ``item_index`` is ``int64``, ``score`` and ``duration_ms`` are ``float64``,
        ``completed_steps`` is ``list<string>`` and the other columns are ``string``; ``input``,
        ``ground_truth`` and ``output`` are ``string`` when every value is text, else JSON text
        of every value, typed ``arrow.json`` (``pa.json_()``).
        """
        return _frame.to_arrow(self._require_items())

    @property
    def slices(self) -> tuple[str, ...]:
        """The metadata keys declared as slices for this run (``slices=`` of run_evals)."""
        return tuple(self.config.get("slices") or ())

    def diff(self, baseline: str | ExperimentResult, **filters: Any) -> ItemDiff:
        """The pairs whose score changed from ``baseline`` to this run, largest drop first.

        Reads this run's store (both runs must be stored there): see
        `evalkit.compare.diff_items` for the ``filters`` (``scorer``, ``slice_key``,
        ``slice_value``, ``changed_only``, ``improved``, ``dropped``, ``search``, ``order``,
        ``offset``, ``limit``, ``slices``). The run's declared slices are returned as
        ``slice:KEY`` columns unless ``slices`` is given.

        Raises:
            ConfigError: This run has no store.
        """
        from evalkit.compare import diff_items

        if self.store is None:
            raise ConfigError(
                f"experiment {self.experiment_id} has no store (store=None): nothing to diff"
            )
        ref = baseline.experiment_id if isinstance(baseline, ExperimentResult) else baseline
        filters.setdefault("slices", self.slices)
        return diff_items(self.store, ref, self.experiment_id, **filters)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary of the experiment (no per-item results)."""
        verdict = self.verdict
        return {
            "experiment_id": self.experiment_id,
            "name": self.name,
            "description": self.description,
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "completed_at": self.completed_at.isoformat(),
            "dataset": self.dataset,
            "dataset_fingerprint": self.dataset_fingerprint,
            "store": self.store,
            "scores": self.scores,
            "summary": self.summary.to_dict(),
            "thresholds": {sid: t.to_dict() for sid, t in self.thresholds.items()},
            "verdict": {
                "passed": verdict.passed,
                "scorers": {sid: v.passed for sid, v in verdict.scorers.items()},
                "reasons": {sid: list(v.reasons) for sid, v in verdict.scorers.items()},
            },
            "agreement": {sid: a.to_dict() for sid, a in self.agreement.items()},
            "min_agreement": {sid: dict(b) for sid, b in self.min_agreement.items()},
            "stability": {sid: st.to_dict() for sid, st in self.stability.items()},
        }
