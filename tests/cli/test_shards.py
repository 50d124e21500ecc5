"""``evalkit run --executor/--shard`` and ``evalkit merge`` through the real command line."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from .conftest import Cli, write_experiment


def write_grouped(path: Path, rows: int = 60) -> None:
    table = pa.table(
        {
            "id": [f"q{i:03d}" for i in range(rows)],
            "input": [f"What is {i} + {i}?" for i in range(rows)],
            "groundTruth": [str(2 * i) for i in range(rows)],
            "output": [str(2 * i + 1) if i < 6 else str(2 * i) for i in range(rows)],
        }
    )
    pq.write_table(table, path, row_group_size=15)


def scores(store: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(
            "SELECT scorer_id, item_id, score FROM scores ORDER BY scorer_id, item_id"
        ).fetchall()


def test_shard_jobs_merge_into_the_full_run(cli: Cli, tmp_path: Path) -> None:
    write_grouped(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    full = cli("run", "nightly.toml", "--no-progress", "--store", "full.duckdb")
    assert full.code == 0, full.stderr
    for i in range(2):
        done = cli("run", "nightly.toml", "--no-progress", "--shard", f"{i}/2",
                   "--store", f"part{i}.duckdb")  # fmt: skip
        assert done.code == 0, done.stderr
    merged = cli("merge", "part0.duckdb", "part1.duckdb", "--store", "merged.duckdb")
    assert merged.code == 0, merged.stderr
    assert "merged into merged.duckdb" in merged.stdout
    assert scores(tmp_path / "merged.duckdb") == scores(tmp_path / "full.duckdb")
    assert len(scores(tmp_path / "full.duckdb")) == 120


def test_process_executor_from_the_command_line(cli: Cli, tmp_path: Path) -> None:
    write_grouped(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress", "--executor", "process", "--workers", "2")
    assert done.code == 0, done.stderr
    assert "0.900" in next(line for line in done.stdout.splitlines() if line.startswith("exact"))
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM shards_done").fetchall() == [(4,)]
