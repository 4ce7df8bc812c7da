"""Per-test verdicts from a JUnit XML report (pytest's --junitxml, jest-junit, Maven
Surefire, go-junit-report, ...), read with junitparser.

The report was written inside the sandbox by the pipeline under test, so it is hostile
input here: a document type declaration is refused before anything parses it (an
external entity would otherwise pull a host file into the verdicts' messages, which
reach the agent), and its size is capped by the sandbox's collection (4 MiB).

Test ids: for pytest reports written with `-o junit_family=xunit1` (which records each
case's file), the pytest node id (`tests/test_a.py::TestC::test_x[1]`), so a verdict can
be run again by its id; otherwise `classname::name` (or the name alone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestSuite

OUTCOMES = ("passed", "failed", "error", "skipped")
_KINDS = {Error: "error", Failure: "failed", Skipped: "skipped"}
_DOCTYPE = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


class ReportError(ValueError):
    """A report that cannot be read as JUnit XML; the message says why."""


@dataclass(frozen=True)
class Verdict:
    test: str
    outcome: str  # one of OUTCOMES
    duration_s: float = 0.0
    message: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"test": self.test, "outcome": self.outcome, "duration_s": self.duration_s, "message": self.message}


def node_id(classname: str, name: str, file: str | None) -> str:
    """A pytest node id from a case's classname, name and (xunit1) file attribute."""
    if file:  # a module, or a doctest file (semver's docs/usage/x.rst)
        module = (file[:-3] if file.endswith(".py") else file).replace("/", ".")
        if classname == module:
            return f"{file}::{name}"
        if classname.startswith(module + "."):
            return f"{file}::{classname[len(module) + 1 :].replace('.', '::')}::{name}"
        return f"{file}::{name}" if file.endswith(".py") else f"{classname}::{name}"
    return f"{classname}::{name}" if classname else name


def parse(text: str | bytes) -> list[Verdict]:
    """Every test case of a report, in document order. A case reported twice (a rerun
    plugin) keeps its last verdict; ids stay unique."""
    data = text.encode() if isinstance(text, str) else text
    if _DOCTYPE.search(data):
        raise ReportError("the report declares a document type or entities; refused (JUnit XML needs neither)")
    try:
        root = JUnitXml.fromstring(data)
    except (JUnitXmlError, SyntaxError, ValueError) as e:  # ElementTree's ParseError is a SyntaxError
        raise ReportError(f"not JUnit XML: {type(e).__name__}: {e}") from None
    suites = [root] if isinstance(root, TestSuite) else list(root)
    out: dict[str, Verdict] = {}
    for suite in _flatten(suites):
        for case in suite:
            # stripped: reporters pad names (jest-junit's default title is "{classname} {title}")
            test = node_id((case.classname or "").strip(), (case.name or "").strip(), case._elem.get("file"))
            results = list(case.result)
            outcome, message = "passed", ""
            for r in results:
                kind = _KINDS.get(type(r), "")
                if kind and (outcome == "passed" or kind in ("error", "failed")):
                    outcome = kind
                    # the one-line message, then the body (pytest: the traceback, whose frames name file:line)
                    message = "\n".join(x.strip() for x in (r.message, r.text) if x and x.strip())
            out.pop(test, None)
            out[test] = Verdict(test, outcome, float(case.time or 0.0), message[-4000:])
    return list(out.values())


def _flatten(suites: list[TestSuite]) -> list[TestSuite]:
    """Suites with the suites nested inside them (some reporters nest per file)."""
    out = []
    for s in suites:
        out.append(s)
        nested = [e for e in s._elem if e.tag == "testsuite"]
        out.extend(_flatten([TestSuite.fromelem(e) for e in nested]))
    return out
