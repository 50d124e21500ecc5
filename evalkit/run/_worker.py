"""What a ``process`` executor's worker does as it starts: leave Ctrl-C to the driver, and
end itself when the driver is gone.

A Ctrl-C in a terminal reaches the whole process group; a worker that took it would die
mid-shard and break the pool, so workers ignore SIGINT and the driver stops them. A driver
killed outright (SIGKILL, the OOM killer) cannot stop anything: each worker watches its
parent and exits once it is no longer the driver (its parent pid changes when the driver
dies). See docs/pages/design/sharded-stop.md.
"""

from __future__ import annotations

import os
import signal
import threading
import time

#: Seconds between two looks at the worker's parent.
PARENT_POLL = 0.5


def start_worker() -> None:
    """Run in each worker process (started by the driver) before its first shard."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watcher = threading.Thread(
        target=_watch_parent, args=(os.getppid(),), name="evalkit-parent-watch", daemon=True
    )
    watcher.start()


def _watch_parent(driver_pid: int) -> None:
    while os.getppid() == driver_pid:
        time.sleep(PARENT_POLL)
    # The driver is gone, and nobody will read this worker's results: end now, without
    # running exit handlers that could wait on the pool's queues.
    os._exit(1)
