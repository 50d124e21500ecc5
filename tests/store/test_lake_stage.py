"""A DuckLake flush writes its large tables' Parquet files before its commit, outside the
turn writers sharing a SQLite catalog take to commit (``_lake_stage.py``)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evalkit._extensions import ducklake_missing
from evalkit.store import connection
from evalkit.store._batch_io import Transaction
from evalkit.store._lake import prepare_store
from evalkit.store._lake_stage import append_to_lake, discard_files, read_layout
from tests.benchmarks.bench_ducklake import begin, finish, prebuilt_batches

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

#: An experiment id whose partition folder DuckLake percent-encodes.
ODD_ID = "nightly 12/05 a=b%"


@pytest.fixture
def lake(tmp_path: Path) -> str:
    return prepare_store(
        f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}", data_path=tmp_path / "data"
    )


def count(store: str, experiment: str) -> int:
    with connection(store, read_only=True) as con:
        row = con.execute("SELECT count(*) FROM scores WHERE experiment_id = ?", [experiment])
        found = row.fetchone()
    assert found is not None
    return int(found[0])


def staged_files(data: Path) -> list[Path]:
    return sorted(data.rglob("evalkit-*.parquet"))


class SeenAtCommit(Transaction):
    """The flush's transaction, noting the staged files already there when it begins."""

    def __init__(self, con: duckdb.DuckDBPyConnection, data: Path) -> None:
        super().__init__(con)
        self.data = data
        self.seen: list[Path] = []

    def __enter__(self) -> None:
        self.seen = staged_files(self.data)
        super().__enter__()


def test_a_flush_writes_its_parquet_files_before_its_commit_and_registers_them_in_it(
    lake: str, tmp_path: Path
) -> None:
    finish(begin(lake, "e0", 0))
    [batch] = prebuilt_batches("e1", 0, 5_000)
    with connection(lake) as con:
        commit = SeenAtCommit(con, tmp_path / "data")
        append_to_lake(con, read_layout(con), batch.tables(), commit, [])
    # Both large tables were written before the transaction began (outside the commit turn
    # writers sharing a SQLite catalog take), and the commit made them the lake's.
    assert [f.parent.parent.name for f in commit.seen] == ["experiment_items", "scores"]
    assert count(lake, "e1") == 20_000
    with connection(lake, read_only=True) as con:
        files = {
            Path(f).name
            for (f,) in con.execute(
                "SELECT data_file FROM ducklake_list_files('evalkit_lake', 'scores')"
            ).fetchall()
        }
    assert {f.name for f in commit.seen} & files


def test_staged_files_are_the_partition_of_their_experiment(lake: str, tmp_path: Path) -> None:
    writer = begin(lake, ODD_ID, 2_500)
    for batch in prebuilt_batches(ODD_ID, 0, 2_500):
        writer.write(batch)
    other = begin(lake, "other", 1_500)
    for batch in prebuilt_batches("other", 0, 1_500):
        other.write(batch)
    finish(writer)
    finish(other)
    folders = {f.parent.name for f in staged_files(tmp_path / "data" / "main" / "scores")}
    assert folders == {"experiment_id=nightly%2012%2F05%20a%3Db%25", "experiment_id=other"}
    assert count(lake, ODD_ID) == 10_000
    assert count(lake, "other") == 6_000
    with connection(lake, read_only=True) as con:
        # DuckLake knows each file's partition: a filter on the experiment reads one file.
        plan = con.execute(
            "EXPLAIN ANALYZE SELECT count(*) FROM scores WHERE experiment_id = 'other'"
        ).fetchall()[0][1]
        summary = con.execute(
            "SELECT n, mean FROM scorer_summary WHERE experiment_id = ? ORDER BY scorer_id",
            [ODD_ID],
        ).fetchall()
    assert "Total Files Read: 1" in plan
    assert [n for n, _ in summary] == [2_500] * 4


def test_a_small_flush_is_inserted_in_its_commit(lake: str, tmp_path: Path) -> None:
    writer = begin(lake, "small", 100)
    for batch in prebuilt_batches("small", 0, 100):
        writer.write(batch)
    finish(writer)
    assert count(lake, "small") == 400
    assert staged_files(tmp_path / "data") == []


class CommitFails(Transaction):
    """A transaction whose body runs and whose COMMIT fails (it may have gone through)."""

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        super().__exit__(RuntimeError, *rest)  # rolled back, as a failed COMMIT leaves it
        raise duckdb.TransactionException("Failed to commit DuckLake transaction")


class BeginFails(Transaction):
    def __enter__(self) -> None:
        raise duckdb.TransactionException("the catalog is busy")


def test_staged_files_are_deleted_only_when_the_commit_was_never_tried(
    lake: str, tmp_path: Path
) -> None:
    finish(begin(lake, "e0", 0))
    [batch] = prebuilt_batches("e1", 0, 5_000)
    uncertain: list[str] = []
    with connection(lake) as con:
        layout = read_layout(con)
        with pytest.raises(duckdb.TransactionException, match="busy"):
            append_to_lake(con, layout, batch.tables(), BeginFails(con), uncertain)
        assert staged_files(tmp_path / "data") == []
        assert uncertain == []
        with pytest.raises(duckdb.TransactionException, match="Failed to commit"):
            append_to_lake(con, layout, batch.tables(), CommitFails(con), uncertain)
    # A COMMIT that failed may have gone through: its files are left and handed back (the
    # writer looks at its next attempt whether the batch landed, and deletes them if not).
    assert [str(f) for f in staged_files(tmp_path / "data")] == sorted(uncertain)
    assert len(uncertain) == 2
    assert count(lake, "e1") == 0


def test_a_staged_file_that_cannot_be_deleted_is_left_without_an_error(tmp_path: Path) -> None:
    # A real failing unlink (EISDIR here; EROFS on a data path turned read-only): raised, it
    # escaped the writer's keep-and-spill path and lost the batch with a traceback.
    stuck = tmp_path / "evalkit-stuck.parquet"
    stuck.mkdir()
    gone = tmp_path / "evalkit-gone.parquet"
    gone.write_bytes(b"PAR1")
    discard_files([str(stuck), str(gone)])
    assert stuck.is_dir()
    assert not gone.exists()
