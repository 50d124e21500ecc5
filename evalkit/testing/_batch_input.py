"""What clients send the local server's Batch API: JSONL input files and multipart uploads.

`parse_input` splits a batch input file into its lines and the problems that fail the
batch, with OpenAI's checks; `parse_multipart` reads the fields of a ``POST /v1/files``
upload. Neither touches the server's state.
"""

from __future__ import annotations

import json
from typing import Any

ENDPOINT = "/v1/chat/completions"
"""The one endpoint the test server batches; every input line's ``url`` must name it."""


def parse_input(data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The lines of a batch input file, and the problems that fail the batch (OpenAI's checks:
    JSON objects with a unique ``custom_id``, ``method`` POST, the batch's ``url``, a ``body``)."""
    lines: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    seen: set[str] = set()

    def problem(number: int, code: str, message: str) -> None:
        problems.append({"code": code, "message": message, "param": None, "line": number})

    for number, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            problem(number, "invalid_json_line", "This line is not valid JSON")
            continue
        if not isinstance(line, dict):
            problem(number, "invalid_json_line", "This line is not a JSON object")
            continue
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            problem(number, "missing_required_parameter", "custom_id is required")
        elif custom_id in seen:
            problem(number, "duplicate_custom_id", f"custom_id {custom_id!r} is used twice")
        else:
            seen.add(custom_id)
        if line.get("method") != "POST":
            problem(number, "invalid_method", "method must be POST")
        if line.get("url") != ENDPOINT:
            problem(number, "invalid_url", f"url must be {ENDPOINT}")
        if not isinstance(line.get("body"), dict):
            problem(number, "missing_required_parameter", "body must be a JSON object")
        lines.append(line)
    if not lines and not problems:
        problems.append(
            {
                "code": "empty_file",
                "message": "The input file is empty",
                "param": None,
                "line": None,
            }
        )
    return lines, problems


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a ``multipart/form-data`` body: name → (file name or None, content)."""
    kind, _, rest = content_type.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        raise ValueError(f"content type {kind.strip()!r}")
    boundary = _param(rest, "boundary")
    if not boundary:
        raise ValueError("no boundary")
    fields: dict[str, tuple[str | None, bytes]] = {}
    delimiter = b"--" + boundary.encode("latin-1")
    for part in body.split(delimiter)[1:]:
        if part.startswith(b"--"):
            break
        part = part.removeprefix(b"\r\n").removesuffix(b"\r\n")
        head, separator, content = part.partition(b"\r\n\r\n")
        if not separator:
            raise ValueError("a part has no header")
        disposition = ""
        for header in head.decode("latin-1").split("\r\n"):
            name, _, value = header.partition(":")
            if name.strip().lower() == "content-disposition":
                disposition = value
        field_name = _param(disposition, "name")
        if field_name is None:
            raise ValueError("a part has no name")
        fields[field_name] = (_param(disposition, "filename"), content)
    return fields


def _param(header: str, name: str) -> str | None:
    for item in header.split(";"):
        key, equals, value = item.strip().partition("=")
        if equals and key.strip().lower() == name:
            return value.strip().strip('"')
    return None
