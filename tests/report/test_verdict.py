"""Every rendering of a run says the same verdict: console, --json, Markdown, HTML and JUnit.

Each gate outcome is produced by a real run (run_evals, no store), then rendered five ways;
the verdict read back from each rendering must agree with the run's own verdict.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from evalkit import create_scorer, run_evals
from evalkit.compare import compare_experiments
from evalkit.report import html_report, junit_xml, markdown_summary
from evalkit.report._build import build_report
from evalkit.report._model import ReportData
from evalkit.report._text import console_table
from evalkit.scorers import get_scorer

ROWS = [{"input": f"q{i}", "groundTruth": "yes", "output": "yes"} for i in range(40)]


def _exact() -> Any:
    return get_scorer("exact_match", id="exact")


def _failing_on(every: int) -> Any:
    def score(run: Any) -> float:
        if int(run.input[1:]) % every == 0:
            raise RuntimeError(f"judge timed out on {run.input}")
        return 1.0

    return create_scorer("Flaky", id="flaky").generate_score(score)


async def _report(case: str) -> tuple[ReportData, dict[str, str]]:
    """A real run for each gate outcome, and the per-scorer verdicts it must show."""
    if case == "passed":
        result = await run_evals(ROWS, [_exact()], store=None, progress=False)
        return build_report(result), {"exact": "passed"}
    if case == "threshold":
        rows = [{**r, "output": "no"} if i % 2 else r for i, r in enumerate(ROWS)]
        result = await run_evals(
            rows, [_exact()], store=None, progress=False, thresholds={"exact": 0.8}
        )
        return build_report(result), {"exact": "failed"}
    if case == "error_rate":
        # 4 of 40 pairs fail (10%): above the default 5% bound, with no threshold at all.
        result = await run_evals(ROWS, [_exact(), _failing_on(10)], store=None, progress=False)
        return build_report(result), {"exact": "passed", "flaky": "failed"}
    if case == "no_data":
        # The case: an all-null groundTruth with exact_match and no threshold.
        no_truth: list[dict[str, str | None]] = [{**r, "groundTruth": None} for r in ROWS]
        result = await run_evals(no_truth, [_exact()], store=None, progress=False)
        return build_report(result), {"exact": "failed"}
    assert case == "regressed"
    before = await run_evals(ROWS, [_exact()], store=None, progress=False)
    rows = [{**r, "output": "no"} if i % 2 else r for i, r in enumerate(ROWS)]
    after = await run_evals(rows, [_exact()], store=None, progress=False)
    comparison = compare_experiments(before.to_pandas(), after.to_pandas(), max_drop=0.05)
    return build_report(after, comparison=comparison), {"exact": "regressed"}


def _console(report: ReportData) -> tuple[bool, dict[str, str]]:
    lines = console_table(report).splitlines()
    # One row per scorer after the head and the header; notes (a comparison's power note)
    # may follow the rows before the verdict line.
    rows = lines[3 : 3 + len(report.scorers)]
    verdicts = {line.split()[0]: line.split()[-1] for line in rows if line.strip()}
    return lines[-1].startswith("PASSED"), verdicts


def _json(report: ReportData) -> tuple[bool, dict[str, str]]:
    data = json.loads(json.dumps(report.to_dict()))
    return data["passed"], {s["scorer_id"]: s["verdict"] for s in data["scorers"]}


def _markdown(report: ReportData) -> tuple[bool, dict[str, str]]:
    md = markdown_summary(report)
    passed = "- verdict: **PASSED**" in md
    assert passed or "- verdict: **FAILED: " in md
    rows = [line.strip("|").split("|") for line in md.splitlines() if line.startswith("| ")]
    return passed, {cells[0].strip(): cells[-1].strip() for cells in rows[1:]}


def _html(report: ReportData) -> tuple[bool, dict[str, str]]:
    page = html_report(report)
    found = re.search(r"<p class='verdict (passed|failed)'>(PASSED|FAILED)", page)
    assert found is not None
    assert (found.group(1) == "passed") == (found.group(2) == "PASSED")
    rows = re.findall(r"<tr><td>([^<]+)</td>.*?<td class=\"(passed|failed|regressed)\">", page)
    return found.group(1) == "passed", dict(rows)


def _junit(report: ReportData) -> tuple[bool, dict[str, str]]:
    root = ET.fromstring(junit_xml(report))
    verdicts = {}
    for case in root.iter("testcase"):
        failure = case.find("failure")
        verdicts[case.get("name") or ""] = (
            "passed" if failure is None else (failure.get("message") or "").split(":")[0]
        )
    return root.get("failures") == "0", verdicts


@pytest.mark.parametrize("case", ["passed", "threshold", "error_rate", "no_data", "regressed"])
async def test_every_rendering_shows_the_same_verdict(case: str) -> None:
    report, expected = await _report(case)
    should_pass = all(v == "passed" for v in expected.values())
    assert report.passed is should_pass
    for render in (_console, _json, _markdown, _html, _junit):
        passed, verdicts = render(report)
        assert (passed, verdicts) == (should_pass, expected), render.__name__


async def test_the_verdict_line_names_the_bound_that_failed() -> None:
    report, _ = await _report("error_rate")
    assert report.verdict_line == (
        "FAILED: flaky failed: error rate 10% above max_error_rate 5% "
        "(4 failed, 0 not run of 40 pairs)"
    )
    report, _ = await _report("no_data")
    assert report.verdict_line.startswith("FAILED: exact failed: no data: none of its 40 pairs")
