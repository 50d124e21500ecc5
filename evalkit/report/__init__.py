"""Reports of one experiment: console table, Markdown summary, HTML page, JUnit XML, the
failures grouped by error ([`failure_groups`][evalkit.report.failure_groups]) and the agreement of
scorers with human labels (`agreement_views`). Users get them from the CLI (``--report-dir``),
the pytest plugin, and [`write_reports`][evalkit.report.write_reports], which writes a judged
run's report files; the failure groups are public too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.report._files import write_reports
    from evalkit.report._groups import FailureGroup, failure_groups

# Lazy: the HTML report (jinja2, numpy) is only needed once a run has finished.
__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.report._files": ("write_reports",),
        "evalkit.report._groups": (
            "FailureGroup",
            "failure_groups",
        ),
    },
)

__all__ = [
    "FailureGroup",
    "failure_groups",
    "write_reports",
]
