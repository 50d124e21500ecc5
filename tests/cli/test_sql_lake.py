"""``evalkit sql`` without ``--write`` on a DuckLake store: it reads the lake's own Parquet files
(a local folder or object storage, a SQLite or a PostgreSQL catalog), and still no other file,
and writes nothing, not even into the lake's data path."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evalkit import run_evals_sync
from evalkit._extensions import ducklake_missing, has_extension
from evalkit.store import connection
from evalkit.store._lake import prepare_store
from tests.cli.conftest import Cli
from tests.postgres import PostgresServer
from tests.s3 import S3Server
from tests.store.lake_writer import rows, scorers

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

ITEMS = 300

# lake_writer's scorers over rows(300): "length" is len("a<i>") / 10, "even" 1 for an even i.
MEANS = [
    {"scorer_id": "even", "mean": 0.5, "n": ITEMS},
    {
        "scorer_id": "length",
        "mean": round((10 * 0.2 + 90 * 0.3 + 200 * 0.4) / ITEMS, 6),
        "n": ITEMS,
    },
]

AGGREGATE = (
    "SELECT scorer_id, round(avg(score), 6) AS mean, count(*) AS n"
    " FROM scores GROUP BY 1 ORDER BY 1"
)


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a digest of its bytes, but what SQLite keeps beside a
    catalog in WAL mode for any reader: its shared-memory index (``-shm``) and an empty log."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not path.name.endswith("-shm")
        and not (path.name.endswith("-wal") and path.stat().st_size == 0)
    }


def _score_rows_in_files(store: str) -> tuple[int, int]:
    """The lake's score rows, and how many of them are in Parquet files (not inlined)."""
    with connection(store, read_only=True) as con:
        files = [
            row[0]
            for row in con.execute(
                "SELECT data_file FROM ducklake_list_files(current_database(), 'scores')"
            ).fetchall()
        ]
        in_files = con.execute(
            "SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata(?)", [files]
        ).fetchone()
        total = con.execute("SELECT count(*) FROM scores").fetchone()
    assert in_files is not None
    assert total is not None
    return int(total[0]), int(in_files[0])


def _lake(store: str, data: str, *, inlined: bool = False) -> str:
    """A lake with one run of ``ITEMS`` items; with ``inlined``, DuckLake's default of
    keeping small inserts in the catalog, else every row in Parquet files."""
    prepare_store(store, data_path=data)
    if not inlined:
        with connection(store) as con:
            con.execute("CALL evalkit_lake.set_option('data_inlining_row_limit', 0)")
    result = run_evals_sync(rows(ITEMS), scorers(0.0), store=store, progress=False)
    assert result.status == "completed"
    if not inlined:
        # The scores live in Parquet files, not in the catalog: the query must read them.
        assert _score_rows_in_files(store) == (2 * ITEMS, 2 * ITEMS)
    return store


def _catalog(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[str, dict[str, str]]:
    """The lake's store string and the environment ``evalkit sql`` needs to reach it (the
    in-process ``cli`` passes only ``env_extra`` on)."""
    if kind == "sqlite":
        return f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}", {}
    if not has_extension("postgres_scanner"):
        pytest.skip("DuckLake's postgres extension not installed")
    postgres: PostgresServer = request.getfixturevalue("postgres")
    return f"ducklake:postgres:{postgres.dsn}", {"PGPASSWORD": postgres.password}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_read_only_sql_aggregates_the_parquet_files_of_a_lake_in_a_folder(
    cli: Cli, tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    catalog, env = _catalog(kind, tmp_path, request)
    store = _lake(catalog, f"{tmp_path / 'data'}/")
    assert list((tmp_path / "data" / "main" / "scores").rglob("*.parquet"))
    before = _files(tmp_path)
    done = cli("sql", "--store", store, "--format", "json", AGGREGATE, env_extra=env)
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout) == MEANS
    assert _files(tmp_path) == before


def test_read_only_sql_aggregates_the_parquet_files_of_a_lake_on_object_storage(
    cli: Cli, tmp_path: Path, s3: S3Server
) -> None:
    store = _lake(f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}", f"{s3.url}lake/")
    objects = s3.objects()
    assert any(key.startswith("lake/main/scores/") for key in objects), objects
    done = cli("sql", "--store", store, "--format", "json", AGGREGATE, env_extra=s3.environ)
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout) == MEANS
    assert s3.objects() == objects


@pytest.fixture
def lake_folder(tmp_path: Path) -> Path:
    """A lake in ``tmp_path`` (catalog ``catalog.sqlite``, data ``data/``), a Parquet file
    outside it, a copy of one of its files inside its data path that the lake does not list,
    and a private file."""
    _lake(f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}", f"{tmp_path / 'data'}/", inlined=True)
    live = next((tmp_path / "data" / "main" / "scores").rglob("*.parquet"))
    shutil.copy(live, tmp_path / "outside.parquet")
    shutil.copy(live, tmp_path / "data" / "stray.parquet")
    (tmp_path / "private.csv").write_text("token\nsk-not-for-sql\n", encoding="utf-8")
    return tmp_path


def _live_file(folder: Path) -> str:
    return str(next((folder / "data" / "main" / "scores").rglob("*.parquet")))


ESCAPES = [
    "SELECT * FROM read_csv('{folder}/private.csv')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT count(*) FROM '{folder}/outside.parquet'",
    "SELECT count(*) FROM '{folder}/data/stray.parquet'",  # in the data path, not the lake's
    "SELECT count(*) FROM '{folder}/data/main/../stray.parquet'",
    "SELECT count(*) FROM glob('{folder}/data/**')",
    "SELECT count(*) FROM read_parquet('{folder}/data/**/*.parquet')",
    # DuckLake's maintenance writes new Parquet files even into a lake attached read-only.
    "CHECKPOINT",
    "CALL ducklake_flush_inlined_data('evalkit_lake')",
    "CALL ducklake_delete_orphaned_files('evalkit_lake', cleanup_all => true)",
    "ATTACH '{folder}/data/new.duckdb' AS fresh",
    "ATTACH '{live}' AS live",
    "COPY (SELECT 42 AS score) TO '{folder}/data/main/scores/forged.parquet'",
    "COPY (SELECT 42 AS score) TO '{live}'",  # over one of the lake's own files
]


@pytest.mark.parametrize("query", ESCAPES)
def test_read_only_sql_on_a_lake_reads_no_other_file_and_writes_none(
    cli: Cli, lake_folder: Path, query: str
) -> None:
    before = _files(lake_folder)
    text = query.format(folder=lake_folder, live=_live_file(lake_folder))
    done = cli("sql", "--store", f"ducklake:sqlite:{lake_folder / 'catalog.sqlite'}", text)
    assert done.code == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "read-only" in done.stderr, done.stderr
    assert "sk-not-for-sql" not in done.stdout + done.stderr
    assert _files(lake_folder) == before
