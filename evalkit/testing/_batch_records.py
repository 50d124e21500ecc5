"""What the local server's Batch API keeps: files, batches and the answers to batch lines.

A `StoredFile` is an uploaded (or generated) file; a `StoredBatch` is one batch
with its status, the times it moved, its request counts and its output and error files, shown as
``GET /v1/batches/{id}`` shows it; a `LineResult` is how the chat handler answered one
line. ``_batches.py`` serves them.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

BatchOutcome = Literal["completed", "failed", "expired"]
BatchErrorsIn = Literal["error_file", "output_file"]


@dataclass(frozen=True, slots=True)
class LineResult:
    """How the chat handler answered one batch line.

    ``status`` is the HTTP status, or None when no response came (then ``error`` holds the
    ``(code, message)`` of the error line); ``body`` is the decoded JSON body, or the raw text
    of a body that is not JSON.
    """

    status: int | None
    body: Any = None
    error: tuple[str, str] | None = None


LineHandler = Callable[[dict[str, Any], int], Awaitable[LineResult]]


@dataclass(slots=True)
class StoredFile:
    """An uploaded (or generated) file."""

    id: str
    purpose: str
    filename: str
    data: bytes
    created_at: int

    def to_object(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@dataclass(slots=True)
class StoredBatch:
    """A batch: its status, when it moved, its request counts and its files."""

    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, Any] | None
    created_at: int
    started: float
    outcome: BatchOutcome
    status: str = "validating"
    times: dict[str, int] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    errors: list[dict[str, Any]] | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def to_object(self) -> dict[str, Any]:
        stamps = (
            "in_progress_at",
            "finalizing_at",
            "completed_at",
            "failed_at",
            "expired_at",
            "cancelling_at",
            "cancelled_at",
        )
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": None if self.errors is None else {"object": "list", "data": self.errors},
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + 86400,
            **{name: self.times.get(name) for name in stamps},
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": self.metadata,
        }

    def move(self, status: str) -> None:
        self.status = status
        self.times[f"{status}_at"] = int(time.time())
