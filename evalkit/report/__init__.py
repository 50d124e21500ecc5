"""Reports of one experiment: console table, Markdown summary, HTML page, JUnit XML."""

from __future__ import annotations

from evalkit.report._counts import items_done
from evalkit.report._html import html_report
from evalkit.report._junit import junit_xml
from evalkit.report._model import ItemView, ReportData, ScorerRow
from evalkit.report._text import console_table, markdown_summary

__all__ = [
    "ItemView",
    "ReportData",
    "ScorerRow",
    "console_table",
    "html_report",
    "items_done",
    "junit_xml",
    "markdown_summary",
]
