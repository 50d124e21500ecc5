"""Stale ``running`` detection: who writes a running experiment, and whether it still lives.

A run records its process id and host in its ``experiments`` row and refreshes
``heartbeat_at`` with every flush. A row still ``running`` whose process no longer exists on
this host was killed (SIGKILL, power loss): readers report it as ``interrupted``. A row
written from another host cannot be checked and keeps its stored status. Why not a heartbeat
timeout: docs/pages/design/stale-running-by-pid.md.
"""

from __future__ import annotations

import pyarrow as pa

from evalkit._arrow_arrays import arrow_array
from evalkit._proc import process_alive, this_host


def effective_status(status: str, pid: int | None, host: str | None) -> str:
    """``interrupted`` for a ``running`` row whose writer process is gone, else ``status``."""
    if status != "running" or pid is None or host != this_host():
        return status
    return status if process_alive(pid) else "interrupted"


def with_effective_status(table: pa.Table) -> pa.Table:
    """Replace ``status`` by `effective_status` and drop the writer columns."""
    if "writer_pid" not in table.column_names:
        return table
    statuses = [
        effective_status(s, p, h)
        for s, p, h in zip(
            table["status"].to_pylist(),
            table["writer_pid"].to_pylist(),
            table["writer_host"].to_pylist(),
            strict=True,
        )
    ]
    index = table.column_names.index("status")
    table = table.set_column(index, "status", arrow_array(statuses, pa.string()))
    return table.drop_columns(["writer_pid", "writer_host"])
