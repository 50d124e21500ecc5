"""Nights remembered (issue 29, items 1 and 2): each night's verdict is kept in the store, a
failed night never becomes the next night's bar, and a team pins a new level on purpose.

Three nights of the sample assistant with ``baseline = "latest"``: v1 passes, v2 fails
against it, v2 again fails too (against night 1, not the failed night 2); then night 2 is
pinned ("v2 is the new normal") and v2 passes against it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.cli.conftest import Completed, run_cli

ROOT = Path(__file__).resolve().parents[2]

_EXPERIMENT = """
[experiment]
name = "nightly-qa"
dataset = "../datasets/{dataset}.parquet"
store = "../evalkit.duckdb"
concurrency = 16

[[scorers]]
use = "exact_match"
id = "exact"
threshold = 0.5
params = {{ ignore_case = true }}

[[scorers]]
use = "contains"
id = "contains"
threshold = 0.7

[[scorers]]
use = "token_f1"
id = "token_f1"
threshold = 0.65

[regression]
baseline = "latest"
max_drop = 0.02
"""


def _night(folder: Path, dataset: str) -> tuple[Completed, dict[str, Any]]:
    (folder / "experiments" / "nightly.toml").write_text(
        _EXPERIMENT.format(dataset=dataset), encoding="utf-8"
    )
    done = run_cli("run", "experiments/nightly.toml", "--no-progress", "--json", cwd=folder)
    return done, json.loads(done.stdout)


def _verdicts(folder: Path) -> list[tuple[str, str | None, str | None]]:
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT id, verdict, baseline_id FROM experiments ORDER BY started_at"
        ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Night 1 (v1), night 2 (v2), night 3 (v2): their ``evalkit run --json`` outputs."""
    folder = tmp_path_factory.mktemp("nights")
    (folder / "experiments").mkdir()
    shutil.copytree(ROOT / "datasets", folder / "datasets")
    outputs = []
    for dataset, code in (("qa_v1", 0), ("qa_v2", 1), ("qa_v2", 1)):
        done, output = _night(folder, dataset)
        assert done.code == code, (dataset, done.stdout, done.stderr)
        outputs.append(output)
    return folder, outputs


def test_a_failed_night_never_becomes_the_bar(nights: tuple[Path, list[dict[str, Any]]]) -> None:
    folder, (one, two, three) = nights
    assert one["passed"]
    assert one["baseline"] is None
    assert not two["passed"]
    assert two["baseline"] == one["experiment_id"]
    assert two["baseline_reason"] == "newest passing run"
    # Night 3 is judged against night 1, the newest passing night, not the failed night 2.
    assert not three["passed"]
    assert three["baseline"] == one["experiment_id"]
    assert {s["verdict"] for s in three["scorers"]} == {"regressed"}
    assert _verdicts(folder) == [
        (one["experiment_id"], "passed", None),
        (two["experiment_id"], "failed", one["experiment_id"]),
        (three["experiment_id"], "failed", one["experiment_id"]),
    ]


def test_every_listing_shows_the_verdicts(nights: tuple[Path, list[dict[str, Any]]]) -> None:
    folder, (one, two, three) = nights
    listed = json.loads(run_cli("experiments", "--json", cwd=folder).stdout)
    assert [(r["id"], r["verdict"]) for r in listed] == [
        (three["experiment_id"], "failed"),
        (two["experiment_id"], "failed"),
        (one["experiment_id"], "passed"),
    ]
    assert listed[0]["baseline_id"] == one["experiment_id"]
    assert listed[0]["baseline_reason"] == "newest passing run"
    table = run_cli("experiments", cwd=folder).stdout.splitlines()
    assert "verdict" in table[0]
    assert [" failed " in line for line in table[2:]] == [True, True, False]
    sql = run_cli("sql", "select name, verdict from experiments order by started_at",
                  "--format", "json", cwd=folder)  # fmt: skip
    assert [r["verdict"] for r in json.loads(sql.stdout)] == ["passed", "failed", "failed"]


def test_show_gives_the_verdict_its_baseline_and_each_gate(
    nights: tuple[Path, list[dict[str, Any]]],
) -> None:
    folder, (one, _, three) = nights
    shown = run_cli("show", three["experiment_id"], cwd=folder).stdout
    assert "verdict: failed" in shown
    assert f"baseline: {one['experiment_id']} (newest passing run)" in shown
    lines = shown.splitlines()
    assert any(line.split()[:2] == ["token_f1", "failed"] and line.endswith("regressed")
               for line in lines), shown  # fmt: skip
    assert any(line.startswith("token_f1: Δ -") and "beyond max_drop 0.02" in line
               for line in lines), shown  # fmt: skip
    data = json.loads(run_cli("show", three["experiment_id"], "--json", cwd=folder).stdout)
    assert data["verdict"] == "failed"
    gates = {g["scorer_id"]: g for g in data["gates"]}
    assert set(gates) == {"exact", "contains", "token_f1"}
    assert all(not g["passed"] and g["regression"] == "regressed" for g in gates.values())
    assert all(g["baseline_id"] == one["experiment_id"] for g in gates.values())
    assert all(any("beyond max_drop" in r for r in g["reasons"]) for g in gates.values())


def test_the_report_says_which_baseline_and_why(
    nights: tuple[Path, list[dict[str, Any]]],
) -> None:
    folder, (one, _, three) = nights
    markdown = (folder / three["reports"]["markdown"]).read_text(encoding="utf-8")
    assert f"({one['experiment_id']})` — newest passing run" in markdown


def test_compare_latest_is_the_newest_passing_run_never_the_run_itself(
    nights: tuple[Path, list[dict[str, Any]]],
) -> None:
    folder, (one, _, three) = nights
    done = run_cli("compare", "latest", three["experiment_id"], "--json", cwd=folder)
    compared = json.loads(done.stdout)
    assert (compared["baseline"], compared["candidate"]) == (
        one["experiment_id"], three["experiment_id"]
    )  # fmt: skip
    assert compared["baseline_reason"] == "newest passing run"
    # The newest run is night 3 itself: "latest" is still its baseline, not itself.
    done = run_cli("compare", "latest", "latest", cwd=folder)
    assert done.stdout.splitlines()[0].endswith("; baseline: newest passing run"), done.stdout
    assert f"({one['experiment_id']}) → candidate" in done.stdout
    # The old meaning, under its own name: the newest complete run, passed or not.
    done = run_cli("compare", "latest-complete", three["experiment_id"], "--json", cwd=folder)
    assert json.loads(done.stdout)["baseline"] != three["experiment_id"]


def test_a_pinned_night_is_the_new_normal(
    tmp_path: Path, nights: tuple[Path, list[dict[str, Any]]]
) -> None:
    shutil.copytree(nights[0], tmp_path / "copy")  # the module's store stays as it was
    folder, (_, two, _) = tmp_path / "copy", nights[1]
    done = run_cli("baseline", "pin", two["experiment_id"], "--note", "v2 is the new normal",
                   "--by", "alice", cwd=folder)  # fmt: skip
    assert done.code == 0, done.stderr
    assert "pinned by alice: v2 is the new normal" in done.stdout
    done, night = _night(folder, "qa_v2")
    assert done.code == 0, done.stdout
    assert night["baseline"] == two["experiment_id"]
    assert night["baseline_reason"] == "pinned by alice: v2 is the new normal"
    shown = run_cli("show", night["experiment_id"], cwd=folder).stdout
    assert f"pinned baseline: {two['experiment_id']} (pinned by alice" in shown
    # Night 3' passed after the pin: it is the bar now, and the pin is still on record.
    baseline = json.loads(run_cli("baseline", "show", "nightly-qa", "--json",
                                  cwd=folder).stdout)  # fmt: skip
    assert baseline["latest"]["id"] == night["experiment_id"]
    assert (
        baseline["latest"]["reason"]
        == f"newest passing run since {two['experiment_id']} was pinned"
    )
    assert baseline["pinned"]["experiment_id"] == two["experiment_id"]
    done = run_cli("baseline", "unpin", "nightly-qa", "--by", "bob", cwd=folder)
    assert done.code == 0
    assert "by bob" in done.stdout
    history = json.loads(run_cli("baseline", "show", "nightly-qa", "--json",
                                 cwd=folder).stdout)["history"]  # fmt: skip
    assert [(h["experiment_id"], h["pinned_by"]) for h in history] == [
        (None, "bob"), (two["experiment_id"], "alice")
    ]  # fmt: skip


def test_only_a_complete_full_run_can_be_pinned(
    tmp_path: Path, nights: tuple[Path, list[dict[str, Any]]]
) -> None:
    shutil.copytree(nights[0], tmp_path / "copy")
    folder = tmp_path / "copy"
    done = run_cli("run", "experiments/nightly.toml", "--no-progress", "--limit", "5",
                   "--json", cwd=folder)  # fmt: skip
    trial = json.loads(done.stdout)["experiment_id"]
    refused = run_cli("baseline", "pin", trial, cwd=folder)
    assert refused.code == 2
    assert f"run {trial} covered part of its dataset (--limit or --shard)" in refused.stderr
    unpinned = run_cli("baseline", "unpin", "nightly-qa", cwd=folder)
    assert unpinned.code == 2
    assert "no baseline is pinned for experiment 'nightly-qa'" in unpinned.stderr
