"""Where ``evalkit run`` writes its reports: checked before the run, written after it.

A folder that cannot hold the reports is a usage error before any item is evaluated (nothing
is stored, nothing is paid for); one that fails after the run is stored is a warning, and the
exit code stays what the gates say: the run is in the store either way.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from evalkit.errors import ConfigError
from evalkit.report import ReportData, html_report, junit_xml, markdown_summary

# The run's name in a report's file name is cut to this many characters: with the id and the
# longest suffix (".junit.xml") the name stays far below the 255 bytes file systems allow.
_NAME_IN_FILE = 100


def report_stem(name: str, experiment_id: str) -> str:
    """The reports' file name without suffix: the run's name made file-safe, then its id."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:_NAME_IN_FILE].rstrip("-")
    return f"{stem or 'experiment'}-{experiment_id}"


def check_report_dir(folder: Path) -> None:
    """Make ``folder`` (with its parents) and check a file can be created in it.

    Raises:
        ConfigError: ``folder`` or a parent is a file, or nothing can be written there.
    """
    for path in (folder, *folder.parents):
        if path.exists():
            if not path.is_dir():
                shown = "this path" if path == folder else str(path)
                raise ConfigError(f"--report-dir {folder}: {shown} is not a folder")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".evalkit-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(
            f"--report-dir {folder}: cannot write reports there ({exc.strerror or exc})"
        ) from exc


def write_reports(report: ReportData, folder: Path) -> dict[str, Path]:
    """Write the HTML, Markdown and JUnit reports of ``report`` into ``folder``.

    Raises:
        OSError: A report could not be written.
    """
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
