"""A DuckLake store whose data path is object storage (``store_data_path = "s3://…"``), on a
real S3-compatible server (moto's), its keys from the AWS environment or a DuckDB secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit import StoreError, run_evals
from evalkit._extensions import ducklake_missing
from evalkit.store import connection, read_item_scores
from evalkit.store._lake import prepare_store
from tests.benchmarks.bench_ducklake import begin, finish, prebuilt_batches
from tests.s3 import S3Server
from tests.store.lake_writer import rows, scorers

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

ROOT = Path(__file__).resolve().parents[2]


def data_path(s3: S3Server) -> str:
    """The lake's data path in the test's own bucket (the ``s3`` fixture, tests/conftest.py)."""
    return f"{s3.url}lake/"


def lake(tmp_path: Path) -> str:
    return f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"


def texts(store: str) -> str:
    """Everything the store says of its experiments, as text."""
    with connection(store, read_only=True) as con:
        return repr(con.execute("SELECT * FROM experiments").fetchall()) + repr(
            con.execute("SELECT * FROM experiment_scorers").fetchall()
        )


async def test_a_run_writes_its_rows_to_object_storage_with_keys_from_the_environment(
    s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = await run_evals(
        rows(40), scorers(0.0), store=lake(tmp_path), store_data_path=data_path(s3), progress=False
    )
    assert result.status == "completed"
    assert read_item_scores(lake(tmp_path), result.experiment_id).num_rows == 80
    keys = s3.objects("lake/")
    assert any(k.startswith("lake/main/scores/experiment_id=") for k in keys), keys
    assert all(k.endswith(".parquet") for k in keys)
    assert not list(tmp_path.rglob("*.parquet"))  # nothing beside the catalog
    said = texts(lake(tmp_path)) + "".join(capsys.readouterr())
    assert s3.secret not in said
    for file in tmp_path.rglob("catalog.sqlite*"):  # the catalog and its WAL
        assert s3.secret.encode() not in file.read_bytes()


def test_large_flushes_are_staged_straight_to_object_storage(s3: S3Server, tmp_path: Path) -> None:
    store = prepare_store(lake(tmp_path), data_path=data_path(s3))
    writer = begin(store, "e1", 5_000)
    for batch in prebuilt_batches("e1", 0, 5_000):
        writer.write(batch)
    finish(writer)
    staged = [k for k in s3.objects("lake/main/") if "/evalkit-" in k]
    assert {tuple(k.split("/")[2:4]) for k in staged} == {
        ("scores", "experiment_id=e1"), ("experiment_items", "experiment_id=e1")
    }  # fmt: skip
    with connection(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scores").fetchall() == [(20_000,)]


def sql(store: str, query: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalkit", "sql", "--store", store, "--format", "csv", query],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


async def test_another_process_reads_the_lake_with_a_persistent_duckdb_secret(
    s3: S3Server, tmp_path: Path
) -> None:
    result = await run_evals(
        rows(200), scorers(0.0), store=lake(tmp_path), store_data_path=data_path(s3), progress=False
    )
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(home)
    query = "SELECT count(DISTINCT item_id) AS n FROM scores"
    # No keys anywhere: the lake's files cannot be read, and the error says where.
    refused = sql(lake(tmp_path), query, env)
    assert refused.returncode != 0
    assert f"under {data_path(s3)}: its credentials come from" in refused.stderr, refused.stderr
    host = s3.endpoint.removeprefix("http://")
    secret = (
        f"CREATE PERSISTENT SECRET team_lake (TYPE s3, KEY_ID '{s3.key_id}',"
        f" SECRET '{s3.secret}', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false,"
        f" REGION 'us-east-1', SCOPE '{s3.url}')"
    )
    made = subprocess.run(
        [sys.executable, "-c", "import duckdb, sys\n"
         "from evalkit._extensions import load_extensions\n"
         "con = duckdb.connect(); load_extensions(con, 'httpfs'); con.execute(sys.argv[1])",
         secret],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    read = sql(lake(tmp_path), query, env)
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == ["n", "200"]
    assert result.experiment_id


def test_a_data_path_on_an_object_store_duckdb_cannot_write_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    with pytest.raises(StoreError, match=r"'az://box/lake/'.*az:// is not an object store"):
        prepare_store(lake(tmp_path), data_path="az://box/lake/")


@pytest.mark.parametrize("where", ["s3", "folder"])
def test_read_only_sql_cannot_write_into_the_lakes_data_path(
    s3: S3Server, tmp_path: Path, where: str
) -> None:
    data = data_path(s3) if where == "s3" else f"{tmp_path / 'data'}/"
    store = prepare_store(lake(tmp_path), data_path=data)
    finish(begin(store, "e0", 0))
    forged = f"{data}main/scores/forged.parquet"
    done = sql(store, f"COPY (SELECT 42 AS score) TO '{forged}'", dict(os.environ))
    assert done.returncode != 0
    assert "query refused: COPY … TO and EXPORT DATABASE write files" in done.stderr
    assert not [k for k in s3.objects() if "forged" in k]
    assert not (tmp_path / "data" / "main" / "scores" / "forged.parquet").exists()


def test_each_flush_takes_the_credentials_the_environment_holds_now(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CI job's session token expires about an hour into a run and is replaced in the
    # environment: the next flush must sign with the new one, not the one the process began with.
    first, first_secret = s3.new_keys()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", first)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", first_secret)
    store = prepare_store(lake(tmp_path), data_path=data_path(s3))
    writer = begin(store, "e1", 4_000)
    writer.write(prebuilt_batches("e1", 0, 2_000)[0])
    second, second_secret = s3.new_keys()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", second)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", second_secret)
    s3.revoke(first)
    writer.write(prebuilt_batches("e1", 2_000, 2_000)[0])
    finish(writer)
    staged = [k for k in s3.objects("lake/main/scores/") if "/evalkit-" in k]
    assert len(staged) == 2  # both flushes staged their scores on the object store
    with connection(store, read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT item_id) FROM scores").fetchall() == [
            (16_000, 4_000)
        ]
