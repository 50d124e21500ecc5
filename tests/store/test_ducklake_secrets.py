"""A DuckLake store named by a persistent DuckDB secret (``store="ducklake:team_lake"``), as
DuckLake's own ``ATTACH 'ducklake:team_lake'`` reads it; a catalog file of such a name is
written ``ducklake:duckdb:NAME``."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from evalkit import ConfigError, run_evals
from evalkit._extensions import ducklake_missing, has_extension
from evalkit.store import connection, list_experiments, store_location
from tests.store.lake_secrets import create_secrets, quoted, secret_directory
from tests.store.lake_writer import rows, scorers

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None or not has_extension("postgres_scanner"),
    reason=f"DuckLake not installed: {ducklake_missing()}",
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of the test's own: DuckDB reads persistent secrets from under it."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


def unique(name: str) -> str:
    # The process keeps one database per lake it attached (by store string): a name of its own.
    return f"{name}_{uuid.uuid4().hex[:8]}"


async def test_a_lake_named_by_a_persistent_secret_is_its_sqlite_catalog_and_data_path(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = unique("team_lake")
    catalog, data = tmp_path / "team" / "catalog.sqlite", tmp_path / "team" / "data"
    create_secrets(
        home,
        f"CREATE PERSISTENT SECRET {name} (TYPE ducklake, METADATA_PATH"
        f" {quoted(f'sqlite:{catalog}')}, DATA_PATH {quoted(f'{data}/')})",
    )
    monkeypatch.chdir(tmp_path)
    store = f"ducklake:{name}"
    location = store_location(store)
    assert (location.text, location.catalog, location.file) == (store, "sqlite", catalog)
    for _ in range(2):
        result = await run_evals(rows(12), scorers(0.0), store=store, progress=False)
        assert result.status == "completed"
    assert catalog.is_file()
    assert list(data.rglob("*.parquet"))
    assert not (tmp_path / name).exists()  # not read as a DuckDB catalog file of that name
    # The SQLite catalog's writers took turns through the lock beside it.
    assert catalog.with_name("catalog.sqlite.commit-lock").exists()
    assert list_experiments(store).num_rows == 2
    # The same lake, named by its catalog, holds the runs.
    with connection(f"ducklake:sqlite:{catalog}", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scores").fetchall() == [(48,)]


async def test_a_missing_secret_is_refused_saying_where_secrets_are_read_from(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        await run_evals(rows(2), scorers(0.0), store="ducklake:no_such_lake", progress=False)
    message = str(caught.value)
    assert "no DuckDB secret named 'no_such_lake'" in message
    assert str(secret_directory(home)) in message
    assert "ducklake:duckdb:no_such_lake" in message
    assert list(tmp_path.iterdir()) == [home]  # no catalog file made of the name


def test_a_secret_of_another_type_is_refused_naming_it(home: Path) -> None:
    name = unique("pg")
    create_secrets(home, f"CREATE PERSISTENT SECRET {name} (TYPE postgres, HOST 'db',"
                         " PASSWORD 'hunter2-secret')")  # fmt: skip
    with pytest.raises(ConfigError, match=f"secret '{name}' is of type postgres") as caught:
        store_location(f"ducklake:{name}")
    assert "hunter2" not in str(caught.value)


async def test_a_duckdb_catalog_file_of_a_plain_name_is_written_with_duckdb(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    location = store_location("ducklake:duckdb:plain")
    assert (location.catalog, location.file) == ("duckdb", tmp_path / "plain")
    result = await run_evals(rows(4), scorers(0.0), store="ducklake:duckdb:plain", progress=False)
    assert result.status == "completed"
    assert (tmp_path / "plain").is_file()
    assert list_experiments(location.text).num_rows == 1
