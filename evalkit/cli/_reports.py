"""Where ``evalkit run`` writes its reports, after the run.

A folder that cannot hold the reports is a usage error before any item is evaluated (nothing
is stored, nothing is paid for: `run_experiment_file` checks it); one that fails after the run
is stored is a warning, and the exit code stays what the gates say: the run is in the store
either way.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.report import ReportData, html_report, junit_xml, markdown_summary

if TYPE_CHECKING:
    from evalkit.agreement import Agreement, LabelSpec, ScorerAgreement
    from evalkit.store._internal import StoredAgreement

# The run's name in a report's file name is cut to this many characters: with the id and the
# longest suffix (".junit.xml") the name stays far below the 255 bytes file systems allow.
_NAME_IN_FILE = 100


def report_stem(name: str, experiment_id: str) -> str:
    """The reports' file name without suffix: the run's name made file-safe, then its id."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:_NAME_IN_FILE].rstrip("-")
    return f"{stem or 'experiment'}-{experiment_id}"


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


def _config(run: Mapping[str, Any]) -> dict[str, Any]:
    config = run.get("config")
    parsed = json.loads(config) if isinstance(config, str) else (config or {})
    return parsed if isinstance(parsed, dict) else {}


def agreement_from_store(
    store: str | os.PathLike[str], run: Mapping[str, Any], *, scorer: str | None = None
) -> tuple[dict[str, ScorerAgreement], dict[str, dict[str, float]]]:
    """A stored run's agreement with its human labels, as the run itself held it, and its
    ``min_agreement`` gates: per labelled scorer with stored figures, a ScorerAgreement.

    The figures are the store's (``scorer_agreement``). The store does not keep the pairs
    that disagree most; they are measured again from the stored scores and labels (the
    labels' spec is in the run's config), by the code that measured the run.

    Args:
        store: The store.
        run: The run's row with its config (``read_experiment``).
        scorer: Only this scorer (None: every labelled scorer).
    """
    from evalkit.agreement import measure_labels, parse_labels
    from evalkit.store._internal import LabeledScores, read_agreement, read_labeled_scores

    config = _config(run)
    gates = {sid: {k: float(v) for k, v in bounds.items()}
             for sid, bounds in (config.get("min_agreement") or {}).items()}  # fmt: skip
    labels = {sid: spec for sid, spec in parse_labels(config.get("labels"), None).items()
              if scorer is None or sid == scorer}  # fmt: skip
    if not labels:  # also a run stored before the store had agreement figures
        return {}, gates
    rows = read_agreement(store, run["id"])
    stored = {row["scorer_id"] for row in rows}
    # A cancelled run was not measured: it has labels but no figures.
    labels = {sid: spec for sid, spec in labels.items() if sid in stored}

    def read(spec: LabelSpec) -> LabeledScores:
        return read_labeled_scores(store, run["id"], spec.scorer_id, spec.columns)

    source = str((config.get("dataset") or {}).get("source") or "labels")
    measured = measure_labels(labels, read, source=source)
    return {sid: _stored(m, [r for r in rows if r["scorer_id"] == sid])
            for sid, m in measured.items()}, gates  # fmt: skip


def _stored(measured: ScorerAgreement, rows: list[StoredAgreement]) -> ScorerAgreement:
    """``measured`` with the figures the store kept for it (the record of the run)."""
    from dataclasses import replace

    from evalkit.agreement import CONSENSUS, RATERS, Estimate

    def estimate(row: StoredAgreement) -> Estimate:
        return Estimate(*(math.nan if v is None else float(v)
                          for v in (row["value"], row["ci_low"], row["ci_high"])))  # fmt: skip

    def agreement(found: Agreement, compared_with: str) -> Agreement:
        mine = {r["metric"]: r for r in rows if r["compared_with"] == compared_with}
        if not mine:
            return found
        first = next(iter(mine.values()))
        return replace(
            found,
            n=int(first["n"]),
            missing=int(first["missing"]),
            # In the order the statistics give them (the store sorts them by name).
            metrics={name: estimate(mine[name]) if name in mine else e
                     for name, e in found.metrics.items()},
            levels=tuple(float(v) for v in first["levels"] or ()),
            confusion=tuple(tuple(int(c) for c in row) for row in first["confusion"] or ()),
        )  # fmt: skip

    raters = [r for r in rows if r["compared_with"] == RATERS]
    return replace(
        measured,
        consensus=agreement(measured.consensus, CONSENSUS),
        columns={c: agreement(a, c) for c, a in measured.columns.items()},
        raters=estimate(raters[0]) if raters else measured.raters,
    )
