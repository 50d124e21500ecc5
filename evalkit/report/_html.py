"""The self-contained HTML report, rendered by Jinja2 from ``templates/report.html.j2``.

Every ``{{ value }}`` of the template goes through `_finalize`: user and model text is
cut, has control and bidi characters made visible, and is escaped; only values built here from
numbers (the SVG histograms) are `Markup`. Autoescaping stays on, so a
template change that skips the finalizer still escapes. Why Jinja2 and this hook:
docs/pages/design/report-templates.md.
"""

from __future__ import annotations

import contextlib
import difflib
import html
import math
import re
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup

from evalkit._counts import items_done
from evalkit._json import dumps
from evalkit._numbers import MINUS, shown_number
from evalkit._visible import visible
from evalkit.report._charts import histogram_markup, histogram_svg
from evalkit.report._groups import per_scorer
from evalkit.report._model import ReportData, delta_text, mean_text

__all__ = ["histogram_svg", "html_report"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:80rem;color:#222}
h1{margin-bottom:.2rem} .meta{color:#555} table{border-collapse:collapse;margin:1rem 0}
th,td{border:1px solid #ddd;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f5f5f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.passed{color:#1a7f37} .failed,.regressed{color:#cf222e;font-weight:600} .truncated{color:#9a6700}
p.verdict{font-size:1.1rem} hr{border:0;border-top:1px dashed #ccc}
p.partial{background:#fff8c5;border:1px solid #d4a72c;padding:.5rem .75rem;font-weight:600}
.cell{max-width:24rem;white-space:pre-wrap;word-break:break-word;font-family:monospace;font-size:12px}
del{background:#ffebe9;color:#82071e} ins{background:#dafbe1;color:#116329;text-decoration:none}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem} figure{margin:0} figcaption{font-weight:600}
table.heat td{min-width:3.5rem;text-align:center;font-variant-numeric:tabular-nums}
table.heat td.dark{color:#fff} table.heat td.diag{outline:2px solid #1a7f37;outline-offset:-2px}
table.heat caption{text-align:left;font-weight:600;padding-bottom:.3rem}
"""

_MAX_CELL = 600
_MAX_FAILURE_ROWS = 100
_MAX_GROUPS = 20
_MAX_SLICE_ROWS = 200
_WORDS = re.compile(r"\s+|\S+\s*")
_HEAD = Markup("<tr><th>item</th><th>scorer</th><th>input</th><th>output</th><th>ground truth</th>")
#: After a reason that is a judge reply cut at its token limit.
_CUT = Markup(
    " <span class='truncated' title=\"the judge's reply stopped at its token limit\">"
    "(truncated)</span>"
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value)


def _finalize(value: Any) -> Any:
    """What every ``{{ }}`` prints: Markup as is, text cut, made visible and escaped."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return str(value)
    text = _text(value)
    if len(text) > _MAX_CELL:
        text = text[:_MAX_CELL] + "…"
    return Markup(html.escape(visible(text), quote=True))


def word_diff(before: Any, after: Any) -> list[tuple[str, str]]:
    """Word-level differences from ``before`` to ``after``: (``"same"``/``"del"``/``"ins"``,
    text) segments, each output cut to the report's cell length first."""
    a = _WORDS.findall(_text(before or "")[:_MAX_CELL])
    b = _WORDS.findall(_text(after or "")[:_MAX_CELL])
    segments: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            segments.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            segments.append(("ins", "".join(b[j1:j2])))
    return segments


def _num(value: float | None) -> str:
    return shown_number(value, minus=MINUS)


def _signed(value: float | None) -> str:
    return shown_number(value, signed=True, minus=MINUS)


def _pval(value: float | None) -> str:
    # Three significant digits (a p-value spans 1e-12 to 1), not a score's fixed decimals.
    return "-" if value is None or math.isnan(value) else f"{value:.3g}"


def _cut(truncated: bool) -> Markup:
    return _CUT if truncated else Markup("")


class _BestEffortCache(jinja2.FileSystemBytecodeCache):
    """jinja2's cache of compiled templates, which never fails a report: code it cannot
    read or write (a full disk, a damaged file) is compiled again."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().load_bytecode(bucket)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiling the templates took 50 ms of a 0.6 s quickstart (issue 31): jinja2 keeps the
    compiled code in a folder of the temporary directory only its user may write, keyed by
    the template's source, and later runs load it. None (compile each time) when that folder
    cannot be made or is not safe (another user's, a dangling link)."""
    try:
        return _BestEffortCache()
    except (OSError, RuntimeError):
        return None


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("evalkit.report", "templates"),
        bytecode_cache=_bytecode_cache(),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("report.html.j2")


def html_report(report: ReportData) -> str:
    """A complete, self-contained HTML page for one experiment."""
    # Regressed slices first, then by corrected p-value (untested rows last).
    slice_rows = sorted(
        report.slices,
        key=lambda x: (x.verdict != "regressed", 2.0 if x.p_adjusted is None else x.p_adjusted),
    )
    return _template().render(
        r=report,
        css=Markup(_CSS),
        verdict="passed" if report.passed else "failed",
        done=items_done(report.succeeded_items + report.failed_items, report.total_items),
        notes=[s for s in report.scorers if s.comparison_note],
        flagged=sorted({f"{x.key}={x.value}" for x in report.slices if x.flagged}),
        slice_rows=slice_rows[:_MAX_SLICE_ROWS],
        groups=per_scorer(report.failure_groups, limit=_MAX_GROUPS),
        failures=report.failures[:_MAX_FAILURE_ROWS],
        head=_HEAD,
        histogram=histogram_markup,
        word_diff=word_diff,
        mean_text=lambda s: mean_text(s, minus=MINUS),
        delta_text=lambda s: delta_text(s, minus=MINUS),
        num=_num,
        signed=_signed,
        pval=_pval,
        cut=_cut,
    )
