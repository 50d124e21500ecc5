"""One scorer id rule: a prebuilt scorer's id is its registry name, in Python and in an
experiment file alike, and a misspelt id is refused naming the close match (issue 31, item 8).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evalkit import ConfigError, get_scorer, list_scorers, run_evals, run_evals_sync
from evalkit.scorers import token_f1
from tests.cli.conftest import run_cli

ROWS = [
    {"id": "a", "input": "Capital of France?", "groundTruth": "Paris", "output": "Paris"},
    {"id": "b", "input": "2 + 2?", "groundTruth": "4", "output": "five"},
]


@pytest.mark.parametrize("info", [i for i in list_scorers() if i.available], ids=lambda i: i.name)
def test_a_prebuilt_scorer_records_its_registry_name(info: object) -> None:
    name = info.name  # type: ignore[attr-defined]
    assert get_scorer(name).id == name
    assert get_scorer(name, id="mine").id == "mine"


def test_the_factory_records_the_registry_name_too() -> None:
    assert token_f1().id == "token_f1"


async def test_thresholds_take_the_name_the_scorer_was_asked_for() -> None:
    result = await run_evals(
        ROWS, [get_scorer("token_f1")], store=None, progress=False, thresholds={"token_f1": 0.4}
    )
    assert list(result.scores) == ["token_f1"]
    assert result.verdict.scorers["token_f1"].passed


@pytest.mark.parametrize(
    ("option", "given", "hint"),
    [
        ("thresholds", {"token-f1": 0.4}, "did you mean 'token_f1'?"),
        ("thresholds", {"Token_F1": 0.4}, "did you mean 'token_f1'?"),
        ("thresholds", {"token_f2": 0.4}, "did you mean 'token_f1'?"),
        ("max_error_rate", {"token-f1": 0.1}, "did you mean 'token_f1'?"),
        ("labels", {"token-f1": "human"}, "did you mean 'token_f1'?"),
    ],
)
async def test_a_misspelt_id_is_refused_naming_the_close_match(
    option: str, given: dict[str, object], hint: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        await run_evals(ROWS, [get_scorer("token_f1")], store=None, progress=False,
                        **{option: given})  # type: ignore[arg-type]  # fmt: skip
    key = next(iter(given))
    assert str(raised.value) == (
        f"{option}: no scorer with id {key!r} ({hint} scorers: 'token_f1')"
    )


async def test_an_id_with_no_close_match_lists_the_scorers() -> None:
    with pytest.raises(ConfigError, match=r"no scorer with id 'bleu' \(scorers: 'token_f1'\)$"):
        await run_evals(ROWS, [get_scorer("token_f1")], store=None, progress=False,
                        thresholds={"bleu": 0.5})  # fmt: skip


def test_python_and_an_experiment_file_record_the_same_ids(tmp_path: Path) -> None:
    import pandas as pd

    pd.DataFrame(ROWS).to_parquet(tmp_path / "data.parquet")
    (tmp_path / "qa.toml").write_text(
        """
[experiment]
name = "from-toml"
dataset = "data.parquet"
store = "evalkit.duckdb"

[[scorers]]
use = "token_f1"
threshold = 0.4

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )
    done = run_cli("run", "qa.toml", "--no-progress", cwd=tmp_path)
    assert done.code == 0, done.stderr
    store = tmp_path / "evalkit.duckdb"
    run_evals_sync(
        ROWS, [get_scorer("token_f1"), get_scorer("exact_match")], store=store,
        experiment="from-python", progress=False, thresholds={"token_f1": 0.4},
    )  # fmt: skip
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT x.name, list(s.scorer_id ORDER BY s.position) FROM experiment_scorers s"
            " JOIN experiments x ON x.id = s.experiment_id GROUP BY x.name ORDER BY x.name"
        ).fetchall()
    assert rows == [
        ("from-python", ["token_f1", "exact_match"]),
        ("from-toml", ["token_f1", "exact_match"]),
    ]


async def test_an_agreement_gate_on_a_misspelt_id_names_the_close_match() -> None:
    rows = [{**row, "human": 1.0} for row in ROWS]
    with pytest.raises(ConfigError) as raised:
        await run_evals(
            rows, [get_scorer("token_f1")], store=None, progress=False,
            labels={"token_f1": "human"}, min_agreement={"token-f1": {"pearson": 0.5}},
        )  # fmt: skip
    assert str(raised.value) == (
        "min_agreement['token-f1']: no labelled scorer 'token-f1' (did you mean 'token_f1'?)"
    )
