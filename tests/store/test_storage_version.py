"""Every DuckDB evalkit supports reads the stores it writes, and a store in a newer DuckDB's
storage format is refused naming both releases (docs/pages/design/one-storage-version.md)."""

from __future__ import annotations

import gzip
import struct
import tomllib
from pathlib import Path

import duckdb
import pytest

from evalkit._duckdb import STORAGE_VERSION, connect_offline
from evalkit.errors import StoreError
from evalkit.store import list_experiments
from evalkit.store._connect import open_connection
from evalkit.store._migrate import migrate
from tests.store.test_schema import STORE_V7

ROOT = Path(__file__).parents[2]

#: A store written by ``evalkit run experiments/quickstart.toml --limit 10`` (main at 6e3594f)
#: with DuckDB 2.0.1, which a base install took: DuckDB 2.0's own storage format (999).
STORE_DUCKDB_2 = Path(__file__).parent / "data" / "store-duckdb-2.0.1.duckdb.gz"
STORE_DUCKDB_2_RUN = "a11c55e5bc7a"

#: The storage number DuckDB writes for each storage_compatibility_version evalkit may use.
_NUMBERS = {"v1.0.0": 64, "v1.2.0": 65}

older_duckdb = pytest.mark.skipif(
    not duckdb.__version__.startswith(("0.", "1.")),
    reason=f"DuckDB {duckdb.__version__} reads DuckDB 2.0's format",
)


def storage_number(path: Path) -> int:
    """The storage version number in a DuckDB file's header."""
    with path.open("rb") as handle:
        head = handle.read(20)
    assert head[8:12] == b"DUCK"
    number: int = struct.unpack("<Q", head[12:20])[0]
    return number


def unpack_store_duckdb_2(folder: Path) -> Path:
    store = folder / "evalkit.duckdb"
    store.write_bytes(gzip.decompress(STORE_DUCKDB_2.read_bytes()))
    return store


def test_the_oldest_duckdb_pyproject_allows_reads_the_format() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [floor] = [d for d in project["project"]["dependencies"] if d.startswith("duckdb")]
    assert floor.startswith("duckdb>=")
    oldest = tuple(int(part) for part in floor.removeprefix("duckdb>=").split("."))
    written = tuple(int(part) for part in STORAGE_VERSION.removeprefix("v").split("."))
    assert oldest >= written


def test_a_new_store_is_written_in_the_oldest_supported_duckdbs_format(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    con = open_connection(store)
    try:
        migrate(con, where=str(store))
    finally:
        con.close()
    # Whatever DuckDB wrote it (2.0 writes its own format, 999, unless told otherwise).
    assert storage_number(store) == _NUMBERS[STORAGE_VERSION]


def test_a_new_judge_cache_is_written_in_the_same_format(tmp_path: Path) -> None:
    path = tmp_path / "cache.duckdb"
    with connect_offline(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
    assert storage_number(path) == _NUMBERS[STORAGE_VERSION]


def test_a_store_keeps_the_format_it_was_created_in_when_written(tmp_path: Path) -> None:
    # Written by evalkit with DuckDB 1.5.5 before the format was chosen: DuckDB 1.x's default.
    store = tmp_path / "v7.duckdb"
    store.write_bytes(gzip.decompress(STORE_V7.read_bytes()))
    assert storage_number(store) == 64
    con = open_connection(store)
    try:
        migrate(con, where=str(store))
        con.execute("CHECKPOINT")
    finally:
        con.close()
    assert storage_number(store) == 64


@older_duckdb
def test_a_store_in_a_newer_duckdbs_format_is_refused_naming_both(tmp_path: Path) -> None:
    store = unpack_store_duckdb_2(tmp_path)
    before = store.read_bytes()
    with pytest.raises(StoreError) as caught:
        list_experiments(store)
    message = str(caught.value)
    assert "DuckDB 2.0's storage format (version number 999" in message
    assert "created by DuckDB 2.0.1" in message
    assert f"the installed DuckDB {duckdb.__version__} cannot read" in message
    assert "pip install 'duckdb>=2.0'" in message
    assert f"evalkit store copy {store} NEW.duckdb" in message
    assert "IO Error" not in message  # DuckDB's own words name neither release
    assert store.read_bytes() == before
