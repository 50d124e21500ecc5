"""Human labels in a run: kept as item metadata, measured after the run (from the kept
results, or from the store over every pass) and gated by ``min_agreement``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from sklearn.metrics import cohen_kappa_score

from evalkit import ConfigError, DatasetError, create_scorer, run_evals

# The scorer says 1 when the output equals the ground truth; people agree but on 3 of 40 rows.
ROWS: list[dict[str, Any]] = [
    {
        "id": f"q{i:02d}",
        "input": f"What is {i} + {i}?",
        "groundTruth": str(2 * i),
        "output": str(2 * i) if i % 4 else "wrong",
        # The people disagree with the scorer on q01, q02 and q04.
        "human": ("good" if i % 4 else "bad")
        if i not in (1, 2, 4)
        else ("bad" if i % 4 else "good"),
        "second": ("good" if i % 4 else "bad"),
    }
    for i in range(40)
]
LEVELS = {"columns": ["human"], "levels": ["bad", "good"]}


def exact() -> Any:
    return create_scorer("exact").generate_score(lambda run: float(run.output == run.ground_truth))


def _expected_kappa() -> float:
    judge = [1 if r["output"] == r["groundTruth"] else 0 for r in ROWS]
    human = [1 if r["human"] == "good" else 0 for r in ROWS]
    return float(cohen_kappa_score(judge, human))


async def test_agreement_is_measured_from_the_kept_results_and_gated() -> None:
    result = await run_evals(
        ROWS, [exact()], store=None, progress=False, labels={"exact": LEVELS},
        min_agreement={"exact": {"kappa": 0.95}},
    )  # fmt: skip
    measured = result.agreement["exact"]
    assert measured.kind == "binary"
    assert measured.consensus.n == 40
    assert measured.consensus.metrics["accuracy"].value == pytest.approx(37 / 40)
    assert measured.consensus.metrics["kappa"].value == pytest.approx(_expected_kappa())
    assert {d.item_id for d in measured.disagreements} == {"q01", "q02", "q04"}
    verdict = result.verdict.scorers["exact"]
    assert not verdict.passed
    assert any("kappa" in r and "below min_agreement 0.95" in r for r in verdict.reasons)
    assert result.to_dict()["agreement"]["exact"]["consensus"]["n"] == 40
    assert result.config["labels"] == {
        "exact": {"columns": ["human"], "scale": [0.0, 1.0], "levels": ["bad", "good"]}
    }


async def test_a_stored_run_keeps_its_agreement_in_the_store(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    spec = {"columns": ["human", "second"], "levels": ["bad", "good"]}
    result = await run_evals(
        ROWS, [exact()], store=store, progress=False, labels={"exact": spec},
        min_agreement={"exact": {"kappa": 0.5}},
    )  # fmt: skip
    assert result.verdict.passed
    measured = result.agreement["exact"]
    assert set(measured.columns) == {"human", "second"}
    assert measured.columns["second"].metrics["accuracy"].value == 1.0
    assert measured.raters is not None
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT compared_with, metric, value FROM scorer_agreement"
            " WHERE experiment_id = ? ORDER BY ALL",
            [result.experiment_id],
        ).fetchall()
        summary = con.execute(
            "SELECT scorer_id, n, accuracy, kappa, raters_alpha FROM agreement_summary"
        ).fetchall()
        metadata = con.execute(
            "SELECT metadata->>'$.human' FROM experiment_items WHERE item_id = 'q01'"
        ).fetchone()
    found = {(c, m): v for c, m, v in rows}
    assert found[("second", "accuracy")] == 1.0
    assert found[("consensus", "kappa")] == pytest.approx(measured.consensus.metrics["kappa"].value)
    assert ("raters", "alpha") in found
    [(scorer_id, n, accuracy, kappa, alpha)] = summary
    assert kappa == pytest.approx(measured.consensus.metrics["kappa"].value)
    assert (scorer_id, n) == ("exact", 40)
    assert accuracy == pytest.approx(measured.consensus.metrics["accuracy"].value)
    assert alpha == pytest.approx(measured.raters.value)
    assert metadata == ("bad",)


async def test_bad_labels_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="labels: no scorer with id 'nope'"):
        await run_evals(ROWS, [exact()], store=None, progress=False, labels={"nope": "human"})
    with pytest.raises(DatasetError, match="missing"):
        await run_evals(ROWS, [exact()], store=None, progress=False, labels={"exact": "missing"})
    with pytest.raises(ConfigError, match="has no labels"):
        await run_evals(ROWS, [exact()], store=None, progress=False,
                        min_agreement={"exact": {"kappa": 0.5}})  # fmt: skip
    yes_no = {"columns": "human", "levels": ["no", "yes"]}
    with pytest.raises(DatasetError, match=r"column 'human': label 'bad' of item 'q00'"):
        await run_evals(ROWS, [exact()], store=None, progress=False, labels={"exact": yes_no})
