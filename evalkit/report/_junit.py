"""JUnit XML for CI systems: one test case per scorer gate."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalkit.report._model import ReportData, delta_text, mean_text


def junit_xml(report: ReportData) -> str:
    """A JUnit XML document; a scorer whose threshold or regression gate failed is a failure."""
    failed = sum(1 for s in report.scorers if s.gate_failed)
    suite = ET.Element(
        "testsuite",
        name=f"evalkit.{report.name}",
        tests=str(len(report.scorers)),
        failures=str(failed),
        errors="0",
        timestamp=report.started_at,
    )
    for s in report.scorers:
        case = ET.SubElement(suite, "testcase", classname=report.name, name=s.scorer_id)
        detail = (
            f"mean {mean_text(s)} over {s.n} scores, {s.failures} failures, "
            f"threshold {s.threshold or 'none'}, delta vs baseline {delta_text(s)}"
        )
        if s.gate_failed:
            message = "regressed against the baseline" if s.regressed else "threshold not met"
            ET.SubElement(case, "failure", message=message).text = detail
        else:
            ET.SubElement(case, "system-out").text = detail
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
