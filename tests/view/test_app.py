"""The viewer over HTTP (no browser): errors, headers, the Host check, the JSON endpoints.

Plain requests to ``evalkit view`` in its own process (the session's viewer): synchronous,
so they mix with the browser tests, whose Playwright runs an event loop of its own.
"""

from __future__ import annotations

import gzip
import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import Judge, create_scorer, run_evals
from evalkit.testing import FakeOpenAIServer
from tests.cli.conftest import run_cli, wait_for
from tests.store.test_schema import STORE_V7
from tests.truncated import CUT_REPLY, two_nights
from tests.view.conftest import (
    BASELINE_REASON,
    HOSTILE,
    Store,
    candidate_wrong,
    start_viewer,
    stop,
)


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
    assert set(runs["trends"]["nightly"]) == {"exact", "token_f1", "rubric"}
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


def _items(viewer: str, run: str, query: str = "") -> dict[str, Any]:
    found: dict[str, Any] = _json(f"{viewer}api/experiments/{run}?{query}")["items"]
    return found


def _ids(items: dict[str, Any]) -> list[str]:
    return [row["item_id"] for row in items["rows"]]


def test_the_run_page_pages_its_items_on_the_server(viewer: str, store: Store) -> None:
    first = _items(viewer, store.candidate)
    assert (first["total"], first["pages"], len(first["rows"])) == (150, 3, 50)
    assert _ids(first) == [f"q{i:03d}" for i in range(50)]  # by item id
    last = _items(viewer, store.candidate, "page=3")
    assert _ids(last) == [f"q{i:03d}" for i in range(100, 150)]
    # Past the last page: the last page.
    assert _ids(_items(viewer, store.candidate, "page=9")) == _ids(last)
    row = first["rows"][1]
    assert row["scores"]["exact"] == {"score": 0.0}  # q001: billing, answered wrong
    assert row["slices"] == [["category", "account"]]
    assert row["judged"] is True  # the rubric asked the judge about it
    assert _ids(_items(viewer, store.candidate, "sort=-item"))[:2] == ["q149", "q148"]


def _right(i: int) -> bool:
    """Whether the candidate answered item ``i`` right (exact scores it 1)."""
    return not candidate_wrong(i) and f"q{i:03d}" not in HOSTILE


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # In the input, the ground truth or the output, whatever the case.
        ("q=what+IS+3+%2B", ["q003"]),
        ("q=pwned", ["q100"]),
        ("q=298", ["q149"]),  # q149's ground truth (and its output)
        # A score range of one scorer: the 60 wrong answers and the 3 hostile ones.
        ("scorer=exact&max=0.5", [f"q{i:03d}" for i in range(150) if not _right(i)]),
        ("scorer=exact&min=0.5&q=What+is+1", [f"q{i:03d}" for i in range(150)
                                              if _right(i) and str(i).startswith("1")]),
        # Failed: the judge's three 400s.
        ("failed=1", ["q104", "q107", "q110"]),
        ("failed=1&scorer=exact", []),
        ("failed=1&scorer=rubric&slice=category%3Dshipping", ["q104", "q107", "q110"]),
        ("slice=category%3Dshipping&scorer=exact&max=0.5", ["q101"]),
    ],
)  # fmt: skip
def test_the_item_table_filters(viewer: str, store: Store, query: str, expected: list[str]) -> None:
    found = _items(viewer, store.candidate, query + "&sort=item")
    assert found["total"] == len(expected)
    assert _ids(found) == expected[:50]


def test_the_item_table_sorts_by_a_scorer(viewer: str, store: Store) -> None:
    low = _items(viewer, store.candidate, "sort=score%3Aexact")
    assert [r["scores"]["exact"]["score"] for r in low["rows"]] == [0.0] * 50
    assert _ids(low) == sorted(_ids(low))  # ties by item id
    high = _items(viewer, store.candidate, "sort=-score%3Aexact&scorer=exact&min=1")
    assert high["total"] == 87
    # Items without the scorer's score (it failed) come last, either way.
    for sort in ("score%3Arubric", "-score%3Arubric"):
        ordered = _items(viewer, store.candidate, f"sort={sort}&page=3")
        assert _ids(ordered)[-3:] == ["q104", "q107", "q110"]
        assert ordered["rows"][-1]["scores"]["rubric"]["error"] == "ScorerRunError"
    # An unknown order falls back to item ids.
    assert _items(viewer, store.candidate, "sort=score%3Anope")["params"]["sort"] == "item"


def test_a_failure_group_links_to_its_items(viewer: str, store: Store) -> None:
    status, _, body = _get(f"{viewer}experiments/{store.candidate}")
    assert status == 200
    groups = _json(f"{viewer}api/experiments/{store.candidate}")["failure_groups"]
    overloaded = next(g for g in groups if "overloaded" in g["pattern"])
    assert overloaded["count"] == 2
    links = re.findall(r'class="group-items" href="\?([^"]+)"', body)
    assert len(links) == len(groups) == 2
    query = next(link for link in links if "overloaded" in link).replace("&amp;", "&")
    query = query.split("#")[0]
    assert _ids(_items(viewer, store.candidate, query)) == ["q104", "q107"]
    other = next(link for link in links if "overloaded" not in link).replace("&amp;", "&")
    assert _ids(_items(viewer, store.candidate, other.split("#")[0])) == ["q110"]


def test_runs_carry_their_verdict_and_failed_nights_filter(viewer: str, store: Store) -> None:
    runs = {r["id"]: r for r in _json(viewer + "api/")["runs"]}
    assert runs[store.baseline]["verdict"] == "passed"
    assert runs[store.candidate]["verdict"] == "failed"
    assert runs[store.smoke]["verdict"] is None
    failed = _json(viewer + "api/?failed=1")
    assert [r["id"] for r in failed["runs"]] == [store.candidate]
    assert failed["failed_runs"] == [store.candidate]
    status, _, body = _get(viewer)
    assert status == 200
    assert body.count('class="verdict failed"') == 1
    assert body.count('class="verdict passed"') == 1
    assert body.count('class="failed-night"') >= 2  # the row, and the trend chart's mark


def test_the_run_page_shows_the_verdict_its_baseline_and_gates(viewer: str, store: Store) -> None:
    data = _json(f"{viewer}api/experiments/{store.candidate}")
    assert data["run"]["verdict"] == "failed"
    assert data["baseline"]["id"] == store.baseline
    assert [(g["scorer_id"], g["passed"]) for g in data["gates"]] == [
        ("exact", False),
        ("token_f1", False),
        ("rubric", True),
    ]
    assert data["gates"][0]["reasons"][0] == "mean 0.580 below threshold_min 0.9"
    status, _, body = _get(f"{viewer}experiments/{store.candidate}")
    assert status == 200
    assert f'<a href="/experiments/{store.baseline}">nightly' in body
    assert BASELINE_REASON in body
    assert "<li>regressed: -0.390 (p &lt; 0.001)</li>" in body
    status, _, body = _get(f"{viewer}experiments/{store.smoke}")
    assert "not judged" in body
    assert 'id="gates"' not in body


def test_a_schema_7_store_shows_without_verdicts(tmp_path: Path) -> None:
    # The viewer reads a store without migrating it: a store of the previous schema has no
    # verdict column and no scorer_gates; its pages show no mark, and none fails.
    path = tmp_path / "v7.duckdb"
    path.write_bytes(gzip.decompress(STORE_V7.read_bytes()))
    proc, url = start_viewer(path)
    try:
        runs = _json(url + "api/")["runs"]
        assert runs
        assert {r["verdict"] for r in runs} == {None}
        status, _, body = _get(url)
        assert status == 200
        assert re.search(r'class="verdict (passed|failed)"', body) is None
        for run in runs:
            status, _, body = _get(f"{url}experiments/{run['id']}?failed=1&sort=-item")
            assert status == 200, body
            assert "not judged" in body
            assert _json(f"{url}api/experiments/{run['id']}")["gates"] == []
        assert _json(url + "api/?failed=1")["runs"] == []
        # Its runs compare with the newest earlier run ``latest`` takes (no verdict: passing).
        quick = [r for r in runs if r["name"] == "quickstart"]  # newest first
        assert quick[0]["compare_with"] == {
            "id": quick[1]["id"],
            "reason": "newest run stored before verdicts were kept",
            "stored": False,
        }
    finally:
        stop(proc)
    with duckdb.connect(str(path), read_only=True) as con:  # left as it was
        assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (7,)


def test_the_item_tables_links_keep_its_filters_exactly(viewer: str, store: Store) -> None:
    found = _items(viewer, store.candidate, "scorer=exact&min=0.123456789&max=nan&page=2")
    # A bound goes into the next page's links as given; one that is not a number is no bound.
    assert (found["params"]["min"], found["params"]["max"]) == ("0.123456789", "")
    assert found["params"]["page"] == 2
    assert found["total"] == 87  # exact >= 0.123456789: the right answers


def _links(body: str) -> dict[str, tuple[str, str]]:
    """Per listed run, the run its "compare with baseline" link compares it with, and why."""
    found = re.findall(
        r'class="compare-link" href="/compare\?baseline=(\w+)&amp;candidate=(\w+)"'
        r'(?: title="([^"]*)")?',
        body,
    )
    return {candidate: (baseline, why) for baseline, candidate, why in found}


def test_a_run_links_to_the_baseline_its_verdict_stored_whatever_the_filters(
    viewer: str, store: Store
) -> None:
    for query in ("", "?failed=1", "?status=completed_with_errors&name=night"):
        status, _, body = _get(viewer + query)
        assert status == 200
        assert _links(body).get(store.candidate) == (store.baseline, BASELINE_REASON), query
        listed = _json(viewer + "api/" + query)["runs"]
        candidate = next(r for r in listed if r["id"] == store.candidate)
        assert candidate["compare_with"] == {
            "id": store.baseline,
            "reason": BASELINE_REASON,
            "stored": True,
        }
    # The first night and the smoke run have no earlier run to compare with.
    links = _links(_get(viewer)[2])
    assert sorted(links) == [store.candidate]


def _nights(store: Path, *outputs: tuple[str, int | None]) -> list[str]:
    """Runs of ``qa`` (exact match, threshold 0.9) answering ``a`` right, ``b`` wrong, over
    the first ``limit`` items (None: all 4); their ids, oldest first."""
    from evalkit import run_evals_sync
    from evalkit.scorers import exact_match

    ids = []
    for answer, limit in outputs:
        rows = [{"id": f"q{i}", "input": f"q {i}", "groundTruth": "a", "output": answer}
                for i in range(4)]  # fmt: skip
        result = run_evals_sync(
            rows, [exact_match()], store=store, experiment="qa", progress=False,
            thresholds={"exact_match": 0.9}, limit=limit,
        )  # fmt: skip
        ids.append(result.experiment_id)
    return ids


def _latest_of(store: Path, run: dict[str, Any]) -> dict[str, Any] | None:
    """What evalkit.compare chooses for ``run`` with ``latest`` (the viewer mirrors it)."""
    from evalkit.compare import LATEST, baseline_candidates, choose_baseline
    from evalkit.experiment_file import RegressionSection

    options = baseline_candidates(store, LATEST, name=run["name"], exclude=run["id"])
    chosen = choose_baseline(
        store, options, ref=LATEST, candidate=run, min_paired=RegressionSection().min_paired
    )
    if chosen.run is None:
        return None
    return {"id": chosen.run["id"], "reason": chosen.reason, "stored": False}


def test_a_run_without_a_stored_baseline_links_to_the_one_latest_chooses(tmp_path: Path) -> None:
    from evalkit.store._pins import pin_baseline

    path = tmp_path / "evalkit.duckdb"
    # Night 1 passes, night 2 fails, night 3 covers 2 of the 4 items (partial), night 4
    # passes: run_evals judges each on its own gates, against no baseline.
    n1, n2, n3, n4 = _nights(path, ("a", None), ("b", None), ("a", 2), ("a", None))
    proc, url = start_viewer(path)
    try:
        links = _links(_get(url)[2])
        assert {n: links[n][0] for n in links} == {n2: n1, n3: n1, n4: n1}
        assert links[n4][1] == "the baseline latest chooses (no stored one): newest passing run"
        runs = {r["id"]: r for r in _json(url + "api/")["runs"]}
        assert [runs[n]["verdict"] for n in (n1, n2, n4)] == ["passed", "failed", "passed"]
        assert runs[n3]["partial"] is True
        # Never the failed night nor the partial one; never a run started later.
        assert {n: (runs[n]["compare_with"] or {}).get("id") for n in runs} == {
            n1: None,
            n2: n1,
            n3: n1,
            n4: n1,
        }
        assert runs[n4]["compare_with"]["stored"] is False
        assert runs[n4]["compare_with"]["reason"] == "newest passing run"
        assert runs[n4]["compare_with"] == _latest_of(path, runs[n4])
        # The same links whatever the list shows.
        for query in ("?failed=1", "?status=completed"):
            shown = _json(url + "api/" + query)["runs"]
            assert shown
            assert all(r["compare_with"] == runs[r["id"]]["compare_with"] for r in shown)
        # A team pins night 2 as the new normal: the later runs compare with it.
        pin_baseline(path, n2, by="alice", note="v2 is the new normal")

        def chosen() -> dict[str, Any]:
            return {r["id"]: r["compare_with"] for r in _json(url + "api/")["runs"]}

        # The viewer sees the store as written within a few seconds (it holds it open).
        wait_for(lambda: (chosen()[n4] or {}).get("id") == n2, "the pin in the links")
        runs = {r["id"]: r for r in _json(url + "api/")["runs"]}
        assert {n: (runs[n]["compare_with"] or {}).get("id") for n in runs} == {
            n1: None,
            n2: None,
            n3: n2,
            n4: n2,
        }
        assert runs[n4]["compare_with"]["reason"] == "pinned by alice: v2 is the new normal"
        assert runs[n4]["compare_with"] == _latest_of(path, runs[n4])
    finally:
        stop(proc)


async def test_a_reason_cut_at_the_token_limit_is_marked(
    tmp_path: Path, server: FakeOpenAIServer, judge: Judge
) -> None:
    first, second = await two_nights(tmp_path / "evalkit.duckdb", judge, server)
    base, cand = first.experiment_id, second.experiment_id
    proc, url = start_viewer(tmp_path / "evalkit.duckdb")
    try:
        status, _, body = _get(f"{url}compare?baseline={base}&candidate={cand}")
        assert status == 200, body
        grid = body[body.index('<table class="grid diff">') :]
        marked = f'{CUT_REPLY}</span> <b class="truncated"'
        assert grid.count(marked) == 2  # q0 and q1, the candidate's reasons
        assert grid.count("(truncated)</b>") == 2
        assert grid.count("It matches.</span></div>") == 2  # the baseline's, whole
        rows = _json(f"{url}api/compare?baseline={base}&candidate={cand}")["rows"]
        assert {(r["item_id"], r["candidate_reason_truncated"]) for r in rows} == {
            ("q0", True),
            ("q1", True),
        }
        # The item page: the reason in the scores table, and the judge's execution.
        status, _, body = _get(f"{url}experiments/{cand}/item?id=q0&baseline={base}")
        assert status == 200, body
        scores = body[body.index('<table class="grid item-scores">') : body.index('id="judge"')]
        assert scores.count("(truncated)</b>") == 1
        assert f'{CUT_REPLY}</span> <b class="truncated"' in scores
        assert "<dt>Finish</dt><dd>length</dd>" in body
        assert '<b class="truncated">truncated</b>' in body
        status, _, body = _get(f"{url}experiments/{cand}/item?id=q2")
        assert "(truncated)" not in body
    finally:
        stop(proc)


def test_absurd_pages_and_malformed_host_headers_are_answered_quietly(store: Store) -> None:
    proc, url = start_viewer(store.path)
    try:
        huge = "page=9223372036854775807"
        # Past the last page, however far: the last page (the item table and the compare grid).
        last = _items(url, store.candidate, "page=3")
        assert _ids(_items(url, store.candidate, huge)) == _ids(last)
        status, _, body = _get(f"{url}experiments/{store.candidate}?{huge}")
        assert status == 200, body
        pair = f"baseline={store.baseline}&candidate={store.candidate}&scorer=exact"
        last_pairs = _json(f"{url}api/compare?{pair}&page=2")["rows"]
        assert last_pairs
        assert _json(f"{url}api/compare?{pair}&{huge}")["rows"] == last_pairs
        status, _, body = _get(f"{url}compare?{pair}&{huge}")
        assert status == 200, body
        for host in ("localhost:99999", "[::1", "localhost:x"):
            status, _, body = _get(url, Host=host)
            assert (status, body) == (400, "evalkit view: malformed Host header")
    finally:
        proc.terminate()
        _, errors = proc.communicate(timeout=10)
    assert "Traceback" not in errors
    assert "Error" not in errors


async def test_pages_of_scores_near_the_float_limit(tmp_path: Path) -> None:
    # issue 30, item 4: the run page's query failed (STDDEV_SAMP is out of range) and the
    # compare page's differences overflowed; the figures are now the runs' own.
    path = tmp_path / "evalkit.duckdb"
    rows = [{"input": str(i), "output": "a"} for i in range(8)]

    def run(sign: float) -> Any:
        def score(run: Any) -> float:
            return sign * 1e308 if int(run.input) % 2 else -sign * 1e308

        return create_scorer("Huge", id="huge").generate_score(score)

    base = await run_evals(rows, [run(1.0)], store=path, progress=False, experiment="huge")
    cand = await run_evals(rows, [run(-0.5)], store=path, progress=False, experiment="huge")
    proc, url = start_viewer(path)
    try:
        data = _json(f"{url}api/experiments/{cand.experiment_id}")
        (huge,) = data["scorers"]
        own = cand.summary.scorers["huge"]
        assert huge["mean"] == pytest.approx(own.mean, abs=1e293)
        assert huge["stddev"] == pytest.approx(own.stddev, rel=1e-12)
        status, _, body = _get(f"{url}experiments/{cand.experiment_id}")
        assert status == 200, body
        pair = f"baseline={base.experiment_id}&candidate={cand.experiment_id}"
        status, _, body = _get(f"{url}compare?{pair}")
        assert status == 200, body
        assert "nan" not in body.lower().replace("nanos", "")
    finally:
        stop(proc)


def test_the_compare_page_shows_the_figures_of_evalkit_compare(viewer: str, store: Store) -> None:
    # issue 34, item 4: the page computed a paired t interval of its own in SQL, where
    # evalkit compare prints Tango's interval for these 0/1 scores, and showed no verdict.
    pair = f"baseline={store.baseline}&candidate={store.candidate}"
    shown = {row["scorer_id"]: row for row in _json(f"{viewer}api/compare?{pair}")["summary"]}
    args = ("compare", store.baseline, store.candidate, "--store", str(store.path), "--json")
    done = run_cli(*args, cwd=store.path.parent)
    assert done.code == 1, done.stderr  # exact regressed
    printed = {s["scorer_id"]: s for s in json.loads(done.stdout)["scorers"]}
    assert set(shown) == set(printed)
    figures = ("n_paired", "baseline_mean", "candidate_mean", "difference", "ci_low", "ci_high")
    names = {"n_paired": "n", "difference": "delta"}
    for scorer_id, row in shown.items():
        expected = printed[scorer_id]
        names["detectable_drop"] = "detectable"
        for name in (*figures, "p_value", "verdict", "worse", "better", "detectable_drop"):
            assert row[names.get(name, name)] == expected[name], (scorer_id, name)
    assert shown["exact"]["verdict"] == "regressed"
    status, _, body = _get(f"{viewer}compare?{pair}")
    assert status == 200, body
    low, high = shown["exact"]["ci_low"], shown["exact"]["ci_high"]
    assert f"{low:+.3f} … {high:+.3f}".replace("-", "\u2212") in body
    assert f'<td class="num">{shown["exact"]["detectable"]:.3f}</td>' in body
