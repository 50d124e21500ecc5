"""A DuckLake store with its catalog in PostgreSQL (several machines' writers): the tests'
own server (``tests/postgres.py``), its password only ever in ``PGPASSWORD``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit import StoreError, run_evals
from evalkit._extensions import ducklake_missing, has_extension
from evalkit.store import connection
from tests.cli.conftest import run_cli, write_dataset, write_experiment
from tests.postgres import PostgresServer
from tests.store.lake_writer import rows, scorers

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None or not has_extension("postgres_scanner"),
    reason=f"DuckLake's postgres extension not installed: {ducklake_missing()}",
)

ROOT = Path(__file__).resolve().parents[2]


def catalog(postgres: PostgresServer) -> str:
    """The test's own, empty database of the server as a lake's catalog (no password in it)."""
    return f"ducklake:postgres:{postgres.dsn}"


async def test_a_postgres_catalog_takes_a_run_and_its_readers(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    lake = catalog(postgres)
    result = await run_evals(rows(40), scorers(0.0), store=lake, store_data_path=tmp_path / "d",
                             progress=False)  # fmt: skip
    assert result.status == "completed"
    with connection(lake, read_only=True) as con:
        assert con.execute("SELECT sum(n) FROM scorer_summary").fetchall() == [(80,)]
    assert list((tmp_path / "d").rglob("*.parquet"))


async def test_a_new_postgres_lake_needs_a_data_path(postgres: PostgresServer) -> None:
    with pytest.raises(StoreError, match=r"needs a data path .*store_data_path"):
        await run_evals(rows(2), scorers(0.0), store=catalog(postgres), progress=False)


def test_writers_on_two_processes_share_a_postgres_catalog(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    lake = catalog(postgres)
    code = (
        "import sys\nfrom evalkit.store._lake import prepare_store\n"
        "prepare_store(sys.argv[1], data_path=sys.argv[2])"
    )
    subprocess.run([sys.executable, "-c", code, lake, str(tmp_path / "d")], cwd=ROOT, check=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.lake_writer", lake, f"exp{n}", "120"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    with connection(lake, read_only=True) as con:
        counts = con.execute(
            "SELECT experiment_id, count(*), count(DISTINCT (item_id, scorer_id)) FROM scores"
            " GROUP BY ALL"
        ).fetchall()
    assert sorted(c[1:] for c in counts) == [(240, 240), (240, 240)]


def test_the_password_never_reaches_the_store_the_reports_or_the_console(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    lake = catalog(postgres)
    write_dataset(tmp_path / "data.parquet")
    experiment = write_experiment(tmp_path)
    experiment.write_text(
        experiment.read_text(encoding="utf-8").replace(
            'store = "evalkit.duckdb"', f'store = "{lake}"\nstore_data_path = "lake-data"'
        ),
        encoding="utf-8",
    )
    env = {"PGPASSWORD": postgres.password}
    assert os.environ["PGPASSWORD"] == postgres.password
    done = run_cli("run", str(experiment), "--no-progress", "--json", cwd=tmp_path, env_extra=env)
    assert done.code == 0, done.stderr
    listed = run_cli("experiments", "--store", lake, "--json", cwd=tmp_path, env_extra=env)
    shown = run_cli("show", json.loads(listed.stdout)[0]["id"], "--store", lake, cwd=tmp_path,
                    env_extra=env)  # fmt: skip
    dumped = run_cli("sql", "SELECT * FROM experiments", "--store", lake, "--format", "json",
                     cwd=tmp_path, env_extra=env)  # fmt: skip
    assert dumped.code == 0, dumped.stderr
    assert "nightly" in dumped.stdout
    console = done.stdout + done.stderr + listed.stdout + shown.stdout + dumped.stdout
    assert postgres.password not in console
    reports = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".md", ".html",
               ".xml", ".json")]  # fmt: skip
    assert reports
    for report in reports:
        assert postgres.password not in report.read_text(encoding="utf-8", errors="replace")
    with connection(lake, read_only=True) as con:
        stored = con.execute(
            "SELECT config::VARCHAR, metadata::VARCHAR FROM experiments"
        ).fetchall()
    assert stored
    assert postgres.password not in repr(stored)
