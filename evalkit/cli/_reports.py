"""Where ``evalkit run`` writes its reports: checked before the run, written after it.

A folder that cannot hold the reports is a usage error before any item is evaluated (nothing
is stored, nothing is paid for); one that fails after the run is stored is a warning, and the
exit code stays what the gates say: the run is in the store either way.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit._json import loads_stored
from evalkit.errors import ConfigError
from evalkit.report._internal import PairView, ReportData, html_report, junit_xml, markdown_summary

if TYPE_CHECKING:
    from evalkit.agreement import Agreement, LabelSpec, ScorerAgreement
    from evalkit.store._internal import StoredAgreement

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


def explain_from_store(
    store: str | os.PathLike[str],
    baseline_id: str,
    candidate_id: str,
    *,
    slices: list[str],
    changed: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """What a report needs from the store to explain a comparison: per scorer the pairs that
    dropped (the first `REGRESSED_SHOWN`, largest drop first) and their count, and the
    baseline's scores for the histograms. A scorer whose comparison saw no paired score change
    (``changed``: its worse and better counts) has no dropped pair whatever its direction, and
    is not searched: the search's table imports pandas (0.3 s, issue 31)."""
    from evalkit.compare import diff_items
    from evalkit.store._internal import connection

    items: dict[str, list[PairView]] = {}
    totals: dict[str, int] = {}
    with connection(store, read_only=True) as con:
        scorers = [row[0] for row in con.execute(
            "SELECT scorer_id FROM experiment_scorers WHERE experiment_id = ? ORDER BY position",
            [candidate_id]).fetchall()]  # fmt: skip
        for scorer in scorers:
            if changed is not None and changed.get(scorer, 1) == 0:
                totals[scorer], items[scorer] = 0, []
                continue
            diff = diff_items(con, baseline_id, candidate_id, scorer=scorer, dropped=True,
                              limit=REGRESSED_SHOWN, slices=slices)  # fmt: skip
            totals[scorer] = diff.total
            items[scorer] = [
                PairView(
                    p["item_id"], p["scorer_id"], p["baseline_score"], p["candidate_score"],
                    p["delta"], loads_stored(p["input"]), loads_stored(p["ground_truth"]),
                    loads_stored(p["baseline_output"]), loads_stored(p["candidate_output"]),
                    p["baseline_reason"], p["candidate_reason"],
                    tuple((k, p[f"slice:{k}"]) for k in slices),
                    bool(p["baseline_reason_truncated"]), bool(p["candidate_reason_truncated"]),
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
    from evalkit.agreement._internal import measure_labels, parse_labels
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

    from evalkit.agreement import Estimate
    from evalkit.agreement._internal import CONSENSUS, RATERS

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
