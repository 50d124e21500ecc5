"""JUnit XML for CI systems: one test case per scorer gate.

Names are passed through `visible`: XML 1.0 cannot hold most
control characters, and a CI server rejects a file that has one.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalkit._visible import visible
from evalkit.report._model import ReportData, delta_text, mean_text


def junit_xml(report: ReportData) -> str:
    """A JUnit XML document; a scorer whose threshold or regression gate failed is a failure."""
    failed = sum(1 for s in report.scorers if s.gate_failed) + bool(report.partial)
    suite = ET.Element(
        "testsuite",
        name=f"evalkit.{visible(report.name)}",
        tests=str(len(report.scorers) + bool(report.partial)),
        failures=str(failed),
        errors="0",
        timestamp=visible(report.started_at),
    )
    if report.baseline:
        # Which run the regression gate compared with, and why (issue 29).
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="baseline", value=visible(report.baseline))
        if report.baseline_reason:
            ET.SubElement(properties, "property", name="baseline_reason",
                          value=visible(report.baseline_reason))  # fmt: skip
    for s in report.scorers:
        case = ET.SubElement(
            suite, "testcase", classname=visible(report.name), name=visible(s.scorer_id)
        )
        detail = (
            f"mean {mean_text(s)} over {s.n} scores, {s.failures} failed, {s.not_run} not run, "
            f"threshold {visible(s.threshold or 'none')}, delta vs baseline {delta_text(s)}"
        )
        dropped = [x for x in report.slices if x.scorer_id == s.scorer_id
                   and x.verdict == "regressed"]  # fmt: skip
        if dropped:
            detail += "; slices that regressed: " + ", ".join(
                visible(f"{x.key}={x.value} (Δ {x.delta:+.3f}, Tarone-Holm p {x.p_adjusted:.3g}"
                        + (", hidden by the total)" if x.flagged else ")"))
                for x in dropped
            )  # fmt: skip
        if s.gate_failed:
            message = visible(f"{s.verdict}: {'; '.join(s.reasons)}")
            ET.SubElement(case, "failure", message=message).text = detail
        else:
            ET.SubElement(case, "system-out").text = detail
    if report.partial:
        # A stopped run is not a passing one, whatever its scorers' gates say so far.
        case = ET.SubElement(suite, "testcase", classname=visible(report.name), name="(run)")
        ET.SubElement(case, "failure", message=visible(report.partial)).text = visible(
            f"status {report.status}"
        )
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
