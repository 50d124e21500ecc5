"""Which process on which host: what a run records in its ``experiments`` row and what a
reader checks before calling a ``running`` row interrupted (the store's liveness, the run's
resume plan). Why a process id and not a heartbeat: docs/pages/design/stale-running-by-pid.md.
"""

from __future__ import annotations

import os
import socket


def this_host() -> str:
    """The host name recorded with a running experiment."""
    return socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
