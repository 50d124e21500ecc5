"""Comparing judges: two stored runs whose LLM judges differ (model, settings or prompt
version), scored against each other and, side by side, each against the human labels.

The two judges are two raters of the same items: `evalkit.agreement.agreement` measures
them on the items both scored, the candidate's scores in the judge's place and the baseline's
in the labels' (its measures are symmetric; the confusion matrix's rows are the baseline's
levels). Each run's agreement with people is read from its ``scorer_agreement`` rows, measured
when it ran. User docs: docs/pages/how-to/judge-agreement.md (Comparing two judges).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from evalkit._scorer_ids import scorer_renames
from evalkit.agreement import (
    CONSENSUS,
    Agreement,
    Estimate,
    LabelKind,
    LabelSpec,
    agreement,
    read_agreement,
)
from evalkit.agreement._labels import parse_labels
from evalkit.agreement._measure import resolve_kind
from evalkit.compare._inputs import ScorerScores, scores_by_scorer
from evalkit.compare._judge_runs import RunFacts, confounds, judge_differences, read_run
from evalkit.compare._scorer_pairs import read_paired_scores
from evalkit.store import connection

KindSource: TypeAlias = Literal["labels", "inferred"]
"""Where a judge comparison's kind came from: the runs' human labels, or the scores."""


@dataclass(frozen=True, slots=True)
class JudgeSide:
    """One run's judge of a scorer and how far it agrees with the people.

    Attributes:
        models: The judge models that answered the scorer's calls (else the configured one).
        vs_labels: The scorer's agreement with its labels' consensus in this run, by metric,
            as stored when it ran; empty when the run had no labels for it.
        labels_n: The labelled pairs those figures cover (None without labels).
    """

    models: tuple[str, ...]
    vs_labels: Mapping[str, Estimate]
    labels_n: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the models, the figures against the labels and their pairs."""
        return {
            "models": list(self.models),
            "vs_labels": {name: e.to_dict() for name, e in self.vs_labels.items()},
            "labels_n": self.labels_n,
        }


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    """One LLM-judged scorer of two runs: the two judges against each other and the labels.

    Attributes:
        scorer_id: The scorer.
        differences: What differs in its judge (``"model a → b"``, ``"temperature 0.0 →
            0.7"``, ``"definition/prompt version …"``); empty when the judges are the same.
        kind: The kind measured: the labels' kind when a run had labels, else inferred from
            the scores (``binary`` when they take at most two values, else ``continuous``).
        kind_from: ``"labels"`` or ``"inferred"``.
        between: The candidate's judge against the baseline's on the items both scored.
        unpaired: Items scored successfully by one of the two judges only.
        baseline: The baseline run's judge.
        candidate: The candidate run's judge.
    """

    scorer_id: str
    differences: tuple[str, ...]
    kind: LabelKind
    kind_from: KindSource
    between: Agreement
    unpaired: int
    baseline: JudgeSide
    candidate: JudgeSide

    @property
    def changed(self) -> bool:
        """True when the two runs' judges of this scorer differ."""
        return bool(self.differences)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, the agreements as `Agreement.to_dict` gives them."""
        return {
            "scorer_id": self.scorer_id,
            "changed": self.changed,
            "differences": list(self.differences),
            "kind": self.kind,
            "kind_from": self.kind_from,
            "between": self.between.to_dict(),
            "unpaired": self.unpaired,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class JudgeComparison:
    """The LLM-judged scorers of two runs, their judges compared.

    Attributes:
        baseline: The baseline experiment id.
        candidate: The candidate experiment id.
        scorers: One entry per compared scorer, sorted by id.
        confounds: How the runs differ in more than their judges (the dataset, the items, the
            outputs judged, the target, the labels), one sentence each; when any is given the
            judges did not judge the same thing and their disagreement is not theirs alone.
    """

    baseline: str
    candidate: str
    scorers: tuple[JudgeAgreement, ...]
    confounds: tuple[str, ...]

    @property
    def confounded(self) -> bool:
        """True when the runs differ in more than their judges."""
        return bool(self.confounds)

    def __iter__(self) -> Iterator[JudgeAgreement]:
        return iter(self.scorers)

    def __len__(self) -> int:
        return len(self.scorers)

    def __getitem__(self, scorer_id: str) -> JudgeAgreement:
        for found in self.scorers:
            if found.scorer_id == scorer_id:
                return found
        raise KeyError(scorer_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the runs, the confounds and one entry per scorer."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "confounded": self.confounded,
            "confounds": list(self.confounds),
            "scorers": [s.to_dict() for s in self.scorers],
        }


def compare_judges(
    store: str | os.PathLike[str],
    baseline: str,
    candidate: str,
    *,
    unchanged: bool = False,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> JudgeComparison:
    """Compare the LLM judges of two stored runs, scorer by scorer.

    A scorer is compared when both runs scored it and it has a judge (or asked one) in
    either; by default only when its judge differs between the runs: the model that answered
    (``judge_executions``) or was configured, a judge setting that changes the answers
    (provider, instructions, temperature, max_tokens, extra_body), the scorer's definition or
    prompt version (its metadata) or its steps.

    Args:
        store: The store's path.
        baseline: The baseline experiment id.
        candidate: The candidate experiment id.
        unchanged: Also compare the scorers whose judge is the same in both runs (how far one
            judge agrees with itself from one run to the next).
        confidence: The intervals' coverage.
        resamples: Bootstrap resamples of the paired items.
        seed: Seeds the resamples.

    Returns:
        The compared scorers with the confounds of the two runs.

    Raises:
        StoreError: An experiment id is not in the store.
        ConfigError: A bad option.
    """
    before, after = read_run(store, baseline), read_run(store, candidate)
    # Each run's stored ids under the id they are compared as (an old `llm-rubric` pairs
    # with a new `llm_rubric`: docs/pages/design/one-scorer-id-rule.md).
    with connection(store, read_only=True) as con:
        names = scorer_renames(con, baseline, candidate)
    ids = tuple(
        {names[i].get(s, s): s for s in run.metadata} for i, run in enumerate((before, after))
    )
    wanted = {}
    for scorer_id in sorted(ids[0].keys() & ids[1].keys()):
        old, new = ids[0][scorer_id], ids[1][scorer_id]
        if before.judged(old) or after.judged(new):
            differences = judge_differences(before, after, old, new)
            if differences or unchanged:
                wanted[scorer_id] = differences
    if not wanted:  # the common case, runs with the same judges: no scores read
        return JudgeComparison(baseline, candidate, (), ())
    before_scores, after_scores = read_paired_scores(store, baseline, candidate)
    scores = (
        scores_by_scorer(before_scores, label="baseline"),
        scores_by_scorer(after_scores, label="candidate"),
    )
    stored = (_consensus(store, baseline), _consensus(store, candidate))
    labels = _labels(before), _labels(after)
    compared = []
    for scorer_id, differences in wanted.items():
        if scorer_id not in scores[0] or scorer_id not in scores[1]:
            continue  # a scorer of a run without a finished item
        pair = _paired(scores[0][scorer_id], scores[1][scorer_id])
        old, new = ids[0][scorer_id], ids[1][scorer_id]
        rows = stored[0].get(old) or stored[1].get(new) or []
        spec = labels[1].get(new) or labels[0].get(old)
        kind, levels, kind_from = _kind(scorer_id, rows, spec, pair)
        if levels is not None:
            pair = (_snap(pair[0], levels), _snap(pair[1], levels), pair[2])
        between = agreement(pair[1], pair[0], kind=kind, levels=levels, confidence=confidence,
                            resamples=resamples, seed=seed)  # fmt: skip
        compared.append(
            JudgeAgreement(
                scorer_id,
                differences,
                kind,
                kind_from,
                between,
                pair[2],
                _side(before, old, stored[0].get(old)),
                _side(after, new, stored[1].get(new)),
            )
        )
    return JudgeComparison(
        baseline,
        candidate,
        tuple(compared),
        confounds(
            store, before, after, [(ids[0][c.scorer_id], ids[1][c.scorer_id]) for c in compared]
        ),
    )


FloatArray = npt.NDArray[np.float64]


def _paired(before: ScorerScores, after: ScorerScores) -> tuple[FloatArray, FloatArray, int]:
    """The two runs' scores of the items both scored successfully, and how many one only."""
    left = {i: s for i, s, ok in zip(before.item_ids, before.scores, before.ok, strict=True) if ok}
    right = {i: s for i, s, ok in zip(after.item_ids, after.scores, after.ok, strict=True) if ok}
    both = sorted(left.keys() & right.keys())
    unpaired = len(left.keys() ^ right.keys())
    return (
        np.asarray([left[i] for i in both], dtype=np.float64),
        np.asarray([right[i] for i in both], dtype=np.float64),
        unpaired,
    )


def _kind(
    scorer_id: str,
    rows: list[dict[str, Any]],
    spec: LabelSpec | None,
    pair: tuple[FloatArray, FloatArray, int],
) -> tuple[LabelKind, tuple[float, ...] | None, KindSource]:
    """The kind and levels the runs measured the scorer against people with; else those
    evalkit.agreement infers, from the labels spec or from both judges' scores."""
    if rows:
        levels = rows[0]["levels"]
        return rows[0]["kind"], None if levels is None else tuple(levels), "labels"
    pooled = np.concatenate([pair[0], pair[1]])
    if spec is not None:
        return (*resolve_kind(spec, pooled), "labels")
    return (*resolve_kind(LabelSpec(scorer_id, ("scores",)), pooled), "inferred")


def _snap(values: FloatArray, levels: tuple[float, ...]) -> FloatArray:
    """Each score at its nearest level, a tie at the lower, as agreement() reads a judge's."""
    grid = np.asarray(sorted(levels), dtype=np.float64)
    if values.size == 0:
        return values
    snapped: FloatArray = grid[np.argmin(np.abs(values[:, None] - grid[None, :]), axis=1)]
    return snapped


def _labels(run: RunFacts) -> dict[str, LabelSpec]:
    return parse_labels(run.config.get("labels") or None, None)


def _consensus(store: str | os.PathLike[str], experiment_id: str) -> dict[str, list[Any]]:
    """Per scorer, its stored rows against the labels' consensus."""
    found: dict[str, list[Any]] = {}
    for row in read_agreement(store, experiment_id):
        if row["compared_with"] == CONSENSUS:
            found.setdefault(row["scorer_id"], []).append(row)
    return found


def _side(run: RunFacts, scorer_id: str, rows: list[dict[str, Any]] | None) -> JudgeSide:
    def number(value: float | None) -> float:
        return math.nan if value is None else float(value)

    figures = {
        row["metric"]: Estimate(number(row["value"]), number(row["ci_low"]),
                                number(row["ci_high"]))
        for row in rows or ()
    }  # fmt: skip
    n = int(rows[0]["n"]) if rows else None
    return JudgeSide(run.judge_models(scorer_id), figures, n)
