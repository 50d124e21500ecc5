from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evalkit import StoreError
from evalkit.store._connect import connection, open_connection


def row_group_sizes(store: Path, table: str) -> list[int]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT row_group_id, max(count) FROM pragma_storage_info(?)"
            " GROUP BY row_group_id ORDER BY row_group_id",
            [table],
        ).fetchall()
    return [int(n) for _, n in rows]


def test_a_connection_with_a_row_group_size_appends_row_groups_of_that_size(store: Path) -> None:
    with connection(store, row_group_size=2048) as con:
        con.execute("CREATE TABLE t (i BIGINT)")
        con.execute("INSERT INTO t SELECT range FROM range(5000)")
    assert row_group_sizes(store, "t") == [2048, 2048, 904]
    with connection(store) as con:
        con.execute("INSERT INTO t SELECT range FROM range(5000)")
    assert max(row_group_sizes(store, "t")) > 2048


def test_a_connection_with_a_row_group_size_reads_and_writes_the_store_as_its_default(
    store: Path,
) -> None:
    with connection(store) as con:
        con.execute("CREATE TABLE t (i BIGINT)")
    with connection(store, row_group_size=2048, config={"threads": "1"}) as con:
        con.execute("INSERT INTO t VALUES (1), (2)")
        assert con.execute("SELECT sum(i) FROM t").fetchall() == [(3,)]
        assert con.execute(
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_name = 't' AND table_schema = current_schema()"
        ).fetchall() == [(1,)]
    with connection(store, read_only=True) as con:
        assert con.execute("SELECT sum(i) FROM t").fetchall() == [(3,)]


def test_a_row_group_size_shares_a_database_this_process_already_holds(store: Path) -> None:
    held = duckdb.connect(str(store))
    try:
        held.execute("CREATE TABLE t (i BIGINT)")
        with connection(store, row_group_size=2048, config={"threads": "1"}) as con:
            con.execute("INSERT INTO t VALUES (7)")
        assert held.execute("SELECT i FROM t").fetchall() == [(7,)]
    finally:
        held.close()


def test_a_row_group_size_waits_for_and_gives_up_on_another_process_lock(store: Path) -> None:
    duckdb.connect(str(store)).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, duckdb\ncon = duckdb.connect(sys.argv[1])\nprint('locked', flush=True)"
            "\nsys.stdin.readline()",
            str(store),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError, match=r"locked by another process \(waited 0\.3 s"):
            open_connection(store, row_group_size=2048, lock_timeout=0.3)
    finally:
        holder.communicate("done\n", timeout=10)
