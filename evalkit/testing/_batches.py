"""The local server's Batch API: ``/v1/files`` and ``/v1/batches``, shaped like OpenAI's.

A batch goes ``validating`` → ``in_progress`` → ``finalizing`` → ``completed`` (or ``failed``,
``expired``, ``cancelling`` → ``cancelled``). Its JSONL lines are answered by the server's own
chat handler (the same rules, scripted replies, faults and latency as online requests), several
at a time, and the batch completes once they are answered and ``delay`` seconds have passed
since it was created. Successful answers go to the output file; answers with an HTTP error go to
the error file (or, when asked, to the output file with their status, as some compatible
servers do); requests that got no answer at all (an injected hang or dropped connection) go to
the error file with an ``error`` object instead of a response.

Ids are random, so a batch id remembered by a client never names another server's batch. What is
kept lives in ``_batch_records.py``; the input file and upload parsing in ``_batch_input.py``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio

from evalkit.testing._batch_input import ENDPOINT, parse_input, parse_multipart
from evalkit.testing._batch_records import (
    BatchErrorsIn,
    BatchOutcome,
    LineHandler,
    LineResult,
    StoredBatch,
    StoredFile,
)
from evalkit.testing._http import Request, Response, error_body

_PURPOSES = frozenset(
    {"assistants", "batch", "fine-tune", "vision", "user_data", "evals"},
)
_LINE_CONCURRENCY = 64
_ACTIVE = frozenset({"validating", "in_progress", "finalizing", "cancelling"})


class BatchService:
    """Serves ``/v1/files`` and ``/v1/batches`` for a
    [`FakeOpenAIServer`][evalkit.testing.FakeOpenAIServer].

    Args:
        answer: Answers one batch line's body (the chat handler); its second argument numbers
            the request.
        authorize: Returns an error response when a request may not use the API, else None.
        delay: Seconds from creation before a batch can complete.
        errors_in: Where answers with an HTTP error go.
        outcome: How the next batches end.
    """

    def __init__(
        self,
        answer: LineHandler,
        authorize: Callable[[Request], Response | None],
        *,
        delay: float,
        errors_in: BatchErrorsIn,
        outcome: BatchOutcome,
    ) -> None:
        self._answer = answer
        self._authorize = authorize
        self.delay = delay
        self.errors_in: BatchErrorsIn = errors_in
        self.outcome: BatchOutcome = outcome
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, StoredBatch] = {}
        self.files_uploaded = 0
        self.batches_created = 0
        self.lines_answered = 0
        self._spawn: Callable[..., object] | None = None

    def start(self, spawn: Callable[..., object]) -> None:
        """Process batches in tasks started with ``spawn`` (a task group's ``start_soon``)."""
        self._spawn = spawn

    def reset_counters(self) -> None:
        """Zero the counters (stored files and batches are kept)."""
        self.files_uploaded = self.batches_created = self.lines_answered = 0

    def routes(self) -> list[tuple[str, str, Callable[[Request], Awaitable[Response]]]]:
        """The ``(method, path, handler)`` triples to serve."""
        return [
            ("POST", "/v1/files", self._upload),
            ("GET", "/v1/files/{file_id}", self._file),
            ("GET", "/v1/files/{file_id}/content", self._content),
            ("POST", "/v1/batches", self._create),
            ("GET", "/v1/batches/{batch_id}", self._retrieve),
            ("POST", "/v1/batches/{batch_id}/cancel", self._cancel),
        ]

    # -- files --------------------------------------------------------------------------------

    def store(self, data: bytes, *, purpose: str, filename: str) -> StoredFile:
        stored = StoredFile(f"file-{uuid.uuid4().hex}", purpose, filename, data, int(time.time()))
        self.files[stored.id] = stored
        return stored

    async def _upload(self, request: Request) -> Response:
        if (refused := self._authorize(request)) is not None:
            return refused
        try:
            fields = parse_multipart(request.headers.get("content-type", ""), request.body)
        except ValueError as exc:
            return _bad_request(f"The upload is not multipart/form-data: {exc}")
        purpose = fields.get("purpose")
        upload = fields.get("file")
        if purpose is None or upload is None:
            return _bad_request("An upload needs the fields 'file' and 'purpose'")
        purpose_text = purpose[1].decode(errors="replace")
        if purpose_text not in _PURPOSES:
            return _bad_request(f"Unknown purpose {purpose_text!r}")
        stored = self.store(upload[1], purpose=purpose_text, filename=upload[0] or "upload")
        self.files_uploaded += 1
        return Response.json(stored.to_object())

    async def _file(self, request: Request) -> Response:
        if (refused := self._authorize(request)) is not None:
            return refused
        stored = self.files.get(request.params["file_id"])
        if stored is None:
            return _not_found("file", request.params["file_id"])
        return Response.json(stored.to_object())

    async def _content(self, request: Request) -> Response:
        if (refused := self._authorize(request)) is not None:
            return refused
        stored = self.files.get(request.params["file_id"])
        if stored is None:
            return _not_found("file", request.params["file_id"])
        return Response(200, stored.data, content_type="application/octet-stream")

    # -- batches ------------------------------------------------------------------------------

    async def _create(self, request: Request) -> Response:
        if (refused := self._authorize(request)) is not None:
            return refused
        try:
            params = request.json()
        except ValueError:
            return _bad_request("The request body is not valid JSON")
        if not isinstance(params, dict):
            return _bad_request("The request body must be a JSON object")
        stored = self.files.get(str(params.get("input_file_id")))
        if stored is None:
            return _not_found("file", str(params.get("input_file_id")))
        if stored.purpose != "batch":
            return _bad_request(f"File {stored.id} was uploaded with purpose {stored.purpose!r}")
        if params.get("endpoint") != ENDPOINT:
            return _bad_request(
                f"The evalkit test server batches only {ENDPOINT}, not {params.get('endpoint')!r}"
            )
        if params.get("completion_window") != "24h":
            return _bad_request("completion_window must be '24h'")
        if self._spawn is None:
            return Response.json(error_body("The server is not running", "server_error"), 500)
        metadata = params.get("metadata")
        batch = StoredBatch(
            id=f"batch_{uuid.uuid4().hex}",
            input_file_id=stored.id,
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata=metadata if isinstance(metadata, dict) else None,
            created_at=int(time.time()),
            started=time.monotonic(),
            outcome=self.outcome,
        )
        self.batches[batch.id] = batch
        self.batches_created += 1
        self._spawn(self._process, batch, stored.data)
        return Response.json(batch.to_object())

    async def _retrieve(self, request: Request) -> Response:
        if (refused := self._authorize(request)) is not None:
            return refused
        batch = self.batches.get(request.params["batch_id"])
        if batch is None:
            return _not_found("batch", request.params["batch_id"])
        return Response.json(batch.to_object())

    async def _cancel(self, request: Request) -> Response:
        if (refused := self._authorize(request)) is not None:
            return refused
        batch = self.batches.get(request.params["batch_id"])
        if batch is None:
            return _not_found("batch", request.params["batch_id"])
        if batch.status not in _ACTIVE:
            return _bad_request(f"Cannot cancel a batch with status {batch.status!r}")
        if batch.status != "cancelling":
            batch.move("cancelling")
            batch.scope.cancel()
        return Response.json(batch.to_object())

    async def _process(self, batch: StoredBatch, data: bytes) -> None:
        await anyio.sleep(0)  # answer the create request while still "validating"
        lines, problems = parse_input(data)
        if batch.outcome == "failed" and not problems:
            problems = [
                {
                    "code": "evalkit_injected_failure",
                    "message": "The evalkit test server was told to fail this batch",
                    "param": None,
                    "line": None,
                }
            ]
        if problems:
            batch.errors = problems
            batch.move("failed")
            return
        batch.total = len(lines)
        if batch.status == "validating":  # not cancelled meanwhile
            batch.move("in_progress")
        results: list[LineResult | None] = [None] * len(lines)
        with batch.scope:
            if batch.outcome != "expired":
                # A few workers taking lines in turn: cheaper than a task per line.
                remaining = iter(enumerate(lines))
                async with anyio.create_task_group() as group:
                    for _ in range(min(_LINE_CONCURRENCY, len(lines))):
                        group.start_soon(self._answer_lines, remaining, results)
            left = batch.started + self.delay - time.monotonic()
            if left > 0:
                await anyio.sleep(left)
        cancelled = batch.status == "cancelling"
        if not cancelled and batch.outcome != "expired":
            batch.move("finalizing")
        ended = "cancelled" if cancelled else "expired" if batch.outcome == "expired" else None
        self._write_results(batch, lines, results, ended)
        batch.move(ended or "completed")

    async def _answer_lines(
        self, lines: Iterator[tuple[int, dict[str, Any]]], results: list[LineResult | None]
    ) -> None:
        for index, line in lines:
            self.lines_answered += 1
            results[index] = await self._answer(line["body"], self.lines_answered)

    def _write_results(
        self,
        batch: StoredBatch,
        lines: list[dict[str, Any]],
        results: list[LineResult | None],
        ended: str | None,
    ) -> None:
        output: list[bytes] = []
        errors: list[bytes] = []
        for line, result in zip(lines, results, strict=True):
            record: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex}"}
            record["custom_id"] = line["custom_id"]
            if result is None:
                what = ended or "expired"
                code = f"batch_{what}"
                how = "expired" if what == "expired" else "was cancelled"
                message = f"This request was not executed before the batch {how}"
                record |= {"response": None, "error": {"code": code, "message": message}}
            elif result.status is None:
                code, message = result.error or ("server_error", "No response")
                record |= {"response": None, "error": {"code": code, "message": message}}
            else:
                response = {
                    "status_code": result.status,
                    "request_id": f"req_{uuid.uuid4().hex}",
                    "body": result.body,
                }
                record |= {"response": response, "error": None}
            encoded = json.dumps(record, separators=(",", ":")).encode()
            ok = result is not None and result.status == 200
            if ok:
                batch.completed += 1
            else:
                batch.failed += 1
            to_output = ok or (
                result is not None and result.status is not None and self.errors_in == "output_file"
            )
            (output if to_output else errors).append(encoded)
        if output:
            stored = self.store(
                b"\n".join(output) + b"\n", purpose="batch_output", filename="batch_output.jsonl"
            )
            batch.output_file_id = stored.id
        if errors:
            stored = self.store(
                b"\n".join(errors) + b"\n", purpose="batch_output", filename="batch_errors.jsonl"
            )
            batch.error_file_id = stored.id

    def batch_objects(self) -> list[dict[str, Any]]:
        """Every batch, as ``GET /v1/batches/{id}`` shows it, oldest first."""
        return [batch.to_object() for batch in self.batches.values()]


def _bad_request(message: str) -> Response:
    return Response.json(error_body(message, "invalid_request_error"), 400)


def _not_found(kind: str, name: str) -> Response:
    return Response.json(error_body(f"No {kind} with id {name!r}", "invalid_request_error"), 404)
