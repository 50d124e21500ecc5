"""Slices: the comparison of two runs within each value of an item metadata key.

`compare_slices` runs the paired comparison of [`compare_experiments`][evalkit.compare_experiments]
on the items of each slice (``category = billing``), then corrects the slices' p-values for multiple
comparisons with Holm's step-down method, counting only the tests that could reach the level
(Tarone's refinement: a slice in which no pair changed does not count): with 30 slices and 3
scorers, 90 tests at 5% would
flag about four slices by chance alone; after the correction the chance that any slice is
flagged wrongly stays at most 5%. A slice is ``regressed`` only when its own comparison says
so *and* its corrected p-value is below ``1 - confidence``. It is ``flagged`` when it regressed
while the scorer's whole-run verdict did not: a drop hidden in the total.
See docs/pages/design/slice-correction.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from evalkit._defaults import DEFAULT_CONFIDENCE, DEFAULT_MAX_DROP, DEFAULT_RESAMPLES, DEFAULT_SEED
from evalkit._json import stored_config
from evalkit._scorer_ids import compared_id, renamed_sql, scorer_renames, stored_id
from evalkit.compare._compare import (
    EMPTY_SCORES,
    Comparison,
    ComparisonVerdict,
    Direction,
    ScorerComparison,
    check_options,
    compare_experiments,
    compare_scorer,
)
from evalkit.compare._inputs import ScorerScores, ScoreTable, scores_by_scorer
from evalkit.compare._scorer_pairs import read_paired_scores

if TYPE_CHECKING:  # a run's slices are compared without pandas (issue 31: its start-up)
    import pandas as pd

#: Values of one key compared at most (the largest slices); the rest are left out.
MAX_VALUES = 100


@dataclass(frozen=True, slots=True)
class SliceComparison:
    """One scorer within one slice, candidate against baseline.

    Attributes:
        key: The metadata key (``category``).
        value: The slice's value (``billing``), as text; ``None`` for items without the key.
        scorer_id: The scorer.
        n: Items of the slice scored in both runs.
        baseline_mean: Mean baseline score over them.
        mean: Mean candidate score over them.
        delta: ``mean - baseline_mean``.
        ci_low: Lower end of the paired interval of ``delta``, unadjusted: each slice's own
            interval at ``confidence``, not corrected for the number of slices.
        ci_high: Upper end of it.
        p_value: The paired sign-flip test's p-value, uncorrected.
        p_adjusted: ``p_value`` after the Tarone-Holm correction over every slice and scorer
            that could reach the level (`tarone_holm`; a slice in which no pair changed
            cannot): below ``1 - confidence`` exactly when the correction rejects.
        verdict: ``regressed``/``improved`` when the slice's own comparison says so and
            ``p_adjusted < 1 - confidence``; ``unchanged`` or ``not_comparable`` otherwise.
        flagged: Regressed while the scorer's verdict over the whole run was not.
    """

    key: str
    value: str | None
    scorer_id: str
    n: int
    baseline_mean: float | None
    mean: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_adjusted: float | None
    verdict: ComparisonVerdict
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    order = np.argsort(np.asarray(p_values, dtype=np.float64), kind="stable")
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[index])))
        adjusted[index] = running
    return adjusted


def tarone_holm(
    p_values: Sequence[float], least_p_values: Sequence[float], *, level: float
) -> list[float]:
    """Holm's step-down correction that counts only the tests able to reach ``level``: Tarone's
    refinement for discrete tests (Hommel and Krummenauer, 1998).

    At each step, of the tests not yet rejected, ``K`` is the least ``k`` such that at most
    ``k`` of them could reach a p-value of ``level / k`` (``least_p_values``: the smallest
    p-value each test can give, 1 for a slice in which no pair changed); the smallest p-value
    left is rejected when ``K * p <= level``. A test that could never pass does not raise the
    others' bar, and the family-wise error stays below ``level``
    (docs/pages/design/slice-correction.md).

    Returns:
        Per test, the running maximum of ``K * p`` over the steps (capped at 1): below
        ``level`` exactly when the procedure rejects the test at ``level``.
    """
    p = np.asarray(p_values, dtype=np.float64)
    least = np.minimum(np.asarray(least_p_values, dtype=np.float64), p)
    order = np.argsort(p, kind="stable")
    adjusted = [0.0] * p.size
    running = 0.0
    for rank, index in enumerate(order):
        left = np.sort(least[order[rank:]])
        ks = np.arange(1, left.size + 1)
        able = np.searchsorted(left, level / ks, side="right")
        k = int(ks[np.argmax(able <= ks)])
        running = max(running, min(1.0, k * float(p[index])))
        adjusted[index] = running
    return adjusted


def least_p_value(changed: int) -> float:
    """The smallest two-sided sign-flip p-value ``changed`` non-zero differences can give (all
    moving one way): ``2 / 2**changed``, 1 when at most one pair changed."""
    return 1.0 if changed <= 1 else min(1.0, 2.0 ** (1 - changed))


def compare_slices(
    baseline: ScoreTable,
    candidate: ScoreTable,
    values: Mapping[str, Mapping[str, str | None]],
    *,
    directions: Mapping[str, Direction] | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    overall: Comparison | None = None,
) -> tuple[SliceComparison, ...]:
    """Each slice and scorer compared, with Tarone-Holm corrected verdicts.

    Args:
        baseline: The baseline's per-item scores (see `ScoreTable`; a DataFrame or Arrow
            table with ``item_id``, ``scorer_id``, ``score`` and optionally ``status``).
        candidate: The candidate's.
        values: Per slice key, each item id's value (items without one form the ``None``
            slice). Only the `MAX_VALUES` largest slices of a key are compared.
        directions: As for [`compare_experiments`][evalkit.compare_experiments].
        max_drop: As for [`compare_experiments`][evalkit.compare_experiments].
        confidence: As for [`compare_experiments`][evalkit.compare_experiments]; also the
            family-wise level.
        resamples: As for [`compare_experiments`][evalkit.compare_experiments].
        seed: As for [`compare_experiments`][evalkit.compare_experiments].
        overall: The whole-run comparison, to flag slices that regressed while it did not
            (computed here when not given).
    """
    check_options(directions, max_drop=max_drop, confidence=confidence, resamples=resamples,
                  seed=seed)  # fmt: skip
    base, cand = _frame(baseline), _frame(candidate)
    if overall is None:
        overall = compare_experiments(
            base, cand, directions=directions, max_drop=max_drop, confidence=confidence,
            resamples=resamples, seed=seed,
        )  # fmt: skip
    total = {c.scorer_id: c.verdict for c in overall}
    # Each run is split by scorer (and checked) once; a slice is then a mask over each
    # scorer's sorted items, so its comparison is exactly compare_experiments on its rows.
    before = scores_by_scorer(base, label="baseline")
    after = scores_by_scorer(cand, label="candidate")
    scorer_ids = sorted(before.keys() | after.keys())
    options: dict[str, Any] = {
        "max_drop": float(max_drop), "confidence": float(confidence),
        "resamples": resamples, "seed": seed,
    }  # fmt: skip
    raw: list[tuple[str, str | None, ScorerComparison]] = []
    for key, by_item in values.items():
        codes, names = _codes(by_item)
        b_codes = {s: _lookup(codes, before[s].item_ids) for s in before}
        c_codes = {s: _lookup(codes, after[s].item_ids) for s in after}
        # The MAX_VALUES largest slices of a key, counted over the candidate's rows (a key
        # with an id per item is no slice), ties broken by value; compared in value order.
        sizes = np.bincount(np.concatenate([np.empty(0, np.int64), *c_codes.values()]) + 1,
                            minlength=len(names) + 1)[1:]  # fmt: skip
        largest = sorted((-int(sizes[i]), names[i], i) for i in range(len(names)) if sizes[i])
        chosen = [i for _, _, i in sorted(largest[:MAX_VALUES], key=lambda row: row[1])]
        missing = any((a < 0).any() for a in [*b_codes.values(), *c_codes.values()])
        for code in [*chosen, -1] if missing else chosen:
            if not any((a == code).any() for a in c_codes.values()):
                continue
            value = None if code < 0 else names[code]
            for scorer_id in scorer_ids:
                b_in = _subset(before.get(scorer_id), b_codes.get(scorer_id), code)
                a_in = _subset(after.get(scorer_id), c_codes.get(scorer_id), code)
                if b_in.item_ids.size == 0 and a_in.item_ids.size == 0:
                    continue
                comparison = compare_scorer(
                    scorer_id, b_in, a_in,
                    direction=(directions or {}).get(scorer_id, "higher"), **options,
                )  # fmt: skip
                raw.append((key, value, comparison))
    tested = [i for i, (_, _, c) in enumerate(raw) if c.p_value is not None]
    alpha = 1.0 - confidence
    # Tarone-Holm: a slice in which too few pairs changed to reach the level (none, one,
    # or four at 5% over several tests) does not count in the correction.
    corrected = tarone_holm(
        [raw[i][2].p_value or 0.0 for i in tested],
        [least_p_value(raw[i][2].worse + raw[i][2].better) for i in tested],
        level=alpha,
    )
    adjusted = dict(zip(tested, corrected, strict=True))
    rows = []
    for i, (key, value, c) in enumerate(raw):
        p_adj = adjusted.get(i)
        verdict: ComparisonVerdict = c.verdict
        if verdict in ("regressed", "improved") and not (p_adj is not None and p_adj < alpha):
            verdict = "unchanged"
        rows.append(
            SliceComparison(
                key=key, value=value, scorer_id=c.scorer_id, n=c.n_paired,
                baseline_mean=c.baseline_mean, mean=c.candidate_mean, delta=c.difference,
                ci_low=c.ci_low, ci_high=c.ci_high, p_value=c.p_value, p_adjusted=p_adj,
                verdict=verdict,
                flagged=verdict == "regressed" and total.get(c.scorer_id) != "regressed",
            )
        )  # fmt: skip
    return tuple(rows)


def _codes(by_item: Mapping[str, str | None]) -> tuple[dict[str, int], list[str]]:
    """Each item id's slice as a code into the list of values, in order of first appearance
    (an item without a value has no code)."""
    codes: dict[str, int] = {}
    names: dict[str, int] = {}
    for item_id, value in by_item.items():
        if not _missing(value):
            codes[str(item_id)] = names.setdefault(str(value), len(names))
    return codes, list(names)


def _missing(value: object) -> bool:
    """None, NaN, NaT, or pandas' NA (whose comparisons have no truth value)."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except TypeError:  # pandas.NA
        return True


def _lookup(codes: Mapping[str, int], item_ids: npt.NDArray[np.object_]) -> npt.NDArray[np.int64]:
    """The code of each item id, -1 for an item without a value."""
    found = (codes.get(item_id, -1) for item_id in item_ids)
    return np.fromiter(found, dtype=np.int64, count=item_ids.size)


def _subset(scores: ScorerScores | None, codes: Any, code: int) -> ScorerScores:
    if scores is None:
        return EMPTY_SCORES
    keep = codes == code
    return ScorerScores(scores.item_ids[keep], scores.scores[keep], scores.ok[keep])


_COLUMNS = ("item_id", "scorer_id", "score", "status")


def _frame(data: ScoreTable) -> pd.DataFrame | pa.Table:
    """The score columns, item ids as text (an Arrow table of text ids is kept as it is)."""
    if isinstance(data, pa.Table) and pa.types.is_string(data.schema.field("item_id").type):
        return data.select([c for c in _COLUMNS if c in data.column_names])
    import pandas as pd  # the caller's DataFrame, a mapping, or ids that are not text

    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, Mapping):
        frame = pd.DataFrame(
            [(i, s, v) for s, by in data.items() for i, v in by.items()],
            columns=["item_id", "scorer_id", "score"],
        )
    else:
        frame = data.to_pandas()
    keep = [c for c in _COLUMNS if c in frame.columns]
    frame = frame[keep].copy()
    frame["item_id"] = frame["item_id"].astype(str)
    return frame


def slice_values(
    store: duckdb.DuckDBPyConnection | str | os.PathLike[str],
    experiment_id: str,
    keys: Sequence[str],
) -> dict[str, dict[str, str | None]]:
    """Per key, each item's metadata value (as text) in one stored run."""
    from evalkit._json import json_pointer as _pointer

    if not keys:
        return {}
    if not isinstance(store, duckdb.DuckDBPyConnection):
        from evalkit.store import connection

        with connection(store, read_only=True) as con:
            return slice_values(con, experiment_id, keys)
    columns = ", ".join("json_extract_string(metadata, ?)" for _ in keys)
    relation = store.sql(
        f"SELECT item_id, {columns} FROM experiment_items WHERE experiment_id = ?",
        params=[*(_pointer(k) for k in keys), experiment_id],
    )
    assert relation is not None
    table = relation.to_arrow_table()
    ids = table.column(0).to_pylist()
    return {key: dict(zip(ids, table.column(i + 1).to_pylist(), strict=True))
            for i, key in enumerate(keys)}  # fmt: skip


def stored_slices(
    store: str | os.PathLike[str],
    baseline_id: str,
    candidate_id: str,
    keys: Sequence[str],
    *,
    directions: Mapping[str, Any],
    max_drop: float,
    confidence: float,
    resamples: int,
    overall: Comparison | None,
    scores: tuple[ScoreTable, ScoreTable] | None = None,
) -> tuple[SliceComparison, ...]:
    """Each slice of the candidate's ``keys`` compared with the baseline, both read from a store
    (`compare_slices` on their stored scores and metadata, Tarone-Holm corrected).

    Args:
        store: The store holding both runs.
        baseline_id: The baseline run's id.
        candidate_id: The candidate run's id (its item metadata gives the slices).
        keys: The metadata keys to slice by; none gives no slice.
        directions: ``"higher"`` or ``"lower"`` per scorer id.
        max_drop: The drop in a slice's mean the comparison tolerates.
        confidence: The confidence intervals' coverage.
        resamples: Bootstrap resamples.
        overall: The whole-run comparison (a slice that regressed while its scorer did not is
            flagged).
        scores: The two runs' scores when already read (`read_paired_scores`, for the
            whole-run comparison), so the store is not read twice.
    """
    if not keys:
        return ()
    if scores is None:
        scores = read_paired_scores(store, baseline_id, candidate_id)
    return compare_slices(
        *scores,
        slice_values(store, candidate_id, keys),
        directions=directions, max_drop=max_drop, confidence=confidence,
        resamples=resamples, overall=overall,
    )  # fmt: skip


def changes_by_slice(
    store: duckdb.DuckDBPyConnection | str | os.PathLike[str],
    baseline: str,
    candidate: str,
    key: str,
    *,
    scorer: str | None = None,
) -> pd.DataFrame:
    """Per value of ``key``: pairs, dropped pairs and improved pairs, most drops first."""
    from evalkit._json import json_pointer as _pointer

    if not isinstance(store, duckdb.DuckDBPyConnection):
        from evalkit.store import connection

        with connection(store, read_only=True) as con:
            return changes_by_slice(con, baseline, candidate, key, scorer=scorer)
    # An old stored id pairs with its new spelling (docs/pages/design/one-scorer-id-rule.md).
    sides: list[tuple[str, list[Any]]] = []
    names = scorer_renames(store, baseline, candidate)
    scorer = None if scorer is None else compared_id(names, scorer)
    for renamed, experiment in zip(names, (baseline, candidate), strict=True):
        sid, sid_params = renamed_sql(renamed)
        run = f"SELECT item_id, {sid} AS scorer_id, scorer_id AS stored_id, score FROM scores"
        run += " WHERE experiment_id = ?"
        run_params = [*sid_params, experiment]
        if scorer is not None:
            run += " AND scorer_id = ?"
            run_params.append(stored_id(renamed, scorer))
        sides.append((run, run_params))
    (b_run, b_params), (c_run, c_params) = sides
    sign = "CASE WHEN coalesce(es.higher_is_better, true) THEN 1 ELSE -1 END"
    sql = f"""
        WITH b AS ({b_run}), c AS ({c_run}),
        v AS (SELECT item_id, json_extract_string(metadata, ?) AS value FROM experiment_items
              WHERE experiment_id = ?)
        SELECT v.value, count(*) AS pairs,
               count(*) FILTER (WHERE (c.score - b.score) * {sign} < 0) AS dropped,
               count(*) FILTER (WHERE (c.score - b.score) * {sign} > 0) AS improved
        FROM b JOIN c USING (item_id, scorer_id)
        LEFT JOIN experiment_scorers es ON es.experiment_id = ? AND es.scorer_id = c.stored_id
        LEFT JOIN v USING (item_id)
        GROUP BY v.value ORDER BY dropped DESC, v.value NULLS LAST
    """
    params = [*b_params, *c_params, _pointer(key), candidate, candidate]
    return store.execute(sql, params).df()


def declared_slices(run: Mapping[str, Any]) -> list[str]:
    """The slice keys a stored run declared (its config's ``slices``), or none: the ``keys``
    of [`stored_slices`][evalkit.compare.stored_slices] that ``evalkit compare`` and
    ``evalkit diff`` use when not given any.

    Args:
        run: The run's row with its config, as [`read_experiment`][evalkit.read_experiment]
            or [`find_experiment`][evalkit.compare.find_experiment] return it.
    """
    slices = stored_config(run.get("config")).get("slices")
    return [s for s in slices if isinstance(s, str)] if isinstance(slices, list) else []
