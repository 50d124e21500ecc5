"""The "Agreement with human labels" section of the HTML and Markdown reports, from real runs
over a Parquet dataset with two human label columns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix

from evalkit import create_scorer, run_evals_sync
from evalkit.report import build_report, html_report, markdown_summary
from evalkit.run import ExperimentResult

HOSTILE = "<script>alert('x')</script>"
N = 30
LEVELS = ["bad", "ok", "good"]
# The judge's level: the first rater's, except on q03 and q05 (two levels off) and q07 (one).
OFF = {3: 2, 5: 0, 7: 0}
# The second rater says one level more than the first on q01 and q13; the consensus of two
# ordinal labels is the lower one, so it is the first rater's label throughout.
HIGHER = {1, 13}
LONG_ON = 5


def _first(i: int) -> int:
    return i % 3


def _judge(i: int) -> int:
    return OFF.get(i, _first(i))


def _reason(output: str, item_input: str) -> str:
    long = item_input == f"item {LONG_ON}"
    return f"{HOSTILE} said {output}" + (" because" * 200 if long else "")


def labelled_parquet(folder: Path) -> Path:
    path = folder / "labelled.parquet"
    pd.DataFrame(
        {
            "id": [f"q{i:02d}" for i in range(N)],
            "input": [f"item {i}" for i in range(N)],
            "output": [str(_judge(i)) for i in range(N)],
            "rater_a": [LEVELS[_first(i)] for i in range(N)],
            "rater_b": [LEVELS[min(_first(i) + (i in HIGHER), 2)] for i in range(N)],
        }
    ).to_parquet(path)
    return path


def levels_scorer() -> Any:
    return (
        create_scorer("polite")
        .generate_score(lambda run: int(run.output) / 2)
        .generate_reason(lambda run, results: _reason(run.output, run.input))
    )


def labelled_run(
    folder: Path, *, columns: list[str], store: Path | None = None
) -> ExperimentResult:
    return run_evals_sync(
        str(labelled_parquet(folder)), [levels_scorer()], store=store, progress=False,
        experiment="labelled", labels={"polite": {"columns": columns, "levels": LEVELS}},
        min_agreement={"polite": {"kappa": 0.95}},
    )  # fmt: skip


@pytest.fixture
def run(tmp_path: Path) -> ExperimentResult:
    return labelled_run(tmp_path, columns=["rater_a", "rater_b"])


def _heat_cells(page: str) -> list[tuple[float, int]]:
    table = page.split("<table class='heat'>", 1)[1].split("</table>", 1)[0]
    return [
        (float(shade), int(count))
        for shade, count in re.findall(r"rgba\(29,78,166,([0-9.]+)\)'[^>]*>(\d+)</td>", table)
    ]


def test_the_html_section_shows_metrics_gates_alpha_heat_map_and_disagreements(
    run: ExperimentResult,
) -> None:
    page = html_report(build_report(run))
    assert "Agreement with human labels" in page
    measured = run.agreement["polite"]
    kappa = measured.consensus.metrics["kappa"]
    assert f"{kappa.value:.3f} [{kappa.low:.3f}, {kappa.high:.3f}]" in page
    assert kappa.value < 0.95
    assert "&gt;= 0.95 FAILED" in page
    # The gate's reason is the one the scorer's verdict gives.
    [reason] = [r for r in build_report(run).scorers[0].reasons if "min_agreement" in r]
    assert reason.startswith("kappa ")
    assert reason in page
    assert measured.raters is not None
    assert f"alpha (raters)</td><td class='num'>{measured.raters.value:.3f}" in page
    assert "bounds what a judge can reach" in page

    # Rows: the people's label (the consensus is the first rater's); columns: the judge's.
    expected = confusion_matrix([_first(i) for i in range(N)], [_judge(i) for i in range(N)])
    cells = _heat_cells(page)
    assert [count for _, count in cells] == expected.ravel().tolist()
    top = int(expected.max())
    assert [shade for shade, _ in cells] == [round(c / top, 2) for c in expected.ravel()]
    heat = page.split("<table class='heat'>", 1)[1].split("</table>", 1)[0]
    assert re.findall(r"<th scope='col'>(\w+)</th>", heat) == LEVELS
    assert re.findall(r"<th scope='row'>(\w+)</th>", heat) == LEVELS
    assert "title='human bad, judge good: 1 pair'" in heat


def test_the_disagreements_are_listed_escaped_and_cut(run: ExperimentResult) -> None:
    page = html_report(build_report(run))
    listed = page.split("differ most, largest difference first", 1)[1]
    items = re.findall(r"<tr><td>(q\d\d)</td><td class='num'>", listed)
    assert items == ["q03", "q05", "q07"]  # two levels off, then one
    assert "<td>good</td>" in listed.split("q05", 1)[1].split("</tr>", 1)[0]  # its human label
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; said 0" in page
    long = listed.split("<td>q05</td>", 1)[1].split("</tr>", 1)[0]
    assert "because…</td>" in long
    assert long.count("because") < 200


def test_the_markdown_section_has_plain_tables(run: ExperimentResult) -> None:
    md = markdown_summary(build_report(run))
    measured = run.agreement["polite"]
    accuracy = measured.consensus.metrics["accuracy"]
    interval = f"{accuracy.value:.3f} [{accuracy.low:.3f}, {accuracy.high:.3f}]"
    assert f"| accuracy | {interval} | - |" in md
    assert accuracy.value == pytest.approx(27 / 30)
    assert "| kappa | " in md
    assert ">= 0.95 FAILED |" in md
    assert "| alpha (raters) | " in md
    assert "bounds what a judge can reach" in md
    expected = confusion_matrix([_first(i) for i in range(N)], [_judge(i) for i in range(N)])
    assert "| human \\ judge | bad | ok | good |" in md
    for level, row in zip(LEVELS, expected.tolist(), strict=True):
        assert f"| {level} | " + " | ".join(map(str, row)) + " |" in md
    rows = [line for line in md.splitlines() if re.match(r"\| q\d\d \|", line)]
    assert [row.split(" | ")[0] for row in rows] == ["| q03", "| q05", "| q07"]
    assert "| q03 | 1.000 | bad | &lt;script>alert('x')&lt;/script> said 2 |" in rows
    assert "<script>" not in md


def test_one_label_column_has_no_raters_alpha(tmp_path: Path) -> None:
    run = labelled_run(tmp_path, columns=["rater_a"])
    report = build_report(run)
    [view] = report.agreement
    assert view.raters is None
    assert view.per_column == ()
    page, md = html_report(report), markdown_summary(report)
    assert "compared with the label column rater_a" in page
    assert "alpha (raters)" not in page
    assert "alpha (raters)" not in md
    assert "Krippendorff" not in page + md


def test_continuous_labels_show_correlations_and_no_heat_map(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    truth = rng.uniform(0, 1, 40)
    pd.DataFrame(
        {
            "id": [f"c{i:02d}" for i in range(40)],
            "input": ["x"] * 40,
            "output": [f"{v:.3f}" for v in truth + rng.normal(0, 0.1, 40)],
            "human": truth,
        }
    ).to_parquet(tmp_path / "continuous.parquet")
    scorer = create_scorer("fluency").generate_score(lambda run: float(run.output))
    run = run_evals_sync(str(tmp_path / "continuous.parquet"), [scorer], store=None,
                         progress=False, labels={"fluency": "human"})  # fmt: skip
    report = build_report(run)
    page, md = html_report(report), markdown_summary(report)
    pearson = run.agreement["fluency"].consensus.metrics["pearson"]
    assert f"{pearson.value:.3f} [{pearson.low:.3f}, {pearson.high:.3f}]" in page
    assert "| mae | " in md
    assert "| spearman | " in md
    assert "<table class='heat'>" not in page
    assert "human \\ judge" not in md
    assert len(report.agreement[0].disagreements) == 10


def test_an_unlabelled_run_has_no_agreement_section(tmp_path: Path) -> None:
    scorer = create_scorer("exact").generate_score(lambda run: float(run.output == "1"))
    run = run_evals_sync(str(labelled_parquet(tmp_path)), [scorer], store=None, progress=False)
    report = build_report(run)
    assert report.agreement == ()
    assert "Agreement with human labels" not in html_report(report)
    assert "Agreement with human labels" not in markdown_summary(report)
