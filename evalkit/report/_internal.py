"""What evalkit's own packages use from `evalkit.report` and no user calls. Not for users:
these names may change with any release (the package's public names are those of
`evalkit.report`, each in the API reference). Why a package has two faces:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.report._agreement import agreement_views
    from evalkit.report._build import build_report
    from evalkit.report._counts import items_done
    from evalkit.report._groups import error_pattern
    from evalkit.report._html import html_report
    from evalkit.report._junit import junit_xml
    from evalkit.report._model import ItemView, PairView, ReportData
    from evalkit.report._text import console_failure_groups, console_table, markdown_summary

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.report._agreement": ("agreement_views",),
        "evalkit.report._build": ("build_report",),
        "evalkit.report._counts": ("items_done",),
        "evalkit.report._groups": ("error_pattern",),
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
    "ItemView",
    "PairView",
    "ReportData",
    "agreement_views",
    "build_report",
    "console_failure_groups",
    "console_table",
    "error_pattern",
    "html_report",
    "items_done",
    "junit_xml",
    "markdown_summary",
]
