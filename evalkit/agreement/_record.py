"""Agreement after a run: measured from the store (every pass of the run, sharded or not) or
from the scores held in memory, and kept in the store's ``scorer_agreement`` table; the same
for the judges' agreement with themselves across repeats; and a stored run's agreement read
back as the run held it (`agreement_from_store`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from evalkit._json import stored_config
from evalkit.agreement._labels import LabelSpec, parse_labels
from evalkit.agreement._measure import CONSENSUS, RATERS, ScorerAgreement, measure
from evalkit.agreement._stability import REPEATS, JudgeStability, noise_share, stability_of
from evalkit.agreement._stats import Agreement, Estimate
from evalkit.agreement._table import (
    LabeledScores,
    StoredAgreement,
    read_agreement,
    read_fresh_shares,
    read_labeled_scores,
    read_repeats,
    write_agreement,
)
from evalkit.store import read_experiment

Read = Callable[[LabelSpec], LabeledScores]


def measure_labels(
    labels: Mapping[str, LabelSpec], read: Read, *, source: str = "labels"
) -> dict[str, ScorerAgreement]:
    """Each labelled scorer measured on the pairs ``read`` gives it (``source``: the dataset,
    named by a label's error)."""
    measured = {}
    for scorer_id, spec in labels.items():
        found = read(spec)
        measured[scorer_id] = measure(spec, found.item_ids, found.scores, found.reasons,
                                      found.labels, source=source,
                                      truncated=found.truncated)  # fmt: skip
    return measured


def measure_stored(
    store: str | os.PathLike[str],
    experiment_id: str,
    labels: Mapping[str, Any] | None = None,
    *,
    source: str = "labels",
) -> dict[str, ScorerAgreement]:
    """Measure a stored run's scorers against their labels and keep the figures in the store
    (replacing any it had: a resumed run is measured over all its passes again).

    Args:
        store: The store.
        experiment_id: The run.
        labels: Per scorer id, its labels as ``run_evals(labels=)`` takes them (a label
            column, a list of columns, or a spec mapping) or a
            [`LabelSpec`][evalkit.agreement.LabelSpec]; None: the labels the run was given
            (its stored config).
        source: The dataset, as a label's error names it.

    Returns:
        Per labelled scorer, its agreement with the labels.

    Raises:
        ConfigError: A label spec is malformed (the scorer and key named).
    """
    if labels is None:
        labels = stored_config(read_experiment(store, experiment_id)["config"]).get("labels")
    specs = {
        sid: given if isinstance(given, LabelSpec) else parse_labels({sid: given}, None)[sid]
        for sid, given in (labels or {}).items()
    }

    def read(spec: LabelSpec) -> LabeledScores:
        return read_labeled_scores(store, experiment_id, spec.scorer_id, spec.columns)

    measured = measure_labels(specs, read, source=source)
    write_agreement(store, experiment_id, agreement_rows(measured))
    return measured


def agreement_rows(measured: Mapping[str, ScorerAgreement]) -> list[StoredAgreement]:
    """The ``scorer_agreement`` rows of ``measured``: per scorer, the consensus's metrics, each
    label column's (several columns), and the raters' alpha."""
    rows: list[StoredAgreement] = []
    for scorer_id, m in measured.items():
        rows.extend(_rows(scorer_id, CONSENSUS, m.consensus))
        for column, found in m.columns.items():
            rows.extend(_rows(scorer_id, column, found))
        if m.raters is not None:
            items = m.consensus.n + m.consensus.missing
            rows.append(
                _row(scorer_id, RATERS, m.kind, "alpha", _values(m.raters), n=items, missing=0)
            )  # fmt: skip
    return rows


def _rows(scorer_id: str, compared_with: str, found: Agreement) -> list[StoredAgreement]:
    levels = [float(v) for v in found.levels] or None
    confusion = [[int(c) for c in row] for row in found.confusion] or None
    return [
        _row(
            scorer_id,
            compared_with,
            found.kind,
            metric,
            _values(estimate),
            n=found.n,
            missing=found.missing,
            levels=levels,
            confusion=confusion,
        )
        for metric, estimate in found.metrics.items()
    ]


def _row(
    scorer_id: str,
    compared_with: str,
    kind: str,
    metric: str,
    values: tuple[float | None, float | None, float | None],
    *,
    n: int,
    missing: int,
    levels: list[float] | None = None,
    confusion: list[list[int]] | None = None,
) -> StoredAgreement:
    value, low, high = values
    return StoredAgreement(
        scorer_id=scorer_id, compared_with=compared_with, kind=kind, metric=metric, value=value,
        ci_low=low, ci_high=high, n=n, missing=missing, levels=levels, confusion=confusion,
    )  # fmt: skip


def _values(e: Estimate) -> tuple[float | None, float | None, float | None]:
    return tuple(None if math.isnan(v) else v for v in (e.value, e.low, e.high))  # type: ignore[return-value]


def stability_rows(measured: Mapping[str, JudgeStability]) -> list[StoredAgreement]:
    """The ``scorer_agreement`` rows (``compared_with = 'repeats'``) of judges' stability."""
    rows: list[StoredAgreement] = []
    for scorer_id, s in measured.items():
        values: dict[str, tuple[float | None, float | None, float | None]] = {
            "alpha": _values(s.alpha),
            "repeats": (float(s.repeats), None, None),
            "mean_spread": _values(Estimate(s.mean_spread, math.nan, math.nan)),
            "unstable_share": _values(Estimate(s.unstable_share, math.nan, math.nan)),
            "noise_variance": _values(Estimate(s.noise_variance, math.nan, math.nan)),
            "fresh_share": _values(Estimate(s.fresh_share, math.nan, math.nan)),
        }
        rows.extend(
            _row(scorer_id, REPEATS, s.kind, metric, v, n=s.pairs, missing=0)
            for metric, v in values.items()
        )
    return rows


def measure_stability(
    executions: Mapping[str, Sequence[Sequence[float | None]]],
    labels: Mapping[str, LabelSpec],
    fresh: Mapping[str, float] | None = None,
) -> dict[str, JudgeStability]:
    """Each repeated scorer's stability from its pairs' executions (per pair, the scores of
    its executions in order; None where one failed), with the share of its pairs whose
    execution 0 asked the judge rather than its cache (``fresh``)."""
    matrices = {}
    for scorer_id, pairs in executions.items():
        width = max((len(p) for p in pairs), default=0)
        r = np.full((width, len(pairs)), math.nan)
        for j, scores in enumerate(pairs):
            r[: len(scores), j] = [math.nan if v is None else v for v in scores]
        matrices[scorer_id] = r
    return stability_of(matrices, labels, fresh=fresh)


def measure_stability_stored(
    store: str | os.PathLike[str], experiment_id: str, labels: Mapping[str, LabelSpec]
) -> dict[str, JudgeStability]:
    """A stored run's judges' stability over every pass, kept in the store."""
    executions = read_repeats(store, experiment_id)
    measured = measure_stability(executions, labels, read_fresh_shares(store, experiment_id))
    write_agreement(store, experiment_id, stability_rows(measured), repeats=True)
    return measured


def agreement_from_store(
    store: str | os.PathLike[str], run: Mapping[str, Any], *, scorer: str | None = None
) -> tuple[dict[str, ScorerAgreement], dict[str, dict[str, float]]]:
    """A stored run's agreement with its human labels, as the run itself held it
    ([`ExperimentResult.agreement`][evalkit.ExperimentResult]), and its ``min_agreement``
    gates, as ``evalkit diff`` and a report of a stored run show them.

    The figures are the store's (its ``scorer_agreement`` table). The store does not keep the
    pairs that disagree most; they are measured again from the stored scores and labels (the
    labels' spec is in the run's config), by the code that measured the run.

    Args:
        store: The store.
        run: The run's row with its config, as
            [`read_experiment`][evalkit.read_experiment] or
            [`find_experiment`][evalkit.compare.find_experiment] return it.
        scorer: Only this scorer (None: every labelled scorer).

    Returns:
        Per labelled scorer with stored figures, its
            [`ScorerAgreement`][evalkit.agreement.ScorerAgreement] (none for a run without
            labels, or one cancelled before it was measured); and per scorer, its
            ``min_agreement`` gates (metric → the least value that passes).
    """
    config = stored_config(run.get("config"))
    gates = {sid: {k: float(v) for k, v in bounds.items()}
             for sid, bounds in (config.get("min_agreement") or {}).items()}  # fmt: skip
    labels = {sid: spec for sid, spec in parse_labels(config.get("labels"), None).items()
              if scorer is None or sid == scorer}  # fmt: skip
    if not labels:  # also a run stored before the store had agreement figures
        return {}, gates
    rows = read_agreement(store, run["id"])
    stored = {row["scorer_id"] for row in rows}
    # A cancelled run was not measured: it has labels but no figures.
    labels = {sid: spec for sid, spec in labels.items() if sid in stored}

    def read(spec: LabelSpec) -> LabeledScores:
        return read_labeled_scores(store, run["id"], spec.scorer_id, spec.columns)

    source = str((config.get("dataset") or {}).get("source") or "labels")
    measured = measure_labels(labels, read, source=source)
    return {sid: _stored(m, [r for r in rows if r["scorer_id"] == sid])
            for sid, m in measured.items()}, gates  # fmt: skip


def _stored(measured: ScorerAgreement, rows: list[StoredAgreement]) -> ScorerAgreement:
    """``measured`` with the figures the store kept for it (the record of the run)."""

    def estimate(row: StoredAgreement) -> Estimate:
        return Estimate(*(math.nan if v is None else float(v)
                          for v in (row["value"], row["ci_low"], row["ci_high"])))  # fmt: skip

    def agreement(found: Agreement, compared_with: str) -> Agreement:
        mine = {r["metric"]: r for r in rows if r["compared_with"] == compared_with}
        if not mine:
            return found
        first = next(iter(mine.values()))
        return replace(
            found,
            n=int(first["n"]),
            missing=int(first["missing"]),
            # In the order the statistics give them (the store sorts them by name).
            metrics={name: estimate(mine[name]) if name in mine else e
                     for name, e in found.metrics.items()},
            levels=tuple(float(v) for v in first["levels"] or ()),
            confusion=tuple(tuple(int(c) for c in row) for row in first["confusion"] or ()),
        )  # fmt: skip

    raters = [r for r in rows if r["compared_with"] == RATERS]
    return replace(
        measured,
        consensus=agreement(measured.consensus, CONSENSUS),
        columns={c: agreement(a, c) for c, a in measured.columns.items()},
        raters=estimate(raters[0]) if raters else measured.raters,
    )


class PairedInterval(Protocol):
    """A scorer's paired difference against a baseline and its interval, as a
    [`ScorerComparison`][evalkit.ScorerComparison] holds it."""

    @property
    def scorer_id(self) -> str: ...
    @property
    def n_paired(self) -> int: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def confidence(self) -> float: ...


def noise_shares(
    stability: Mapping[str, JudgeStability],
    comparison: Iterable[PairedInterval] | None,
    *,
    store: str | os.PathLike[str] | None = None,
    baseline_id: str | None = None,
) -> dict[str, float | None]:
    """Per repeated scorer compared with a baseline, the share (0 to 1) of its regression
    interval's variance that its judge's noise explains, as ``evalkit run --repeat`` prints it
    beside the judge's stability: near 1, the drop may be the judge's noise rather than the
    change.

    Args:
        stability: The run's repeated scorers' stability
            ([`ExperimentResult.stability`][evalkit.ExperimentResult]).
        comparison: The run against its baseline (a [`Comparison`][evalkit.Comparison]), or
            None without one (no share).
        store: The store holding the baseline.
        baseline_id: The baseline's id: its own judge noise, when it was repeated too, is read
            from the store; a baseline that was not repeated is taken to be as noisy as the
            run (the same judge asked twice).

    Returns:
        Per scorer both repeated and compared, its share; None where the interval says
            nothing (fewer than 2 pairs, no width).

    Raises:
        TypeError: Only one of ``store`` and ``baseline_id`` was given (the baseline's noise
            would silently be taken as the run's).
    """
    if (store is None) != (baseline_id is None):
        raise TypeError("noise_shares: give both store and baseline_id, or neither")
    baseline = {}
    if store is not None and baseline_id is not None and stability:
        baseline = {r["scorer_id"]: r["value"] for r in read_agreement(store, baseline_id)
                    if r["compared_with"] == REPEATS and r["metric"] == "noise_variance"
                    and r["value"] is not None}  # fmt: skip
    shares: dict[str, float | None] = {}
    for c in comparison or ():
        found = stability.get(c.scorer_id)
        if found is not None:
            shares[c.scorer_id] = noise_share(
                found.noise_variance, baseline.get(c.scorer_id),
                fresh_share=found.fresh_share, n_paired=c.n_paired,
                ci_low=c.ci_low, ci_high=c.ci_high, confidence=c.confidence,
            )  # fmt: skip
    return shares
