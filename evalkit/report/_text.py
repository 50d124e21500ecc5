"""Plain-text renderings: the console table, the failure groups and the Markdown summary."""

from __future__ import annotations

import re

from evalkit._counts import items_done
from evalkit._visible import visible
from evalkit.report._agreement import AgreementView
from evalkit.report._groups import group_text, per_scorer
from evalkit.report._model import ReportData, ScorerRow, delta_text, mean_text

_HEADERS = ("scorer", "scored", "failed", "not run", "mean [CI]", "threshold",
            "Δ vs baseline [CI]", "verdict")  # fmt: skip


def _cells(s: ScorerRow) -> tuple[str, ...]:
    return (
        s.scorer_id,
        str(s.n),
        str(s.failures),
        str(s.not_run),
        mean_text(s),
        s.threshold or "-",
        delta_text(s),
        s.verdict,
    )


def console_table(report: ReportData) -> str:
    """The per-scorer table printed after a run, columns aligned, one line per scorer."""
    rows = [_HEADERS, *(tuple(map(_one_line, _cells(s))) for s in report.scorers)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    head = (
        f"{_one_line(report.name)} ({_one_line(report.experiment_id)}): {report.status}, "
        f"{_items(report)} items, {report.failed_items} failed"
    )
    if report.baseline:
        head += f", baseline {_one_line(report.baseline)}"
        if report.baseline_reason:
            head += f": {_one_line(report.baseline_reason)}"
    table = [head, *(line.rstrip() for line in lines)]
    if report.baseline_note:
        table.append(_one_line(report.baseline_note))
    table += [f"{_one_line(s.scorer_id)}: {_one_line(s.power_note)}"
              for s in report.scorers if s.power_note]  # fmt: skip
    return "\n".join([*table, _one_line(report.verdict_line)])


_CONSOLE_GROUPS = 5
_CONSOLE_PATTERN = 300
_MD_GROUPS = 20


def console_failure_groups(report: ReportData) -> str:
    """The failure groups printed after the table: per scorer its failures, then its largest
    groups (at most 5, then how many more) with a count and an example item; "" when the
    run has no failure groups."""
    if not report.failure_groups:
        return ""
    lines = ["failure groups:"]
    for scorer in per_scorer(report.failure_groups, limit=_CONSOLE_GROUPS):
        lines.append(f"  {_one_line(scorer.scorer_id)}: {scorer.failures} failed")
        width = len(str(scorer.shown[0].count))
        for group in scorer.shown:
            text = _one_line(group_text(group))
            if len(text) > _CONSOLE_PATTERN:
                text = text[:_CONSOLE_PATTERN] + "…"
            example = _one_line(group.example_item_id)
            lines.append(f"    {group.count:>{width}} × {text} (e.g. {example})")  # noqa: RUF001
        if scorer.more_groups:
            lines.append(f"    {scorer.more_text}")
    return "\n".join(lines)


def _markdown_groups(report: ReportData) -> list[str]:
    out = ["", "## Failure groups", ""]
    for scorer in per_scorer(report.failure_groups, limit=_MD_GROUPS):
        sid = _md_escape(scorer.scorer_id)
        for g in scorer.shown:
            where = f" at {_md_escape(g.failed_step)}" if g.failed_step else ""
            out.append(
                f"- {sid}: {g.count} × {_md_escape(g.error_type)}{where}: "  # noqa: RUF001
                f"{_md_code(g.pattern)} (e.g. {_md_code(g.example_item_id)})"
            )
        if scorer.more_groups:
            out.append(f"- {sid}: {scorer.more_text}")
    return out


# ASCII punctuation with a meaning mid-line (and # for headings' closing sequence); a
# backslash makes each literal (CommonMark). "<" becomes an entity so it cannot open HTML.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~&])")
_BACKTICKS = re.compile(r"`+")


def _items(report: ReportData) -> str:
    return items_done(report.succeeded_items + report.failed_items, report.total_items)


def _one_line(text: str) -> str:
    return visible(" ".join(text.splitlines()))


def _md_escape(text: str) -> str:
    """``text`` as literal Markdown text, also inside a table cell; ``<`` cannot open HTML."""
    return _MD_SPECIAL.sub(r"\\\1", _one_line(text)).replace("<", "&lt;")


def _md_code(text: str) -> str:
    """``text`` as a code span, whatever backticks it holds.

    Escapes mean nothing inside a code span, so instead the fence is one backtick longer than
    the longest run inside, with a space of padding when the text starts or ends with a
    backtick or a space (CommonMark strips one on each side).
    """
    text = _one_line(text) or " "
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_summary(report: ReportData) -> str:
    """A Markdown summary of the run: header facts, the per-scorer table, failure counts."""
    out = [
        f"# {_md_escape(report.name)}",
        "",
        *([f"> **{_md_escape(report.partial)}**", ""] if report.partial else []),
        f"- experiment: {_md_code(report.experiment_id)} — {_md_escape(report.status)}",
        f"- verdict: **{_md_escape(report.verdict_line)}**",
        f"- dataset: {_md_code(report.dataset or '-')}",
        f"- items: {_items(report)} ({report.failed_items} failed)",
        f"- started {report.started_at}, completed {report.completed_at or '-'}",
    ]
    if report.baseline:
        why = f" — {_md_escape(report.baseline_reason)}" if report.baseline_reason else ""
        out.append(f"- baseline: {_md_code(report.baseline)}{why}")
    if report.baseline_note:
        out.append(f"- {_md_escape(report.baseline_note)}")
    out += ["", "| " + " | ".join(_HEADERS) + " |", "|" + "---|" * len(_HEADERS)]
    out += ["| " + " | ".join(_md_escape(c) for c in _cells(s)) + " |" for s in report.scorers]
    notes = [s for s in report.scorers if s.comparison_note]
    if notes:
        out += ["", "Comparison notes:", ""]
        out += [
            f"- {_md_escape(s.scorer_id)}: {_md_escape(s.comparison_note or '')}" for s in notes
        ]
    if report.slices:
        out += _markdown_slices(report)
    if report.agreement:
        out += _markdown_agreement(report)
    if report.failure_groups:
        out += _markdown_groups(report)
    if report.failures:
        out += ["", f"## Failures ({len(report.failures)})", ""]
        for f in report.failures[:50]:
            out.append(
                f"- {_md_code(f.item_id)} {_md_escape(f.scorer_id)} at "
                f"{_md_escape(f.failed_step or 'target')}: {_md_escape((f.error or '')[:300])}"
            )
        if len(report.failures) > 50:
            out.append(f"- … {len(report.failures) - 50} more in the HTML report")
    return "\n".join(out) + "\n"


def _markdown_slices(report: ReportData) -> list[str]:
    """The slices that regressed (Tarone-Holm corrected), one table row per slice and scorer."""
    regressed = report.regressed_slices
    out = ["", "## Slices", ""]
    out.append("Slices that regressed: " + (", ".join(_md_code(x) for x in regressed)
                                            if regressed else "none"))  # fmt: skip
    rows = [x for x in report.slices if x.verdict == "regressed"]
    if rows:
        out += ["", "| slice | scorer | n | Δ [95% CI, unadjusted] | p (Tarone-Holm) "
                    "| hidden by the total |", "|---|---|---|---|---|---|"]  # fmt: skip
        out += [
            f"| {_md_escape(f'{x.key}={x.value}')} | {_md_escape(x.scorer_id)} | {x.n} | "
            f"{x.delta:+.3f} [{x.ci_low:+.3f}, {x.ci_high:+.3f}] | {x.p_adjusted:.3g} | "
            f"{'yes' if x.flagged else 'no'} |"
            for x in rows
        ]
    return out


def _markdown_agreement(report: ReportData) -> list[str]:
    """Per labelled scorer: its metrics and gates, the raters' alpha, the confusion matrix
    and the pairs where the judge and the people differ most."""
    out = ["", "## Agreement with human labels"]
    for a in report.agreement:
        out += ["", f"### {_md_escape(a.scorer_id)}", ""]
        missing = f", {a.missing} left out without a label or a score" if a.missing else ""
        out.append(f"{a.kind} labels, compared with {_md_escape(a.compared_with)}: "
                   f"{a.n} pairs{missing}.")  # fmt: skip
        if a.reasons:
            out += ["", "**" + _md_escape("; ".join(a.reasons)) + "**"]
        out += ["", "| metric | value [95% CI] | gate |", "|---|---|---|"]
        shown = [*a.metrics, *((a.raters,) if a.raters else ())]
        out += [f"| {m.name}{' (raters)' if m is a.raters else ''} | {m.text} | {m.gate or '-'} |"
                for m in shown]  # fmt: skip
        if a.raters:
            out += ["", f"Krippendorff's alpha among the {len(a.columns)} label columns is "
                    f"{a.raters.text}: that bounds what a judge can reach — no judge can be "
                    "expected to agree with the people better than they agree among "
                    "themselves."]  # fmt: skip
        out += _markdown_confusion(a)
        out += _markdown_disagreements(a)
    return out


def _markdown_confusion(a: AgreementView) -> list[str]:
    if not a.confusion:
        return []
    out = ["", "Confusion matrix (rows: the people's label; columns: the judge's score snapped "
           "to the nearest level):", ""]  # fmt: skip
    out.append("| human \\ judge | " + " | ".join(_md_escape(x) for x in a.levels) + " |")
    out.append("|---|" + "---:|" * len(a.levels))
    out += [f"| {_md_escape(level)} | " + " | ".join(str(c.count) for c in row) + " |"
            for level, row in zip(a.levels, a.confusion, strict=True)]  # fmt: skip
    return out


def _markdown_disagreements(a: AgreementView) -> list[str]:
    if not a.disagreements:
        return ["", "No pair where the judge and the people differ."]
    out = ["", "Where the judge and the people differ most:", "",
           "| item | judge score | human label | judge's reason |",
           "|---|---:|---|---|"]  # fmt: skip
    out += [f"| {_md_escape(d.item_id)} | {d.score:.3f} | {_md_escape(d.label_text)} | "
            f"{_md_escape(d.reason or '-')}{' (truncated)' if d.reason_truncated else ''} |"
            for d in a.disagreements]  # fmt: skip
    return out
