"""The viewer's shared read-only hold on the store lets a writer in, however busy it is."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb

from evalkit.store import migrate
from evalkit.view._reader import GAP, HOLD, Reader

WRITER = """
import sys, time
from evalkit.store import open_connection
started = time.monotonic()
con = open_connection(sys.argv[1], lock_timeout=15)
con.execute("INSERT INTO schema_version VALUES (99, now()::TIMESTAMP)")
con.close()
print(f"{time.monotonic() - started:.3f}")
"""


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
        time.sleep(0.2)
        done = subprocess.run(
            [sys.executable, "-c", WRITER, str(path)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        waited = float(done.stdout)
        time.sleep(HOLD + GAP + 0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        reader.close()
    assert waited < 10  # well within the writer's lock timeout
    assert seen[-1] == 99  # and the pages read what it wrote, once the store was reopened
    assert seen[0] != 99
