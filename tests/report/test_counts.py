from __future__ import annotations

import pytest

from evalkit.report import ReportData, html_report, junit_xml, markdown_summary
from evalkit.report._text import console_table


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


@pytest.mark.parametrize("status", ["cancelled", "interrupted"])
def test_a_stopped_runs_reports_are_marked_partial(status: str) -> None:
    stopped = report(status, succeeded=40, failed=3)
    said = (
        f"Partial report: the run was {status} after 43 of 200 items; its figures and verdict"
        " cover those items only. Resume it to finish it (evalkit run FILE --resume exp-1)."
    )
    assert f"<p class='partial'>{said}</p>" in html_report(stopped)
    assert markdown_summary(stopped).splitlines()[2] == f"> **{said}**"
    junit = junit_xml(stopped)
    assert 'tests="1" failures="1"' in junit
    assert f'<testcase classname="nightly" name="(run)"><failure message="{said}">' in junit


def test_a_finished_runs_reports_are_not_marked_partial() -> None:
    done = report("completed", succeeded=200, failed=0)
    assert "Partial report" not in html_report(done) + markdown_summary(done) + junit_xml(done)
    assert 'tests="0" failures="0"' in junit_xml(done)
