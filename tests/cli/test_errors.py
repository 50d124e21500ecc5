from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import duckdb
import pytest

from evalkit.judge import JudgeCache
from tests.cli.conftest import Cli, write_dataset, write_experiment


def assert_clean_usage_error(done: object, *needles: str) -> None:
    code, stderr = done.code, done.stderr  # type: ignore[attr-defined]
    assert code == 2, stderr
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in stderr, stderr


def test_toml_syntax_error_names_file_and_line(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('[experiment]\nname = "x"\ndataset = \n', encoding="utf-8")
    assert_clean_usage_error(cli("run", "bad.toml"), "bad.toml:3")


def test_unknown_key_names_key_and_line(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path, extra="colour = 'blue'")
    assert_clean_usage_error(cli("run", path.name), "nightly.toml:19", "regression.colour")


def test_unknown_scorer_names_key_and_line(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    path.write_text(path.read_text().replace('"exact_match"', '"exact_mach"'))
    assert_clean_usage_error(
        cli("run", path.name), "nightly.toml:9", "scorers[0].use", "exact_match"
    )


def test_missing_dataset_names_the_key(cli: Cli, tmp_path: Path) -> None:
    path = write_experiment(tmp_path, dataset="nowhere.parquet")
    assert_clean_usage_error(cli("run", path.name), "nightly.toml:4", "experiment.dataset")


def test_bad_scorer_params_name_the_params(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    text = path.read_text().replace('id = "exact"', 'id = "exact"\nparams = { ignore_kase = true }')
    path.write_text(text)
    assert_clean_usage_error(cli("run", path.name), "scorers[0].params", "ignore_kase")


def test_missing_experiment_file(cli: Cli) -> None:
    assert_clean_usage_error(cli("run", "nope.toml"), "nope.toml")


@pytest.mark.parametrize("args", [["run"], ["frobnicate"], ["run", "x.toml", "--limit", "many"]])
def test_usage_errors_exit_2(cli: Cli, args: list[str]) -> None:
    done = cli(*args)
    assert done.code == 2
    assert "usage:" in done.stderr


def test_bare_threshold_on_a_lower_is_better_scorer_is_refused(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    text = path.read_text().replace('use = "token_f1"', 'use = "toxicity"\nthreshold = 0.1')
    path.write_text(text)
    assert_clean_usage_error(cli("run", path.name), "scorers[1].threshold", "max = 0.1")


def test_duplicate_final_scorer_ids_are_refused(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    text = path.read_text().replace('id = "exact"', 'id = "token-f1"')
    path.write_text(text)  # token_f1's own default id is token-f1 too
    assert_clean_usage_error(cli("run", path.name), "nightly.toml:13", "'token-f1'")


# -- Where reports go, and how old cache entries are ------------------------------------------


def _stored_runs(folder: Path) -> list[str]:
    """The statuses of the runs stored in ``folder``'s store (none without a store)."""
    store = folder / "evalkit.duckdb"
    if not store.exists():
        return []
    with duckdb.connect(str(store), read_only=True) as con:
        return [status for (status,) in con.execute("SELECT status FROM experiments").fetchall()]


@pytest.mark.parametrize("report_dir", ["/dev/null/reports", "data.parquet", "data.parquet/x"])
def test_a_report_dir_that_cannot_be_a_folder_is_refused_before_the_run(
    cli: Cli, tmp_path: Path, report_dir: str
) -> None:
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress", "--report-dir", report_dir)
    assert_clean_usage_error(done, f"--report-dir {report_dir}", "is not a folder")
    assert _stored_runs(tmp_path) == []


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    # chmod does not stop root; the root of a pseudo file system (sysfs, procfs) does.
    for folder in (Path("/sys"), Path("/proc")):
        try:
            fd, probe = tempfile.mkstemp(dir=folder)
        except OSError:
            return folder
        os.close(fd)
        os.unlink(probe)
    pytest.skip("this process can write everywhere it could try")


def test_an_unwritable_report_dir_is_refused_before_the_run(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    folder = _unwritable_folder(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress", "--report-dir", str(folder))
    assert_clean_usage_error(done, f"--report-dir {folder}", "cannot write reports")
    assert _stored_runs(tmp_path) == []


SABOTAGE = """
import os
import shutil
from pathlib import Path


def answer(question):
    # The folder the reports go to turns into a file while the run is on (once: the first
    # call to create the marker file does it).
    try:
        os.close(os.open("sabotaged", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        pass
    else:
        shutil.rmtree("reports")
        Path("reports").write_text("not a folder any more")
    return ANSWER
"""


@pytest.mark.parametrize(
    ("answer", "code"), [("str(2 * int(question.split()[2]))", 0), ("'wrong'", 1)]
)
def test_reports_that_cannot_be_written_after_a_stored_run_are_a_warning(
    cli: Cli, tmp_path: Path, answer: str, code: int
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=5)
    (tmp_path / "app.py").write_text(SABOTAGE.replace("ANSWER", answer), encoding="utf-8")
    write_experiment(tmp_path, extra='[target]\ntype = "python"\ncallable = "app:answer"')
    done = cli("run", "nightly.toml", "--no-progress", "--json")
    assert done.code == code, done.stderr  # what the gates say, not a failure of its own
    assert "Traceback" not in done.stderr
    assert "evalkit: warning: cannot write the reports to reports" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["reports"] is None
    assert "reports" in summary["report_error"]
    assert summary["passed"] is (code == 0)
    assert _stored_runs(tmp_path) == ["completed"]
    (tmp_path / "reports").unlink()
    (tmp_path / "sabotaged").unlink()
    plain = cli("run", "nightly.toml", "--no-progress")
    assert plain.code == code, plain.stderr
    assert "evalkit: warning: cannot write the reports" in plain.stderr
    assert "reports:" not in plain.stdout


def test_a_long_experiment_name_gets_reports_under_a_shorter_file_name(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    path.write_text(path.read_text().replace('name = "nightly"', f'name = "{"n" * 300}"'))
    done = cli("run", path.name, "--no-progress", "--json")
    assert done.code == 0, done.stderr
    summary = json.loads(done.stdout)
    reports = [Path(p) for p in summary["reports"].values()]
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == sorted(
        p.name for p in reports
    )
    for report in reports:
        assert len(report.name.encode()) <= 255
        assert summary["experiment_id"] in report.name
        assert report.name.startswith("n" * 100)


@pytest.mark.parametrize("days", ["nan", "inf", "-inf", "-1"])
def test_cache_clear_refuses_an_age_that_is_not_a_number_of_days(cli: Cli, days: str) -> None:
    done = cli("cache", "clear", f"--older-than={days}")
    assert_clean_usage_error(done, "--older-than", days)


def test_cache_clear_older_than_more_days_than_a_date_holds_deletes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "judge.cache.duckdb"
    cache = JudgeCache(path)
    cache.open()
    cache.put(b"step", b"prompt", "reply", attempt_count=1, model="m", host="h", step="analyze")
    cache.close()
    for days in ("1e308", "1e9", "36500"):
        done = cli("cache", "clear", "--cache", str(path), "--older-than", days)
        assert done.code == 0, done.stderr
        assert done.stdout == "deleted 0 cached judge replies\n"
    assert JudgeCache(path).stats().entries == 1


def test_diff_needs_two_stored_runs(cli: Cli, tmp_path: Path) -> None:
    assert_clean_usage_error(cli("diff", "a", "b"), "no such score store")


def test_diff_refuses_a_slice_without_a_value(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    done = cli("diff", "latest", "nightly", "--slice", "=x")
    assert_clean_usage_error(done, "--slice must be KEY=VALUE")
