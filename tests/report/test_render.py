from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from evalkit import create_scorer, run_evals
from evalkit.report import (
    FailureGroup,
    ItemView,
    ReportData,
    build_report,
    html_report,
    junit_xml,
    markdown_summary,
)
from evalkit.report._html import histogram_svg
from evalkit.report._model import ScorerRow
from evalkit.report._text import console_failure_groups, console_table
from evalkit.store import read_scorer_summary

EXACT = ScorerRow(
    "exact", 3, 0.75, 0.7, 0.8, 1, threshold=">= 0.8",
    reasons=("mean 0.750 misses the threshold >= 0.8",),
)  # fmt: skip
F1 = ScorerRow(
    "f1", 4, 0.5, 0.4, 0.6, 0, delta=-0.1, delta_low=-0.15, delta_high=-0.05, regressed=True,
    reasons=("regressed against the baseline",),
)  # fmt: skip
TONE = ScorerRow("tone", 4, 0.9, None, None, 0, threshold="<= 0.95")

HOSTILE = "<script>alert('x')</script>"


def make_report(*scorers: ScorerRow) -> ReportData:
    return ReportData(
        experiment_id="exp-1",
        name="nightly",
        status="completed_with_errors",
        dataset="datasets/qa.parquet",
        started_at="2026-11-30T00:00:00",
        completed_at="2026-11-30T00:01:00",
        total_items=4,
        succeeded_items=4,
        failed_items=0,
        scorers=scorers,
        distributions={"exact": [0.0, 1.0, 1.0, 0.25]},
        worst_items={"exact": [ItemView("i1", "exact", 0.0, "q", HOSTILE, "gt", reason="r")]},
        failures=(
            ItemView(
                "i2", "exact", None, {"q": 1}, "out", None, failed_step="analyze", error=HOSTILE
            ),
        ),
        baseline="exp-0",
    )


def test_verdicts_follow_gates() -> None:
    assert (EXACT.verdict, F1.verdict, TONE.verdict) == ("failed", "regressed", "passed")
    assert ScorerRow("empty", 0, None, None, None, 2, reasons=("no data",)).verdict == "failed"
    assert make_report(TONE).passed
    assert not make_report(TONE, F1).passed


def test_console_table_shows_decimals_delta_and_verdicts() -> None:
    text = console_table(make_report(EXACT, F1, TONE))
    lines = text.splitlines()
    assert lines[0] == ("nightly (exp-1): completed_with_errors, 4 items, 0 failed, baseline exp-0")
    exact_line = next(line for line in lines if line.startswith("exact"))
    assert "0.750 [0.700, 0.800]" in exact_line
    assert exact_line.rstrip().endswith("failed")
    f1_line = next(line for line in lines if line.startswith("f1"))
    assert "-0.100 [-0.150, -0.050]" in f1_line
    assert f1_line.rstrip().endswith("regressed")
    assert "0.900" in next(line for line in lines if line.startswith("tone"))
    assert lines[-1] == (
        "FAILED: exact failed: mean 0.750 misses the threshold >= 0.8"
        " | f1 regressed: regressed against the baseline"
    )


def test_huge_means_are_shown_in_exponent_form() -> None:
    # Issue 30: a mean of 1e307 was printed with its 300 digits.
    huge = ScorerRow(
        "huge", 6, 6.5e306, 1e306, 1.2e307, 0, delta=-3e306, delta_low=-4e306, delta_high=-2e306
    )
    line = next(line for line in console_table(make_report(huge)).splitlines() if "huge" in line)
    assert "6.500e+306 [1.000e+306, 1.200e+307]" in line
    assert "-3.000e+306 [-4.000e+306, -2.000e+306]" in line
    assert len(line) < 150


def test_html_escapes_user_content() -> None:
    page = html_report(make_report(EXACT))
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert page.count("<svg") == 1
    assert "analyze" in page


def test_markdown_lists_scorers_and_failures() -> None:
    md = markdown_summary(make_report(EXACT, F1))
    assert "| exact | 3 | 1 | 0 | 0.750 \\[0.700, 0.800\\] | >= 0.8 | - | failed |" in md
    assert "## Failures (1)" in md
    assert "<script>" not in md


def test_junit_has_one_case_per_scorer_and_failures_for_failed_gates() -> None:
    root = ET.fromstring(junit_xml(make_report(EXACT, F1, TONE)))
    assert root.get("tests") == "3"
    assert root.get("failures") == "2"
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert set(cases) == {"exact", "f1", "tone"}
    assert cases["exact"].find("failure").get("message") == (  # type: ignore[union-attr]
        "failed: mean 0.750 misses the threshold >= 0.8"
    )
    assert cases["f1"].find("failure").get("message") == (  # type: ignore[union-attr]
        "regressed: regressed against the baseline"
    )
    assert cases["tone"].find("failure") is None


def test_histogram_counts_every_score() -> None:
    svg = histogram_svg([0.0, 0.0, 0.5, 1.0], bins=2)
    assert "<title>2</title>" in svg  # [0, 0.5): two zeros
    assert svg.count("<rect") == 2
    assert histogram_svg([]) == "<p>no scores</p>"


@pytest.mark.parametrize(
    ("scores", "counts", "axis"),
    [
        ([-1e308, 1e308, 1e308], [1, 2], ("-1.00e+308", "0.00", "1.00e+308")),
        ([1e308, 1e308], [0, 2], ("1.00e+308", "1.00e+308", "1.00e+308")),
    ],
)
def test_a_histogram_of_scores_near_the_float_limit(
    scores: list[float], counts: list[int], axis: tuple[str, ...]
) -> None:
    # issue 30: the range (2e308) overflowed, every bin index was NaN (a RuntimeWarning),
    # and the axis showed 309 digits.
    svg = histogram_svg(scores, bins=2)
    assert [int(c) for c in re.findall(r"<rect[^>]*><title>(\d+)</title>", svg)] == counts
    labels = re.findall(r'font-size="10"(?: text-anchor="\w+")?>([^<]*)</text>', svg)
    assert tuple(labels[:3]) == axis


def failing(item_id: str, scorer_id: str, error: str) -> ReportData:
    failure = ItemView(item_id, scorer_id, None, "q", "o", None, failed_step="analyze", error=error)
    return replace(make_report(EXACT), failures=(failure,))


def failure_line(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("- ") and " at analyze" in line)


@pytest.mark.parametrize(
    ("item_id", "code"),
    [
        ("q-1", "`q-1`"),
        ("a`b", "``a`b``"),
        ("``x", "``` ``x ```"),
        ("x`", "`` x` ``"),
        ("a|b *c*", "`a|b *c*`"),
        ("two\nlines", "`two lines`"),
    ],
)
def test_markdown_item_ids_are_code_spans_whatever_backticks_they_hold(
    item_id: str, code: str
) -> None:
    assert failure_line(markdown_summary(failing(item_id, "exact", "boom"))).startswith(
        f"- {code} exact at analyze: "
    )


def test_markdown_failure_lines_escape_scorer_ids_and_errors() -> None:
    md = markdown_summary(failing("i", "my_*scorer*|[x]", "bad `code` <b>bold</b> & more"))
    assert failure_line(md) == (
        "- `i` my\\_\\*scorer\\*\\|\\[x\\] at analyze: bad \\`code\\` &lt;b>bold&lt;/b> \\& more"
    )


def test_markdown_table_cells_and_notes_escape_scorer_ids() -> None:
    row = replace(EXACT, scorer_id="a|b_c", comparison_note="only 3 paired | see *notes*")
    md = markdown_summary(make_report(row))
    assert "| a\\|b\\_c | 3 | 1 | 0 | 0.750 \\[0.700, 0.800\\] | >= 0.8 | - | failed |" in md
    assert "- a\\|b\\_c: only 3 paired \\| see \\*notes\\*" in md


def test_markdown_header_facts_are_code_spans() -> None:
    report = replace(make_report(EXACT), dataset="data/`odd`.parquet", baseline="run|1")
    md = markdown_summary(report)
    assert "- dataset: ``data/`odd`.parquet``" in md
    assert "- baseline: `run|1`" in md
    assert "- experiment: `exp-1` — completed\\_with\\_errors" in md
    assert "- verdict: **FAILED: exact failed: mean 0.750 misses the threshold >= 0.8**" in md


def grouped(count: int, per_group: int = 3) -> ReportData:
    groups = tuple(
        FailureGroup(
            scorer_id="exact",
            error_type="JudgeError",
            pattern=f"error kind {chr(65 + i)} <n>",
            count=per_group * (count - i),
            example_item_id=f"i{i}",
            example_message=f"error kind {chr(65 + i)} 7",
            failed_step="analyze",
        )
        for i in range(count)
    )
    target = FailureGroup("(target)", "TargetError", "<b>down</b>", 2, "t1", "<b>down</b>")
    return replace(make_report(EXACT), failure_groups=(target, *groups))


def test_console_failure_groups_show_at_most_five_per_scorer_largest_first() -> None:
    lines = console_failure_groups(grouped(7)).splitlines()
    assert lines[0] == "failure groups:"
    assert lines[1] == "  (target): 2 failed"
    assert lines[2].split() == ["2", "×", "TargetError:", "<b>down</b>", "(e.g.", "t1)"]  # noqa: RUF001
    assert lines[3] == "  exact: 84 failed"
    shown = lines[4:9]
    assert [line.split()[0] for line in shown] == ["21", "18", "15", "12", "9"]
    assert shown[0].split("×", 1)[1].strip() == "JudgeError at analyze: error kind A <n> (e.g. i0)"  # noqa: RUF001
    assert lines[9].strip() == "… 2 more groups (9 failures)"
    assert len(lines) == 10


def test_console_failure_groups_are_empty_without_failures() -> None:
    assert console_failure_groups(make_report(EXACT)) == ""


def test_html_and_markdown_show_the_failure_groups_before_the_failures() -> None:
    report = grouped(2)
    page = html_report(report)
    assert page.index("<h2>Failure groups</h2>") < page.index("<h2>Failures")
    assert "error kind A &lt;n&gt;" in page
    assert "<b>down</b>" not in page
    md = markdown_summary(report)
    assert md.index("## Failure groups") < md.index("## Failures")
    assert "- exact: 6 × JudgeError at analyze: `error kind A <n>` (e.g. `i0`)" in md  # noqa: RUF001


def test_html_lists_a_bounded_number_of_individual_failures() -> None:
    failure = make_report(EXACT).failures[0]
    many = tuple(replace(failure, item_id=f"item-{n}") for n in range(250))
    page = html_report(replace(make_report(EXACT), failures=many))
    assert "<h2>Failures (250)</h2>" in page
    assert "item-99<" in page
    assert "item-100<" not in page
    assert "150 more failures" in page


def test_every_rendering_says_which_baseline_and_why() -> None:
    report = replace(make_report(F1), baseline_reason="pinned by alice: v2 is the new normal")
    why = "pinned by alice: v2 is the new normal"
    assert console_table(report).splitlines()[0].endswith(f"baseline exp-0: {why}")
    assert f"- baseline: `exp-0` — {why}" in markdown_summary(report)
    assert f"baseline <code>exp-0</code> ({why})" in html_report(report)
    properties = ET.fromstring(junit_xml(report)).find("properties")
    assert properties is not None
    assert {p.get("name"): p.get("value") for p in properties} == {
        "baseline": "exp-0",
        "baseline_reason": why,
    }
    assert report.to_dict()["baseline_reason"] == why


_COMPILES = """
import jinja2
calls = []
compile_ = jinja2.Environment.compile
jinja2.Environment.compile = lambda self, *a, **k: calls.append(1) or compile_(self, *a, **k)
from evalkit.report._html import _template
_template()
print(len(calls))
"""


def test_a_later_run_loads_the_compiled_report_template(tmp_path: Path) -> None:
    """Compiling it took 50 ms of the quickstart (issue 31): jinja2 keeps the code in a cache
    folder of the temporary directory, and the next process only loads it."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    counts = [
        subprocess.run([sys.executable, "-c", _COMPILES], env=env, capture_output=True,
                       text=True, check=True).stdout.strip()
        for _ in range(2)
    ]  # fmt: skip
    assert int(counts[0]) > 0
    assert counts[1] == "0"
    assert list(tmp_path.glob("_jinja2-cache-*/__jinja2_*.cache"))


def test_a_cache_folder_that_cannot_be_used_only_costs_the_compile(tmp_path: Path) -> None:
    """A dangling link where jinja2's folder goes (or another user's folder): the report is
    still written, its template compiled as before the cache."""
    (tmp_path / f"_jinja2-cache-{os.getuid()}").symlink_to(tmp_path / "gone")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _COMPILES], env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0


async def test_report_interval_of_a_0_1_scorer_stays_in_the_scale(tmp_path: Path) -> None:
    # 9 of 10 passing: Student t gave 0.900 ± 0.226, reaching 1.126; the report and the store
    # now show Wilson's interval, the same in both.
    passed = [1.0] * 9 + [0.0]
    result = await run_evals(
        [{"input": str(i), "output": "x"} for i in range(10)],
        [create_scorer("Pass", id="pass").generate_score(lambda run: passed[int(run.input)])],
        store=tmp_path / "s.duckdb",
        progress=False,
    )
    (row,) = build_report(result).scorers
    assert row.ci_low is not None
    assert row.ci_high is not None
    assert (round(row.ci_low, 3), round(row.ci_high, 3)) == (0.544, 0.986)
    (stored,) = read_scorer_summary(tmp_path / "s.duckdb", [result.experiment_id])
    assert (stored["ci95_low"], stored["ci95_high"]) == pytest.approx((row.ci_low, row.ci_high))
    assert "0.900 [0.544, 0.986]" in console_table(build_report(result))
