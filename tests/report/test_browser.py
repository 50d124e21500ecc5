"""The HTML report in a real browser (the system's headless Chromium): the agreement heat map
is a table whose cells are shaded by their count, named by its caption and headers, and a
judge's hostile reason stays inert text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import confusion_matrix

from evalkit.report import build_report, html_report
from tests.report.test_agreement import HOSTILE, LEVELS, N, _first, _judge, labelled_run


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a labelled run, written before the browser starts (Playwright's event
    loop would refuse the run's own)."""
    folder = tmp_path_factory.mktemp("report")
    run = labelled_run(folder, columns=["rater_a", "rater_b"])
    path = folder / "report.html"
    path.write_text(html_report(build_report(run)), encoding="utf-8")
    return path


def test_the_heat_map_is_shaded_by_count_and_the_reasons_are_inert(
    report_file: Path, page: Any
) -> None:
    path = report_file
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(path.as_uri())

    heat = page.get_by_role("table", name="Confusion matrix · polite")
    assert heat.get_by_role("rowheader").all_inner_texts() == LEVELS
    assert heat.get_by_role("columnheader").all_inner_texts()[1:] == LEVELS
    cells = heat.locator("td")
    counts = [int(text) for text in cells.all_inner_texts()]
    expected = confusion_matrix([_first(i) for i in range(N)], [_judge(i) for i in range(N)])
    assert counts == expected.ravel().tolist()
    backgrounds = cells.evaluate_all("cells => cells.map(c => getComputedStyle(c).backgroundColor)")
    alphas = [_alpha(color) for color in backgrounds]
    # Darker where there are more pairs, transparent where there are none.
    assert [a for _, a in sorted(zip(counts, alphas, strict=True))] == sorted(alphas)
    assert alphas[counts.index(max(counts))] == 1.0
    assert all(a == 0.0 for c, a in zip(counts, alphas, strict=True) if c == 0)

    reasons = page.locator("td.cell", has_text="said").all_inner_texts()
    assert reasons
    assert all(text.startswith(HOSTILE) for text in reasons)
    assert page.locator("script").count() == 0
    assert dialogs == []
    assert page.errors == []


def _alpha(color: str) -> float:
    """The alpha of a computed ``rgb(...)``/``rgba(...)`` colour (1 for rgb)."""
    parts = re.findall(r"[0-9.]+", color)
    return float(parts[3]) if len(parts) == 4 else 1.0
