"""compare_judges on two real runs in one store: the judge-vs-judge figures are the libraries'
on the paired scores, each-vs-labels the stored ones, and what differs besides the judge is
said."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs
from sklearn.metrics import cohen_kappa_score

from evalkit import create_scorer, run_evals
from evalkit.agreement import read_agreement
from evalkit.compare import JudgeComparison, compare_judges
from evalkit.testing import FakeOpenAIServer
from tests.compare.judge_runs import (
    ROWS,
    SCORER,
    both,
    human,
    judged_run,
    key,
    stored_scores,
    write_data,
)

__all__ = ["key"]  # the fixture, used by name


async def two_judges(
    tmp_path: Path, first: str, second: str, *, labels: bool = True
) -> tuple[Path, str, str]:
    """Runs judged by ``first`` then ``second`` over one dataset, in one store."""
    data = write_data(tmp_path / "data.parquet")
    store = tmp_path / "evalkit.duckdb"
    async with FakeOpenAIServer() as server:
        a = await judged_run(server, data, store, first, labels=labels)
        b = await judged_run(server, data, store, second, labels=labels)
    return store, a, b


async def test_two_judge_models_agree_as_sklearn_says_and_each_with_people_as_stored(
    tmp_path: Path, key: str
) -> None:
    store, a, b = await two_judges(tmp_path, "judge-a", "judge-b")
    judged = compare_judges(store, a, b)
    (found,) = judged.scorers
    assert found.scorer_id == SCORER
    assert found.differences == ("model judge-a → judge-b",)
    assert (found.kind, found.kind_from) == ("binary", "labels")
    first, second = both(store, a, b)
    assert len(first) == ROWS
    assert found.between.n == ROWS
    assert found.unpaired == 0
    assert found.between.metrics["kappa"].value == pytest.approx(cohen_kappa_score(first, second))
    agree = sum(x == y for x, y in zip(first, second, strict=True)) / ROWS
    assert found.between.metrics["accuracy"].value == pytest.approx(agree)
    low, high = found.between.metrics["kappa"].low, found.between.metrics["kappa"].high
    assert low < found.between.metrics["kappa"].value < high
    for side, run in ((found.baseline, a), (found.candidate, b)):
        stored = {
            r["metric"]: (r["value"], r["ci_low"], r["ci_high"])
            for r in read_agreement(store, run)
            if r["compared_with"] == "consensus"
        }
        assert {m: (e.value, e.low, e.high) for m, e in side.vs_labels.items()} == stored
        assert side.labels_n == ROWS
    scores = stored_scores(store, a)
    labels = [human(int(i[1:])) for i in sorted(scores)]
    assert found.baseline.vs_labels["kappa"].value == pytest.approx(
        cohen_kappa_score(labels, [scores[i] for i in sorted(scores)])
    )
    assert found.baseline.models == ("judge-a",)
    assert found.candidate.models == ("judge-b",)
    # judge-a follows people closely, judge-b hardly: the figures tell them apart.
    assert found.baseline.vs_labels["kappa"].value > 0.7 > found.candidate.vs_labels["kappa"].value
    assert judged.confounds == ()
    assert judged[SCORER] is found


async def test_a_judge_change_across_the_id_rule_pairs_the_old_id_with_its_new_spelling(
    tmp_path: Path, key: str
) -> None:
    # The baseline stored as before issue 31 (`llm-rubric`, the name with dashes), the
    # candidate with today's default id (`llm_rubric`) and another judge model.
    data = write_data(tmp_path / "data.parquet")
    store = tmp_path / "evalkit.duckdb"
    async with FakeOpenAIServer() as server:
        a = await judged_run(server, data, store, "judge-a", scorer_id="llm-rubric")
        b = await judged_run(server, data, store, "judge-b")
    judged = compare_judges(store, a, b)
    (found,) = judged.scorers
    assert found.scorer_id == SCORER
    assert found.differences == ("model judge-a → judge-b",)
    assert found.between.n == ROWS
    assert found.baseline.models == ("judge-a",)
    assert found.baseline.labels_n == found.candidate.labels_n == ROWS


async def test_without_labels_graded_scores_are_compared_as_continuous(
    tmp_path: Path, key: str
) -> None:
    store, c, d = await two_judges(tmp_path, "judge-c", "judge-d", labels=False)
    (found,) = compare_judges(store, c, d).scorers
    assert (found.kind, found.kind_from) == ("continuous", "inferred")
    first, second = both(store, c, d)
    assert found.between.metrics["pearson"].value == pytest.approx(
        stats.pearsonr(second, first).statistic
    )
    assert found.between.metrics["spearman"].value == pytest.approx(
        stats.spearmanr(second, first).statistic
    )
    assert found.between.metrics["mae"].value == pytest.approx(
        sum(abs(x - y) for x, y in zip(first, second, strict=True)) / ROWS
    )
    assert found.baseline.vs_labels == {}
    assert found.baseline.labels_n is None


async def test_without_labels_two_valued_scores_are_binary(tmp_path: Path, key: str) -> None:
    store, a, b = await two_judges(tmp_path, "judge-a", "judge-b", labels=False)
    (found,) = compare_judges(store, a, b).scorers
    assert (found.kind, found.kind_from) == ("binary", "inferred")
    assert found.between.levels == (0.0, 1.0)
    assert found.between.metrics["kappa"].value == pytest.approx(
        cohen_kappa_score(*both(store, a, b))
    )


async def test_the_same_judge_is_compared_only_when_asked(tmp_path: Path, key: str) -> None:
    store, a, b = await two_judges(tmp_path, "judge-a", "judge-a")
    assert compare_judges(store, a, b).scorers == ()
    (found,) = compare_judges(store, a, b, unchanged=True).scorers
    assert found.differences == ()
    assert not found.changed
    assert found.between.metrics["kappa"].value == 1.0


async def test_a_changed_prompt_is_a_changed_judge(tmp_path: Path, key: str) -> None:
    data = write_data(tmp_path / "data.parquet")
    store = tmp_path / "evalkit.duckdb"
    async with FakeOpenAIServer() as server:
        a = await judged_run(server, data, store, "judge-a", rubric="Answers the question.")
        b = await judged_run(server, data, store, "judge-a", rubric="Answers it politely.")
    (found,) = compare_judges(store, a, b).scorers
    (difference,) = found.differences
    assert difference.startswith("definition/prompt version {")
    assert "Answers it politely." in difference


async def test_runs_that_differ_in_more_than_the_judge_are_confounded(
    tmp_path: Path, key: str
) -> None:
    store = tmp_path / "evalkit.duckdb"
    first = write_data(tmp_path / "first.parquet")
    second = write_data(
        tmp_path / "second.parquet",
        outputs=lambda i: f"answer {i}" if i % 4 else f"another answer {i}",
        rows=ROWS - 5,
    )
    async with FakeOpenAIServer() as server:
        a = await judged_run(server, first, store, "judge-a")
        b = await judged_run(server, second, store, "judge-b")
    judged = compare_judges(store, a, b)
    assert judged.confounded
    fingerprint, items, outputs = judged.confounds
    assert fingerprint.startswith("dataset fingerprint ")
    assert items == f"5 item(s) are in one run only ({ROWS - 5} in both)"
    changed = len([i for i in range(ROWS - 5) if i % 4 == 0])
    assert outputs == (
        f"the output differs on {changed} of {ROWS - 5} paired items"
        " (the judges read different outputs)"
    )
    (found,) = judged.scorers
    assert found.unpaired == 5
    assert found.between.n == ROWS - 5


async def test_a_scorer_without_a_judge_is_not_compared(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.parquet")
    store = tmp_path / "evalkit.duckdb"
    ids = []
    for bar in (3, 5):
        scorer = create_scorer("Long", id="long").generate_score(
            lambda run, bar=bar: float(len(run.output) > bar)
        )
        result = await run_evals(data, [scorer], store=store, progress=False)
        ids.append(result.experiment_id)
    judged = compare_judges(store, *ids, unchanged=True)
    assert isinstance(judged, JudgeComparison)
    assert judged.scorers == ()


async def test_json_shape(tmp_path: Path, key: str) -> None:
    store, a, b = await two_judges(tmp_path, "judge-a", "judge-b")
    shape = compare_judges(store, a, b).to_dict()
    assert set(shape) == {"baseline", "candidate", "confounded", "confounds", "scorers"}
    (scorer,) = shape["scorers"]
    assert set(scorer) == {"scorer_id", "changed", "differences", "kind", "kind_from",
                           "between", "unpaired", "baseline", "candidate"}  # fmt: skip
    assert set(scorer["between"]["metrics"]) == {"accuracy", "kappa"}
    assert set(scorer["baseline"]) == {"models", "vs_labels", "labels_n"}
    assert set(scorer["baseline"]["vs_labels"]["kappa"]) == {"value", "low", "high"}
