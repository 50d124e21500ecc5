"""The command line on a DuckLake store: ``store = "ducklake:…"`` in the experiment file or
``--store``, then every reader (experiments, show, compare, diff, sql) and ``store copy``."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from evalkit._extensions import ducklake_missing
from tests.view.conftest import start_viewer, stop

from .conftest import Cli, write_dataset, write_experiment

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

LAKE = "ducklake:sqlite:team/catalog.sqlite"


def lake_experiment(folder: Path, store: str = LAKE, data_path: str = "team/data") -> Path:
    path = write_experiment(folder)
    text = path.read_text(encoding="utf-8").replace(
        'store = "evalkit.duckdb"', f'store = "{store}"\nstore_data_path = "{data_path}"'
    )
    path.write_text(text, encoding="utf-8")
    return path


def test_runs_and_readers_work_on_a_lake_as_on_a_file(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=3)
    experiment = lake_experiment(tmp_path)
    first = cli("run", str(experiment), "--no-progress", "--json")
    assert first.code == 0, first.stderr
    # The catalog and the data are where the file says, relative to it.
    assert (tmp_path / "team" / "catalog.sqlite").is_file()
    assert list((tmp_path / "team" / "data").rglob("*.parquet"))
    assert not (tmp_path / "evalkit.duckdb").exists()

    write_dataset(tmp_path / "data.parquet", wrong=23)
    second = cli("run", str(experiment), "--no-progress")
    assert second.code == 1, second.stderr  # the baseline (latest) was found in the lake
    exact = next(line for line in second.stdout.splitlines() if line.startswith("exact"))
    assert exact.rstrip().endswith("regressed")
    assert json.loads(first.stdout)["experiment_id"] in second.stdout

    store = ["--store", LAKE]
    listed = cli("experiments", *store, "--json")
    assert listed.code == 0, listed.stderr
    ids = [run["id"] for run in json.loads(listed.stdout)]
    assert len(ids) == 2
    shown = cli("show", ids[0], *store)
    assert shown.code == 0, shown.stderr
    assert ids[0] in shown.stdout
    compared = cli("compare", ids[1], ids[0], *store, "--json")
    assert compared.code in (0, 1), compared.stderr
    assert json.loads(compared.stdout)
    diff = cli("diff", ids[1], ids[0], *store, "--json")
    assert diff.code == 0, diff.stderr
    assert len(json.loads(diff.stdout)["pairs"]) >= 3
    sql = cli("sql", "SELECT count(*) AS n FROM scores", *store, "--format", "json")
    assert sql.code == 0, sql.stderr
    assert json.loads(sql.stdout) == [{"n": 240}]
    refused = cli("sql", "CREATE TABLE x (a INT)", *store)
    assert refused.code != 0
    assert "read-only" in refused.stderr
    outside = cli("sql", "SELECT * FROM read_csv('/etc/passwd')", *store)
    assert outside.code != 0
    assert "root:" not in outside.stdout
    exported = cli("export", ids[0], *store, "--format", "csv", "--output", "run.csv")
    assert exported.code == 0, exported.stderr
    assert len((tmp_path / "run.csv").read_text(encoding="utf-8").splitlines()) == 121

    absolute = f"ducklake:sqlite:{tmp_path / 'team' / 'catalog.sqlite'}"
    proc, url = start_viewer(absolute)  # type: ignore[arg-type]
    try:
        with urllib.request.urlopen(f"{url}api/", timeout=30) as answer:
            listing = answer.read().decode("utf-8")
        # The run page's item table, filtered and ordered on the lake's row ids.
        page = f"{url}api/experiments/{ids[0]}?scorer=exact&max=0.5&sort=-item"
        with urllib.request.urlopen(page, timeout=30) as answer:
            items = json.loads(answer.read())["items"]
    finally:
        stop(proc)
    assert all(run_id in listing for run_id in ids)
    assert items["total"] == 23  # the second run's wrong answers
    assert [row["item_id"] for row in items["rows"][:2]] == ["q022", "q021"]


def test_store_copy_between_a_file_and_a_lake(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    assert cli("run", str(write_experiment(tmp_path)), "--no-progress").code == 0
    copied = cli("store", "copy", "evalkit.duckdb", LAKE)
    assert copied.code == 0, copied.stderr
    assert copied.stdout.startswith("copied 1 run (")
    assert "120 scores" in copied.stdout
    again = cli("store", "copy", "evalkit.duckdb", LAKE)
    assert again.code == 0, again.stderr
    assert again.stdout.startswith("copied 0 runs")
    assert "already there, not copied again" in again.stdout
    back = cli("store", "copy", LAKE, "back.duckdb")
    assert back.code == 0, back.stderr
    assert "copied 1 run (" in back.stdout
    sql = cli("sql", "SELECT count(*) AS n FROM scores", "--store", "back.duckdb", "--format",
              "json")  # fmt: skip
    assert json.loads(sql.stdout) == [{"n": 120}]


def test_a_password_in_the_experiment_file_store_is_refused_naming_the_key(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet")
    experiment = lake_experiment(
        tmp_path, store="ducklake:postgres:dbname=evals host=db password=s3cr3t-pw"
    )
    done = cli("run", str(experiment), "--no-progress")
    assert done.code == 2
    assert "store" in done.stderr
    assert "carries a password" in done.stderr
    assert "s3cr3t-pw" not in done.stderr + done.stdout


def test_a_bad_attach_string_on_the_command_line_names_it(cli: Cli, tmp_path: Path) -> None:
    done = cli("experiments", "--store", "ducklake:mysql:host=db")
    assert done.code != 0
    assert "'ducklake:mysql:host=db'" in done.stderr
    assert "Traceback" not in done.stderr


def test_store_and_data_path_on_the_command_line_override_the_file(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=20)
    experiment = write_experiment(tmp_path)
    done = cli("run", str(experiment), "--no-progress", "--store",
               "ducklake:sqlite:cli/catalog.sqlite", "--store-data-path", "cli-data")  # fmt: skip
    assert done.code == 0, done.stderr
    assert (tmp_path / "cli" / "catalog.sqlite").is_file()
    assert list((tmp_path / "cli-data").rglob("*.parquet"))
    assert not (tmp_path / "evalkit.duckdb").exists()
    refused = cli("run", str(experiment), "--no-progress", "--store-data-path", "cli-data")
    assert refused.code == 2
    assert "store_data_path 'cli-data'" in refused.stderr
    assert "is a DuckDB file" in refused.stderr
