"""The viewer's shared read-only hold on the store lets a writer in, however busy it is."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from evalkit.store import migrate
from evalkit.view._reader import Reader

WRITER = """
import sys, time
from evalkit.store import connection
started = time.monotonic()
with connection(sys.argv[1], lock_timeout=60) as con:
    con.execute("INSERT INTO schema_version VALUES (99, now()::TIMESTAMP)")
print(f"{time.monotonic() - started:.3f}")
"""


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_writer_gets_the_store_while_pages_keep_reading(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as con:
        migrate(con, where=str(path))
    reader = Reader(path)
    stop = threading.Event()
    seen: list[int] = []

    def busy() -> None:  # requests back to back, several at once: never idle
        while not stop.is_set():
            with reader.cursor() as con:
                row = con.execute("SELECT max(version) FROM schema_version").fetchone()
                assert row is not None
                seen.append(row[0])
                time.sleep(0.01)

    threads = [threading.Thread(target=busy) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(seen) >= 3, "the pages' first reads")
        done = subprocess.run(
            [sys.executable, "-c", WRITER, str(path)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        waited = float(done.stdout)
        # The pages see the new row once the store is reopened, about HOLD + GAP from now.
        wait_until(lambda: seen[-1] == 99, "a read of the written row")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        reader.close()
    # Within the writer's lock timeout, however often a loaded machine has it miss the store's
    # GAP: with requests back to back and no HOLD, it would never get in.
    assert waited < 60
    assert seen[-1] == 99  # and the pages read what it wrote, once the store was reopened
    assert seen[0] != 99
