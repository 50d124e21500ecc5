"""The shipped test server under trio.

``FakeOpenAIServer`` is written on anyio streams rather than ``aiohttp.web`` (asyncio only) so
that a user whose own tests run on trio can start it in-process beside the code under test
(docs/pages/design/small-test-server.md). These tests hold it to that: they fail if the server,
or a judged run against it, cannot run on trio.
"""

from __future__ import annotations

import httpx2
import pytest
import trio

from evalkit import Judge, PromptStep, create_scorer, run_evals
from evalkit.testing import FakeOpenAIServer, Request, Response

pytestmark = pytest.mark.parametrize("anyio_backend", ["trio"])

DATA = [{"id": f"i{n}", "input": f"question {n}", "output": f"answer {n}"} for n in range(6)]


async def test_a_judged_run_against_the_server_in_process_under_trio(judge_key: str) -> None:
    assert trio.lowlevel.current_task() is not None  # raises outside trio
    async with FakeOpenAIServer() as server:
        judge = Judge("fake-judge", "Grade.", base_url=server.base_url, api_key_env=judge_key)
        step = PromptStep("grade", lambda run: f"Grade {run.output!r} for {run.input!r}.")
        scorer = create_scorer("graded", judge=judge).generate_score(step)
        result = await run_evals(DATA, [scorer], store=None, cache=False, progress=False)
    assert result.status == "completed"
    assert result.summary.failed == 0
    assert server.stats.requests == len(DATA)


async def test_an_added_route_answers_under_trio() -> None:
    async def echo(request: Request) -> Response:
        return Response.json({"path": request.path, "params": request.params})

    async with FakeOpenAIServer() as server:
        server.add_route("GET", "/v1/echo/{name}", echo)
        async with httpx2.AsyncClient(base_url=server.url, timeout=60) as client:
            response = await client.get("/v1/echo/abc")
    assert response.json() == {"path": "/v1/echo/abc", "params": {"name": "abc"}}
