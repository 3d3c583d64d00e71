"""JUnit XML: one testcase per (case, metric), the shape CI systems display."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from anvil_local.errors import io_error
from anvil_local.run.records import ResultLine


def junit_xml(lines: list[ResultLine], suite: str = "anvil-local") -> bytes:
    failures = sum(1 for x in lines if x.result.error is None and x.result.success is False)
    errors = sum(1 for x in lines if x.result.error is not None or x.result.success is None)
    seconds = sum(x.result.seconds for x in lines)
    root = ET.Element("testsuites")
    node = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(lines)),
        failures=str(failures),
        errors=str(errors),
        time=f"{seconds:.3f}",
    )
    for line in sorted(lines, key=lambda x: (x.position, x.metric)):
        r = line.result
        case = ET.SubElement(
            node, "testcase", classname=r.metric, name=line.case_id, time=f"{r.seconds:.3f}"
        )
        if r.error is not None:
            ET.SubElement(case, "error", message=r.error, type="JudgeError").text = r.error
        elif r.success is None:  # uncertain, counted as no verdict
            message = f"uncertain: confidence {r.confidence:.3f} (score {r.score:.3f})"
            ET.SubElement(case, "error", message=message, type="Uncertain").text = message
        elif not r.success:
            message = f"score {r.score:.3f} < threshold {r.threshold}"
            if r.uncertain:
                message += f" (uncertain: confidence {r.confidence:.3f})"
            ET.SubElement(case, "failure", message=message, type="BelowThreshold").text = (
                r.reason or message
            )
        if r.reason and r.success:
            ET.SubElement(case, "system-out").text = r.reason
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_junit(path: str | Path, lines: list[ResultLine]) -> None:
    try:
        Path(path).write_bytes(junit_xml(lines))
    except OSError as exc:
        raise io_error(path, exc) from exc
