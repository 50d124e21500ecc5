"""The report files of a judged run: HTML, Markdown and JUnit XML, written side by side."""

from __future__ import annotations

import os
import re
from pathlib import Path

from evalkit.report._html import html_report
from evalkit.report._junit import junit_xml
from evalkit.report._model import ReportData
from evalkit.report._text import markdown_summary

# The run's name in a report's file name is cut to this many characters: with the id and the
# longest suffix (".junit.xml") the name stays far below the 255 bytes file systems allow.
_NAME_IN_FILE = 100


def report_stem(name: str, experiment_id: str) -> str:
    """The reports' file name without suffix: the run's name made file-safe, then its id."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:_NAME_IN_FILE].rstrip("-")
    return f"{stem or 'experiment'}-{experiment_id}"


def write_reports(report: ReportData, folder: str | os.PathLike[str]) -> dict[str, Path]:
    """Write a judged run's HTML, Markdown and JUnit reports into ``folder``, as
    ``evalkit run --report-dir`` does.

    The files are named after the run and its id (``nightly-6b7c….html``, ``….md``,
    ``….junit.xml``); the folder is made if missing, and files of the same run are replaced.

    Args:
        report: The run's report: the ``report`` of the
            [`JudgedRun`][evalkit.experiment_file.JudgedRun] that
            [`run_experiment_file`][evalkit.experiment_file.run_experiment_file] or
            [`judge_run`][evalkit.experiment_file.judge_run] returns.
        folder: Where to write them.

    Returns:
        The path of each report by kind: ``"html"``, ``"markdown"`` and ``"junit"``.

    Raises:
        OSError: A report could not be written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stem = report_stem(report.name, report.experiment_id)
    paths = {
        "html": folder / f"{stem}.html",
        "markdown": folder / f"{stem}.md",
        "junit": folder / f"{stem}.junit.xml",
    }
    paths["html"].write_text(html_report(report), encoding="utf-8")
    paths["markdown"].write_text(markdown_summary(report), encoding="utf-8")
    paths["junit"].write_text(junit_xml(report), encoding="utf-8")
    return paths
