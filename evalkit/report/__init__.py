"""Reports of one experiment: console table, Markdown summary, HTML page, JUnit XML, the
failures grouped by error ([`failure_groups`][evalkit.report.failure_groups]) and the agreement of
scorers with human labels (`AgreementView`). The CLI (``--report-dir``) and the pytest plugin
build them with the functions below, from a [`ReportData`][evalkit.report.ReportData] that
[`build_report`][evalkit.report.build_report] makes of a run's result;
[`write_reports`][evalkit.report.write_reports] writes a judged run's report files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.report._agreement import AgreementView as AgreementView
    from evalkit.report._agreement import DisagreementView as DisagreementView
    from evalkit.report._agreement import HeatCell as HeatCell
    from evalkit.report._agreement import MetricView as MetricView
    from evalkit.report._build import build_report as build_report
    from evalkit.report._files import write_reports as write_reports
    from evalkit.report._groups import FailureGroup as FailureGroup
    from evalkit.report._groups import failure_groups as failure_groups
    from evalkit.report._html import html_report as html_report
    from evalkit.report._junit import junit_xml as junit_xml
    from evalkit.report._model import ItemView as ItemView
    from evalkit.report._model import PairView as PairView
    from evalkit.report._model import ReportData as ReportData
    from evalkit.report._text import markdown_summary as markdown_summary

# Lazy: the HTML report (jinja2, numpy) is only needed once a run has finished.
# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())
