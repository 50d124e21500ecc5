"""The viewer's application over HTTP (no browser): errors, headers, the JSON endpoints."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from evalkit.view import create_app
from tests.view.conftest import Store


@pytest.fixture
async def client(store: Store) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(create_app(store.path))) as running:
        yield running


async def test_pages_forbid_other_scripts_and_say_their_server_time(client: TestClient) -> None:
    response = await client.get("/")
    assert response.status == 200
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy
    assert response.headers["Server-Timing"].startswith("app;dur=")


async def test_an_unknown_run_is_a_404_page_that_names_it(client: TestClient) -> None:
    response = await client.get("/experiments/no-such-run")
    assert response.status == 404
    assert "no experiment with id &#39;no-such-run&#39;" in await response.text()
    response = await client.get("/compare?baseline=no-such-run&candidate=x")
    assert response.status == 404


async def test_an_item_not_in_the_run_is_a_404(client: TestClient, store: Store) -> None:
    response = await client.get(f"/experiments/{store.candidate}/item?id=nope")
    assert response.status == 404
    assert "has no item" in await response.text()
    response = await client.get(f"/experiments/{store.candidate}/item")
    assert response.status == 400


async def test_a_request_for_another_host_name_is_refused(client: TestClient) -> None:
    # A page elsewhere reaching the viewer through a DNS name rebound to 127.0.0.1.
    response = await client.get("/", headers={"Host": "attacker.example:8765"})
    assert response.status == 421
    response = await client.get("/", headers={"Host": "localhost:8765"})
    assert response.status == 200


async def test_the_json_endpoints_hold_what_the_pages_show(
    client: TestClient, store: Store
) -> None:
    runs = await (await client.get("/api/?name=night")).json()
    assert [r["id"] for r in runs["runs"]] == [store.candidate, store.baseline]
    assert set(runs["trends"]["nightly"]) == {"exact", "token-f1", "rubric"}
    compare = await (
        await client.get(
            f"/api/compare?baseline={store.baseline}&candidate={store.candidate}&scorer=exact"
        )
    ).json()
    assert compare["total"] == 63
    assert compare["rows"][0]["delta"] == -1.0
    assert compare["summary"][0]["down"] == 63
    run = await (await client.get(f"/api/experiments/{store.candidate[:6]}")).json()
    assert run["run"]["id"] == store.candidate
    assert [s["histogram"]["counts"][9] for s in run["scorers"][:1]] == [87]
