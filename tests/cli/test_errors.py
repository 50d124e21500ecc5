from __future__ import annotations

import json
import os
import socket
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


@pytest.mark.parametrize("value", ["10001", "99999999999999999999"])
def test_concurrency_above_the_ceiling_is_refused(cli: Cli, tmp_path: Path, value: str) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    assert_clean_usage_error(
        cli("run", path.name, "--concurrency", value),
        f"--concurrency = {value} is above the ceiling of 10000",
    )
    assert not (tmp_path / "evalkit.duckdb").exists()
    path.write_text(path.read_text().replace("concurrency = 4", f"concurrency = {value}"))
    assert_clean_usage_error(
        cli("run", path.name), "nightly.toml:6", "experiment.concurrency", "10000"
    )


def test_workers_above_the_ceiling_are_refused(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    for value in ("1025", "99999999999999999999"):
        done = cli("run", path.name, "--no-progress", "--executor", "process", "--workers", value)
        assert_clean_usage_error(done, f"--workers = {value} is above the ceiling of 1024")
    assert not (tmp_path / "evalkit.duckdb").exists()
    done = cli("run", path.name, "--no-progress", "--executor", "process", "--workers", "0")
    assert_clean_usage_error(done, "--workers must be at least 1, got 0")


def test_resamples_above_the_ceiling_are_refused(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    assert cli("run", path.name, "--no-progress").code == 0
    assert cli("run", path.name, "--no-progress").code == 0
    for value in ("1000001", str(10**12)):
        done = cli("compare", "nightly", "nightly", "--resamples", value)
        assert_clean_usage_error(done, f"--resamples = {value} is above the ceiling of 1,000,000")
    done = cli("compare", "nightly", "nightly", "--resamples", "0")
    assert_clean_usage_error(done, "--resamples must be at least 1, got 0")
    # The same key in the experiment file is refused with its file and line, before a run.
    path.write_text(path.read_text() + f"resamples = {10**12}\n", encoding="utf-8")
    done = cli("run", path.name, "--no-progress")
    assert_clean_usage_error(done, "nightly.toml:20", "regression.resamples", "1000000")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-0.1", "1.5"])
def test_min_paired_must_be_a_share(cli: Cli, tmp_path: Path, value: str) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    assert cli("run", path.name, "--no-progress").code == 0
    assert cli("run", path.name, "--no-progress").code == 0
    done = cli("compare", "nightly", "nightly", f"--min-paired={value}")
    assert_clean_usage_error(done, f"--min-paired must be a number from 0 to 1, got {value}")
    # The same key in the experiment file is refused the same way, with its file and line.
    path.write_text(path.read_text() + f"min_paired = {value}\n", encoding="utf-8")
    done = cli("run", path.name, "--no-progress")
    assert_clean_usage_error(done, "nightly.toml:20", "regression.min_paired", value)


@pytest.mark.parametrize("value", ["-1", "0"])
def test_experiments_limit_must_be_at_least_one(cli: Cli, tmp_path: Path, value: str) -> None:
    write_dataset(tmp_path / "data.parquet")
    assert cli("run", write_experiment(tmp_path).name, "--no-progress").code == 0
    done = cli("experiments", "--limit", value)
    assert_clean_usage_error(
        done, f"--limit must be an integer from 1 to 9,223,372,036,854,775,807, got {value}"
    )
    assert done.stdout == ""


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
    text = path.read_text().replace('id = "exact"', 'id = "token_f1"')
    path.write_text(text)  # token_f1's own default id is token_f1 too
    assert_clean_usage_error(cli("run", path.name), "nightly.toml:13", "'token_f1'")


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
import socket
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


@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize(
    "command",
    [
        ["experiments"],
        ["show", "latest"],
        ["compare", "a", "b"],
        ["sql", "SELECT 1"],
        ["merge", "STORE"],
        ["run", "nightly.toml"],
    ],
    ids=["experiments", "show", "compare", "sql", "merge", "run"],
)
def test_a_store_that_is_not_a_duckdb_file_is_named_as_such(
    cli: Cli, tmp_path: Path, kind: str, command: list[str]
) -> None:
    store = tmp_path / f"scores.{kind}"
    if kind == "parquet":
        write_dataset(store)
    else:
        store.write_text("id,score\n1,0.5\n", encoding="utf-8")
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    args = [store.name if part == "STORE" else part for part in command]
    if args[-1] != "--store":
        args.append("--store")
    before = store.read_bytes()
    assert_clean_usage_error(
        cli(*args, store.name), f"{store.name}: not an evalkit score store", "not a DuckDB"
    )
    assert store.read_bytes() == before


def test_a_duckdb_file_without_evalkit_tables_is_named_as_such(cli: Cli, tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "other.duckdb")) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
    assert_clean_usage_error(
        cli("merge", "other.duckdb", "--store", "out.duckdb"),
        "other.duckdb: not an evalkit score store: the DuckDB database has no experiments table",
    )


# -- datasets in other formats: located errors, never a traceback -------------------------------


def _qa_csv(path: Path, *, tail: str = "") -> Path:
    rows = "".join(f"q{i},What is {i} + {i}?,{2 * i},{2 * i},geo\n" for i in range(20))
    path.write_text("key,question,answer,reply,category\n" + rows + tail, encoding="utf-8")
    return path


COLUMNS = """
[experiment.columns]
id = "key"
input = "question"
groundTruth = "answer"
output = "reply"
metadata = ["category"]
"""


def _with_columns(path: Path, columns: str) -> Path:
    text = path.read_text().replace("concurrency = 4\n", "concurrency = 4\n" + columns, 1)
    path.write_text(text)
    return path


def test_a_mapped_column_the_dataset_lacks_names_the_file_key_and_line(
    cli: Cli, tmp_path: Path
) -> None:
    _qa_csv(tmp_path / "qa.csv")
    path = _with_columns(
        write_experiment(tmp_path, dataset="qa.csv"), COLUMNS.replace('"question"', '"prompt"')
    )
    assert_clean_usage_error(
        cli("run", path.name),
        "nightly.toml:10: experiment.columns.input:",
        "qa.csv, column 'prompt': no such column (mapped to 'input')",
    )


def test_a_listed_metadata_column_the_dataset_lacks_names_the_key(cli: Cli, tmp_path: Path) -> None:
    _qa_csv(tmp_path / "qa.csv")
    path = _with_columns(
        write_experiment(tmp_path, dataset="qa.csv"), COLUMNS.replace('"category"', '"lang"')
    )
    assert_clean_usage_error(
        cli("run", path.name), "nightly.toml:13: experiment.columns.metadata:", "column 'lang'"
    )


@pytest.mark.parametrize(
    ("name", "tail", "needle"),
    [
        ("qa.csv", "q99,ragged,row,with,too,many\n", "qa.csv, line 22: the row has 6 fields"),
        ("qa.csv", 'q99,"never closed,1,1,geo\n', "qa.csv, line 22: malformed CSV"),
    ],
    ids=["ragged", "unclosed quote"],
)
def test_a_bad_csv_dataset_is_a_located_error(
    cli: Cli, tmp_path: Path, name: str, tail: str, needle: str
) -> None:
    _qa_csv(tmp_path / name, tail=tail)
    path = _with_columns(write_experiment(tmp_path, dataset=name), COLUMNS)
    assert_clean_usage_error(cli("run", path.name), "evalkit: error:", needle)


def test_a_bad_jsonl_dataset_is_a_located_error(cli: Cli, tmp_path: Path) -> None:
    lines = "".join(json.dumps({"input": f"q{i}", "output": "a"}) + "\n" for i in range(5))
    (tmp_path / "qa.jsonl").write_text(lines + '{"input": "q5", "output": \n', encoding="utf-8")
    path = write_experiment(tmp_path, dataset="qa.jsonl")
    assert_clean_usage_error(cli("run", path.name), "qa.jsonl, line 6: malformed JSON")


def test_a_sharded_run_of_a_csv_is_refused_at_the_format_key(cli: Cli, tmp_path: Path) -> None:
    _qa_csv(tmp_path / "qa.csv")
    path = _with_columns(write_experiment(tmp_path, dataset="qa.csv"), 'format = "csv"\n' + COLUMNS)
    assert_clean_usage_error(
        cli("run", path.name, "--shard", "0/2"), "experiment.format", "row groups of Parquet"
    )


def test_export_refuses_a_missing_store_and_an_output_that_is_a_folder(
    cli: Cli, tmp_path: Path
) -> None:
    assert_clean_usage_error(cli("export", "latest"), "evalkit.duckdb", "no such score store")
    write_dataset(tmp_path / "data.parquet", rows=3)
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    (tmp_path / "out").mkdir()
    assert_clean_usage_error(cli("export", "nightly", "--output", "out"), "out", "cannot write")


def test_view_of_a_store_that_does_not_exist_names_it(cli: Cli) -> None:
    done = cli("view", "--store", "nowhere.duckdb", "--no-browser", "--port", "0")
    assert_clean_usage_error(done, "nowhere.duckdb: no such score store")


def test_view_on_a_port_in_use_names_the_port(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", rows=3)
    assert cli("run", write_experiment(tmp_path).name, "--no-progress").code == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = cli("view", "--store", "evalkit.duckdb", "--no-browser", "--port", port)
    assert_clean_usage_error(done, f"cannot listen on 127.0.0.1:{port}")


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_view_on_a_port_out_of_range_names_it(cli: Cli, tmp_path: Path, port: str) -> None:
    write_dataset(tmp_path / "data.parquet", rows=3)
    assert cli("run", write_experiment(tmp_path).name, "--no-progress").code == 0
    done = cli("view", "--store", "evalkit.duckdb", "--no-browser", "--port", port)
    assert_clean_usage_error(done, f"port must be a number from 0 to 65535, got {port}")


def test_every_kind_of_experiment_file_problem_is_reported_in_one_run(
    cli: Cli, tmp_path: Path
) -> None:
    # Issue 15 item 14f: a schema error, an unknown scorer, a failing import and a bad
    # threshold, all in one error, each at its own line, in file order.
    write_dataset(tmp_path / "data.parquet")
    (tmp_path / "all_wrong.toml").write_text(
        """[experiment]
name = "x"
dataset = "data.parquet"
concurrency = "four"

[[scorers]]
use = "exact_mach"

[[scorers]]
use = "no_such_module_evalkit:scorer"

[[scorers]]
use = "toxicity"
threshold = 0.1

[target]
type = "python"
callable = "no_such_module_evalkit:answer"
""",
        encoding="utf-8",
    )
    done = cli("run", "all_wrong.toml")
    assert_clean_usage_error(done)
    lines = [line for line in done.stderr.splitlines() if line.startswith("all_wrong.toml:")]
    assert [line.split(": ")[0:2] for line in lines] == [
        ["all_wrong.toml:4", "experiment.concurrency"],
        ["all_wrong.toml:7", "scorers[0].use"],
        ["all_wrong.toml:10", "scorers[1].use"],
        ["all_wrong.toml:14", "scorers[2].threshold"],
        ["all_wrong.toml:18", "target.callable"],
    ], done.stderr
    assert "expected an integer" in lines[0]
    assert "exact_match" in lines[1]  # the suggestion for the unknown scorer
    assert "cannot import 'no_such_module_evalkit:scorer'" in lines[2]
    assert "threshold = { max = 0.1 }" in lines[3]
    assert "cannot import 'no_such_module_evalkit:answer'" in lines[4]


def test_diff_needs_two_stored_runs(cli: Cli, tmp_path: Path) -> None:
    assert_clean_usage_error(cli("diff", "a", "b"), "no such score store")


def test_diff_refuses_a_slice_without_a_key(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    done = cli("diff", "latest", "nightly", "--slice", "=x")
    # A bare key groups by it (issue 34, item 5); a value without a key is still refused.
    assert_clean_usage_error(done, "--slice must be KEY or KEY=VALUE")
