"""The viewer in a real browser: headless Chromium (the system's) through every page, the
filters and the pagination, and hostile outputs that must render inert."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.view.conftest import BASELINE_REASON, BIDI, ManyRuns, Store


def _rows(page: Any) -> list[list[str]]:
    return [
        [cell.strip() for cell in row.locator("td").all_inner_texts()]
        for row in page.locator("table.diff tbody tr").all()
    ]


def test_list_experiment_compare_item(page: Any, viewer: str, store: Store) -> None:
    page.goto(viewer)
    assert page.locator("table.runs tbody tr").count() == 3
    # A trend chart per run name, one line per scorer.
    assert page.locator(".trend-card h2").all_inner_texts() == ["nightly", "smoke"]
    assert page.locator(".trend-card").first.locator("polyline").count() == 3
    # The one run with a baseline compares with it: the first night, not a filtered neighbour.
    link = page.locator("a.compare-link")
    assert link.count() == 1
    assert link.get_attribute("title") == BASELINE_REASON
    assert f"baseline={store.baseline}&candidate={store.candidate}" in str(
        link.get_attribute("href")
    )

    page.locator(f"a.run-link[href='/experiments/{store.candidate}']").click()
    page.wait_for_url(f"**/experiments/{store.candidate}")
    scorers = page.locator("table.scorers tbody tr td:first-child b").all_inner_texts()
    assert scorers == ["exact", "token_f1", "rubric"]
    assert page.locator("svg.histogram").count() == 3
    # 60 of 150 answers are wrong (and three hostile ones): exact's bar at 0 counts them.
    counts = page.locator("svg.histogram").first.locator("text.count").all_text_contents()
    assert "87" in counts  # 150 - 60 - 3 right answers at 1
    assert "63" in counts

    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"/compare\?"))
    summary = page.locator("table.summary tbody tr").first.inner_text()
    assert summary.startswith("exact")
    assert "63 worse" in summary
    # The declared slice: billing and account dropped (31 items x 2 code scorers), shipping
    # only by its one hostile item; three shipping items have no rubric pair (the judge failed).
    by_slice = [
        [cell.strip() for cell in row.locator("td").all_inner_texts()][:4]
        for row in page.locator("table.by-slice tbody tr").all()
    ]
    assert sorted(by_slice) == [
        ["account", "150", "62", "0"],
        ["billing", "150", "62", "0"],
        ["shipping", "147", "2", "0"],
    ]
    first = _rows(page)[0]
    assert first[3:6] == ["1.000", "0.000", "\u22121.000"]  # largest drop first

    page.locator("table.diff tbody tr td.item a").first.click()
    page.wait_for_url(re.compile(r"/item\?"))
    assert page.locator("h2", has_text="Baseline output").count() == 1
    assert page.locator("pre.candidate-output").count() == 1
    # The LLM rubric's judge executions, with the prompt the judge was sent.
    executions = page.locator("details.execution")
    assert executions.count() >= 1
    executions.first.locator("summary").click()
    assert "The answer is a single number." in executions.first.locator("pre.prompt").inner_text()
    usage = executions.first.locator("dl.usage").inner_text()
    assert re.search(r"input tokens\s+[1-9]\d*", usage, re.IGNORECASE), usage
    assert page.errors == []


def test_list_filters_by_name_and_status(page: Any, viewer: str) -> None:
    page.goto(viewer)
    page.fill("input[name=name]", "smok")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"name=smok"))
    names = page.locator("table.runs tbody tr td:first-child b").all_inner_texts()
    assert names == ["smoke"]
    page.goto(viewer)
    page.select_option("select[name=status]", "completed")  # submits on change
    page.wait_for_url(re.compile(r"status=completed"))
    # The judge failed three items of each nightly run: those completed with errors.
    names = page.locator("table.runs tbody tr td:first-child b").all_inner_texts()
    assert names == ["smoke"]
    page.goto(viewer + "?name=nothing-like-this")
    assert "No run matches these filters" in page.locator("main").inner_text()


def test_compare_grid_filters_sorts_and_pages(page: Any, viewer: str, store: Store) -> None:
    base = f"{viewer}compare?baseline={store.baseline}&candidate={store.candidate}"
    page.goto(base)
    # 63 changed items x 2 code scorers = 126 changed pairs: three pages of 50.
    assert "page 1 of 3 · 126 rows" in page.locator(".pager").inner_text()
    first_page = {(r[0], r[1]) for r in _rows(page)}
    page.locator("a[rel=next]").click()
    page.wait_for_url(re.compile(r"page=2"))
    assert "page 2 of 3" in page.locator(".pager").inner_text()
    second_page = {(r[0], r[1]) for r in _rows(page)}
    assert len(second_page) == 50
    assert first_page.isdisjoint(second_page)

    page.select_option("select[name=scorer]", "exact")
    page.wait_for_url(re.compile(r"scorer=exact"))
    rows = _rows(page)
    assert {r[1] for r in rows} == {"exact"}
    assert "63 rows" in page.locator(".pager").inner_text()

    page.locator("input[name=changed][type=checkbox]").uncheck()  # submits on change
    page.wait_for_url(re.compile(r"changed=0(?!.*changed=1)"))
    assert "150 rows" in page.locator(".pager").inner_text()

    page.fill("input[name=q]", "what IS 3")  # in the input, whatever the case
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"q=what"))
    assert sorted(r[0] for r in _rows(page)) == ["q003", *(f"q03{i}" for i in range(10))]

    page.goto(base)
    # Each row's slices link to the slice filter.
    page.locator("td.slices a.chip", has_text="billing").first.click()
    page.wait_for_url(re.compile(r"slice=category%3Dbilling"))
    assert {r[2] for r in _rows(page)} == {"billing"}
    page.goto(base + "&slice=category%3Dshipping")
    # Shipping questions kept their answers but one: the hostile q101 (101 % 3 == 2).
    assert {r[0] for r in _rows(page)} == {"q101"}

    page.goto(base + "&sort=item&scorer=exact")
    ids = [r[0] for r in _rows(page)]
    assert ids == sorted(ids)
    page.goto(base + "&sort=best&scorer=exact")
    assert _rows(page)[0][5] == "\u22121.000"  # nothing improved: the smallest drop is a drop
    assert page.errors == []


def test_hostile_outputs_render_inert(page: Any, viewer: str, store: Store) -> None:
    item = f"{viewer}experiments/{store.candidate}/item?baseline={store.baseline}&id="
    page.goto(item + "q100")
    assert page.evaluate("window.__pwned") is None
    shown = page.locator("pre.candidate-output").inner_text()
    assert "<script>window.__pwned = 1</script>" in shown
    assert page.locator("main img").count() == 0

    page.goto(item + "q101")
    text = page.locator("pre.candidate-output").inner_text()
    assert "\u202e" not in text  # the override is shown as an escape, never applied
    assert text == BIDI.replace("\u202e", "\\u202e").replace("\u202c", "\\u202c")
    assert (
        page.evaluate(
            "getComputedStyle(document.querySelector('pre.candidate-output')).unicodeBidi"
        )
        == "isolate"
    )

    page.goto(item + "q102")
    huge = page.locator("pre.candidate-output").inner_text()
    assert len(huge) < 25_000
    assert "more characters of 1,048,584" in huge

    page.goto(f"{viewer}compare?baseline={store.baseline}&candidate={store.candidate}&q=pwned")
    assert "<script>" in page.locator("table.diff").inner_text()
    assert page.evaluate("window.__pwned") is None
    page.goto(f"{viewer}compare?baseline={store.baseline}&candidate={store.candidate}&q=lorem")
    cell = page.locator("table.diff td.out").nth(1).inner_text()  # the 1 MB output, cut
    assert cell.startswith("lorem ipsum")
    assert len(cell) < 1_000
    # The run's item table, too.
    page.goto(f"{viewer}experiments/{store.candidate}?q=pwned")
    assert "<script>" in page.locator("table.items td.out").inner_text()
    page.goto(f"{viewer}experiments/{store.candidate}?q=lorem")
    assert len(page.locator("table.items td.out").inner_text()) < 1_000
    page.goto(f"{viewer}experiments/{store.candidate}?q=evil")
    assert "\\u202e" in page.locator("table.items td.out").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []


def _items(page: Any) -> list[str]:
    found: list[str] = page.locator("table.items tbody td.item").all_inner_texts()
    return found


def test_run_items_search_filter_sort_page_and_link(
    page: Any, viewer: str, store: Store, tmp_path: Path
) -> None:
    run = f"{viewer}experiments/{store.candidate}"
    page.goto(run)
    assert "page 1 of 3 · 150 rows" in page.locator("#items .pager").inner_text()
    assert _items(page) == [f"q{i:03d}" for i in range(50)]
    page.locator("#items a[rel=next]").click()
    page.wait_for_url(re.compile(r"page=2"))
    assert _items(page) == [f"q{i:03d}" for i in range(50, 100)]

    page.goto(run)
    page.fill("#item-filters input[name=q]", "what IS 3")
    page.locator("#item-filters").get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"q=what"))
    assert _items(page) == ["q003", *(f"q03{i}" for i in range(10))]

    page.goto(run)
    page.select_option("#item-filters select[name=scorer]", "exact")  # submits on change
    page.wait_for_url(re.compile(r"scorer=exact"))
    page.fill("#item-filters input[name=max]", "0.5")
    page.locator("#item-filters").get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"max=0.5"))
    assert "63 rows" in page.locator("#items .pager").inner_text()
    exact = page.locator("table.items tbody tr td.score:nth-child(3)").all_inner_texts()
    assert set(exact) == {"0.000"}
    page.screenshot(path=str(tmp_path / "items-filtered.png"), full_page=True)

    page.goto(run)
    page.locator("#item-filters input[name=failed]").check()  # submits on change
    page.wait_for_url(re.compile(r"failed=1"))
    assert _items(page) == ["q104", "q107", "q110"]
    assert page.locator("table.items tbody .badge.status-failed").count() == 3
    page.goto(run)
    page.locator("a.failed-items").click()  # the run's count of items with a failure
    page.wait_for_url(re.compile(r"failed=1"))
    assert _items(page) == ["q104", "q107", "q110"]

    page.goto(run)
    page.locator("table.items td.slices a.chip", has_text="shipping").first.click()
    page.wait_for_url(re.compile(r"slice=category%3Dshipping"))
    assert "50 rows" in page.locator("#items .pager").inner_text()
    assert set(page.locator("table.items td.slices").all_inner_texts()) == {"shipping"}

    # A scorer's column header orders by it; again, the other way.
    page.goto(run)
    page.locator("table.items th a", has_text="exact").click()
    page.wait_for_url(re.compile(r"sort=score%3Aexact"))
    assert page.locator("table.items tbody tr").first.locator("td.score").first.inner_text() == (
        "0.000"
    )
    page.locator("table.items th a", has_text="exact").click()
    page.wait_for_url(re.compile(r"sort=-score%3Aexact"))
    assert page.locator("table.items tbody tr").first.locator("td.score").first.inner_text() == (
        "1.000"
    )

    # Each row links to its item (beside the baseline the night was judged against), and to
    # its judge executions.
    page.goto(run + "?q=what+is+7+%2B")
    page.locator("table.items a.item-link").first.click()
    page.wait_for_url(re.compile(rf"/item\?id=q007&baseline={store.baseline}$"))
    assert page.locator("code.item-id").inner_text() == "q007"
    assert page.locator("h2", has_text="Baseline output").count() == 1
    page.go_back()
    page.locator("table.items a.judge-link").first.click()
    page.wait_for_url(re.compile(rf"/item\?id=q007&baseline={store.baseline}#judge$"))
    assert page.locator("#judge details.execution").count() >= 1
    assert page.errors == []


def test_run_items_without_script(browser: Any, viewer: str, store: Store) -> None:
    # Without JavaScript the forms' buttons do what the script's autosubmit does.
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{viewer}experiments/{store.candidate}")
        page.select_option("#item-filters select[name=scorer]", "rubric")
        page.locator("#item-filters input[name=failed]").check()
        page.locator("#item-filters").get_by_role("button", name="Apply").click()
        page.wait_for_url(re.compile(r"failed=1"))
        assert _items(page) == ["q104", "q107", "q110"]
    finally:
        context.close()


def test_failure_groups_link_to_their_items(page: Any, viewer: str, store: Store) -> None:
    page.goto(f"{viewer}experiments/{store.candidate}")
    groups = page.locator("table.failures tbody tr")
    assert groups.count() == 2
    overloaded = groups.filter(has_text="upstream overloaded")
    overloaded.locator("a.group-items").click()
    page.wait_for_url(re.compile(r"group="))
    assert _items(page) == ["q104", "q107"]
    assert "upstream overloaded" in page.locator(".group-filter").inner_text()
    page.locator(".group-filter a").click()  # every item again
    page.wait_for_url(lambda url: "group=" not in url)
    assert "150 rows" in page.locator("#items .pager").inner_text()
    assert page.errors == []


def test_failed_nights_are_marked_and_filtered(
    page: Any, viewer: str, store: Store, tmp_path: Path
) -> None:
    page.goto(viewer)
    marks = {
        row.locator("a.run-link").get_attribute("href").rsplit("/", 1)[1]: row.locator(
            "td.verdict-cell"
        ).inner_text()
        for row in page.locator("table.runs tbody tr").all()
    }
    assert marks == {store.candidate: "✗", store.baseline: "✓", store.smoke: ""}
    nightly = page.locator(".trend-card", has_text="nightly")
    assert nightly.locator("svg.trend rect.failed-night").count() == 1
    assert nightly.locator("svg.trend a", has=page.locator("rect.failed-night")).get_attribute(
        "href"
    ) == (f"/experiments/{store.candidate}")
    assert "1 failed night" in nightly.locator(".legend").inner_text()
    smoke = page.locator(".trend-card", has_text="smoke")
    assert smoke.locator("svg.trend rect.failed-night").count() == 0
    page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)

    page.locator("#run-filters input[name=failed]").check()  # submits on change
    page.wait_for_url(re.compile(r"failed=1"))
    hrefs = page.locator("table.runs a.run-link").evaluate_all("links => links.map(a => a.href)")
    assert [h.rsplit("/", 1)[1] for h in hrefs] == [store.candidate]

    page.locator("a.run-link").click()
    page.wait_for_url(f"**/experiments/{store.candidate}")
    assert page.locator(".verdict-text").inner_text() == "failed"
    page.locator("dd.baseline a").first.click()
    page.wait_for_url(f"**/experiments/{store.baseline}")
    assert page.locator(".verdict-text").inner_text() == "passed"
    page.go_back()
    gates = page.locator("table.gates tbody tr")
    assert gates.count() == 3
    assert "regressed: -0.390" in gates.nth(1).locator("td.reasons").inner_text()
    assert gates.nth(2).locator("td.regression").inner_text() == "unchanged"
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    assert page.errors == []


def test_the_run_list_pages_and_keeps_its_filters(
    page: Any, many_viewer: str, many_runs: ManyRuns, tmp_path: Path
) -> None:
    page.goto(many_viewer)
    assert page.locator("table.runs tbody tr").count() == 50
    assert page.locator(".pager .where").inner_text() == "page 1 of 3 · 131 runs"
    assert page.locator(".trend-card h2").all_inner_texts() == ["nightly", "smoke"]
    page.screenshot(path=str(tmp_path / "runs-paged.png"), full_page=True)
    page.get_by_role("link", name="next →").click()
    page.wait_for_url(re.compile(r"\?page=2$"))
    first = page.locator("a.run-link").first.get_attribute("href")
    assert first == f"/experiments/{many_runs.order[50]}"
    # Filtering starts again at page 1, and the pager then keeps the filter.
    page.fill("input[name=name]", "night")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"name=night"))
    assert "page=" not in page.url
    assert page.locator(".pager .where").inner_text() == "page 1 of 3 · 104 runs"
    page.get_by_role("link", name="next →").click()
    page.wait_for_url(re.compile(r"name=night&page=2$"))
    names = set(page.locator("table.runs tbody tr td:first-child b").all_inner_texts())
    assert names == {"nightly"}
    assert page.locator(".trend-card h2").all_inner_texts() == ["nightly"]
    page.locator("#run-filters input[name=failed]").check()  # submits on change
    page.wait_for_url(re.compile(r"failed=1"))
    assert page.locator(".pager").count() == 0  # 15 failed nightly nights: one page
    assert page.locator("table.runs tbody tr.failed-night").count() == 15
    assert page.errors == []
