"""A reason cut at the judge's token limit is flagged wherever a report shows it: the regressed
pairs, the lowest-scored items and the disagreements with the human labels of the HTML and
Markdown reports, and the pytest plugin's message."""

from __future__ import annotations

from pathlib import Path

from evalkit import Judge
from evalkit.experiment_file import judge_run
from evalkit.pytest_plugin import EvalOutcome
from evalkit.report import html_report, markdown_summary
from evalkit.testing import FakeOpenAIServer
from tests.truncated import CUT_REPLY, two_nights


async def test_a_truncated_reason_is_flagged_in_the_reports(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    first, second = await two_nights(tmp_path / "evalkit.duckdb", judge, server)
    judged = judge_run(second, baseline="latest")
    assert judged.baseline is not None
    assert judged.baseline["id"] == first.experiment_id
    report = judged.report
    pairs = sorted(report.regressed_items["explained"], key=lambda p: p.item_id)
    assert [(p.item_id, p.reason, p.reason_truncated) for p in pairs] == [
        ("q0", CUT_REPLY, True),
        ("q1", CUT_REPLY, True),
    ]
    assert [(p.baseline_reason, p.baseline_reason_truncated) for p in pairs] == [
        ("It matches.", False),
        ("It matches.", False),
    ]
    worst = {v.item_id: (v.reason, v.reason_truncated) for v in report.worst_items["explained"]}
    assert worst == {
        "q0": (CUT_REPLY, True),
        "q1": (CUT_REPLY, True),
        "q2": ("It matches.", False),
        "q3": ("It matches.", False),
    }
    html = html_report(report)
    flagged = f"{CUT_REPLY} <span class='truncated'"
    regressed = html[html.index("<h2>Regressed items") : html.index("<h2>Worst items")]
    assert regressed.count(f"this run: {flagged}") == 2
    assert "baseline: It matches.<hr>" in regressed
    worst_html = html[html.index("<h2>Worst items") :]
    assert worst_html.count(flagged) == 2
    # The pairs where the judge and the people differ most (both labelled 1.0, scored 0).
    (agreement,) = report.agreement
    assert {(d.item_id, d.reason_truncated) for d in agreement.disagreements} == {
        ("q0", True),
        ("q1", True),
    }
    agreed = html[html.index("Agreement with human labels") : html.index("<h2>Regressed items")]
    assert agreed.count(flagged) == 2
    assert html.count("(truncated)</span>") == 6
    markdown = markdown_summary(report)
    assert markdown.count(f"| {CUT_REPLY} (truncated) |") == 2
    message = EvalOutcome(judged).message
    assert "misses the threshold" in message
    assert f"reason (truncated) '{CUT_REPLY}'" in message
    assert "reason 'It matches.'" not in message  # q2 and q3 scored above the mean
