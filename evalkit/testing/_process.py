"""The test server in a process of its own, for benchmarks and end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def server_process(*args: str) -> Iterator[str]:
    """Run ``python -m evalkit.testing.server --port 0 ARGS`` and yield its base URL.

    A separate process gives the server its own core (and its own GIL), so a client measured
    against it is not slowed by it. The server is stopped when the block exits.

    Args:
        args: More command-line options, e.g. ``"--latency", "0.05"``.

    Raises:
        RuntimeError: The server did not start.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit.testing.server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()
        if "listening on " not in line:
            raise RuntimeError(f"the test server did not start: {line!r}")
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
