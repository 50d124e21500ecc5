"""The command line on a DuckLake store whose credentials are persistent DuckDB secrets: the
PostgreSQL catalog's password is in a secret only (not in the store string, the experiment file
or the environment), reaches the catalog, and never the store, the console or the reports.

Each test names its lakes and secrets uniquely: a process keeps the lakes it attached by store
string, so a command called in this process must not find another test's lake under the name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from evalkit._extensions import ducklake_missing, has_extension
from tests.postgres import PostgresServer
from tests.store.lake_secrets import create_secrets, quoted

from .conftest import Completed, run_cli, write_dataset, write_experiment

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None or not has_extension("postgres_scanner"),
    reason=f"DuckLake's postgres extension not installed: {ducklake_missing()}",
)


def experiment_on(folder: Path, store: str, extra: str = "") -> Path:
    path = write_experiment(folder)
    text = path.read_text(encoding="utf-8").replace(
        'store = "evalkit.duckdb"', f'store = "{store}"{extra}'
    )
    path.write_text(text, encoding="utf-8")
    return path


def unique(name: str) -> str:
    return f"{name}_{uuid.uuid4().hex[:8]}"


def test_a_lake_named_by_a_secret_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lake, other = unique("team_lake"), unique("other_lake")
    create_secrets(home, f"CREATE PERSISTENT SECRET {lake} (TYPE ducklake, METADATA_PATH"
                         f" {quoted(f'sqlite:{tmp_path}/team/catalog.sqlite')},"
                         f" DATA_PATH {quoted(f'{tmp_path}/team/data/')})")  # fmt: skip
    env = {"HOME": str(home)}
    write_dataset(tmp_path / "data.parquet")
    done = run_cli("run", str(experiment_on(tmp_path, f"ducklake:{lake}")), "--no-progress",
                   cwd=tmp_path, env_extra=env)  # fmt: skip
    assert done.code == 0, done.stderr
    assert (tmp_path / "team" / "catalog.sqlite").is_file()
    assert list((tmp_path / "team" / "data").rglob("*.parquet"))
    sql = run_cli("sql", "SELECT count(*) AS n FROM scores", "--store", f"ducklake:{lake}",
                  "--format", "json", cwd=tmp_path, env_extra=env)  # fmt: skip
    assert json.loads(sql.stdout) == [{"n": 120}], sql.stderr
    missing = run_cli("experiments", "--store", f"ducklake:{other}", cwd=tmp_path,
                      env_extra=env)  # fmt: skip
    assert missing.code == 2, missing.stderr
    assert f"no DuckDB secret named '{other}'" in missing.stderr
    assert "Traceback" not in missing.stderr
    in_file = run_cli("run", str(experiment_on(tmp_path, f"ducklake:{other}")),
                      "--no-progress", cwd=tmp_path, env_extra=env)  # fmt: skip
    assert in_file.code == 2
    assert "store" in in_file.stderr
    assert f"no DuckDB secret named '{other}'" in in_file.stderr


@pytest.mark.parametrize("form", ["ducklake secret", "default postgres secret"])
def test_a_password_in_a_duckdb_secret_reaches_the_catalog_and_nothing_else(
    postgres: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    form: str,
) -> None:
    pg, dbname = postgres, postgres.dbname  # a database of this test's own
    monkeypatch.delenv("PGPASSWORD")
    monkeypatch.delenv("PGPASSFILE", raising=False)
    home = tmp_path / "home"
    data = tmp_path / "lake-data"
    pg_secret = unique("evals_pg")
    if form == "ducklake secret":
        lake = unique("team_lake")
        create_secrets(
            home,
            f"CREATE PERSISTENT SECRET {pg_secret} (TYPE postgres, HOST {quoted(pg.host)}, PORT"
            f" {pg.port}, DATABASE {quoted(dbname)}, USER {quoted(pg.user)}, PASSWORD"
            f" {quoted(pg.password)})",
            f"CREATE PERSISTENT SECRET {lake} (TYPE ducklake, METADATA_PATH '', DATA_PATH"
            f" {quoted(f'{data}/')}, METADATA_PARAMETERS MAP {{'TYPE': 'postgres', 'SECRET':"
            f" {quoted(pg_secret)}}})",
        )
        store, extra = f"ducklake:{lake}", ""
    else:
        # DuckDB's postgres extension takes the unnamed postgres secret for any catalog.
        create_secrets(
            home, f"CREATE PERSISTENT SECRET (TYPE postgres, PASSWORD {quoted(pg.password)})"
        )
        store = f"ducklake:postgres:{pg.dsn_of(dbname)}"
        extra = '\nstore_data_path = "lake-data"'
    write_dataset(tmp_path / "data.parquet")
    experiment = experiment_on(tmp_path, store, extra)
    env = {"HOME": str(home)}
    assert not any(pg.password in value for value in os.environ.values())
    assert pg.password not in experiment.read_text(encoding="utf-8") + store

    done = run_cli("run", str(experiment), "--no-progress", "--json", cwd=tmp_path,
                   env_extra=env)  # fmt: skip
    assert done.code == 0, done.stderr
    assert list(data.rglob("*.parquet"))
    outputs = [done]
    for args in (
        ("experiments", "--store", store, "--json"),
        ("show", json.loads(done.stdout)["experiment_id"], "--store", store),
        ("sql", "SELECT * FROM experiments", "--store", store, "--format", "json"),
        ("sql", "SELECT * FROM duckdb_secrets()", "--store", store, "--format", "json"),
    ):
        outputs.append(run_cli(*args, cwd=tmp_path, env_extra=env))
        assert outputs[-1].code == 0, outputs[-1].stderr
    stored = json.loads(outputs[3].stdout)
    assert [run["name"] for run in stored] == ["nightly"]
    assert pg_secret in outputs[4].stdout or "__default_postgres" in outputs[4].stdout
    assert_nowhere(pg.password, outputs, tmp_path)
    # Nor in the catalog: the whole PostgreSQL database, dumped.
    dump = subprocess.run(
        [str(pg.bin_dir / "pg_dump"), "-h", pg.host, "-p", str(pg.port), "-U", pg.user, dbname],
        env={**os.environ, "PGPASSWORD": pg.password}, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    assert "ducklake_snapshot" in dump.stdout
    assert pg.password not in dump.stdout
    # Without the secrets (another home), another process cannot reach the catalog: a real
    # process, since this one may keep the lake attached from the commands above.
    refused = subprocess.run(
        [sys.executable, "-m", "evalkit", "experiments", "--store", store], cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0
    assert pg.password not in refused.stdout + refused.stderr


def assert_nowhere(password: str, outputs: list[Completed], folder: Path) -> None:
    """``password`` is in no command's output, and in no file under ``folder`` but the
    secrets that hold it (the reports, the lake's Parquet files)."""
    for done in outputs:
        assert password not in done.stdout + done.stderr
    secrets = folder / "home"
    files = [p for p in folder.rglob("*") if p.is_file() and secrets not in p.parents]
    assert any(p.suffix == ".parquet" for p in files)
    assert any(p.suffix in (".md", ".html", ".json") for p in files)
    for file in files:
        assert password.encode() not in file.read_bytes(), file
