"""The viewer over HTTP (no browser): errors, headers, the Host check, the JSON endpoints.

Plain requests to ``evalkit view`` in its own process (the session's viewer): synchronous,
so they mix with the browser tests, whose Playwright runs an event loop of its own.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tests.view.conftest import Store


def _get(url: str, **headers: str) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def _json(url: str) -> Any:
    status, _, body = _get(url)
    assert status == 200, body
    return json.loads(body)


def test_pages_forbid_other_scripts_and_say_their_server_time(viewer: str) -> None:
    status, headers, _ = _get(viewer)
    assert status == 200
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert headers["Server-Timing"].startswith("app;dur=")


def test_an_unknown_run_is_a_404_page_that_names_it(viewer: str) -> None:
    status, _, body = _get(viewer + "experiments/no-such-run")
    assert status == 404
    assert "no experiment with id &#39;no-such-run&#39;" in body
    assert _get(viewer + "compare?baseline=no-such-run&candidate=x")[0] == 404


def test_an_item_not_in_the_run_is_a_404(viewer: str, store: Store) -> None:
    status, _, body = _get(f"{viewer}experiments/{store.candidate}/item?id=nope")
    assert status == 404
    assert "has no item" in body
    assert _get(f"{viewer}experiments/{store.candidate}/item")[0] == 400


def test_a_request_for_another_host_name_is_refused(viewer: str) -> None:
    # A page elsewhere reaching the viewer through a DNS name rebound to 127.0.0.1.
    assert _get(viewer, Host="attacker.example:8765")[0] == 421
    assert _get(viewer, Host="localhost:8765")[0] == 200


def test_the_json_endpoints_hold_what_the_pages_show(viewer: str, store: Store) -> None:
    runs = _json(viewer + "api/?name=night")
    assert [r["id"] for r in runs["runs"]] == [store.candidate, store.baseline]
    assert set(runs["trends"]["nightly"]) == {"exact", "token-f1", "rubric"}
    compare = _json(
        f"{viewer}api/compare?baseline={store.baseline}&candidate={store.candidate}&scorer=exact"
    )
    assert compare["total"] == 63
    assert compare["rows"][0]["delta"] == -1.0
    assert compare["summary"][0]["down"] == 63
    run = _json(f"{viewer}api/experiments/{store.candidate[:6]}")
    assert run["run"]["id"] == store.candidate
    assert run["scorers"][0]["histogram"]["counts"][9] == 87


def test_an_item_page_shows_the_judges_finish_and_request_time(viewer: str, store: Store) -> None:
    status, _, body = _get(f"{viewer}experiments/{store.candidate}/item?id=q000")
    assert status == 200, body
    assert "<dt>Finish</dt><dd>stop</dd>" in body
    assert "<dt>Request</dt>" in body
    assert "<dt>Queued</dt>" in body
