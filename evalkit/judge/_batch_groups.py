"""The calls of batch mode and the batches that hold them (the collector's bookkeeping)."""

from __future__ import annotations

from collections import deque
from typing import Any

import anyio

from evalkit.errors import JudgeError
from evalkit.judge import _batch_api as api
from evalkit.judge.transport._reply import Reply


class Entry:
    """One call waiting for its batch's answer."""

    __slots__ = (
        "body",
        "custom_id",
        "group",
        "label",
        "left",
        "line",
        "outcome",
        "request_hash",
        "wake",
    )

    def __init__(self, body: dict[str, Any], request_hash: bytes, label: str) -> None:
        self.body = body
        self.line = b""  # its line of the input file, once it joins a batch to send
        self.request_hash = request_hash
        self.custom_id = request_hash.hex()
        self.label = label
        self.outcome: Reply | JudgeError | None = None
        self.wake = anyio.Event()
        self.group: Group | None = None
        self.left = False


class Group:
    """The calls of one batch: being gathered, submitted, or remembered from an earlier run."""

    __slots__ = (
        "batch_id",
        "bytes",
        "entries",
        "failure",
        "full",
        "last_arrival",
        "leader",
        "lines",
        "next_poll",
        "poll_failures",
        "queue",
        "remembered",
        "resumed",
        "sealed",
    )

    def __init__(self, *, batch_id: str | None = None) -> None:
        self.batch_id = batch_id
        self.resumed = batch_id is not None
        self.sealed = self.resumed
        self.entries: dict[str, Entry] = {}
        self.bytes = 0  # of the input file
        self.queue: deque[Entry] = deque()  # candidates for leadership, in arrival order
        self.leader: Entry | None = None
        self.full = anyio.Event()
        self.last_arrival = 0.0
        self.next_poll = 0.0
        self.poll_failures = 0
        self.lines: dict[str, api.Line] | None = None
        self.failure: JudgeError | None = None
        self.remembered = 0  # journal requests of a resumed batch not yet asked for
