from __future__ import annotations

import _thread
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import duckdb
import pytest

from evalkit import StoreError
from evalkit._interruptible import execute_interruptibly, interrupted_query
from evalkit.store._connect import WRITE_ROW_GROUP_SIZE, connection, open_connection

from .conftest import held_by_another_process


def row_group_sizes(store: Path, table: str) -> list[int]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT row_group_id, max(count) FROM pragma_storage_info(?)"
            " GROUP BY row_group_id ORDER BY row_group_id",
            [table],
        ).fetchall()
    return [int(n) for _, n in rows]


def test_a_writing_connection_appends_row_groups_of_its_size(store: Path) -> None:
    with connection(store, row_group_size=2048) as con:
        con.execute("CREATE TABLE t (i BIGINT)")
        con.execute("INSERT INTO t SELECT range FROM range(5000)")
    assert row_group_sizes(store, "t") == [2048, 2048, 904]
    with connection(store) as con:
        con.execute(f"INSERT INTO t SELECT range FROM range({WRITE_ROW_GROUP_SIZE + 10})")
    assert max(row_group_sizes(store, "t")) == WRITE_ROW_GROUP_SIZE


def test_a_checkpoint_by_a_plain_duckdb_connection_merges_small_row_groups(store: Path) -> None:
    # Why every writing connection of evalkit uses the same size: see
    # docs/pages/design/small-row-groups.md.
    with connection(store, row_group_size=2048) as con:
        con.execute("CREATE TABLE t (i BIGINT)")
        con.execute("INSERT INTO t SELECT range FROM range(5000)")
    with duckdb.connect(str(store)) as con:
        con.execute("CREATE TABLE u (i BIGINT)")
    assert row_group_sizes(store, "t") == [5000]


@pytest.mark.parametrize(
    ("name", "catalog"),
    [("evalkit.duckdb", "evalkit"), ("memory.duckdb", "evalkit_store"), ("temp.db", "temp_db")],
)
def test_a_writing_connection_has_the_store_as_its_default_catalog(
    tmp_path: Path, name: str, catalog: str
) -> None:
    store = tmp_path / name
    with connection(store, config={"threads": "1"}) as con:
        con.execute("CREATE TABLE t (i BIGINT)")
        con.execute("CREATE MACRO twice(x) AS 2 * x")
        con.execute("INSERT INTO t VALUES (1), (2)")
        assert con.execute("SELECT sum(i), current_database() FROM t").fetchall() == [(3, catalog)]
    with connection(store, read_only=True) as con:
        assert con.execute("SELECT twice(sum(i)) FROM t").fetchall() == [(6,)]


def test_a_writing_connection_shares_a_database_this_process_already_holds(store: Path) -> None:
    held = duckdb.connect(str(store))
    try:
        held.execute("CREATE TABLE t (i BIGINT)")
        with connection(store, config={"threads": "1"}) as con:
            con.execute("INSERT INTO t VALUES (7)")
        assert held.execute("SELECT i FROM t").fetchall() == [(7,)]
    finally:
        held.close()


def test_a_connection_waits_for_a_writing_connection_of_this_process(store: Path) -> None:
    writing = open_connection(store)
    try:
        writing.execute("CREATE TABLE t (i BIGINT)")
        for read_only in (True, False):
            with pytest.raises(StoreError, match=r"held by another connection of this process"):
                open_connection(store, read_only=read_only, lock_timeout=0.1)
    finally:
        writing.close()
    with connection(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(0,)]


def test_a_writing_connection_waits_for_and_gives_up_on_another_process_lock(
    store: Path,
) -> None:
    duckdb.connect(str(store)).close()
    with (
        held_by_another_process(store),
        pytest.raises(StoreError, match=r"locked by another process \(waited 0\.3 s"),
    ):
        open_connection(store, lock_timeout=0.3)


_SLOW = "SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3"

# A Ctrl-C inside a query, in a process of its own. DuckDB itself notices a SIGINT only between
# the pieces of work the calling thread runs: a bare con.execute() went on for the whole query in
# about half of the tries here. The child sets Python's own SIGINT handler: started from a shell's
# background job it inherits SIGINT ignored.
_CTRL_C_INSIDE_A_QUERY = f"""
import os, signal, threading, time, duckdb
from evalkit._interruptible import execute_interruptibly
signal.signal(signal.SIGINT, signal.default_int_handler)
threading.Timer(0.3, os.kill, [os.getpid(), signal.SIGINT]).start()
start = time.monotonic()
try:
    execute_interruptibly(duckdb.connect(), {_SLOW!r}).fetchall()
except BaseException as exc:
    print(type(exc).__name__, round(time.monotonic() - start, 1))
"""


@pytest.mark.parametrize("attempt", range(5))
def test_a_ctrl_c_stops_a_query_at_once(attempt: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_INSIDE_A_QUERY],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    name, seconds = done.stdout.split()
    assert name == "KeyboardInterrupt", (done.stdout, done.stderr)
    assert float(seconds) < 20, done.stdout  # the query alone runs for minutes


class _BeginsAfterTheCtrlC:
    """A connection whose query begins only once the Ctrl-C was handled: the moment in which
    DuckDB forgets an interrupt, since it clears the flag when a query begins. The real
    connection runs the query; nothing of evalkit is replaced."""

    def __init__(self) -> None:
        self.con = duckdb.connect()
        self.interrupt_called = threading.Event()
        self.stopped = False

    def execute(self, sql: str, parameters: Sequence[object] | None = None) -> object:
        _thread.interrupt_main()  # the Ctrl-C lands now, before the query has begun
        assert self.interrupt_called.wait(60)
        try:
            return self.con.execute(sql, parameters)
        except duckdb.InterruptException:
            self.stopped = True
            raise

    def interrupt(self) -> None:
        self.con.interrupt()
        self.interrupt_called.set()


@pytest.fixture
def python_handles_ctrl_c() -> Iterator[None]:
    """Python's own SIGINT handler (a pytest-xdist worker may have SIGINT ignored)."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, saved)


def test_a_ctrl_c_before_the_query_has_begun_still_stops_it(python_handles_ctrl_c: None) -> None:
    # A query of seconds, not minutes: on the old code it ran to its end, uninterrupted.
    slow_to_begin = _BeginsAfterTheCtrlC()
    con = cast(duckdb.DuckDBPyConnection, slow_to_begin)  # what execute_interruptibly calls
    with pytest.raises(KeyboardInterrupt):
        execute_interruptibly(con, "SELECT count(*) FROM range(3000000000) t(x) WHERE x % 7 = 3")
    assert slow_to_begin.stopped


def test_a_failing_query_raises_its_error_through_the_thread() -> None:
    with pytest.raises(duckdb.CatalogException, match="no_such_table"):
        execute_interruptibly(duckdb.connect(), "SELECT * FROM no_such_table")
    assert execute_interruptibly(duckdb.connect(), "SELECT ?", [42]).fetchall() == [(42,)]


def test_an_interrupted_connection_is_an_interruption_and_other_errors_are_not() -> None:
    con = duckdb.connect()
    timer = threading.Timer(0.3, con.interrupt)
    timer.start()
    with pytest.raises(duckdb.InterruptException) as raised:
        con.execute(_SLOW).fetchall()
    timer.join()
    assert interrupted_query(raised.value)
    assert not interrupted_query(RuntimeError("Query failed"))
    assert not interrupted_query(KeyboardInterrupt())
