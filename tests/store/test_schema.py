from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any, cast

import duckdb
import pytest

from evalkit import StoreError, create_scorer, run_evals
from evalkit._intervals import mean_interval95
from evalkit.store import SCHEMA_VERSION, migrate, schema_version
from evalkit.store._connect import open_connection
from evalkit.store._prices import SEED_PRICES

from .conftest import held_by_another_process

SCORER = create_scorer("One").generate_score(lambda run: 1.0)
ROWS = [{"input": "q", "output": "a"}]

TABLES = {
    "experiments",
    "experiment_scorers",
    "experiment_items",
    "scores",
    "scorer_errors",
    "judge_executions",
    "model_prices",
    "schema_version",
    "shards_done",
    "scorer_agreement",
    "score_repeats",
    "scorer_gates",
    "baseline_pins",
}


async def test_new_store_has_schema_views_and_seeded_prices(store: Path) -> None:
    await run_evals(ROWS, [SCORER], store=store, progress=False)
    with duckdb.connect(str(store), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        views = {
            r[0]
            for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        }
        assert schema_version(con) == SCHEMA_VERSION == 10
        prices = con.execute("SELECT count(*) FROM model_prices").fetchone()
    assert tables == TABLES
    assert {"scorer_summary", "judge_usage", "agreement_summary", "pair_spread",
            "judge_stability"} <= views  # fmt: skip
    assert prices == (len(SEED_PRICES),)


async def test_reopening_migrates_nothing_and_keeps_user_edits(store: Path) -> None:
    await run_evals(ROWS, [SCORER], store=store, progress=False)
    with duckdb.connect(str(store)) as con:
        con.execute("UPDATE model_prices SET output_per_mtok = 99 WHERE model = 'gpt-4o'")
    await run_evals(ROWS, [SCORER], store=store, progress=False)
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        assert con.execute("SELECT count(*) FROM experiments").fetchone() == (2,)
        assert con.execute(
            "SELECT output_per_mtok FROM model_prices WHERE model = 'gpt-4o'"
        ).fetchone() == (99,)


def test_migrate_reports_the_version_found(store: Path) -> None:
    con = open_connection(store)
    try:
        assert migrate(con, where=str(store)) == 0
        assert migrate(con, where=str(store)) == SCHEMA_VERSION
    finally:
        con.close()


async def test_newer_store_is_refused(store: Path) -> None:
    with duckdb.connect(str(store)) as con:
        con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP)")
        con.execute("INSERT INTO schema_version VALUES (99, now())")
    with pytest.raises(StoreError, match="schema version 99 is newer"):
        await run_evals(ROWS, [SCORER], store=store, progress=False)


async def test_not_a_duckdb_file(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.duckdb"
    bogus.write_text("definitely not a database")
    with pytest.raises(StoreError, match=r"bogus\.duckdb"):
        await run_evals(ROWS, [SCORER], store=bogus, progress=False)


def test_waits_for_another_process_then_gives_up(store: Path) -> None:
    with held_by_another_process(store), pytest.raises(StoreError, match="lock"):
        open_connection(store, lock_timeout=0.2)
    open_connection(store, lock_timeout=0.2).close()


def test_a_version_1_store_gains_the_writer_columns(store: Path) -> None:
    from evalkit.store._schema import MIGRATIONS

    with duckdb.connect(str(store)) as con:
        MIGRATIONS[0](con)
        con.execute("INSERT INTO schema_version VALUES (1, now()::TIMESTAMP)")
        con.execute(
            "INSERT INTO experiments (id, name, status, total_items, succeeded_count,"
            " failed_count, started_at) VALUES ('old', 'n', 'completed', 1, 1, 0, now())"
        )
        assert migrate(con, where=str(store)) == 1
        assert schema_version(con) == SCHEMA_VERSION == 10
        row = con.execute(
            "SELECT id, status, writer_pid, writer_host, heartbeat_at FROM experiments"
        ).fetchall()
    assert row == [("old", "completed", None, None, None)]


_SHARD_ROW = "INSERT INTO shards_done VALUES ('old', 0, 'f.parquet', 0, 0, 5, '{}', now())"


@pytest.mark.parametrize("ran_sharded", [False, True])
def test_a_version_3_store_gains_shards_done_and_keeps_its_rows(
    store: Path, ran_sharded: bool
) -> None:
    from evalkit.store._schema import MIGRATIONS

    with duckdb.connect(str(store)) as con:
        for version in range(3):
            MIGRATIONS[version](con)
            con.execute("INSERT INTO schema_version VALUES (?, now()::TIMESTAMP)", [version + 1])
        if ran_sharded:
            # Before version 4 a sharded run created the table on its first write.
            MIGRATIONS[3](con)
            con.execute(_SHARD_ROW)
        assert migrate(con, where=str(store)) == 3
        assert schema_version(con) == SCHEMA_VERSION == 10
        rows = con.execute("SELECT experiment_id, shard_index, rows FROM shards_done").fetchall()
    assert rows == ([("old", 0, 5)] if ran_sharded else [])


def test_the_arrow_schemas_match_the_tables(store: Path) -> None:
    from evalkit.store._arrow import ARROW_SCHEMAS

    types = {"string": "VARCHAR", "double": "DOUBLE", "int64": "BIGINT", "int32": "INTEGER",
             "timestamp[us]": "TIMESTAMP", "bool": "BOOLEAN"}  # fmt: skip
    con = open_connection(store)
    try:
        migrate(con, where=str(store))
        for table, schema in ARROW_SCHEMAS.items():
            columns = con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ?"
                " AND column_name != 'id' ORDER BY column_index",
                [table],
            ).fetchall()
            arrow = [(f.name, types[str(f.type)]) for f in schema]
            assert [(n, "VARCHAR" if t == "JSON" else t) for n, t in columns] == arrow, table
    finally:
        con.close()


#: A store written by evalkit at schema version 7 (main at 29e443a, DuckDB 1.5.5): quickstart,
#: regression-demo, a --limit 20 quickstart and 40 items of judge-agreement on the test server.
STORE_V7 = Path(__file__).parent / "data" / "store-v7.duckdb.gz"

_EVERY_TABLE = (
    "experiments",
    "experiment_scorers",
    "experiment_items",
    "scores",
    "scorer_errors",
    "judge_executions",
    "score_repeats",
    "scorer_agreement",
)


def _contents(
    con: duckdb.DuckDBPyConnection, columns: dict[str, list[str]]
) -> dict[str, list[str]]:
    """Every row of every table, in the columns given (the table's columns before)."""
    return {
        t: sorted(repr(r) for r in con.execute(f"SELECT {', '.join(c)} FROM {t}").fetchall())
        for t, c in columns.items()
    }


def _columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    return {t: [d[0] for d in con.execute(f"SELECT * FROM {t} LIMIT 0").description]
            for t in _EVERY_TABLE}  # fmt: skip


def _summary(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        "SELECT experiment_id, scorer_id, n, errors, mean, stddev, ci95_low, ci95_high, min,"
        " median, max, pass_rate, error_rate FROM scorer_summary ORDER BY ALL"
    ).fetchall()


def test_a_store_written_at_version_7_migrates_in_place_with_nothing_lost(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    with gzip.open(STORE_V7) as packed, store.open("wb") as out:
        shutil.copyfileobj(packed, out)
    with duckdb.connect(str(store), read_only=True) as con:
        assert schema_version(con) == 7
        columns = _columns(con)
        before = _contents(con, columns)
        summary_before = _summary(con)
    assert len(before["scores"]) == 1922
    assert len(before["judge_executions"]) == 40
    con = open_connection(store)
    try:
        assert migrate(con, where=str(store)) == 7
        assert schema_version(con) == SCHEMA_VERSION == 10
        after = _contents(con, columns)
        verdicts = con.execute(
            "SELECT count(*), count(verdict), count(baseline_id) FROM experiments"
        ).fetchall()
        gates = con.execute("SELECT count(*) FROM scorer_gates").fetchall()
        summary_after = _summary(con)
    finally:
        con.close()
    assert after == before
    # Version 9's scorer_summary (stable for huge scores) gives everyday scores' figures;
    # version 10's interval is the shared one (Wilson's for scores between 0 and 1).
    assert len(summary_after) == len(summary_before) > 0
    changed = 0
    for old, new in zip(summary_before, summary_after, strict=True):
        assert new[:2] == old[:2]
        assert new[2:6] + new[8:] == pytest.approx(old[2:6] + old[8:], rel=1e-12, nan_ok=True)
        n, _, mean, stddev, low, high, least, _, most = cast("tuple[Any, ...]", new[2:11])
        expected = mean_interval95(n, mean, stddev, least, most) or (None, None)
        assert (low, high) == pytest.approx(expected, rel=1e-12, abs=1e-12)
        changed += (low, high) != pytest.approx(old[6:8], rel=1e-12)
    assert changed > 0
    # The runs were never judged in the store: NULL, not a guess.
    assert verdicts == [(4, 0, 0)]
    assert gates == [(0,)]
