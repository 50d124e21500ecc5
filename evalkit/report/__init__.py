"""Reports of one experiment: console table, Markdown summary, HTML page, JUnit XML, the
failures grouped by error ([`failure_groups`][evalkit.report.failure_groups]) and the agreement of
scorers with human labels (`agreement_views`). The CLI (``--report``) and the pytest plugin
build them with the functions below, from a [`ReportData`][evalkit.report.ReportData] that
[`build_report`][evalkit.report.build_report] makes of a run's result."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.report._agreement import AgreementView, agreement_views
    from evalkit.report._build import build_report
    from evalkit.report._groups import FailureGroup, error_pattern, failure_groups
    from evalkit.report._html import html_report
    from evalkit.report._junit import junit_xml
    from evalkit.report._model import ItemView, PairView, ReportData
    from evalkit.report._text import console_failure_groups, console_table, markdown_summary

# Lazy: the HTML report (jinja2, numpy) is only needed once a run has finished.
__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.report._groups": (
            "FailureGroup",
            "error_pattern",
            "failure_groups",
        ),
        "evalkit.report._agreement": (
            "AgreementView",
            "agreement_views",
        ),
        "evalkit.report._build": ("build_report",),
        "evalkit.report._html": ("html_report",),
        "evalkit.report._junit": ("junit_xml",),
        "evalkit.report._model": (
            "ItemView",
            "PairView",
            "ReportData",
        ),
        "evalkit.report._text": (
            "console_failure_groups",
            "console_table",
            "markdown_summary",
        ),
    },
)

__all__ = [
    "AgreementView",
    "FailureGroup",
    "ItemView",
    "PairView",
    "ReportData",
    "agreement_views",
    "build_report",
    "console_failure_groups",
    "console_table",
    "error_pattern",
    "failure_groups",
    "html_report",
    "junit_xml",
    "markdown_summary",
]
