"""The self-contained HTML report: inline CSS and SVG, every user or model text escaped."""

from __future__ import annotations

import html
from typing import Any

from evalkit._json import dumps
from evalkit.report._counts import items_done
from evalkit.report._groups import FailureGroup, per_scorer
from evalkit.report._model import ItemView, ReportData, ScorerRow, delta_text, mean_text
from evalkit.report._safe import visible

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#222}
h1{margin-bottom:.2rem} .meta{color:#555} table{border-collapse:collapse;margin:1rem 0}
th,td{border:1px solid #ddd;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f5f5f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.passed{color:#1a7f37} .failed,.regressed{color:#cf222e;font-weight:600}
p.verdict{font-size:1.1rem}
.cell{max-width:28rem;white-space:pre-wrap;word-break:break-word;font-family:monospace;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem} figure{margin:0} figcaption{font-weight:600}
"""

_MAX_CELL = 600
_MAX_FAILURE_ROWS = 100
_MAX_GROUPS = 20


def _e(value: Any) -> str:
    text = value if isinstance(value, str) else dumps(value)
    if len(text) > _MAX_CELL:
        text = text[:_MAX_CELL] + "…"
    return html.escape(visible(text), quote=True)


def histogram_svg(
    scores: list[float], *, bins: int = 10, width: int = 260, height: int = 120
) -> str:
    """An SVG bar chart of ``scores`` in ``bins`` equal-width bins over their range."""
    if not scores:
        return "<p>no scores</p>"
    low, high = min(scores), max(scores)
    if high == low:
        low, high = low - 0.5, high + 0.5
    counts = [0] * bins
    for s in scores:
        counts[min(int((s - low) / (high - low) * bins), bins - 1)] += 1
    top = max(counts)
    bar_w = width / bins
    bars = []
    for i, c in enumerate(counts):
        h = (height - 20) * c / top
        bars.append(
            f'<rect x="{i * bar_w + 1:.1f}" y="{height - 15 - h:.1f}" width="{bar_w - 2:.1f}" '
            f'height="{h:.1f}" fill="#4a7bd0"><title>{c}</title></rect>'
        )
    labels = (
        f'<text x="0" y="{height - 2}" font-size="10">{low:.2f}</text>'
        f'<text x="{width}" y="{height - 2}" font-size="10" text-anchor="end">{high:.2f}</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img">{"".join(bars)}{labels}</svg>'
    )


def _scorer_row(s: ScorerRow) -> str:
    cells = [
        f"<td>{_e(s.scorer_id)}</td>",
        f'<td class="num">{s.n}</td>',
        f'<td class="num">{s.failures}</td>',
        f'<td class="num">{s.not_run}</td>',
        f'<td class="num">{_e(mean_text(s))}</td>',
        f"<td>{_e(s.threshold or '-')}</td>",
        f'<td class="num">{_e(delta_text(s))}</td>',
        f'<td class="{s.verdict}">{_e(s.verdict)}</td>',
        f"<td>{_e('; '.join(s.reasons))}</td>",
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def _item_rows(items: list[ItemView] | tuple[ItemView, ...], *, failures: bool) -> str:
    rows = []
    for it in items:
        last = (
            f"<td>{_e(it.failed_step or 'target')}</td><td class='cell'>{_e(it.error or '')}</td>"
            if failures
            else f"<td class='num'>{_e('-' if it.score is None else f'{it.score:.3f}')}</td>"
            f"<td class='cell'>{_e(it.reason or '')}</td>"
        )
        rows.append(
            f"<tr><td>{_e(it.item_id)}</td><td>{_e(it.scorer_id)}</td>"
            f"<td class='cell'>{_e(it.input)}</td><td class='cell'>{_e(it.output)}</td>"
            f"<td class='cell'>{_e(it.ground_truth)}</td>{last}</tr>"
        )
    return "".join(rows)


def _group_row(g: FailureGroup) -> str:
    return (
        f"<tr><td>{_e(g.scorer_id)}</td><td class='num'>{g.count}</td><td>{_e(g.error_type)}</td>"
        f"<td>{_e(g.failed_step or '-')}</td><td class='cell'>{_e(g.pattern)}</td>"
        f"<td>{_e(g.example_item_id)}</td><td class='cell'>{_e(g.example_message)}</td></tr>"
    )


def _failure_groups(report: ReportData) -> str:
    """The "Failure groups" section: per scorer, its largest groups, then how many more."""
    rows = []
    for scorer in per_scorer(report.failure_groups, limit=_MAX_GROUPS):
        rows += [_group_row(g) for g in scorer.shown]
        if scorer.more_groups:
            rows.append(f"<tr><td>{_e(scorer.scorer_id)}</td><td colspan='6'>"
                        f"{_e(scorer.more_text)}</td></tr>")  # fmt: skip
    return (
        "<h2>Failure groups</h2><table><tr><th>scorer</th><th>failures</th><th>error</th>"
        "<th>step</th><th>pattern</th><th>example item</th><th>example message</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def html_report(report: ReportData) -> str:
    """A complete, self-contained HTML page for one experiment."""
    verdict = "passed" if report.passed else "failed"
    note = f"<p class='meta'>{_e(report.baseline_note)}</p>" if report.baseline_note else ""
    done = items_done(report.succeeded_items + report.failed_items, report.total_items)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>evalkit · {_e(report.name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(report.name)}</h1>",
        f"<p class='meta'>experiment <code>{_e(report.experiment_id)}</code> · status "
        f"{_e(report.status)}<br>"
        f"dataset <code>{_e(report.dataset or '-')}</code> · {done} items, "
        f"{report.failed_items} failed · started {_e(report.started_at)} · completed "
        f"{_e(report.completed_at or '-')}"
        + (f" · baseline <code>{_e(report.baseline)}</code>" if report.baseline else "")
        + "</p>",
        f"<p class='verdict {verdict}'>{_e(report.verdict_line)}</p>",
        note,
        "<h2>Scorers</h2><table><tr><th>scorer</th><th>scored</th><th>failed</th>"
        "<th>not run</th><th>mean ± 95% CI</th><th>threshold</th>"
        "<th>Δ vs baseline [95% CI]</th><th>verdict</th><th>why</th></tr>",
        *(_scorer_row(s) for s in report.scorers),
        "</table>",
    ]
    notes = [s for s in report.scorers if s.comparison_note]
    if notes:
        parts.append(
            "<ul>"
            + "".join(f"<li>{_e(s.scorer_id)}: {_e(s.comparison_note)}</li>" for s in notes)
            + "</ul>"
        )
    if report.distributions:
        parts.append("<h2>Score distributions</h2><div class='charts'>")
        for scorer_id, scores in report.distributions.items():
            parts.append(
                f"<figure><figcaption>{_e(scorer_id)} (n={len(scores)})</figcaption>"
                f"{histogram_svg(scores)}</figure>"
            )
        parts.append("</div>")
    head = "<tr><th>item</th><th>scorer</th><th>input</th><th>output</th><th>ground truth</th>"
    for scorer_id, items in report.worst_items.items():
        if items:
            parts.append(f"<h2>Worst items · {_e(scorer_id)}</h2><table>{head}")
            parts.append("<th>score</th><th>reason</th></tr>")
            parts.append(_item_rows(items, failures=False) + "</table>")
    if report.failure_groups:
        parts.append(_failure_groups(report))
    parts.append(f"<h2>Failures ({len(report.failures)})</h2>")
    if report.failures:
        shown = report.failures[:_MAX_FAILURE_ROWS]
        parts.append(f"<table>{head}<th>step</th><th>error</th></tr>")
        parts.append(_item_rows(shown, failures=True) + "</table>")
        if len(report.failures) > len(shown):
            parts.append(
                f"<p>… {len(report.failures) - len(shown)} more failures: every one is in the"
                " store (<code>scorer_errors</code>, and <code>experiment_items</code> for the"
                " target's).</p>"
            )
    else:
        parts.append("<p>None.</p>")
    parts.append("</body></html>\n")
    return "".join(parts)
