from __future__ import annotations

import pytest

from evalkit.report import ReportData, console_table, html_report, markdown_summary


def report(status: str, *, succeeded: int, failed: int, total: int = 200) -> ReportData:
    return ReportData(
        experiment_id="exp-1",
        name="nightly",
        status=status,
        dataset="qa.parquet",
        started_at="2026-11-30T00:00:00",
        completed_at=None,
        total_items=total,
        succeeded_items=succeeded,
        failed_items=failed,
        scorers=(),
    )


@pytest.mark.parametrize("status", ["cancelled", "running", "interrupted"])
def test_a_stopped_run_shows_the_items_done_out_of_its_total(status: str) -> None:
    stopped = report(status, succeeded=40, failed=3)
    head = console_table(stopped).splitlines()[0]
    assert f"{status}, 43 of 200 items, 3 failed" in head
    assert "- items: 43 of 200 (3 failed)" in markdown_summary(stopped).splitlines()
    assert "43 of 200 items, 3 failed" in html_report(stopped)


def test_a_finished_run_shows_its_item_count() -> None:
    done = report("completed_with_errors", succeeded=197, failed=3)
    assert "completed_with_errors, 200 items, 3 failed" in console_table(done).splitlines()[0]
    assert "- items: 200 (3 failed)" in markdown_summary(done).splitlines()
    assert " 200 items, 3 failed" in html_report(done)
    assert "of 200" not in console_table(done) + markdown_summary(done) + html_report(done)
