"""The run list a page at a time (issue 30 item 9): 131 runs over three pages, the filters,
the trend charts and the links to each run's baseline on every page.

Plain requests to ``evalkit view`` in its own process over :func:`many_runs`'s store.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.view.conftest import (
    MANY,
    ManyRuns,
    many_mean,
    many_name,
    many_status,
    many_verdict,
)

PAGE = 50


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        assert response.status == 200
        return str(response.read().decode())


def _api(viewer: str, query: str = "") -> dict[str, Any]:
    found: dict[str, Any] = json.loads(_get(f"{viewer}api/?{query}"))
    return found


def _ids(data: dict[str, Any]) -> list[str]:
    return [run["id"] for run in data["runs"]]


def _index(run_id: str) -> int:
    return int(run_id[3:])


def test_the_run_list_shows_a_page_at_a_time(many_viewer: str, many_runs: ManyRuns) -> None:
    order = list(many_runs.order)
    first = _api(many_viewer)
    assert (first["total"], first["pages"], first["page"]) == (MANY + 1, 3, 1)
    assert _ids(first) == order[:PAGE]  # newest first
    assert _ids(_api(many_viewer, "page=2")) == order[PAGE : 2 * PAGE]
    last = _api(many_viewer, "page=3")
    assert _ids(last) == order[2 * PAGE :]
    assert _ids(last)[-1] == many_runs.template
    # Past the last page, however far: the last page; not a number or below 1: the first.
    for query in ("page=4", "page=9223372036854775807"):
        past = _api(many_viewer, query)
        assert (past["page"], _ids(past)) == (3, _ids(last))
    for query in ("page=0", "page=-3", "page=two"):
        assert _ids(_api(many_viewer, query)) == order[:PAGE]
    # Every status of the store, and its names, whatever the page shows.
    assert last["statuses"] == ["cancelled", "completed"]
    assert last["names"] == ["nightly", "smoke", "template"]


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        ("failed=1", lambda i: many_verdict(i) == "failed"),
        ("name=NIGHT", lambda i: many_name(i) == "nightly"),
        ("status=cancelled", lambda i: many_status(i) == "cancelled"),
        ("name=nightly&failed=1", lambda i: many_name(i) == "nightly"
         and many_verdict(i) == "failed"),
    ],
)  # fmt: skip
def test_the_filters_page_what_they_keep(many_viewer: str, query: str, kept: Any) -> None:
    expected = [f"run{i:04d}" for i in reversed(range(MANY)) if kept(i)]
    found: list[str] = []
    pages = _api(many_viewer, query)["pages"]
    assert pages == -(-len(expected) // PAGE)
    for page in range(1, pages + 1):
        data = _api(many_viewer, f"{query}&page={page}")
        assert data["total"] == len(expected)
        found += _ids(data)
    assert found == expected


def _chosen(many_runs: ManyRuns, run: dict[str, Any], options: dict[str, list[Any]]) -> str | None:
    """The run ``evalkit.compare`` chooses with ``latest`` for ``run`` among the runs started
    before it (the viewer mirrors it: a baseline is an earlier night); ``options`` keeps each
    name's candidates (``baseline_candidates`` opens the store)."""
    from evalkit.compare import LATEST, baseline_candidates, choose_baseline
    from evalkit.experiment_file import RegressionSection

    if run["name"] not in options:
        options[run["name"]] = baseline_candidates(many_runs.path, LATEST, name=run["name"])
    earlier = [
        option
        for option in options[run["name"]]
        if option.run is not None and option.run["id"] < run["id"]  # run0007 is older
    ]
    chosen = choose_baseline(
        many_runs.path,
        earlier,
        ref=LATEST,
        candidate=run,
        min_paired=RegressionSection().min_paired,
    )
    return None if chosen.run is None else str(chosen.run["id"])


def test_every_page_links_each_run_to_the_baseline_latest_chooses(
    many_viewer: str, many_runs: ManyRuns
) -> None:
    options: dict[str, list[Any]] = {}
    for query in ("page=2", "page=3", "failed=1&page=2"):
        data = _api(many_viewer, query)
        for run in data["runs"]:
            chosen = (run["compare_with"] or {}).get("id")
            assert chosen == _chosen(many_runs, run, options), (query, run["id"])
        body = _get(f"{many_viewer}?{query}")
        links = re.findall(r'href="/compare\?baseline=(\w+)&amp;candidate=(\w+)"', body)
        assert {c: b for b, c in links} == {
            r["id"]: r["compare_with"]["id"] for r in data["runs"] if r["compare_with"]
        }
    # On the last page: the oldest nights have no earlier passing run to compare with.
    oldest = {r["id"]: r for r in _api(many_viewer, "page=3")["runs"]}
    assert oldest["run0000"]["compare_with"] is None
    assert oldest["run0004"]["compare_with"] is None  # the first smoke night
    # run0003 failed and run0006 was cancelled: run0007 compares with run0005.
    assert oldest["run0007"]["compare_with"] == {
        "id": "run0005",
        "reason": "newest passing run",
        "stored": False,
    }


def test_each_trend_draws_the_newest_runs_of_its_name_from_the_page_back(
    many_viewer: str,
) -> None:
    data = _api(many_viewer, "page=2")
    shown = _ids(data)  # run0079 ... run0030
    assert set(data["trends"]) == {"nightly", "smoke"}
    charted: set[int] = set()
    for name in ("nightly", "smoke"):
        newest = max(_index(i) for i in shown if many_name(_index(i)) == name)
        runs = [i for i in range(newest + 1) if many_name(i) == name][-PAGE:]  # oldest first
        assert data["trends"][name]["exact_match"] == [
            [f"run{i:04d}", many_mean(i)] for i in runs
        ], name
        charted.update(runs)
    assert min(charted) > 0  # 50 nightly nights back from run0078 start at run0016
    # Failed nights: the listed ones and those the charts draw, marked on the page.
    assert set(data["failed_runs"]) == {
        f"run{i:04d}" for i in charted if many_verdict(i) == "failed"
    }
    # A filtered list's charts draw only what it keeps.
    failed = _api(many_viewer, "failed=1")
    assert {run_id for run_id, _ in failed["trends"]["nightly"]["exact_match"]} == {
        f"run{i:04d}"
        for i in range(MANY)
        if many_name(i) == "nightly" and many_verdict(i) == "failed"
    }


def test_the_pager_keeps_the_filters(many_viewer: str) -> None:
    body = _get(many_viewer)
    assert "131 runs" in body
    assert 'rel="next" href="?page=2"' in body
    assert 'rel="prev"' not in body
    assert body.count('class="run-link"') == PAGE
    body = _get(f"{many_viewer}?name=night&status=completed&page=2")
    assert 'rel="prev" href="?name=night&amp;status=completed&amp;page=1"' in body
    assert 'rel="next"' not in body  # 94 completed nightly nights: two pages
    assert "94 runs" in body
    # A list of one page has no pager, and its page 2 is page 1.
    body = _get(f"{many_viewer}?failed=1&page=2")
    assert "pager" not in body
    assert body.count('class="run-link"') == sum(many_verdict(i) == "failed" for i in range(MANY))
    body = _get(f"{many_viewer}?page=2")
    assert 'rel="prev" href="?page=1"' in body
    assert 'rel="next" href="?page=3"' in body
    assert "page <b>2</b> of 3" in body


def test_a_run_is_found_by_its_id_or_a_prefix_that_names_it_alone(
    many_viewer: str, many_runs: ManyRuns
) -> None:
    # The run, item and compare pages read the runs they show, not every run of the store.
    data = json.loads(_get(f"{many_viewer}api/experiments/run0129"))
    assert data["run"]["id"] == "run0129"
    assert [r["id"] for r in data["siblings"]] == [
        f"run{i:04d}" for i in reversed(range(129)) if many_name(i) == "smoke"
    ]
    template = json.loads(_get(f"{many_viewer}api/experiments/{many_runs.template[:6]}"))
    assert template["run"]["id"] == many_runs.template
    item = json.loads(_get(f"{many_viewer}api/experiments/run0129/item?id=q1&baseline=run0124"))
    assert (item["run"]["id"], item["baseline"]["id"]) == ("run0129", "run0124")
    pair = json.loads(_get(f"{many_viewer}api/compare?baseline=run0124&candidate=run0129"))
    assert (pair["baseline"]["id"], pair["candidate"]["id"]) == ("run0124", "run0129")
    for ref, problem in (("run012", "matches several experiments"), ("run9", "no experiment")):
        with pytest.raises(urllib.error.HTTPError) as info:
            _get(f"{many_viewer}api/experiments/{ref}")
        assert info.value.code == 404
        assert problem in info.value.read().decode()
