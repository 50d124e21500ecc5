"""The nightly gate never passes on broken data: failures, unusable baselines, ambiguous refs."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.cli.conftest import Cli, write_dataset, write_experiment

DOWN = """
from evalkit import create_scorer


def _score(run):
    raise ConnectionError("Connection refused: http://127.0.0.1:9/v1/chat/completions")


scorer = create_scorer("Correct", id="correct").generate_score(_score)
"""


def _down_experiment(folder: Path, extra: str = "") -> None:
    write_dataset(folder / "data.parquet", rows=40)
    (folder / "down.py").write_text(DOWN, encoding="utf-8")
    (folder / "nightly.toml").write_text(
        f"""
[experiment]
name = "nightly"
dataset = "data.parquet"
store = "evalkit.duckdb"

[[scorers]]
use = "down:scorer"
{extra}

[regression]
baseline = "latest"
""",
        encoding="utf-8",
    )


def test_a_scorer_that_always_fails_fails_the_run_and_says_why(cli: Cli, tmp_path: Path) -> None:
    # The judge outage, without a threshold: every pair failed, exit 0 before.
    _down_experiment(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress")
    assert done.code == 1, done.stdout
    lines = done.stdout.splitlines()
    row = next(line for line in lines if line.startswith("correct")).split()
    assert row[1:4] == ["0", "40", "0"]  # scored, failed, not run
    assert row[-1] == "failed"
    verdict = next(line for line in lines if line.startswith(("PASSED", "FAILED")))
    assert verdict.startswith("FAILED: correct failed: no data: none of its 40 pairs")
    assert "error rate 100% above max_error_rate 5% (40 failed, 0 not run of 40 pairs)" in verdict
    # ... and the terminal says what the failures were.
    assert "    40 × ConnectionError at generate_score: Connection refused" in done.stdout  # noqa: RUF001
    junit = next((tmp_path / "reports").glob("*.junit.xml")).read_text()
    assert 'failures="1"' in junit


def test_an_error_rate_bound_in_the_file_is_range_checked(cli: Cli, tmp_path: Path) -> None:
    _down_experiment(tmp_path, "max_error_rate = 1.5")
    done = cli("run", "nightly.toml", "--no-progress")
    assert done.code == 2
    assert (
        "nightly.toml:9: scorers[0].max_error_rate: expected a value less than or equal to 1"
        in (done.stderr)
    )
    assert "Traceback" not in done.stderr


def test_an_error_rate_bound_in_the_file_is_applied(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", rows=40)
    write_experiment(tmp_path, threshold=0.0)
    text = (tmp_path / "nightly.toml").read_text()
    # token_f1 fails on a null ground truth: 4 of 40 items (10%).
    data = tmp_path / "data.parquet"
    import pandas as pd

    frame = pd.read_parquet(data)
    frame.loc[:3, "groundTruth"] = None
    frame.to_parquet(data)
    failing = cli("run", "nightly.toml", "--no-progress", "--json")
    assert failing.code == 1
    verdicts = {s["scorer_id"]: s for s in json.loads(failing.stdout)["scorers"]}
    assert verdicts["token_f1"]["verdict"] == "failed"
    assert verdicts["token_f1"]["reasons"][0].startswith("error rate 10% above")

    (tmp_path / "nightly.toml").write_text(
        text.replace("[experiment]\n", "[experiment]\nmax_error_rate = 0.2\n"), encoding="utf-8"
    )
    tolerated = cli("run", "nightly.toml", "--no-progress", "--json", "--baseline", "latest")
    summary = json.loads(tolerated.stdout)
    assert tolerated.code == 0, summary["verdict"]
    assert summary["passed"] is True


def _listed(cli: Cli, name: str) -> list[dict[str, object]]:
    listed = cli("experiments", "--json", "--name", name)
    assert listed.code == 0, listed.stderr
    rows: list[dict[str, object]] = json.loads(listed.stdout)
    return rows


def test_a_limited_run_is_partial_and_never_the_baseline(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path)
    full = cli("run", "nightly.toml", "--no-progress", "--json")
    assert full.code == 0, full.stderr
    full_id = json.loads(full.stdout)["experiment_id"]
    empty = cli("run", "nightly.toml", "--no-progress", "--limit", "0", "--json")
    assert json.loads(empty.stdout)["baseline"] is None  # no item to pair
    some = cli("run", "nightly.toml", "--no-progress", "--limit", "10", "--json")
    assert some.code == 0, some.stderr
    assert json.loads(some.stdout)["baseline"] == full_id
    assert [r["partial"] for r in _listed(cli, "nightly")] == [True, True, False]

    write_dataset(tmp_path / "data.parquet", wrong=30)
    worse = cli("run", "nightly.toml", "--no-progress", "--json")
    summary = json.loads(worse.stdout)
    assert summary["baseline"] == full_id
    assert worse.code == 1
    assert {s["scorer_id"]: s["verdict"] for s in summary["scorers"]}["exact"] == "regressed"


def test_the_first_night_has_no_baseline_and_passes_on_its_gates(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress", "--limit", "5").code == 0
    first = cli("run", "nightly.toml", "--no-progress")
    assert first.code == 0, first.stderr
    notes = [line for line in first.stdout.splitlines() if line.startswith("no baseline")]
    assert notes == [
        "no baseline: no earlier complete, full run of 'nightly' that passed;"
        " judged on its own gates only"
    ]


def test_latest_skips_a_run_that_does_not_pair(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", rows=60)
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    other = tmp_path / "data.parquet"
    import pandas as pd

    frame = pd.read_parquet(other)
    frame["id"] = [f"other{i}" for i in range(len(frame))]
    frame.to_parquet(other)
    done = cli("run", "nightly.toml", "--no-progress")
    assert done.code == 0, done.stderr
    note = next(line for line in done.stdout.splitlines() if line.startswith("no baseline"))
    assert "holds 0 of this run's 60 items (0%), below min_paired 90%" in note


def test_a_named_baseline_that_cannot_be_compared_exits_2(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path)
    missing = cli("run", "nightly.toml", "--no-progress", "--baseline", "nope")
    assert missing.code == 2
    assert "baseline 'nope' cannot be compared" in missing.stderr
    assert not (tmp_path / "evalkit.duckdb").exists()  # refused before running

    assert cli("run", "nightly.toml", "--no-progress", "--limit", "3").code == 0
    partial = cli("run", "nightly.toml", "--no-progress", "--baseline", "nightly")
    assert partial.code == 2
    assert "covered part of its dataset (--limit or --shard)" in partial.stderr

    full = cli("run", "nightly.toml", "--no-progress", "--json")
    full_id = json.loads(full.stdout)["experiment_id"]
    frame_path = tmp_path / "data.parquet"
    import pandas as pd

    frame = pd.read_parquet(frame_path)
    frame["id"] = [f"other{i}" for i in range(len(frame))]
    frame.to_parquet(frame_path)
    unpaired = cli("run", "nightly.toml", "--no-progress", "--baseline", full_id)
    assert unpaired.code == 2
    assert f"run {full_id} holds 0 of this run's 60 items" in unpaired.stderr
    assert "this run is stored as" in unpaired.stderr


def test_compare_of_runs_that_do_not_pair_exits_2(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path)
    first = json.loads(cli("run", "nightly.toml", "--no-progress", "--json").stdout)
    empty = cli("run", "nightly.toml", "--no-progress", "--json", "--limit", "0")
    second = json.loads(empty.stdout)
    done = cli("compare", first["experiment_id"], second["experiment_id"])
    assert done.code == 2
    assert "has no items to pair" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_run_name_that_looks_like_an_id_prefix_is_that_run(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path, name="assistant-v2")
    other = json.loads(cli("run", "assistant-v2.toml", "--no-progress", "--json").stdout)
    prefix = str(other["experiment_id"])[:3]
    write_experiment(tmp_path, name=prefix)
    mine = json.loads(cli("run", f"{prefix}.toml", "--no-progress", "--json").stdout)
    shown = cli("show", prefix, "--json")
    assert shown.code == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == mine["experiment_id"]
    again = cli("run", f"{prefix}.toml", "--no-progress", "--json", "--baseline", prefix)
    assert json.loads(again.stdout)["baseline"] == mine["experiment_id"]


def test_an_ambiguous_id_prefix_lists_the_candidates(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    store = tmp_path / "evalkit.duckdb"
    with duckdb.connect(str(store)) as con:
        ids = [row[0] for row in con.execute("SELECT id FROM experiments ORDER BY id").fetchall()]
        con.execute("UPDATE experiments SET id = 'ab' || id[3:] WHERE id = ?", [ids[0]])
        con.execute("UPDATE experiments SET id = 'ab' || id[3:] WHERE id = ?", [ids[1]])
    done = cli("show", "ab")
    assert done.code == 2
    assert "'ab' is the id prefix of 2 runs: ab" in done.stderr
    assert "(nightly, completed," in done.stderr


HUGE = """
from pathlib import Path

from evalkit import create_scorer


def _score(run):
    # mode.txt: "alternate" (+1e308 on odd items, -1e308 on even ones), "low" or "high".
    mode = Path("mode.txt").read_text().strip()
    if mode == "alternate":
        return 1e308 if int(run.ground_truth) % 4 else -1e308
    return -1e308 if mode == "low" else 1e308


scorer = create_scorer("Huge", id="huge").generate_score(_score)
"""


def _huge_run(cli: Cli, folder: Path, mode: str) -> str:
    (folder / "mode.txt").write_text(mode, encoding="utf-8")
    done = cli("run", "huge.toml", "--no-progress", "--json")
    assert done.code == 0, done.stderr
    return str(json.loads(done.stdout)["experiment_id"])


def test_show_and_compare_of_scores_near_the_float_limit(cli: Cli, tmp_path: Path) -> None:
    # issue 30, item 4: ±1e308 made `show` fail (STDDEV_SAMP is out of range) and `compare`
    # overflow (a nan mean, infinite differences).
    write_dataset(tmp_path / "data.parquet", rows=40)
    (tmp_path / "huge.py").write_text(HUGE, encoding="utf-8")
    (tmp_path / "huge.toml").write_text(
        '[experiment]\nname = "huge"\ndataset = "data.parquet"\nstore = "evalkit.duckdb"\n\n'
        '[[scorers]]\nuse = "huge:scorer"\n',
        encoding="utf-8",
    )
    alternate, low, high = (_huge_run(cli, tmp_path, m) for m in ("alternate", "low", "high"))
    shown = cli("show", alternate)
    assert shown.code == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if x.startswith("huge"))
    assert "nan" not in line
    assert "inf" not in line

    # From a mean of 0 to -1e308: a finite drop, told as a regression with finite figures.
    dropped = cli("compare", alternate, low, "--json")
    assert dropped.code == 1, dropped.stderr
    (huge,) = json.loads(dropped.stdout)["scorers"]
    assert (huge["baseline_mean"], huge["candidate_mean"]) == (0.0, -1e308)
    assert huge["difference"] == -1e308
    assert huge["verdict"] == "regressed"
    assert huge["note"] is None

    # From -1e308 to +1e308: a difference beyond the float range never passes.
    beyond = cli("compare", low, high)
    assert beyond.code == 1, beyond.stderr
    assert "Traceback" not in beyond.stderr
    assert "huge: the difference or its interval is beyond the float range" in beyond.stdout
