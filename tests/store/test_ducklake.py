"""A DuckLake score store (``store="ducklake:sqlite:…"``): the same tables and views as a
store file, written by several processes at once, surviving a writer killed mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalkit import ConfigError, StoreError, run_evals
from evalkit._extensions import ducklake_missing
from evalkit.store import (
    SCHEMA_VERSION,
    connection,
    latest_resumable,
    list_experiments,
    read_experiment,
    read_item_scores,
    store_location,
)
from tests.store.lake_writer import rows, scorers

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def lake(tmp_path: Path) -> str:
    return f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"


def query(store: str, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection(store, read_only=True) as con:
        return con.execute(sql, params).fetchall()


def writer(store: str, name: str, count: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.lake_writer", store, name, str(count), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_a_run_writes_the_same_rows_to_a_lake_as_to_a_file(lake: str, tmp_path: Path) -> None:
    file = str(tmp_path / "evalkit.duckdb")
    ran = {}
    for store in (file, lake):
        result = await run_evals(rows(30), scorers(0.0), store=store, progress=False)
        assert result.status == "completed"
        ran[store] = result.experiment_id
    summary = (
        "SELECT scorer_id, n, errors, round(mean, 9), min, max, median"
        " FROM scorer_summary ORDER BY scorer_id"
    )
    assert query(lake, summary) == query(file, summary)
    assert query(lake, summary)[0][:2] == ("even", 30)
    for table in ("experiment_items", "scores", "experiment_scorers", "model_prices"):
        assert query(lake, f"SELECT count(*) FROM {table}") == query(
            file, f"SELECT count(*) FROM {table}"
        )
    views = "SELECT table_name FROM information_schema.tables WHERE table_type = 'VIEW'"
    assert sorted(query(lake, views)) == sorted(query(file, views))
    assert read_experiment(lake, ran[lake][:6])["status"] == "completed"
    assert list_experiments(lake).num_rows == 1
    assert read_item_scores(lake, ran[lake]).num_rows == 60
    # The Parquet files are beside the catalog by default (DuckLake's <catalog>.files), each
    # run's rows in files of their own (partitioned by experiment).
    scores = tmp_path / "catalog.sqlite.files" / "main" / "scores"
    assert list((scores / f"experiment_id={ran[lake]}").glob("*.parquet"))


async def test_store_data_path_is_where_a_new_lake_keeps_its_files(
    lake: str, tmp_path: Path
) -> None:
    data = tmp_path / "lake-data"
    await run_evals(rows(30), scorers(0.0), store=lake, store_data_path=data, progress=False)
    assert list(data.rglob("*.parquet"))
    assert not (tmp_path / "catalog.sqlite.files").exists()
    # Later runs find the data path in the catalog; another one is refused, by name.
    await run_evals(rows(5), scorers(0.0), store=lake, progress=False)
    with pytest.raises(StoreError, match=r"store_data_path .*other.* differs from the data path"):
        await run_evals(
            rows(5), scorers(0.0), store=lake, store_data_path=tmp_path / "other", progress=False
        )
    assert query(lake, "SELECT count(*) FROM experiments") == [(2,)]


async def test_a_data_path_for_a_store_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"store_data_path '.*data'.* is a DuckDB file"):
        await run_evals(
            rows(2), scorers(0.0), store=tmp_path / "x.duckdb", store_data_path=tmp_path / "data"
        )
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("ducklake:", "names no catalog"),
        ("ducklake:sqlite:", "names no catalog"),
        ("ducklake:mysql:host=db", "mysql catalog is not supported"),
        ("ducklake:sqlite:s3://bucket/catalog.sqlite", "must be a local file, not a URL"),
    ],
)
def test_a_bad_attach_string_is_refused_naming_it(store: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        store_location(store)
    assert repr(store) in str(caught.value)


@pytest.mark.parametrize(
    "store",
    [
        "ducklake:postgres:dbname=evals host=db password=hunter2-secret",
        "ducklake:postgres:dbname=evals PASSWORD = hunter2-secret host=db",
        "ducklake:postgres:postgresql://evals:hunter2-secret@db/evals",
    ],
)
async def test_a_password_in_the_attach_string_is_refused_and_never_echoed(
    store: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"carries a password.*PGPASSWORD") as caught:
        await run_evals(rows(2), scorers(0.0), store=store, progress=False)
    assert "hunter2" not in str(caught.value)


def test_a_missing_lake_is_not_created_by_a_reader(lake: str, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such score store"):
        list_experiments(lake)
    assert not (tmp_path / "catalog.sqlite").exists()


def test_several_processes_write_one_lake_at_once(lake: str) -> None:
    # Three experiments start together: they create the lake's schema at the same moment,
    # then commit their flushes (every 50 ms) against each other.
    procs = [writer(lake, f"exp{n}", 150) for n in range(3)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-2000:] for o in outs]
    assert all(out.split()[1] == "completed" for out, _ in outs)
    rows_of = query(
        lake,
        "SELECT x.name, x.status, x.succeeded_count, count(*), count(DISTINCT (s.item_id,"
        " s.scorer_id)) FROM experiments x JOIN scores s ON s.experiment_id = x.id"
        " GROUP BY ALL ORDER BY x.name",
    )
    assert rows_of == [(f"exp{n}", "completed", 150, 300, 300) for n in range(3)]
    assert query(lake, "SELECT max(version), count(*) FROM schema_version") == [
        (SCHEMA_VERSION, SCHEMA_VERSION)
    ]


@pytest.mark.long(seconds=15)
def test_a_writer_killed_mid_write_is_resumed_with_nothing_lost_or_doubled(lake: str) -> None:
    # Items from 200 on take a second each, four at a time: the writer runs 50 s or more
    # past its first 200 items, however fast the machine, so it is still running when the
    # test kills it, however slowly the test's polling sees its first 60 items.
    proc = writer(lake, "killed", 400, "", "0.01", "200")
    deadline = time.monotonic() + 120
    written = 0
    while time.monotonic() < deadline and written < 60:
        time.sleep(0.1)
        if store_location(lake).exists():
            try:
                written = query(lake, "SELECT count(*) FROM experiment_items")[0][0]
            except StoreError:
                written = 0  # the schema is being created
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signal.SIGKILL)  # in the middle of its flushes (one every 50 ms)
    proc.communicate(timeout=30)
    (stored,) = query(lake, "SELECT id, status FROM experiments")
    assert stored[1] == "running"
    kept = query(lake, "SELECT count(*) FROM experiment_items")[0][0]
    assert 60 <= kept < 400
    assert latest_resumable(lake, name="killed") == stored[0]

    again = writer(lake, "killed", 400, stored[0])
    out, err = again.communicate(timeout=240)
    assert again.returncode == 0, err[-2000:]
    assert out.split() == [stored[0], "completed"]
    assert query(
        lake,
        "SELECT count(*), count(DISTINCT (item_id, scorer_id)) FROM scores",
    ) == [(800, 800)]
    assert query(lake, "SELECT count(*), count(DISTINCT item_id) FROM experiment_items") == [
        (400, 400)
    ]
    assert query(lake, "SELECT status, succeeded_count FROM experiments") == [("completed", 400)]


async def test_a_duckdb_catalog_lake_is_held_only_while_used(tmp_path: Path) -> None:
    lake = f"ducklake:{tmp_path / 'catalog.ducklake'}"
    for _ in range(2):
        result = await run_evals(rows(12), scorers(0.0), store=lake, progress=False)
        assert result.status == "completed"
    assert list_experiments(lake).num_rows == 2
    # Another process reads it between the runs (the file is not kept open by this one).
    code = (
        "import sys\nfrom evalkit.store import list_experiments\n"
        "print(list_experiments(sys.argv[1]).num_rows)"
    )
    done = subprocess.run([sys.executable, "-c", code, lake], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.stdout.strip() == "2", done.stderr
    assert list((tmp_path / "catalog.ducklake.files").rglob("*.parquet"))


def test_concurrent_writers_flushes_are_appends_that_never_lose_a_commit(lake: str) -> None:
    # Four writers flush at the same moments; the SQLite catalog's writers take turns (a file
    # lock beside it) instead of meeting "database is locked" and running their transactions
    # again. At this size it cannot tell whether a flush is a pure append (it also passed when
    # each flush updated experiments): test_ducklake_commits.py reads that from the snapshots.
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.lake_flusher", lake, f"w{n}", "15"],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]  # fmt: skip
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.communicate()
    outs = [proc.communicate("go\n", timeout=240) for proc in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [o[1][-2000:] for o in outs]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert reports == [{"lost": 0, "retried": 0}] * 4
    assert query(
        lake,
        "SELECT name, status, succeeded_count, count(DISTINCT s.item_id) FROM experiments x"
        " JOIN scores s ON s.experiment_id = x.id GROUP BY ALL ORDER BY name",
    ) == [(f"w{n}", "completed", 3000, 3000) for n in range(4)]
