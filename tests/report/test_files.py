"""`write_reports`: a judged run's three report files, named after the run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evalkit.report import write_reports
from evalkit.report._html import html_report
from evalkit.report._junit import junit_xml
from evalkit.report._text import markdown_summary
from tests.report.test_render import EXACT, F1, make_report


def test_write_reports_writes_the_html_markdown_and_junit_of_a_run(tmp_path: Path) -> None:
    report = make_report(EXACT, F1)
    folder = tmp_path / "made" / "here"
    paths = write_reports(report, str(folder))
    assert paths == {
        "html": folder / "nightly-exp-1.html",
        "markdown": folder / "nightly-exp-1.md",
        "junit": folder / "nightly-exp-1.junit.xml",
    }
    assert paths["html"].read_text(encoding="utf-8") == html_report(report)
    assert paths["markdown"].read_text(encoding="utf-8") == markdown_summary(report)
    assert paths["markdown"].read_text(encoding="utf-8").startswith("# nightly\n")
    assert paths["junit"].read_text(encoding="utf-8") == junit_xml(report)


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("night ly/../x", "night-ly-..-x-exp-1"),
        ("///", "experiment-exp-1"),
        ("a" * 300, "a" * 100 + "-exp-1"),
    ],
)
def test_report_files_are_named_after_the_run_made_file_safe(
    tmp_path: Path, name: str, stem: str
) -> None:
    paths = write_reports(replace(make_report(EXACT), name=name), tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        f"{stem}{suffix}" for suffix in (".html", ".junit.xml", ".md")
    )
    assert paths["html"] == tmp_path / f"{stem}.html"


def test_a_folder_that_is_a_file_is_an_os_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("", encoding="utf-8")
    with pytest.raises(FileExistsError):
        write_reports(make_report(EXACT), tmp_path / "taken")
