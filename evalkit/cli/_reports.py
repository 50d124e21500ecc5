"""Where ``evalkit run`` writes its reports: checked before the run, written after it.

A folder that cannot hold the reports is a usage error before any item is evaluated (nothing
is stored, nothing is paid for); one that fails after the run is stored is a warning, and the
exit code stays what the gates say: the run is in the store either way.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from evalkit.errors import ConfigError
from evalkit.report import PairView, ReportData, html_report, junit_xml, markdown_summary

#: Dropped pairs listed per scorer in a report; the rest are one ``evalkit diff`` away.
REGRESSED_SHOWN = 20

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


def _decoded(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def explain_from_store(
    store: str | os.PathLike[str], baseline_id: str, candidate_id: str, *, slices: list[str]
) -> dict[str, Any]:
    """What a report needs from the store to explain a comparison: per scorer the pairs that
    dropped (the first :data:`REGRESSED_SHOWN`, largest drop first) and their count, and the
    baseline's scores for the histograms."""
    from evalkit.compare import diff_items
    from evalkit.store import connection

    items: dict[str, list[PairView]] = {}
    totals: dict[str, int] = {}
    with connection(store, read_only=True) as con:
        scorers = [row[0] for row in con.execute(
            "SELECT scorer_id FROM experiment_scorers WHERE experiment_id = ? ORDER BY position",
            [candidate_id]).fetchall()]  # fmt: skip
        for scorer in scorers:
            diff = diff_items(con, baseline_id, candidate_id, scorer=scorer, dropped=True,
                              limit=REGRESSED_SHOWN, slices=slices)  # fmt: skip
            totals[scorer] = diff.total
            items[scorer] = [
                PairView(
                    p["item_id"], p["scorer_id"], p["baseline_score"], p["candidate_score"],
                    p["delta"], _decoded(p["input"]), _decoded(p["ground_truth"]),
                    _decoded(p["baseline_output"]), _decoded(p["candidate_output"]),
                    p["baseline_reason"], p["candidate_reason"],
                    tuple((k, p[f"slice:{k}"]) for k in slices),
                )
                for p in diff.pairs.to_dict(orient="records")
            ]  # fmt: skip
        rows = con.execute(
            "SELECT scorer_id, list(score) FROM scores WHERE experiment_id = ? GROUP BY ALL",
            [baseline_id],
        ).fetchall()
    return {
        "regressed_items": items,
        "regressed_totals": totals,
        "baseline_distributions": {sid: list(values) for sid, values in rows},
        "baseline_id": baseline_id,
    }
