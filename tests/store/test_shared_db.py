"""The store file is attached, block by block, to one DuckDB database kept for the process
(docs/pages/design/one-database-per-process.md): a block reuses the database the block before
it made; another process's lock is still waited for, a forked child makes a database of its
own, and the settings a block asks for hold in it and end with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import duckdb
import pytest

from evalkit import StoreError
from evalkit.store import connection

from .conftest import held_by_another_process

_PROBE = "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'memory' AND table_name = ?"


def test_a_block_reuses_the_database_the_block_before_it_made(tmp_path: Path) -> None:
    """Issue 31 item 6: each block made a DuckDB database of its own (about 15 ms), nine or
    ten times in the quickstart."""
    store = tmp_path / "evalkit.duckdb"
    probe = f"probe_{os.getpid()}"
    with connection(store) as con:
        con.execute("CREATE TABLE t (i BIGINT)")
        con.execute(f"CREATE TABLE memory.main.{probe} (i BIGINT)")
    try:
        for read_only in (False, True):
            with connection(store, read_only=read_only) as con:
                assert con.execute(_PROBE, [probe]).fetchall() == [(1,)]
                assert con.execute("SELECT count(*) FROM t").fetchall() == [(0,)]
    finally:
        with connection(store) as con:
            con.execute(f"DROP TABLE IF EXISTS memory.main.{probe}")


def test_the_file_is_released_and_checkpointed_when_the_block_ends(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    with connection(store) as con:
        con.execute("CREATE TABLE t AS SELECT range AS i FROM range(1000)")
    assert not Path(f"{store}.wal").exists()  # the checkpoint was written
    # Another process can write the file at once: this one no longer holds it.
    subprocess.run(
        [sys.executable, "-c", "import sys, duckdb\n"
         "duckdb.connect(sys.argv[1]).execute('INSERT INTO t VALUES (1000)').close()", str(store)],
        check=True, timeout=60,
    )  # fmt: skip
    with connection(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(1001,)]


def test_a_block_waits_for_another_process_lock_with_the_database_made(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    with connection(store) as con:  # the process's database exists from here on
        con.execute("CREATE TABLE t (i BIGINT)")
    with (
        held_by_another_process(store),
        pytest.raises(StoreError, match=r"locked by another process \(waited 0\.3 s"),
        connection(store, lock_timeout=0.3),
    ):
        pass
    # A holder that lets go after a moment: the block waits for it, then writes.
    with subprocess.Popen(
        [sys.executable, "-c", "import sys, time, duckdb\ncon = duckdb.connect(sys.argv[1])\n"
         "print('locked', flush=True)\ntime.sleep(1.0)\ncon.close()", str(store)],
        stdout=subprocess.PIPE, text=True,
    ) as holder:  # fmt: skip
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with connection(store, lock_timeout=60) as con:
            con.execute("INSERT INTO t VALUES (1)")
    with connection(store, read_only=True) as con:
        assert con.execute("SELECT i FROM t").fetchall() == [(1,)]


def _forked(store: Path) -> int:
    """Fork a child that writes a row to ``store`` through ``connection``; its exit code."""
    with warnings.catch_warnings():
        # Python 3.12+ warns of any fork of a process with threads (pytest-xdist's own).
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 1
        try:
            with connection(store) as con:
                con.execute("INSERT INTO t VALUES (2)")
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child hung on the store")


@pytest.mark.parametrize("during", [False, True], ids=["after-a-block", "during-a-block"])
def test_a_forked_child_uses_the_store_through_a_database_of_its_own(
    tmp_path: Path, during: bool
) -> None:
    store = tmp_path / "evalkit.duckdb"
    with connection(store) as con:
        con.execute("CREATE TABLE t (i BIGINT)")
        con.execute("INSERT INTO t VALUES (1)")
    if during:  # the parent's database is in use (another store attached) as it forks
        with connection(tmp_path / "other.duckdb") as con:
            con.execute("CREATE TABLE u (i BIGINT)")
            assert _forked(store) == 0
    else:
        assert _forked(store) == 0
    with connection(store, read_only=True) as con:  # and the parent's goes on
        assert con.execute("SELECT i FROM t ORDER BY i").fetchall() == [(1,), (2,)]


def _settings(con: duckdb.DuckDBPyConnection) -> tuple[object, ...]:
    found = con.execute(
        "SELECT current_setting('threads'), current_setting('memory_limit'),"
        " current_setting('allocator_flush_threshold')"
    ).fetchone()
    assert found is not None
    return found


def test_the_settings_a_block_asks_for_hold_in_it_and_end_with_it(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    asked = {"threads": "1", "memory_limit": "300MB", "allocator_flush_threshold": "8MB"}
    plain = duckdb.connect(":memory:")
    with duckdb.connect(":memory:", config=dict(asked)) as own:
        expected, defaults = _settings(own), _settings(plain)
    plain.close()
    assert expected != defaults
    with connection(store) as con:  # the database exists, with its defaults
        assert _settings(con) == defaults
    with connection(store, config=asked) as con:
        assert _settings(con) == expected
        con.execute("CREATE TABLE t AS SELECT range AS i FROM range(10)")
    with connection(store, read_only=True) as con:
        assert _settings(con) == defaults
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(10,)]


def _offline(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN"
        " ('autoinstall_known_extensions', 'autoload_known_extensions')"
        " ORDER BY name"
    ).fetchall()


def test_a_block_that_asks_for_other_settings_leaves_the_process_database_as_it_was(
    tmp_path: Path,
) -> None:
    """Review of the shared database: RESET GLOBAL went back to DuckDB's defaults, not to the
    database's own offline settings, so one block asking for them left every later block free
    to install extensions from the network."""
    store = tmp_path / "evalkit.duckdb"
    with connection(store) as con:
        before = _offline(con)
    assert before == [("autoinstall_known_extensions", "false"),
                      ("autoload_known_extensions", "false")]  # fmt: skip
    with connection(store, config={"autoinstall_known_extensions": "false"}) as con:
        assert _offline(con) == before
    with connection(store) as con:
        assert _offline(con) == before


def test_a_setting_that_cannot_change_on_a_running_database_gets_a_database_of_its_own(
    tmp_path: Path,
) -> None:
    """Review of the shared database: external access cannot be turned off on a running
    database; the block failed with DuckDB's raw error and left the setting behind."""
    store = tmp_path / "evalkit.duckdb"
    with connection(store) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS i")
    with connection(store, read_only=True, config={"enable_external_access": "false"}) as con:
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(1,)]
    probe = f"probe_{os.getpid()}"
    with connection(store) as con:  # the process's database is shared again, unchanged
        con.execute(f"CREATE TABLE memory.main.{probe} (i BIGINT)")
        assert con.execute("SELECT current_setting('enable_external_access')").fetchall() == [
            (True,)
        ]
    with connection(store) as con:
        assert con.execute(_PROBE, [probe]).fetchall() == [(1,)]
        con.execute(f"DROP TABLE memory.main.{probe}")


def test_a_read_only_sql_connection_leaves_the_process_database_shared(tmp_path: Path) -> None:
    """Review of the shared database: read_only_connection locked the process's database
    down (no external access, configuration locked), so every later block of the process
    opened a database of its own."""
    from evalkit.store import read_only_connection

    store = tmp_path / "evalkit.duckdb"
    probe = f"probe_{os.getpid()}"
    with connection(store) as con:
        con.execute(f"CREATE TABLE memory.main.{probe} (i BIGINT)")
    try:
        with read_only_connection(store) as con:
            assert con.execute("SELECT current_setting('lock_configuration')").fetchall() == [
                (True,)
            ]
        with connection(store) as con:
            assert con.execute(_PROBE, [probe]).fetchall() == [(1,)]
            assert con.execute("SELECT current_setting('lock_configuration')").fetchall() == [
                (False,)
            ]
    finally:
        with connection(store) as con:
            con.execute(f"DROP TABLE IF EXISTS memory.main.{probe}")
