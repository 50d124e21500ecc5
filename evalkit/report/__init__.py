"""Reports of one experiment: console table, Markdown summary, HTML page, JUnit XML, the
failures grouped by error ([`failure_groups`][evalkit.report.failure_groups]) and the agreement of
scorers with human labels (`agreement_views`). Users get them from the CLI (``--report-dir``),
the pytest plugin, and [`write_reports`][evalkit.report.write_reports], which writes a judged
run's report files; the failure groups are public too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.report._files import write_reports as write_reports
    from evalkit.report._groups import FailureGroup as FailureGroup
    from evalkit.report._groups import failure_groups as failure_groups

# Lazy: the HTML report (jinja2, numpy) is only needed once a run has finished.
__getattr__, __dir__, __all__ = _declared_exports(globals())
