"""T1: the shipped test server's HTTP layer against ``aiohttp.web``, on the same route.

Both serve one JSON chat completion for ``POST /v1/chat/completions`` (reading the request's
JSON body, as the real handler does) on 127.0.0.1; one ``aiohttp`` client in the same process
sends ``--requests`` requests over ``--connections`` keep-alive connections to each in turn.
Prints requests per second for each and their ratio. The client shares the core with the
server, so the figures are what a test sees end to end, not a server's ceiling.

It also checks the reason the test server is not ``aiohttp.web``: whether each serves under
trio (docs/pages/design/small-test-server.md).

Run: ``python -m tests.benchmarks.bench_test_server [--requests 3000] [--connections 16]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import aiohttp
import anyio
from aiohttp import web

from evalkit.testing._http import HttpServer, Request, Response

REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"score": 1}'},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
}
BODY = {"model": "m", "messages": [{"role": "user", "content": "Grade this answer. " * 10}]}


async def _evalkit_chat(request: Request) -> Response:
    request.json()
    return Response.json(REPLY)


async def _aiohttp_chat(request: web.Request) -> web.Response:
    await request.json()
    return web.Response(
        body=json.dumps(REPLY, separators=(",", ":")).encode(), content_type="application/json"
    )


async def _drive(url: str, requests: int, connections: int) -> float:
    """Requests per second of ``requests`` POSTs, ``connections`` at a time."""
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        left = requests

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                async with session.post(url, json=BODY) as response:
                    assert response.status == 200
                    await response.read()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        return requests / (time.perf_counter() - start)


async def _evalkit_rate(requests: int, connections: int) -> float:
    http = HttpServer()
    http.add_route("POST", "/v1/chat/completions", _evalkit_chat)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, http.serve_connection)
        rate = await _drive(f"http://127.0.0.1:{port}/v1/chat/completions", requests, connections)
        group.cancel_scope.cancel()
    return rate


async def _aiohttp_rate(requests: int, connections: int) -> float:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _aiohttp_chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        return await _drive(f"http://127.0.0.1:{port}/v1/chat/completions", requests, connections)
    finally:
        await runner.cleanup()


def _under_trio(start: Callable[[], Awaitable[object]]) -> str:
    try:
        anyio.run(start, backend="trio")
    except BaseException as exc:  # what trio says when asyncio code runs on it
        return f"no ({type(exc).__name__})"
    return "yes"


async def _start_evalkit() -> None:
    from evalkit.testing import FakeOpenAIServer

    async with FakeOpenAIServer():
        pass


async def _start_aiohttp() -> None:
    runner = web.AppRunner(web.Application())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    # Alternate, best of three each, so a neighbour's load spike hits both alike.
    ours, theirs = [], []
    for _ in range(3):
        ours.append(asyncio.run(_evalkit_rate(args.requests, args.connections)))
        theirs.append(asyncio.run(_aiohttp_rate(args.requests, args.connections)))
    print(f"evalkit.testing HTTP layer: {max(ours):,.0f} requests/s (runs: "
          + ", ".join(f"{r:,.0f}" for r in ours) + ")")  # fmt: skip
    print(f"aiohttp.web:                {max(theirs):,.0f} requests/s (runs: "
          + ", ".join(f"{r:,.0f}" for r in theirs) + ")")  # fmt: skip
    print(
        f"T1 test server vs aiohttp.web: {max(ours) / max(theirs):.2f}x the requests/s;"
        f" serves under trio: evalkit.testing {_under_trio(_start_evalkit)},"
        f" aiohttp.web {_under_trio(_start_aiohttp)}"
    )


if __name__ == "__main__":
    main()
