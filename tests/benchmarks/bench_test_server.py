"""T1: the shipped test server's HTTP layer against ``aiohttp.web`` and ``h11``, on one route.

Each serves one JSON chat completion for ``POST /v1/chat/completions`` (reading the request's
JSON body, as the real handler does) on 127.0.0.1; one ``aiohttp`` client in the same process
sends ``--requests`` requests over ``--connections`` keep-alive connections to each in turn.
Prints requests per second for each and their ratios. The ``h11`` server is what replacing
the hand-written parsing and framing with that library (sans-I/O, so it keeps anyio streams and
trio) would give: ``h11`` reads the request and frames the response, anyio streams carry them.
The client shares the core with the server, so the figures are what a test sees end to end,
not a server's ceiling.

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
import h11  # installed with httpcore2, openai's HTTP client
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


async def _h11_connection(stream: anyio.abc.SocketStream) -> None:
    """One keep-alive connection served with ``h11``: the same route and reply."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
    async with stream:
        while True:
            body = bytearray()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    try:
                        conn.receive_data(await stream.receive())
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    return
            response = await _evalkit_chat(Request("POST", "/", "", {}, bytes(body)))
            headers = [
                ("content-type", response.content_type),
                ("content-length", str(len(response.body))),
                ("connection", "keep-alive"),
            ]
            await stream.send(conn.send(h11.Response(status_code=200, headers=headers)))
            await stream.send(conn.send(h11.Data(data=response.body)))
            await stream.send(conn.send(h11.EndOfMessage()))
            conn.start_next_cycle()


async def _h11_rate(requests: int, connections: int) -> float:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, _h11_connection)
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
    # Alternate, best of three each, so a neighbour's load spike hits all alike.
    rates: dict[str, list[float]] = {"evalkit.testing": [], "aiohttp.web": [], "h11": []}
    for _ in range(3):
        rates["evalkit.testing"].append(asyncio.run(_evalkit_rate(args.requests, args.connections)))
        rates["aiohttp.web"].append(asyncio.run(_aiohttp_rate(args.requests, args.connections)))
        rates["h11"].append(asyncio.run(_h11_rate(args.requests, args.connections)))
    for name, found in rates.items():
        runs = ", ".join(f"{r:,.0f}" for r in found)
        print(f"{name + ':':17} {max(found):,.0f} requests/s (runs: {runs})")
    ours = max(rates["evalkit.testing"])
    versus = f"{ours / max(rates['aiohttp.web']):.2f}x aiohttp.web's requests/s"
    versus += f", {ours / max(rates['h11']):.2f}x h11's"
    print(
        f"T1 test server: {versus}; serves under trio: evalkit.testing"
        f" {_under_trio(_start_evalkit)}, aiohttp.web {_under_trio(_start_aiohttp)}"
    )


if __name__ == "__main__":
    main()
