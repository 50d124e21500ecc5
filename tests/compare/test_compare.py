from __future__ import annotations

import json
import math
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from evalkit import ConfigError, DatasetError, compare_experiments
from evalkit.compare import Direction


def frame(rows: list[tuple[str, str, float | None, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item_id", "scorer_id", "score", "status"])


def binary_runs(
    n: int, *, accuracy: float, flipped: int, scorer: str = "exact"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Baseline right on ``accuracy`` of ``n`` items; the candidate loses ``flipped`` of them."""
    right = int(n * accuracy)
    baseline = np.r_[np.ones(right), np.zeros(n - right)]
    candidate = baseline.copy()
    candidate[:flipped] = 0.0
    ids = [f"q{i:05d}" for i in range(n)]

    def make(scores: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {"item_id": ids, "scorer_id": scorer, "score": scores, "status": "success"}
        )

    return make(baseline), make(candidate)


BASELINE = frame(
    [
        ("a", "exact", 1.0, "success"),  # only in baseline
        ("b", "exact", 1.0, "success"),
        ("c", "exact", 0.0, "success"),  # fails in candidate
        ("d", "exact", 0.0, "failed"),  # fails in baseline; its recovered 0.0 is never used
        ("e", "exact", 1.0, "success"),
    ]
)
CANDIDATE = frame(
    [
        ("b", "exact", 0.0, "success"),
        ("c", "exact", None, "failed"),
        ("d", "exact", 1.0, "success"),
        ("e", "exact", 1.0, "success"),
        ("f", "exact", 1.0, "success"),  # only in candidate
    ]
)


def test_unpaired_and_failed_items_are_counted_and_kept_out_of_the_means() -> None:
    result = compare_experiments(BASELINE, CANDIDATE)["exact"]
    assert result.n_paired == 2  # b and e
    assert result.baseline_mean == 1.0
    assert result.candidate_mean == 0.5
    assert result.difference == -0.5
    assert (result.only_in_baseline, result.only_in_candidate) == (1, 1)
    assert (result.failed_in_baseline, result.failed_in_candidate) == (1, 1)
    assert result.failed_in_either == 2


@pytest.mark.parametrize(("direction", "worse", "better"), [("higher", 2, 1), ("lower", 1, 2)])
def test_the_paired_items_that_moved_are_counted_by_direction(
    direction: Direction, worse: int, better: int
) -> None:
    """What the report's regressed items are searched for: a scorer with no worse pair has
    none to list (issue 31: the search imported pandas)."""
    baseline = frame([(i, "s", 0.5, "success" if i != "f" else "failed") for i in "abcdef"])
    moved = {"a": 0.2, "b": 0.4, "c": 0.9, "d": 0.5, "f": 0.0}  # e failed
    candidate = frame(
        [(i, "s", moved.get(i), "success" if i in moved else "failed") for i in "abcdef"]
    )
    result = compare_experiments(baseline, candidate, directions={"s": direction})["s"]
    assert (result.n_paired, result.worse, result.better) == (4, worse, better)
    unchanged = compare_experiments(baseline, baseline)["s"]
    assert (unchanged.worse, unchanged.better) == (0, 0)


def test_an_item_failed_in_both_counts_once_in_either() -> None:
    baseline = frame([("x", "s", None, "failed"), ("y", "s", 0.5, "success")])
    candidate = frame([("x", "s", 0.2, "failed"), ("y", "s", 0.5, "success")])
    result = compare_experiments(baseline, candidate)["s"]
    assert (result.failed_in_baseline, result.failed_in_candidate) == (1, 1)
    assert result.failed_in_either == 1
    assert result.n_paired == 1


def as_arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False)


def as_mapping(df: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    nested: dict[str, dict[str, float | None]] = {}
    for row in df.itertuples():
        # cast: the score column holds floats (pandas' stubs type a row's fields as any scalar).
        score = None if row.status == "failed" else float(cast(float, row.score))
        nested.setdefault(str(row.scorer_id), {})[str(row.item_id)] = score
    return nested


def without_status(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    out.loc[out["status"] == "failed", "score"] = None
    return out.drop(columns="status")


@pytest.mark.parametrize("convert", [as_arrow, as_mapping, without_status])
def test_every_input_shape_gives_the_same_comparison(convert: Any) -> None:
    expected = compare_experiments(BASELINE, CANDIDATE)
    assert compare_experiments(convert(BASELINE), convert(CANDIDATE)) == expected


def with_result_columns(df: pd.DataFrame) -> pd.DataFrame:
    """The extra columns of ``ExperimentResult.to_pandas()``: mixed types Arrow cannot convert."""
    n = len(df)
    mixed: list[Any] = [{"question": "q", "lang": "en"}, "plain text", [1, 2], 3.5, None]
    steps: list[Any] = [{"n": i} if i % 2 else "x" for i in range(n)]
    return df.assign(
        input=[mixed[i % len(mixed)] for i in range(n)],
        output=[mixed[(i + 1) % len(mixed)] for i in range(n)],
        preprocess_step_result=steps,
    )


def test_a_frame_with_mixed_type_result_columns_is_compared_on_its_score_columns() -> None:
    with pytest.raises(pa.ArrowInvalid):
        pa.Table.from_pandas(with_result_columns(BASELINE))  # what the full frame gives
    expected = compare_experiments(BASELINE, CANDIDATE)
    result = compare_experiments(with_result_columns(BASELINE), with_result_columns(CANDIDATE))
    assert result == expected


def test_an_arrow_table_or_batch_with_extra_columns_is_compared_on_its_score_columns() -> None:
    baseline = as_arrow(BASELINE).append_column("note", pa.array([[1]] * len(BASELINE)))
    candidate = pa.record_batch(as_arrow(CANDIDATE).to_batches()[0])
    assert compare_experiments(baseline, candidate) == compare_experiments(BASELINE, CANDIDATE)


def test_row_order_does_not_change_the_result() -> None:
    baseline, candidate = binary_runs(500, accuracy=0.8, flipped=30)
    shuffled = candidate.sample(frac=1.0, random_state=3)
    assert compare_experiments(baseline, shuffled) == compare_experiments(baseline, candidate)


def test_a_small_real_drop_over_many_items_is_a_significant_regression() -> None:
    baseline, candidate = binary_runs(2_000, accuracy=0.85, flipped=60)
    comparison = compare_experiments(baseline, candidate, max_drop=0.01)
    result = comparison["exact"]
    assert result.difference == pytest.approx(-0.03)
    assert result.ci_high is not None
    assert result.ci_high < 0
    assert result.p_value is not None
    assert result.p_value < 0.001
    assert result.verdict == "regressed"
    assert comparison.regressed == (result,)


def test_a_zero_effect_is_unchanged_and_not_significant() -> None:
    rng = np.random.default_rng(4)
    ids = [f"q{i}" for i in range(1_000)]
    before = rng.uniform(0, 1, 1_000)
    # Same distribution, independent noise around the same mean: no systematic change.
    after = np.clip(before + rng.normal(0, 0.05, 1_000), 0, 1)
    after = after - (after.mean() - before.mean())

    def make(s: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"item_id": ids, "scorer_id": "sim", "score": s})

    result = compare_experiments(make(before), make(after))["sim"]
    assert result.verdict == "unchanged"
    assert result.ci_low is not None
    assert result.ci_high is not None
    assert result.ci_low < 0 < result.ci_high
    assert result.p_value is not None
    assert result.p_value > 0.5


def test_a_significant_drop_within_max_drop_is_unchanged() -> None:
    baseline, candidate = binary_runs(2_000, accuracy=0.85, flipped=60)
    result = compare_experiments(baseline, candidate, max_drop=0.05)["exact"]
    assert result.ci_high is not None
    assert result.ci_high < 0
    assert result.verdict == "unchanged"


def test_a_large_drop_on_few_items_is_not_significant() -> None:
    # 2 of 6 items got worse: a mean drop of 0.33, but the interval reaches past zero (Tango's
    # interval for 0/1 scores; the percentile bootstrap's ended exactly at 0.0).
    baseline = {"s": {str(i): 1.0 for i in range(6)}}
    candidate = {"s": {str(i): (0.0 if i < 2 else 1.0) for i in range(6)}}
    result = compare_experiments(baseline, candidate, max_drop=0.02)["s"]
    assert result.ci_low is not None
    assert result.ci_high is not None
    assert result.ci_low < -0.33 < 0.0 < result.ci_high
    assert result.verdict == "unchanged"


@pytest.mark.parametrize(("n", "p_value"), [(1, 1.0), (3, 0.25), (5, 0.0625)])
def test_every_item_dropping_on_too_few_items_is_unchanged(n: int, p_value: float) -> None:
    # Every item went 1 -> 0: Tango's interval starts at -1 and has width (a bootstrap
    # collapsed onto the single point -1), but 2 / 2**n sign assignments are as extreme, so
    # nothing is significant.
    baseline = {"s": {str(i): 1.0 for i in range(n)}}
    candidate = {"s": {str(i): 0.0 for i in range(n)}}
    result = compare_experiments(baseline, candidate)["s"]
    assert result.ci_low == -1.0
    assert result.ci_high is not None
    assert result.ci_high > -1.0
    assert result.p_value == pytest.approx(p_value)
    assert result.verdict == "unchanged"
    assert compare_experiments(candidate, baseline)["s"].verdict == "unchanged"


def test_every_item_dropping_on_six_items_is_a_regression() -> None:
    # 2 / 64 < 0.05: the smallest all-dropped run the sign-flip test can call significant.
    baseline = {"s": {str(i): 1.0 for i in range(6)}}
    candidate = {"s": {str(i): 0.0 for i in range(6)}}
    result = compare_experiments(baseline, candidate)["s"]
    assert result.p_value == pytest.approx(2 / 64)
    assert result.verdict == "regressed"
    assert compare_experiments(candidate, baseline)["s"].verdict == "improved"


def test_a_stricter_confidence_needs_a_smaller_p_value() -> None:
    baseline = {"s": {str(i): 1.0 for i in range(6)}}
    candidate = {"s": {str(i): 0.0 for i in range(6)}}
    result = compare_experiments(baseline, candidate, confidence=0.99)["s"]
    assert result.p_value == pytest.approx(2 / 64)
    assert result.ci_high is not None
    assert result.ci_high > 0  # at 99% the interval reaches zero too
    assert result.verdict == "unchanged"


@pytest.mark.parametrize(
    ("direction", "toxicity_after", "verdict"),
    [
        ("lower", 0.3, "regressed"),
        ("lower", 0.1, "improved"),
        ("higher", 0.3, "improved"),
        ("higher", 0.1, "regressed"),
    ],
)
def test_verdicts_follow_the_scorer_direction(
    direction: Direction, toxicity_after: float, verdict: str
) -> None:
    ids = [f"q{i}" for i in range(300)]
    rng = np.random.default_rng(2)
    noise = rng.normal(0, 0.02, 300)
    before = pd.DataFrame({"item_id": ids, "scorer_id": "toxicity", "score": 0.2 + noise})
    after = before.assign(score=toxicity_after + noise)
    result = compare_experiments(before, after, directions={"toxicity": direction}, max_drop=0.02)
    comparison = result["toxicity"]
    assert comparison.verdict == verdict
    assert comparison.direction == direction
    assert comparison.difference == pytest.approx(toxicity_after - 0.2)
    sign = 1 if direction == "higher" else -1
    assert comparison.improvement == pytest.approx(sign * (toxicity_after - 0.2))


def test_a_scorer_present_in_one_experiment_only_is_not_comparable() -> None:
    baseline = frame([("a", "exact", 1.0, "success"), ("a", "old", 0.5, "success")])
    candidate = frame([("a", "exact", 1.0, "success"), ("a", "new", 0.5, "success")])
    comparison = compare_experiments(baseline, candidate)
    assert [s.scorer_id for s in comparison] == ["exact", "new", "old"]
    assert comparison["old"].verdict == "not_comparable"
    assert comparison["old"].only_in_baseline == 1
    assert comparison["new"].only_in_candidate == 1
    assert comparison["new"].difference is None
    assert comparison["exact"].verdict == "unchanged"


def test_a_scorers_result_does_not_depend_on_the_other_scorers() -> None:
    base_a, cand_a = binary_runs(400, accuracy=0.7, flipped=20, scorer="a")
    base_b, cand_b = binary_runs(400, accuracy=0.5, flipped=5, scorer="b")
    alone = compare_experiments(base_a, cand_a)["a"]
    together = compare_experiments(pd.concat([base_a, base_b]), pd.concat([cand_a, cand_b]))
    assert together["a"] == alone
    assert together["a"].ci_low != together["b"].ci_low


def test_the_seed_makes_results_reproducible() -> None:
    rng = np.random.default_rng(0)
    ids = [str(i) for i in range(200)]
    before = pd.DataFrame({"item_id": ids, "scorer_id": "s", "score": rng.uniform(size=200)})
    after = before.assign(score=rng.uniform(size=200))
    first = compare_experiments(before, after, seed=1)
    assert compare_experiments(before, after, seed=1) == first
    assert compare_experiments(before, after, seed=2)["s"].ci_low != first["s"].ci_low


def test_to_dict_is_json_ready() -> None:
    comparison = compare_experiments(BASELINE, CANDIDATE, max_drop=0.1)
    data = json.loads(json.dumps(comparison.to_dict()))
    assert data["max_drop"] == 0.1
    assert data["scorers"][0]["scorer_id"] == "exact"
    assert data["scorers"][0]["improvement"] == -0.5
    assert data["scorers"][0]["failed_in_either"] == 2


def test_unknown_scorer_id_lookup_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="nope"):
        compare_experiments(BASELINE, CANDIDATE)["nope"]


@pytest.mark.parametrize(
    ("baseline", "match"),
    [
        (frame([("a", "s", 1.0, "success"), ("a", "s", 0.0, "success")]), "'a' appears more"),
        (pd.DataFrame({"item_id": ["a"], "score": [1.0]}), "scorer_id"),
        (frame([("a", "s", 1.0, "skipped")]), "'skipped'"),
        (frame([("a", "s", None, "success")]), "succeeded without a finite score"),
        (frame([(None, "s", 1.0, "success")]), "null"),  # type: ignore[list-item]
        (pd.DataFrame({"item_id": ["a"], "scorer_id": ["s"], "score": ["high"]}), "numbers"),
        (pd.DataFrame({"item_id": [1, "b"], "scorer_id": "s", "score": 1.0}), "item_id"),
        (pd.DataFrame({"item_id": ["a"], "scorer_id": ["s"], "score": [{"x": 1}]}), "numbers"),
        (
            pd.DataFrame(
                [["a", "s", 1.0, 0.0]], columns=["item_id", "scorer_id", "score", "score"]
            ),
            "more than once",
        ),
        (pa.table({"item_id": ["a"], "scorer_id": ["s"], "score": [[1.0]]}), "numbers"),
        (pa.table({"item_id": [[1]], "scorer_id": ["s"], "score": [1.0]}), "ids must be"),
        ({"s": {"a": "high"}}, "not a number"),
        ({"s": [1.0]}, "must map item ids"),
        ([("a", "s", 1.0)], "expected a DataFrame"),
    ],
)
def test_malformed_scores_are_a_dataset_error_naming_the_experiment(
    baseline: Any, match: str
) -> None:
    with pytest.raises(DatasetError, match=match) as caught:
        compare_experiments(baseline, CANDIDATE)
    assert caught.value.source == "baseline"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"max_drop": -0.1}, "max_drop"),
        ({"max_drop": float("nan")}, "max_drop"),
        ({"max_drop": "0.1"}, "max_drop"),
        ({"confidence": 95}, "confidence"),
        ({"resamples": 0}, "resamples"),
        ({"seed": -1}, "seed"),
        ({"directions": {"exact": "up"}}, "'higher' or 'lower'"),
    ],
)
def test_invalid_options_are_a_config_error(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        compare_experiments(BASELINE, CANDIDATE, **options)


def huge_runs(baseline: list[float], candidate: list[float]) -> tuple[Any, Any]:
    ids = [f"q{i:03d}" for i in range(len(baseline))]
    return (
        {"huge": dict(zip(ids, baseline, strict=True))},
        {"huge": dict(zip(ids, candidate, strict=True))},
    )


BIG = 1e308


@pytest.mark.parametrize(
    ("baseline", "candidate", "means", "verdict"),
    [
        # ±1e308 alternating, then halved: the means are 0, the difference 0 (no overflow
        # warning from the sums or the differences, no NaN).
        ([BIG, -BIG] * 10, [BIG / 2, -BIG / 2] * 10, (0.0, 0.0, 0.0), "unchanged"),
        # Every score drops by a tenth of 1e308: a real regression, told as one.
        ([BIG] * 20, [0.9 * BIG] * 20, (BIG, 0.9 * BIG, -0.1 * BIG), "regressed"),
        ([0.5 * BIG] * 20, [BIG] * 20, (0.5 * BIG, BIG, 0.5 * BIG), "improved"),
    ],
)
def test_scores_near_the_float_limit_are_compared_with_finite_figures(
    baseline: list[float], candidate: list[float], means: tuple[float, ...], verdict: str
) -> None:
    # issue 30, item 4: ±1e308 made the means overflow (nan) and the differences inf.
    result = compare_experiments(*huge_runs(baseline, candidate))["huge"]
    figures = (result.baseline_mean, result.candidate_mean, result.difference)
    assert figures == pytest.approx(means, rel=1e-12, abs=1e293)
    low, high, difference = result.ci_low, result.ci_high, result.difference
    assert low is not None
    assert high is not None
    assert difference is not None
    assert np.isfinite([low, high]).all()
    assert low <= difference <= high
    assert (result.verdict, result.note) == (verdict, None)


def test_a_difference_beyond_the_float_range_fails_with_the_reason() -> None:
    # From -1e308 to +1e308: the difference (2e308) cannot be a float; it never passes.
    result = compare_experiments(*huge_runs([-BIG] * 20, [BIG] * 20))["huge"]
    assert (result.baseline_mean, result.candidate_mean) == (-BIG, BIG)
    assert result.difference == np.inf
    assert result.verdict == "regressed"
    assert result.note is not None
    assert "beyond the float range" in result.note
    assert json.loads(json.dumps(result.to_dict()))["note"] == result.note


def test_borderline_binary_drop_is_regressed_at_every_seed() -> None:
    # 300 items, 13 went 1 -> 0 and 4 went 0 -> 1: the exact McNemar p is 0.049. The sampled
    # sign-flip test called it regressed or not depending on the seed.
    baseline = {"s": {f"i{k}": 1.0 if k < 13 or k >= 200 else 0.0 for k in range(300)}}
    candidate = {"s": {f"i{k}": 0.0 if k < 13 else (1.0 if k < 17 or k >= 200 else 0.0)
                       for k in range(300)}}  # fmt: skip
    results = [compare_experiments(baseline, candidate, seed=seed)["s"] for seed in range(25)]
    assert {(r.worse, r.better) for r in results} == {(13, 4)}
    assert {r.verdict for r in results} == {"regressed"}
    for r in results:
        assert r.p_value == pytest.approx(0.049041748046875, rel=1e-12)
        assert r.p_value_error == 0.0


def test_no_change_over_25_binary_items_is_not_shown_as_certainty() -> None:
    # The percentile bootstrap printed +0.000 [+0.000, +0.000]: no pair changed, so every
    # resample was 0. Tango's interval says how large a change 25 items could hide.
    scores = {"s": {f"i{k}": float(k % 3 == 0) for k in range(25)}}
    result = compare_experiments(scores, scores)["s"]
    assert result.difference == 0.0
    assert result.ci_low is not None
    assert result.ci_high is not None
    assert result.ci_low == pytest.approx(-0.133, abs=0.001)
    assert result.ci_high == pytest.approx(0.133, abs=0.001)
    assert result.verdict == "unchanged"


def test_sampled_p_value_reports_its_monte_carlo_error() -> None:
    rng = np.random.default_rng(4)
    before = rng.uniform(0.0, 1.0, 200)
    after = np.clip(before + rng.normal(-0.02, 0.1, 200), 0.0, 1.0)
    baseline = {"s": {f"i{k}": float(v) for k, v in enumerate(before)}}
    candidate = {"s": {f"i{k}": float(v) for k, v in enumerate(after)}}
    result = compare_experiments(baseline, candidate, resamples=2_000)["s"]
    assert result.p_value is not None
    assert result.p_value_error is not None
    # sqrt(p (1 - p) / resamples), with at least the 2,000 resamples asked for.
    bound = math.sqrt(result.p_value * (1 - result.p_value) / 2_000)
    assert 0.0 < result.p_value_error <= bound * (1 + 1e-9)
    assert result.to_dict()["p_value_error"] == result.p_value_error


def test_no_change_over_25_items_of_a_continuous_0_1_scorer_is_not_certainty() -> None:
    # token_f1 on a slice where nothing changed printed +0.000 [+0.000, +0.000].
    scores = {"s": {f"i{k}": 0.3 + 0.02 * k for k in range(25)}}
    result = compare_experiments(scores, scores)["s"]
    assert result.ci_low == pytest.approx(-0.133, abs=0.001)
    assert result.ci_high == pytest.approx(0.133, abs=0.001)
    assert result.verdict == "unchanged"


def test_no_change_on_scores_beyond_0_1_keeps_a_point_interval() -> None:
    # No scale is declared for scores beyond 0..1: nothing bounds the change they could hide.
    scores = {"s": {f"i{k}": 3.0 + k for k in range(25)}}
    result = compare_experiments(scores, scores)["s"]
    assert (result.ci_low, result.ci_high) == (0.0, 0.0)


def test_interval_of_scores_between_0_and_1_stays_within_a_change_of_one() -> None:
    # Two items, t(0.975, 1) = 12.7: the t interval of the mean change reached -4.9 to 5.3.
    baseline = {"s": {"a": 0.05, "b": 0.9}}
    candidate = {"s": {"a": 0.95, "b": 0.4}}
    result = compare_experiments(baseline, candidate)["s"]
    assert (result.ci_low, result.ci_high) == (-1.0, 1.0)
    # Scores beyond 0..1 have no such bound.
    wide = compare_experiments({"s": {"a": 0.0, "b": 9.0}}, {"s": {"a": 9.0, "b": 4.0}})["s"]
    assert wide.ci_low is not None
    assert wide.ci_low < -10.0
