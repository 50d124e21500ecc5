"""The command line on a DuckLake store whose credentials are persistent DuckDB secrets: the
PostgreSQL catalog's password is in a secret only (not in the store string, the experiment file
or the environment), reaches the catalog, and never the store, the console or the reports.

Real processes: each command reads its secrets from the ``HOME`` it starts with, and a process
keeps the lake it attached (by the secret's name) for the rest of its life."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from evalkit.store import ducklake_missing, has_extension
from tests.postgres import PostgresServer
from tests.store.lake_secrets import create_secrets, quoted

from .conftest import Completed, run_cli_process, write_dataset, write_experiment

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


def test_a_lake_named_by_a_secret_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    create_secrets(home, "CREATE PERSISTENT SECRET team_lake (TYPE ducklake, METADATA_PATH"
                         f" {quoted(f'sqlite:{tmp_path}/team/catalog.sqlite')},"
                         f" DATA_PATH {quoted(f'{tmp_path}/team/data/')})")  # fmt: skip
    env = {"HOME": str(home)}
    write_dataset(tmp_path / "data.parquet")
    done = run_cli_process("run", str(experiment_on(tmp_path, "ducklake:team_lake")),
                           "--no-progress", cwd=tmp_path, env_extra=env)  # fmt: skip
    assert done.code == 0, done.stderr
    assert (tmp_path / "team" / "catalog.sqlite").is_file()
    assert list((tmp_path / "team" / "data").rglob("*.parquet"))
    sql = run_cli_process("sql", "SELECT count(*) AS n FROM scores", "--store",
                          "ducklake:team_lake", "--format", "json", cwd=tmp_path,
                          env_extra=env)  # fmt: skip
    assert json.loads(sql.stdout) == [{"n": 120}], sql.stderr
    missing = run_cli_process("experiments", "--store", "ducklake:other_lake", cwd=tmp_path,
                              env_extra=env)  # fmt: skip
    assert missing.code == 2, missing.stderr
    assert "no DuckDB secret named 'other_lake'" in missing.stderr
    assert "Traceback" not in missing.stderr
    in_file = run_cli_process("run", str(experiment_on(tmp_path, "ducklake:other_lake")),
                              "--no-progress", cwd=tmp_path, env_extra=env)  # fmt: skip
    assert in_file.code == 2
    assert "store" in in_file.stderr
    assert "no DuckDB secret named 'other_lake'" in in_file.stderr


@pytest.mark.parametrize("form", ["ducklake secret", "default postgres secret"])
def test_a_password_in_a_duckdb_secret_reaches_the_catalog_and_nothing_else(
    postgres_session: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    form: str,
) -> None:
    pg = postgres_session
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.delenv("PGPASSFILE", raising=False)
    dbname = f"lake_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("PGPASSWORD", pg.password)
    pg.create_database(dbname)
    monkeypatch.delenv("PGPASSWORD")
    home = tmp_path / "home"
    data = tmp_path / "lake-data"
    if form == "ducklake secret":
        create_secrets(
            home,
            f"CREATE PERSISTENT SECRET evals_pg (TYPE postgres, HOST {quoted(pg.host)}, PORT"
            f" {pg.port}, DATABASE {quoted(dbname)}, USER {quoted(pg.user)}, PASSWORD"
            f" {quoted(pg.password)})",
            f"CREATE PERSISTENT SECRET team_lake (TYPE ducklake, METADATA_PATH '', DATA_PATH"
            f" {quoted(f'{data}/')}, METADATA_PARAMETERS MAP {{'TYPE': 'postgres', 'SECRET':"
            " 'evals_pg'})",
        )
        store, extra = "ducklake:team_lake", ""
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

    done = run_cli_process("run", str(experiment), "--no-progress", "--json", cwd=tmp_path,
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
        outputs.append(run_cli_process(*args, cwd=tmp_path, env_extra=env))
        assert outputs[-1].code == 0, outputs[-1].stderr
    stored = json.loads(outputs[3].stdout)
    assert [run["name"] for run in stored] == ["nightly"]
    assert "evals_pg" in outputs[4].stdout or "__default_postgres" in outputs[4].stdout
    assert_nowhere(pg.password, outputs, tmp_path)
    # Nor in the catalog: the whole PostgreSQL database, dumped.
    dump = subprocess.run(
        [str(pg.bin_dir / "pg_dump"), "-h", pg.host, "-p", str(pg.port), "-U", pg.user, dbname],
        env={**os.environ, "PGPASSWORD": pg.password}, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    assert "ducklake_snapshot" in dump.stdout
    assert pg.password not in dump.stdout
    # Without the secrets (another home), the catalog cannot be reached.
    refused = run_cli_process("experiments", "--store", store, cwd=tmp_path,
                              env_extra={"HOME": str(tmp_path)})  # fmt: skip
    assert refused.code != 0


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
