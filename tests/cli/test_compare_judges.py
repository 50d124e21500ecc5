"""``evalkit compare`` of two runs judged by different models: the judge section, its
``--json`` and the confound note; the same judge prints what compare always printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from evalkit.agreement import StoredAgreement, read_agreement
from evalkit.cli import main
from evalkit.testing import FakeOpenAIServer
from tests.compare.judge_runs import ROWS, SCORER, both, judged_run, key, write_data

__all__ = ["key"]  # the fixture, used by name


async def runs(
    tmp_path: Path, first: str, second: str, *, other_outputs: bool = False
) -> tuple[Path, str, str]:
    """Runs judged by ``first`` then ``second`` into one store (the second over other outputs
    when asked)."""
    store = tmp_path / "evalkit.duckdb"
    data = write_data(tmp_path / "a.parquet")
    later = data
    if other_outputs:
        later = write_data(tmp_path / "b.parquet", outputs=lambda i: f"answer {i // 2}")
    async with FakeOpenAIServer() as server:
        a = await judged_run(server, data, store, first)
        b = await judged_run(server, later, store, second)
    return store, a, b


def compare(capsys: Any, store: Path, a: str, b: str, *extra: str) -> tuple[int, str]:
    code = main(["compare", a, b, "--store", str(store), *extra])
    return code, capsys.readouterr().out


def _kappa(rows: list[StoredAgreement]) -> float:
    (value,) = [
        r["value"] for r in rows if r["compared_with"] == "consensus" and r["metric"] == "kappa"
    ]
    assert value is not None
    return float(value)


async def test_compare_shows_both_judges_against_people_and_each_other(
    tmp_path: Path, key: str, capsys: Any
) -> None:
    store, a, b = await runs(tmp_path, "judge-a", "judge-b")
    code, out = compare(capsys, store, a, b)
    assert code == 0
    assert f"  {SCORER}: model judge-a → judge-b (binary, from the labels)" in out
    kappa = cohen_kappa_score(*both(store, a, b))
    (line,) = [row for row in out.splitlines() if row.startswith(SCORER) and " kappa " in row]
    cells = line.split()
    assert cells[2] == f"{_kappa(read_agreement(store, a)):.3f}"
    assert f"{_kappa(read_agreement(store, b)):.3f}" in cells
    assert f"{kappa:.3f}" in cells
    assert cells[-1] == str(ROWS)
    assert "note:" not in out

    code, text = compare(capsys, store, a, b, "--json")
    assert code == 0
    shown = json.loads(text)
    assert {"baseline", "candidate", "scorers", "slices", "judges"} <= set(shown)
    (judge,) = shown["judges"]["scorers"]
    assert judge["between"]["metrics"]["kappa"]["value"] == pytest.approx(kappa)
    assert judge["baseline"]["vs_labels"]["kappa"]["value"] == _kappa(read_agreement(store, a))
    assert judge["candidate"]["models"] == ["judge-b"]
    assert shown["judges"]["confounded"] is False


async def test_the_same_judge_prints_no_judge_section_unless_asked(
    tmp_path: Path, key: str, capsys: Any
) -> None:
    store, a, b = await runs(tmp_path, "judge-a", "judge-a")
    code, out = compare(capsys, store, a, b)
    assert code == 0
    assert "judges (" not in out
    code, text = compare(capsys, store, a, b, "--json")
    assert "judges" not in json.loads(text)
    code, out = compare(capsys, store, a, b, "--judges")
    assert code == 0
    assert f"  {SCORER}: the same judge (binary, from the labels)" in out
    code, text = compare(capsys, store, a, b, "--judges", "--json")
    (judge,) = json.loads(text)["judges"]["scorers"]
    assert judge["changed"] is False
    assert judge["between"]["metrics"]["kappa"]["value"] == 1.0


async def test_runs_judging_other_outputs_carry_the_confound_note(
    tmp_path: Path, key: str, capsys: Any
) -> None:
    store, a, b = await runs(tmp_path, "judge-a", "judge-b", other_outputs=True)
    code, out = compare(capsys, store, a, b)
    assert code == 0
    (note,) = [line for line in out.splitlines() if line.startswith("note:")]
    assert "the comparison is confounded" in note
    assert f"the output differs on {ROWS - 1} of {ROWS} paired items" in note
    assert "dataset fingerprint" in note
    code, text = compare(capsys, store, a, b, "--json")
    judges = json.loads(text)["judges"]
    assert judges["confounded"] is True
    assert any("the judges read different outputs" in c for c in judges["confounds"])
