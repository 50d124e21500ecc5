"""DuckDB queries a Ctrl-C stops at once, and telling DuckDB's answer to a Ctrl-C from a failure.

Shared by the store's connections and the CLI's ``evalkit sql``: nothing here knows the store.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import duckdb


def interrupted_query(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB's answer to a Ctrl-C that landed inside a query.

    DuckDB checks for signals while a query runs on the main thread and then raises
    ``RuntimeError("Query interrupted")``, not ``KeyboardInterrupt`` (and
    ``duckdb.InterruptException`` for ``connection.interrupt()``): both mean "stopped on
    request", never a failure of the store.
    """
    if isinstance(exc, duckdb.InterruptException):
        return True
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


def execute_interruptibly(
    con: duckdb.DuckDBPyConnection, sql: str, parameters: Sequence[object] | None = None
) -> duckdb.DuckDBPyConnection:
    """``con.execute(sql, parameters)``, stopped at once by a Ctrl-C.

    DuckDB looks for a signal only between the pieces of work the calling thread runs, and a
    piece can take minutes: a Ctrl-C then went unnoticed until the query ended (in about half
    of the tries on a busy 2-core machine). The query runs in a thread instead, while this one
    waits; a Ctrl-C interrupts the connection (``con.interrupt()``, which DuckDB honours at
    once, repeated until the query has ended: one that lands before the query has begun is
    otherwise forgotten) and is raised again as `KeyboardInterrupt`. The connection
    may stay busy after that, refusing ``close()`` (`connection` lets the process
    release it).

    Raises:
        KeyboardInterrupt: Ctrl-C while the query ran (the query was stopped).
        duckdb.Error: The query failed.
    """
    outcome: list[tuple[bool, object]] = []
    # Not the thread's is_alive(): a Ctrl-C that interrupts Thread.join() can leave a running
    # thread reported as ended (seen on Python 3.11), and the query then ran on unstopped.
    ended = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, con.execute(sql, parameters)))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append((False, exc))
        finally:
            ended.set()

    worker = threading.Thread(target=run, name="evalkit-query", daemon=True)
    try:
        worker.start()  # inside: a Ctrl-C may land while the thread starts
        while not ended.wait(0.05):
            pass
    except KeyboardInterrupt:
        # Until the query has ended: an interrupt that comes before DuckDB has begun the query
        # is forgotten when it begins (DuckDB clears the flag then).
        while worker.ident is not None and not ended.is_set():
            con.interrupt()
            ended.wait(0.05)
        raise
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    assert isinstance(value, duckdb.DuckDBPyConnection)
    return value
