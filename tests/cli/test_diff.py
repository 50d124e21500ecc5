"""The shipped regression demo explains itself: ``evalkit run --slices``, ``--json``, the
reports and ``evalkit diff`` all name billing and account as the slices that dropped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from evalkit import Judge
from evalkit.compare import diff_items
from evalkit.testing import FakeOpenAIServer
from tests.cli.conftest import Cli, Completed, run_cli
from tests.truncated import CUT_REPLY, two_nights

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Completed]:
    """quickstart (v1), then the regression demo (v2) against it, in a copy of the repo's
    experiments and datasets."""
    folder = tmp_path_factory.mktemp("demo")
    shutil.copytree(ROOT / "experiments", folder / "experiments")
    shutil.copytree(ROOT / "datasets", folder / "datasets")
    first = run_cli("run", "experiments/quickstart.toml", "--no-progress", cwd=folder)
    assert first.code == 0, first.stderr
    done = run_cli("run", "experiments/regression-demo.toml", "--no-progress", "--json",
                   cwd=folder)  # fmt: skip
    assert done.code == 1, done.stderr
    return folder, done


def test_json_names_billing_and_account(demo: tuple[Path, Completed]) -> None:
    _, done = demo
    verdict = json.loads(done.stdout)
    assert verdict["regressed_slices"] == ["category=account", "category=billing"]
    regressed = {
        (r["value"], r["scorer_id"]) for r in verdict["slices"] if r["verdict"] == "regressed"
    }
    assert {value for value, _ in regressed} == {"account", "billing"}
    assert all(
        r["p_adjusted"] >= r["p_value"] for r in verdict["slices"] if r["p_value"] is not None
    )
    # Every scorer regressed as a whole, so no slice is a hidden drop.
    assert not any(r["flagged"] for r in verdict["slices"])


def test_console_slices_table(demo: tuple[Path, Completed]) -> None:
    folder, _ = demo
    done = run_cli("run", "experiments/regression-demo.toml", "--no-progress", "--slices",
                   cwd=folder)  # fmt: skip
    assert done.code == 1, done.stderr
    # issue 34, item 5: the correction's name, and each slice's interval said unadjusted.
    assert "Δ vs baseline [CI, unadjusted]  p (Tarone-Holm)" in done.stdout
    assert "slices that regressed: category=account, category=billing" in done.stdout


def test_diff_lists_the_drops_by_slice(demo: tuple[Path, Completed]) -> None:
    folder, _ = demo
    done = run_cli("diff", "quickstart", "regression-demo", "--limit", "5", cwd=folder)
    assert done.code == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("dropped pairs by category"))
    counts = dict(part.rsplit(" ", 1) for part in line.split(": ", 1)[1].split(", "))
    assert set(counts) == {"billing", "account"}
    assert "of 1" in done.stdout or "of " in done.stdout  # the pointer to the rest
    assert "evalkit view" in done.stdout


def test_diff_json_and_filters(demo: tuple[Path, Completed]) -> None:
    folder, _ = demo
    done = run_cli("diff", "quickstart", "regression-demo", "--json", "--scorer", "exact",
                   "--slice", "category=billing", "--limit", "100", cwd=folder)  # fmt: skip
    assert done.code == 0, done.stderr
    diff = json.loads(done.stdout)
    assert diff["pairs"]
    assert {p["scorer_id"] for p in diff["pairs"]} == {"exact"}
    assert {p["slice:category"] for p in diff["pairs"]} == {"billing"}
    assert [p["delta"] for p in diff["pairs"]] == sorted(p["delta"] for p in diff["pairs"])
    assert {r["value"] for r in diff["by_slice"]["category"] if r["dropped"]} == {
        "billing", "account"}  # fmt: skip
    improved = json.loads(run_cli("diff", "quickstart", "regression-demo", "--json",
                                  "--improved", cwd=folder).stdout)  # fmt: skip
    assert all(p["delta"] > 0 for p in improved["pairs"])


def test_diff_by_a_bare_slice_key_lists_each_value(demo: tuple[Path, Completed]) -> None:
    # issue 34, item 5: --slice category exited 2 ("must be KEY=VALUE").
    folder, _ = demo
    done = run_cli("diff", "quickstart", "regression-demo", "--slice", "category",
                   "--scorer", "exact", "--limit", "3", cwd=folder)  # fmt: skip
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    columns = ["category", "pairs", "dropped", "improved"]
    header = next(i for i, x in enumerate(lines) if x.split() == columns)
    table = {x.split()[0]: [int(n) for n in x.split()[1:]] for x in lines[header + 2 : header + 15]}
    assert table["billing"][1:] == [13, 0]
    assert table["account"][1:] == [9, 0]
    assert sum(row[0] for row in table.values()) == 297  # every pair of exact, by value
    assert "category" in lines[header + 15].split()  # the list has the key as a column
    data = json.loads(run_cli("diff", "quickstart", "regression-demo", "--slice", "category",
                              "--json", cwd=folder).stdout)  # fmt: skip
    assert data["grouped_by"] == "category"
    assert data["slice"] is None


def test_diff_with_a_slice_filter_counts_the_slice(demo: tuple[Path, Completed]) -> None:
    # issue 34, item 5: the header counted the whole run's changed pairs (31 for exact).
    folder, _ = demo
    done = run_cli("diff", "quickstart", "regression-demo", "--slice", "category=billing",
                   "--scorer", "exact", "--limit", "2", cwd=folder)  # fmt: skip
    assert done.code == 0, done.stderr
    assert "13 pairs changed for exact in category=billing: 13 dropped, 0 improved" in done.stdout
    # Counts of other slices are the whole runs', and say so (review of issue 34's diff).
    by = [x for x in done.stdout.splitlines() if x.startswith("dropped pairs by")]
    assert by
    assert all(x.startswith("dropped pairs by category (whole runs): ") for x in by)
    data = json.loads(run_cli("diff", "quickstart", "regression-demo", "--slice",
                              "category=billing", "--scorer", "exact", "--improved", "--json",
                              cwd=folder).stdout)  # fmt: skip
    assert (data["changed"], data["dropped"], data["improved"], data["total"]) == (13, 13, 0, 0)
    assert data["slice"] == {"key": "category", "value": "billing"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--slice", "=billing"], "--slice must be KEY or KEY=VALUE"),
        # A key no item has printed one "(none)" row of every pair (review of issue 34's diff).
        (["--slice", "nosuchkey"], "--slice 'nosuchkey': no paired item of the two runs has"),
        (["--limit", "-1"], "--limit must be an integer from 0 to 9,223,372,036,854,775,807"),
    ],
)
def test_diff_bad_options(demo: tuple[Path, Completed], args: list[str], needle: str) -> None:
    folder, _ = demo
    done = run_cli("diff", "quickstart", "regression-demo", *args, cwd=folder)
    assert done.code == 2
    assert needle in done.stderr
    assert "Traceback" not in done.stderr


def test_diff_unknown_run(demo: tuple[Path, Completed]) -> None:
    folder, _ = demo
    done = run_cli("diff", "quickstart", "no-such-run", cwd=folder)
    assert done.code == 2
    assert "no-such-run" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_html_report_shows_the_dropped_slices_and_pairs(demo: tuple[Path, Completed]) -> None:
    folder, done = demo
    html = Path(folder, json.loads(done.stdout)["reports"]["html"]).read_text(encoding="utf-8")
    assert "Slices that regressed" in html
    assert "category=billing" in html
    assert "category=account" in html
    assert "Regressed items" in html
    assert "evalkit diff" in html
    markdown = Path(folder, json.loads(done.stdout)["reports"]["markdown"]).read_text("utf-8")
    assert "category=billing" in markdown


async def test_diff_flags_a_reason_cut_at_the_token_limit(
    cli: Cli, tmp_path: Path, server: FakeOpenAIServer, judge: Judge
) -> None:
    first, second = await two_nights(tmp_path / "evalkit.duckdb", judge, server)
    done = cli("diff", first.experiment_id, second.experiment_id)
    assert done.code == 0, done.stderr
    assert (
        "reasons cut at the judge's token limit (truncated): q0 explained (candidate),"
        " q1 explained (candidate)"
    ) in done.stdout
    listed = cli("diff", first.experiment_id, second.experiment_id, "--json")
    pairs = {p["item_id"]: p for p in json.loads(listed.stdout)["pairs"]}
    assert sorted(pairs) == ["q0", "q1"]
    for pair in pairs.values():
        assert pair["candidate_reason"] == CUT_REPLY
        assert pair["candidate_reason_truncated"] is True
        assert pair["baseline_reason_truncated"] is False
    # The disagreements with the human labels, read back from the store.
    found = json.loads(listed.stdout)["disagreements"]
    assert {(d["item_id"], d["reason"], d["reason_truncated"]) for d in found} == {
        ("q0", CUT_REPLY, True),
        ("q1", CUT_REPLY, True),
    }
    lines = done.stdout.splitlines()
    rows = lines[lines.index("where the candidate's judge and the human labels disagree most:") :]
    assert sum(f"(truncated) {CUT_REPLY}" in row for row in rows) == 2


async def test_a_store_from_before_truncated_reasons_still_diffs(
    tmp_path: Path, server: FakeOpenAIServer, judge: Judge
) -> None:
    store = tmp_path / "evalkit.duckdb"
    first, second = await two_nights(store, judge, server)
    # The store as version 6 left it: judge_executions without its truncated column.
    with duckdb.connect(str(store)) as con:
        con.execute("ALTER TABLE judge_executions DROP COLUMN truncated")
        con.execute("DELETE FROM schema_version WHERE version > 6")
    diff = diff_items(store, first.experiment_id, second.experiment_id)
    assert sorted(diff.pairs["item_id"]) == ["q0", "q1"]
    assert list(diff.pairs["candidate_reason_truncated"]) == [False, False]


_NIGHTLY = """
[experiment]
name = "nightly-qa"
dataset = "../datasets/{dataset}.parquet"
store = "../evalkit.duckdb"
concurrency = 16

[[scorers]]
use = "token_f1"
id = "token_f1"
threshold = 0.65

[regression]
baseline = "latest"
max_drop = 0.02
"""


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Night 1 (v1) passes, nights 2 and 3 (v2) fail: the folder and the three run ids."""
    folder = tmp_path_factory.mktemp("nights")
    (folder / "experiments").mkdir()
    shutil.copytree(ROOT / "datasets", folder / "datasets")
    ids = []
    for dataset, code in (("qa_v1", 0), ("qa_v2", 1), ("qa_v2", 1)):
        (folder / "experiments" / "nightly.toml").write_text(
            _NIGHTLY.format(dataset=dataset), encoding="utf-8"
        )
        done = run_cli("run", "experiments/nightly.toml", "--no-progress", "--json", cwd=folder)
        assert done.code == code, (dataset, done.stdout, done.stderr)
        ids.append(json.loads(done.stdout)["experiment_id"])
    return folder, ids


@pytest.mark.parametrize("night", [1, 2])
def test_diff_latest_is_the_newest_passing_run_never_the_run_itself(
    nights: tuple[Path, list[str]], night: int
) -> None:
    folder, ids = nights
    candidate = ids[night]
    done = run_cli("diff", "latest", candidate, "--json", cwd=folder)
    assert done.code == 0, done.stderr
    diff = json.loads(done.stdout)
    # Night 3 is the newest run (itself, for night 3), night 2 failed: night 1 is the bar.
    assert (diff["baseline"], diff["candidate"]) == (ids[0], candidate)
    assert diff["baseline_reason"] == "newest passing run"
    assert diff["dropped"] > 0
    done = run_cli("diff", "latest", candidate, "--limit", "0", cwd=folder)
    first = done.stdout.splitlines()[0]
    assert f"({ids[0]}) → candidate nightly-qa ({candidate})" in first, done.stdout
    assert first.endswith("; baseline: newest passing run"), done.stdout


def test_diff_latest_latest_is_the_newest_run_against_its_baseline(
    nights: tuple[Path, list[str]],
) -> None:
    folder, ids = nights
    diff = json.loads(run_cli("diff", "latest", "latest", "--json", cwd=folder).stdout)
    assert (diff["baseline"], diff["candidate"]) == (ids[0], ids[2])
    # The old meaning, by its own name: the newest complete run other than the candidate.
    diff = json.loads(run_cli("diff", "latest-complete", ids[2], "--json", cwd=folder).stdout)
    assert (diff["baseline"], diff["candidate"]) == (ids[1], ids[2])
    assert diff["baseline_reason"] == "newest complete run (latest-complete)"
    # A run named explicitly is the baseline, and says so.
    diff = json.loads(run_cli("diff", ids[1], ids[2], "--json", cwd=folder).stdout)
    assert (diff["baseline"], diff["baseline_reason"]) == (ids[1], "named explicitly")


def test_diff_latest_without_a_passing_run_says_so(nights: tuple[Path, list[str]]) -> None:
    folder, ids = nights
    done = run_cli("diff", "latest", ids[0], cwd=folder)
    assert done.code == 2
    assert "no baseline: no earlier complete, full run of 'nightly-qa' that passed" in done.stderr
    assert ids[0] in done.stderr
    assert "Traceback" not in done.stderr


def test_plan_says_the_drop_the_demo_detects_and_the_items_a_smaller_one_needs(
    demo: tuple[Path, Completed],
) -> None:
    # issue 34, item 6: no command answered "how many items do I need to detect a drop of X".
    folder, _ = demo
    done = run_cli("plan", "quickstart", "regression-demo", "--drop", "0.02", "--json",
                   cwd=folder)  # fmt: skip
    assert done.code == 0, done.stderr
    plan = json.loads(done.stdout)
    exact = next(s for s in plan["scorers"] if s["scorer_id"] == "exact")
    assert exact["n_paired"] == 297
    assert exact["binary"]
    assert exact["changed_share"] == pytest.approx(31 / 297)
    assert 0.04 < exact["detectable_drop"] < 0.07
    assert exact["items_needed"] > 297 * (exact["detectable_drop"] / 0.02) ** 2 * 0.8
    text = run_cli("plan", "quickstart", "regression-demo", "--drop", "0.02", cwd=folder)
    assert "detectable (80% power)" in text.stdout
    assert f"{exact['items_needed']:,}" in text.stdout
    bad = run_cli("plan", "quickstart", "regression-demo", "--drop", "0", cwd=folder)
    assert bad.code == 2
    assert "--drop must be a number above 0" in bad.stderr


def test_compare_warns_when_max_drop_is_below_the_detectable_drop(
    demo: tuple[Path, Completed],
) -> None:
    # issue 34, item 6: the demo's max_drop of 0.02 is a promise its 297 items cannot keep.
    folder, ran = demo
    done = run_cli("compare", "quickstart", "regression-demo", "--max-drop", "0.02", "--json",
                   cwd=folder)  # fmt: skip
    exact = next(s for s in json.loads(done.stdout)["scorers"] if s["scorer_id"] == "exact")
    assert exact["detectable_drop"] > 0.02
    assert exact["power_note"].startswith(
        f"drops under {exact['detectable_drop']:.3g} may be missed"
    )
    text = run_cli("compare", "quickstart", "regression-demo", "--max-drop", "0.02", cwd=folder)
    assert f"exact: {exact['power_note']}" in text.stdout
    assert "detectable" in text.stdout.splitlines()[1]
    # The run (max_drop = 0.02 in the demo file) says it in its JSON and its reports.
    assert exact["power_note"] in ran.stdout
    markdown = folder / "reports" / f"regression-demo-{json.loads(ran.stdout)['experiment_id']}.md"
    assert (
        f"exact: detects a drop of {exact['detectable_drop']:.3g} or more" in markdown.read_text()
    )
