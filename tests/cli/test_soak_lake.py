"""A soak on a DuckLake store whose PostgreSQL catalog goes down during the nights.

Every night is a real ``evalkit run`` writing a lake whose catalog is a PostgreSQL
server of the test's own. A seeded draw decides the night's outage: none, a short one (the
server stopped and started again a second later: the run keeps its finished rows and writes
them once the catalog is back), or a long one (the server stays down past the run's
``--lock-timeout``: the run spills its rows to the recovery folder and exits 2, and the next
night resumes it). At the end every completed run holds exactly the rows of a clean run (on a
store file), nothing is left ``running``, no recovery folder is left and no staged
``evalkit-*.parquet`` file is left in the data path without the lake knowing it.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit._extensions import ducklake_missing, has_extension
from evalkit.store import connection
from evalkit.store._lake import prepare_store
from evalkit.store._recovery import recovery_dir
from tests.cli.conftest import start_cli, write_dataset
from tests.postgres import PostgresServer

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None or not has_extension("postgres_scanner"),
    reason=f"DuckLake's postgres extension not installed: {ducklake_missing()}",
)

NIGHTS = 3
ROWS = 400
LOCK_TIMEOUT = "2"
ROWS_SQL = "SELECT item_id, scorer_id, score FROM scores WHERE experiment_id = ? ORDER BY 1, 2"

# A little work per item (so a night lasts a couple of seconds), some answers wrong.
APP = """
import pathlib, time

HERE = pathlib.Path(__file__).parent


def answer(input):
    (HERE / "started").touch()
    time.sleep(0.01)
    n = int(input.split()[2])
    return str(2 * n + (n % 7 == 0))
"""


def _experiment(folder: Path, store: str) -> None:
    write_dataset(folder / "data.parquet", rows=ROWS)
    (folder / "app.py").write_text(APP, encoding="utf-8")
    (folder / "nightly.toml").write_text(
        f"""
[experiment]
name = "nightly"
dataset = "data.parquet"
store = "{store}"
concurrency = 4

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "exact_match"

[[scorers]]
use = "token_f1"
""",
        encoding="utf-8",
    )


def _night(folder: Path, postgres: PostgresServer, outage: str, resume: bool) -> tuple[int, str]:
    """One night's run, with ``outage`` ("none", "short", "long") once it has begun."""
    (folder / "started").unlink(missing_ok=True)
    args = ["nightly.toml", "--no-progress", "--lock-timeout", LOCK_TIMEOUT]
    proc = start_cli("run", *args, *(["--resume"] if resume else []), cwd=folder)
    try:
        if outage != "none":
            deadline = time.monotonic() + 90
            while not (folder / "started").exists() and proc.poll() is None:
                assert time.monotonic() < deadline, "the night's run never began"
                time.sleep(0.02)
            postgres.stop()
            if outage == "short":
                time.sleep(1)  # well under the lock timeout
                postgres.start()
            else:
                proc.wait(timeout=180)  # it gives up once the lock timeout has passed
                postgres.start()
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return con.execute(sql, params).fetchall()


@pytest.mark.long(seconds=20)
def test_nights_with_catalog_outages_end_with_every_completed_run_equal_to_a_clean_run(
    tmp_path: Path, postgres_own: PostgresServer
) -> None:
    clean, soak = tmp_path / "clean", tmp_path / "soak"
    clean.mkdir()
    soak.mkdir()
    lake = f"ducklake:postgres:{postgres_own.dsn}"
    _experiment(clean, "clean.duckdb")
    _experiment(soak, lake)
    prepare_store(lake, data_path=soak / "lake-data")
    first = start_cli("run", "nightly.toml", "--no-progress", cwd=clean)
    _, err = first.communicate(timeout=180)
    assert first.returncode == 0, err

    rng = random.Random(20261207)
    # Every kind of night at least once, in a seeded order.
    outages = ["short", "long", "none", *rng.choices(["short", "long"], k=NIGHTS - 3)]
    rng.shuffle(outages)
    unfinished, spilled = False, 0
    nights: list[tuple[str, int]] = []
    for night, outage in enumerate(outages):
        code, err = _night(soak, postgres_own, outage, unfinished)
        if code == 2 and "to resume" in err:  # the resumed run had ended already
            code, err = _night(soak, postgres_own, outage, False)
        nights.append((outage, code))
        what = f"night {night} of {nights}: {err[-3000:]}"
        assert "Traceback" not in err, what
        assert code in (0, 2), what
        if code == 2:
            # Spilled (the catalog stayed down), or its end could not be recorded.
            assert "out of reach" in err, what
            spilled += "are kept in" in err
        unfinished = code == 2
    # The first long outage meets a run with items to write (one resumed may have none left).
    assert spilled, nights
    if unfinished:
        code, err = _night(soak, postgres_own, "none", True)
        assert code == 0, err

    with duckdb.connect(str(clean / "clean.duckdb"), read_only=True) as con:
        [(clean_id,)] = _rows(con, "SELECT id FROM experiments", [])
        expected = _rows(con, ROWS_SQL, [clean_id])
    assert len(expected) == 2 * ROWS
    with connection(lake, read_only=True, private=True) as con:
        statuses = _rows(con, "SELECT status, count(*) FROM experiments GROUP BY ALL", [])
        completed = _rows(con, "SELECT id FROM experiments WHERE status = 'completed'", [])
        for (experiment_id,) in completed:
            assert _rows(con, ROWS_SQL, [experiment_id]) == expected, experiment_id
        files = "SELECT path FROM __ducklake_metadata_evalkit_lake.ducklake_data_file"
        known = {str(p[0]).rsplit("/", 1)[-1] for p in _rows(con, files, [])}
    assert dict(statuses) == {"completed": len(completed)}, statuses
    assert len(completed) >= 2  # the nights without an outage at least, and those resumed
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(soak)  # a PostgreSQL catalog's recovery folder is the run's cwd's
        assert not recovery_dir(lake).exists()
    left = [f for f in (soak / "lake-data").rglob("evalkit-*.parquet") if f.name not in known]
    assert left == []
