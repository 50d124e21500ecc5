"""A provider's Batch API through the official ``openai`` client: upload, submit, poll, read.

Every call goes through ``client.with_options(timeout=..., max_retries=...)``, so the client's
own back-off handles 429/5xx/timeouts — except ``batches.create``: the API takes no
idempotency key, so a create whose answer was lost may have made a batch; it is retried only
after an HTTP 429/5xx answer (no batch was made), never after a timeout.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import openai
from openai import AsyncOpenAI

from evalkit.errors import JudgeError
from evalkit.judge.policy._hints import retry_after
from evalkit.judge.transport._errors import translate_error
from evalkit.judge.transport._reply import Reply, parse_reply

ENDPOINT: Final = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass(frozen=True, slots=True)
class BatchState:
    """What a poll says about a batch."""

    id: str
    status: str
    output_file_id: str | None
    error_file_id: str | None
    problem: str | None


@dataclass(frozen=True, slots=True)
class Line:
    """One request's line in a batch's output or error file.

    ``status`` and ``body`` are the response's (``status`` None when the line has no
    response); ``code`` and ``message`` the line's ``error`` object.
    """

    status: int | None
    body: Any = None
    code: str | None = None
    message: str | None = None

    def outcome(self, label: str, batch_id: str) -> Reply | JudgeError:
        """The reply in this line, or the error it stands for (``label`` names the judge)."""
        if self.status == 200:
            try:
                return parse_reply(self.body, label)
            except JudgeError as exc:
                return exc
        if self.status is not None:
            return JudgeError(
                f"{label}: HTTP {self.status} {_error_message(self.body)} (in batch {batch_id})",
                code=str(self.status),
            )
        code = self.code or "batch_request_failed"
        message = self.message or "no message"
        return JudgeError(
            f"{label}: batch {batch_id} did not answer this request: {message} ({code})",
            code=code,
        )


def jsonl_line(custom_id: str, body: dict[str, Any]) -> bytes:
    """One request's line of a batch input file (with its newline)."""
    request = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


async def submit(
    client: AsyncOpenAI, data: bytes, *, timeout: float, max_retries: int
) -> tuple[str, str]:
    """Upload ``data`` (``purpose="batch"``) and create a 24-hour chat completions batch.

    Returns:
        ``(batch id, input file id)``.

    Raises:
        JudgeError: A call failed (``code`` the HTTP status, ``"timeout"``, ``"connection"``).
    """
    calls = client.with_options(timeout=timeout, max_retries=max_retries)
    what = "uploading a batch input file"
    try:
        uploaded = await calls.files.create(
            file=("evalkit-batch.jsonl", data, "application/jsonl"), purpose="batch"
        )
    except openai.OpenAIError as exc:
        raise translate_error(exc, what, timeout, max_retries, known=[client.api_key]) from exc
    once = client.with_options(timeout=timeout, max_retries=0)
    what = f"creating a batch from {uploaded.id}"
    attempt = 0
    while True:
        try:
            batch = await once.batches.create(
                input_file_id=uploaded.id,
                endpoint=ENDPOINT,
                completion_window="24h",
                metadata={"created_by": "evalkit"},
            )
        except openai.APIStatusError as exc:
            if attempt >= max_retries or not (exc.status_code == 429 or exc.status_code >= 500):
                raise translate_error(exc, what, timeout, attempt, known=[client.api_key]) from exc
            attempt += 1
            hint = retry_after(exc.response.headers)
            await anyio.sleep(min(hint if hint is not None else 0.5 * 2 ** (attempt - 1), 60.0))
        except openai.OpenAIError as exc:
            raise translate_error(exc, what, timeout, attempt, known=[client.api_key]) from exc
        else:
            return batch.id, uploaded.id


async def retrieve(
    client: AsyncOpenAI, batch_id: str, *, timeout: float, max_retries: int
) -> BatchState:
    """The batch's status and files.

    Raises:
        JudgeError: The poll failed (``code`` the HTTP status, ``"timeout"``, ...).
    """
    calls = client.with_options(timeout=timeout, max_retries=max_retries)
    try:
        batch = await calls.batches.retrieve(batch_id)
    except openai.OpenAIError as exc:
        raise translate_error(
            exc, f"polling batch {batch_id}", timeout, max_retries, known=[client.api_key]
        ) from exc
    problem = None
    errors = batch.errors.data if batch.errors is not None else None
    if errors:
        problem = "; ".join(
            f"{e.code or 'error'}: {e.message or ''}" + (f" (line {e.line})" if e.line else "")
            for e in errors[:3]
        )
    return BatchState(batch.id, batch.status, batch.output_file_id, batch.error_file_id, problem)


async def download(client: AsyncOpenAI, file_id: str, *, timeout: float, max_retries: int) -> bytes:
    """The content of a batch's output or error file.

    Raises:
        JudgeError: The download failed.
    """
    calls = client.with_options(timeout=timeout, max_retries=max_retries)
    try:
        content = await calls.files.content(file_id)
    except openai.OpenAIError as exc:
        raise translate_error(
            exc,
            f"downloading batch file {file_id}",
            timeout,
            max_retries,
            known=[client.api_key],
        ) from exc
    return content.content


def read_lines(*files: bytes) -> dict[str, Line]:
    """The lines of output and error files by ``custom_id`` (unreadable lines are skipped:
    their requests then have no result)."""
    lines: dict[str, Line] = {}
    for data in files:
        for raw in data.splitlines():
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(record, Mapping) or not isinstance(record.get("custom_id"), str):
                continue
            response = record.get("response")
            error = record.get("error")
            if isinstance(response, Mapping) and isinstance(response.get("status_code"), int):
                line = Line(response["status_code"], response.get("body"))
            elif isinstance(error, Mapping):
                code, message = error.get("code"), error.get("message")
                line = Line(None, None, str(code) if code else None, str(message or ""))
            else:
                line = Line(None, None, "bad_response", "the line has no response or error")
            lines[record["custom_id"]] = line
    return lines


def _error_message(body: Any) -> str:
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
    text = body if isinstance(body, str) else json.dumps(body)
    return text if len(text) <= 200 else text[:200] + "..."
