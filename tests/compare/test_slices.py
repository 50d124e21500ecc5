"""Per-slice comparison with a Holm correction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from evalkit.compare import Direction, compare_experiments, declared_slices
from evalkit.compare._slices import compare_slices, holm, least_p_value, tarone_holm
from evalkit.errors import ConfigError
from evalkit.run._spec import check_slices


def test_holm_matches_the_textbook_example() -> None:
    # Holm (1979) style: sorted p 0.01, 0.02, 0.03, 0.04 with m = 4 -> 0.04, 0.06, 0.06, 0.06.
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


def _runs(
    items: int, drop_in: str, *, drop: float
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict[str, str]]]:
    rng = np.random.default_rng(1)
    ids = [f"i{i}" for i in range(items)]
    cats = [f"c{i % 10}" for i in range(items)]
    before = (rng.uniform(size=items) < 0.8).astype(float)
    after = before.copy()
    for i, cat in enumerate(cats):
        if cat == drop_in and before[i] == 1.0 and rng.uniform() < drop:
            after[i] = 0.0

    def frame(s: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"item_id": ids, "scorer_id": "s", "score": s})

    return frame(before), frame(after), {"cat": dict(zip(ids, cats, strict=True))}


def test_a_slice_that_drops_while_the_total_does_not_is_flagged() -> None:
    base, cand, values = _runs(2000, "c3", drop=0.5)
    # The run's mean drops by about 0.045, within max_drop; slice c3's by about 0.45.
    rows = compare_slices(base, cand, values, max_drop=0.05, resamples=2000)
    by = {r.value: r for r in rows}
    assert by["c3"].verdict == "regressed"
    assert by["c3"].flagged
    assert all(r.verdict == "unchanged" for v, r in by.items() if v != "c3")


def test_no_slice_is_flagged_by_chance() -> None:
    # Thirty slices of pure noise (each item's score redrawn): without a correction some
    # would look significant; after Holm none is.
    rng = np.random.default_rng(7)
    items = 3000
    ids = [f"i{i}" for i in range(items)]
    values = {"cat": {i: f"c{n % 30}" for n, i in enumerate(ids)}}

    def frame(s: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"item_id": ids, "scorer_id": "s", "score": s})

    base = frame(rng.uniform(size=items))
    cand = frame(rng.uniform(size=items))
    rows = compare_slices(base, cand, values, resamples=2000)
    assert len(rows) == 30
    assert min(r.p_value for r in rows if r.p_value is not None) < 0.2
    assert not any(r.verdict == "regressed" or r.flagged for r in rows)


def test_items_without_the_key_form_their_own_slice() -> None:
    base, cand, values = _runs(200, "c3", drop=0.0)
    values["cat"] = {k: v for k, v in values["cat"].items() if v != "c0"}
    rows = compare_slices(base, cand, values, resamples=200)
    assert None in {r.value for r in rows}


@pytest.mark.parametrize("missing", [None, float("nan"), pd.NA, pd.NaT])
def test_a_missing_value_of_any_kind_is_the_items_without_one(missing: object) -> None:
    # As a nullable pandas column's to_dict() gives them: pd.NA has no truth value.
    base, cand, values = _runs(200, "c3", drop=0.0)
    values["cat"] = {k: missing if v == "c0" else v for k, v in values["cat"].items()}  # type: ignore[misc]
    rows = compare_slices(base, cand, values, resamples=200)
    assert {r.value for r in rows} == {*(f"c{i}" for i in range(1, 10)), None}


@pytest.mark.parametrize("bad", ["category", ["category", "category"], [""], [3]])
def test_bad_slices_are_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="slices"):
        check_slices(bad)


def test_each_slice_is_the_comparison_of_its_own_items() -> None:
    # compare_slices splits each run by scorer once and masks it per slice; that must give
    # exactly what compare_experiments gives on the slice's rows (same draws, same figures),
    # for two scorers of opposite directions, a failed run, and items without the key.
    base, cand, values = _runs(600, "c3", drop=0.5)

    def lower(f: pd.DataFrame) -> pd.DataFrame:
        return f.assign(scorer_id="t", score=1.0 - f["score"])

    base, cand = pd.concat([base, lower(base)]), pd.concat([cand, lower(cand)])
    cand = cand.assign(status="success")
    status = cand.columns.get_loc("status")
    assert isinstance(status, int)  # one column of that name: its position
    cand.iloc[5, status] = "failed"
    values["cat"] = {k: v for k, v in values["cat"].items() if v != "c0"}
    directions: dict[str, Direction] = {"t": "lower"}
    rows = compare_slices(base, cand, values, directions=directions, resamples=500, seed=3)
    assert {r.value for r in rows} == {*(f"c{i}" for i in range(1, 10)), None}
    for row in rows:

        def label(f: pd.DataFrame) -> pd.Series:
            return f["item_id"].map(values["cat"])

        b_in = label(base).isna() if row.value is None else label(base) == row.value
        c_in = label(cand).isna() if row.value is None else label(cand) == row.value
        expected = compare_experiments(
            base[b_in], cand[c_in], directions=directions, resamples=500, seed=3
        )[row.scorer_id]
        assert (row.n, row.baseline_mean, row.mean, row.delta) == (
            expected.n_paired, expected.baseline_mean, expected.candidate_mean,
            expected.difference,
        )  # fmt: skip
        assert (row.ci_low, row.ci_high, row.p_value) == (
            expected.ci_low, expected.ci_high, expected.p_value,
        )  # fmt: skip


def test_slices_reuse_an_arrow_table() -> None:
    base, cand, values = _runs(300, "c3", drop=0.5)
    as_arrow = compare_slices(
        pa.Table.from_pandas(base), pa.Table.from_pandas(cand), values, resamples=300
    )
    assert as_arrow == compare_slices(base, cand, values, resamples=300)


@pytest.mark.parametrize(
    ("config", "keys"),
    [
        ('{"slices": ["category", "lang"]}', ["category", "lang"]),
        ({"slices": ["category", 3, None]}, ["category"]),
        ('{"slices": "category"}', []),
        ('{"concurrency": 8}', []),
        ("not json", []),
        ("[1, 2]", []),
        (None, []),
    ],
)
def test_declared_slices_are_the_runs_configured_keys(config: object, keys: list[str]) -> None:
    assert declared_slices({"id": "x", "config": config}) == keys
    assert declared_slices({"id": "x"}) == []


def test_tarone_holm_is_holm_when_every_test_can_reach_the_level() -> None:
    p = [0.03, 0.01, 0.04, 0.02]
    assert tarone_holm(p, [1e-9] * 4, level=0.05) == pytest.approx(holm(p))


def test_tarone_holm_does_not_count_tests_that_cannot_reach_the_level() -> None:
    # Ten tests, of which eight can give no p-value below 0.5: K is 2, not 10.
    p = [0.004, 0.03, *[1.0] * 8]
    least = [1e-6, 1e-6, *[0.5] * 8]
    assert tarone_holm(p, least, level=0.05) == pytest.approx([0.008, 0.03, *[1.0] * 8])
    assert holm(p)[0] == pytest.approx(0.04)


@pytest.mark.parametrize("changed", [0, 1, 2, 5, 20])
def test_the_least_p_value_is_the_sign_flip_tests_smallest(changed: int) -> None:
    # All changed pairs moving one way: the two-sided exact test's p-value.
    assert least_p_value(changed) == pytest.approx(min(1.0, 2 * 0.5**changed))


def test_slices_in_which_no_pair_changed_do_not_cost_power() -> None:
    # issue 34, item 5: one slice lost 9 of its 40 right answers (exact p = 0.0039); twenty
    # slices of one scorer that no pair changed in counted in Holm's m (21 tests: 0.082),
    # so the drop was "unchanged". They cannot reach the level, so they no longer count.
    ids = [f"i{i}" for i in range(21 * 40)]
    cats = {item: f"c{n // 40:02d}" for n, item in enumerate(ids)}
    before = dict.fromkeys(ids, 1.0)
    after = {item: 0.0 if cats[item] == "c00" and n < 9 else 1.0 for n, item in enumerate(ids)}
    rows = compare_slices({"s": before}, {"s": after}, {"cat": cats}, resamples=200)
    by = {r.value: r for r in rows}
    assert by["c00"].p_value == pytest.approx(2 * 0.5**9)
    assert by["c00"].p_adjusted == pytest.approx(2 * 0.5**9)
    assert by["c00"].verdict == "regressed"
    assert all(
        r.verdict == "unchanged" and r.p_adjusted == 1.0 for v, r in by.items() if v != "c00"
    )
