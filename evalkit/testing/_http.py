"""A lean HTTP/1.1 server on anyio streams: keep-alive, Content-Length bodies, a route table.

It is deliberately small: it serves the local test server only, so it parses exactly what HTTP
clients such as ``httpx``/``aiohttp`` send (a request line, headers, an optional
``Content-Length`` body) and answers with ``Content-Length`` responses. Routes are looked up by
``(method, path)`` in a dict, so new endpoints are one ``add_route`` call; a path may hold
``{name}`` segments (``/v1/files/{file_id}/content``), whose values the handler reads from
``request.params``. Why not ``aiohttp.web`` (trio): docs/pages/design/small-test-server.md,
and docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any

import anyio
from anyio.abc import SocketStream

_MAX_HEAD = 64 * 1024
_REASONS = {status.value: status.phrase for status in HTTPStatus}
_CLOSED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


@dataclass(frozen=True, slots=True)
class Request:
    """One parsed HTTP request; header names are lower-case.

    ``params`` holds the values of the route's ``{name}`` path segments.
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    params: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body decoded as JSON (raises ``ValueError`` when it is not)."""
        return json.loads(self.body)


@dataclass(slots=True)
class Response:
    """What a handler answers.

    ``abort`` closes the connection without sending anything (a dropped connection);
    ``close`` sends the response and then closes the connection. ``parts``, when set, is the
    body instead of ``body``, sent part by part as it is made: with ``Content-Length:
    length`` when ``length`` is given, else in chunks (``Transfer-Encoding: chunked``), so a
    body of any size is never held whole.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)
    close: bool = False
    abort: bool = False
    parts: Iterable[bytes] | None = None
    length: int | None = None

    @classmethod
    def json(cls, value: Any, status: int = 200, **kwargs: Any) -> Response:
        """A JSON response (compact encoding)."""
        body = json.dumps(value, separators=(",", ":")).encode()
        return cls(status, body, **kwargs)

    def encode(self, keep_alive: bool) -> bytes:
        """The response as sent: its head and its ``body`` (only the head with ``parts``)."""
        if self.parts is None:
            framing = f"Content-Length: {len(self.body)}"
        elif self.length is not None:
            framing = f"Content-Length: {self.length}"
        else:
            framing = "Transfer-Encoding: chunked"
        head = [
            f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Unknown')}",
            f"Content-Type: {self.content_type}",
            framing,
            "Connection: keep-alive" if keep_alive else "Connection: close",
        ]
        head.extend(f"{name}: {value}" for name, value in self.headers)
        body = self.body if self.parts is None else b""
        return "\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body


Handler = Callable[[Request], Awaitable[Response]]


class HttpServer:
    """Serves a route table over HTTP/1.1 with keep-alive, one task per connection."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        # Templated routes, looked up by segment count: (method, segments, handler).
        self._templates: dict[int, list[tuple[str, tuple[str, ...], Handler]]] = {}

    def add_route(self, method: str, path: str, handler: Handler) -> None:
        """Serve ``handler`` for ``method`` requests to ``path`` (query ignored).

        A segment written ``{name}`` matches any one non-empty segment; its value is passed in
        ``request.params[name]``. Exact paths win over templates.
        """
        method = method.upper()
        if "{" not in path:
            self.routes[(method, path)] = handler
            return
        segments = tuple(path.split("/"))
        templates = self._templates.setdefault(len(segments), [])
        templates[:] = [t for t in templates if t[:2] != (method, segments)]
        templates.append((method, segments, handler))

    async def dispatch(self, request: Request) -> Response:
        handler = self.routes.get((request.method, request.path))
        if handler is not None:
            return await handler(request)
        allowed = any(path == request.path for _, path in self.routes)
        parts = request.path.split("/")
        for method, segments, template_handler in self._templates.get(len(parts), ()):
            params = _match(segments, parts)
            if params is None:
                continue
            if method == request.method:
                return await template_handler(replace(request, params=params))
            allowed = True
        if allowed:
            return _error(405, f"Method {request.method} not allowed on {request.path}")
        return _error(404, f"No route for {request.method} {request.path}")

    async def serve_connection(self, stream: SocketStream) -> None:
        """Answer requests on one connection until the client or a response closes it."""
        buffer = bytearray()
        async with stream:
            while True:
                request = await _read_request(stream, buffer)
                if request is None:
                    return
                if isinstance(request, Response):
                    await _send(stream, request.encode(keep_alive=False))
                    return
                keep_alive = request.headers.get("connection", "").lower() != "close"
                try:
                    response = await self.dispatch(request)
                except Exception as exc:  # a handler bug must not take the host task down
                    problem = f"{type(exc).__name__}: {exc}"
                    response = _error(500, f"The handler failed: {problem}", "server_error")
                if response.abort:
                    return
                keep_alive = keep_alive and not response.close
                if not await _send(stream, response.encode(keep_alive)):
                    return
                if response.parts is not None and not await _send_parts(stream, response):
                    return  # the client stopped reading: the connection is done
                if not keep_alive:
                    return


async def _send(stream: SocketStream, data: bytes) -> bool:
    try:
        await stream.send(data)
    except _CLOSED:
        return False
    return True


async def _send_parts(stream: SocketStream, response: Response) -> bool:
    chunked = response.length is None
    for part in response.parts or ():
        if part and not await _send(
            stream, b"%x\r\n%s\r\n" % (len(part), part) if chunked else part
        ):
            return False
    return not chunked or await _send(stream, b"0\r\n\r\n")


async def _receive_into(stream: SocketStream, buffer: bytearray) -> bool:
    try:
        buffer += await stream.receive()
    except _CLOSED:
        return False
    return True


async def _read_request(stream: SocketStream, buffer: bytearray) -> Request | Response | None:
    """The next request, an error response for a bad one, or None when the client left."""
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        if len(buffer) > _MAX_HEAD:
            return _error(431, "Request header too large")
        if not await _receive_into(stream, buffer):
            return None
    lines = buffer[:end].decode("latin-1").split("\r\n")
    del buffer[: end + 4]
    try:
        method, target, _version = lines[0].split(" ", 2)
    except ValueError:
        return _error(400, f"Malformed request line {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return _error(411, "Chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        return _error(400, "Malformed Content-Length")
    while len(buffer) < length:
        if not await _receive_into(stream, buffer):
            return None
    body = bytes(buffer[:length])
    del buffer[:length]
    path, _, query = target.partition("?")
    return Request(method.upper(), path, query, headers, body)


def _match(template: tuple[str, ...], parts: list[str]) -> dict[str, str] | None:
    params: dict[str, str] = {}
    for expected, part in zip(template, parts, strict=True):
        if expected.startswith("{") and expected.endswith("}"):
            if not part:
                return None
            params[expected[1:-1]] = part
        elif expected != part:
            return None
    return params


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Response:
    return Response.json(error_body(message, kind), status)


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """An error body shaped like OpenAI's: ``{"error": {message, type, param, code}}``."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
