"""Outputs of a check run: text, JSON, GitHub annotations, JUnit XML and SARIF 2.1.0."""

from __future__ import annotations

import json
import os
import tempfile
from xml.sax.saxutils import escape, quoteattr

from analyzer import __version__
from analyzer.check.engine import CaptureInfo, Finding, Result

_MARK = {
    "passed": "PASS",
    "failed": "FAIL",
    "warned": "WARN",
    "noted": "NOTE",
    "inconclusive": "INCONCLUSIVE",
    "waived": "WAIVED",
}
_LEVEL = {"error": "error", "warning": "warning", "note": "note"}
SHOWN = 10  # findings printed per rule in text


def counts(results: list[Result]) -> dict[str, int]:
    out = dict.fromkeys(_MARK, 0)
    for r in results:
        out[r.status] += 1
    return out


def text(results: list[Result], captures: list[CaptureInfo], verbose: bool = False) -> str:
    lines = []
    for c in captures:
        if c.inconclusive:
            lines.append(f"INCONCLUSIVE  {c.name}: {c.inconclusive}")
    for r in results:
        lines.append(f"{_MARK[r.status]:<5} {r.rule} ({r.severity}): {r.summary}")
        shown = r.findings if verbose else r.findings[:SHOWN]
        for f in shown:
            if r.status == "passed":
                break
            w = f"  [waived: {f.waived}]" if f.waived else ""
            lines.append(f"      {f.location()}: {f.message}{w}")
        if not verbose and len(r.findings) > SHOWN and r.status != "passed":
            lines.append(f"      ... {r.count - SHOWN} more (--verbose lists them)")
        elif r.count > len(r.findings):
            lines.append(f"      ... {r.count - len(r.findings)} more not kept")
    n = counts(results)
    parts = [f"{n['passed']} passed", f"{n['failed']} failed"]
    parts += [f"{n[k]} {k}" for k in ("warned", "inconclusive", "waived", "noted") if n[k]]
    lines.append(", ".join(parts))
    return "\n".join(lines) + "\n"


def as_json(results: list[Result], captures: list[CaptureInfo], exit_code: int) -> str:
    doc = {
        "analyzer": f"kafka-analyzer {__version__}",
        "exit_code": exit_code,
        "summary": counts(results),
        "captures": [
            {
                "name": c.name,
                "packets": c.packets,
                "exchanges": c.exchanges,
                "first_ts": c.first_ts,
                "last_ts": c.last_ts,
                "inconclusive": c.inconclusive,
            }
            for c in captures
        ],
        "rules": [
            {
                "id": r.rule,
                "severity": r.severity,
                "status": r.status,
                "summary": r.summary,
                "count": r.count,
                "value": r.value,
                "samples": r.samples,
                "source": r.source,
                "findings": [_finding_json(f) for f in r.findings],
            }
            for r in results
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _finding_json(f: Finding) -> dict:
    return {
        "message": f.message,
        "capture": f.capture,
        "exchange": f.exchange,
        "connection": f.connection,
        "endpoints": f.endpoints,
        "packets": list(f.packets),
        "api": f.api,
        "correlation_id": f.correlation_id,
        "ts": f.ts,
        "waived": f.waived,
    }


def github(results: list[Result], captures: list[CaptureInfo]) -> str:
    """GitHub Actions workflow commands: one annotation per finding of a failed or warned rule."""
    lines = []
    for c in captures:
        if c.inconclusive:
            lines.append(f"::warning file={_gh(c.name)},title=inconclusive::{_gh(c.inconclusive)}")
    for r in results:
        if r.status not in ("failed", "warned", "inconclusive"):
            continue
        kind = "error" if r.status == "failed" else "warning"
        if not r.findings:
            lines.append(f"::{kind} title={_gh(r.rule)}::{_gh(r.summary)}")
        for f in r.findings:
            if f.waived:
                continue
            where = f"file={_gh(f.capture)}," if f.capture and not f.capture.startswith("(") else ""
            lines.append(f"::{kind} {where}title={_gh(r.rule)}::{_gh(f.location() + ': ' + f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _gh(s: str) -> str:
    return (
        s.replace("%", "%25")
        .replace("\r", "%0D")
        .replace("\n", "%0A")
        .replace(",", "%2C")
        .replace("::", "%3A%3A")
    )


def junit(results: list[Result], captures: list[CaptureInfo], suite: str, seconds: float) -> str:
    """One testsuite for the capture set, one testcase per rule (Jenkins/Surefire schema)."""
    fails = sum(1 for r in results if r.status == "failed")
    skipped = sum(1 for r in results if r.status in ("inconclusive", "waived"))
    cases = []
    for r in results:
        head = f'    <testcase classname="kafka-analyzer.check" name={quoteattr(r.rule)} time="0"'
        if r.status == "failed":
            body = "\n".join(f"{f.location()}: {f.message}" for f in r.findings) or r.summary
            cases.append(
                f"{head}>\n      <failure message={quoteattr(r.summary)} type={quoteattr(r.severity)}>"
                f"{escape(body)}</failure>\n    </testcase>"
            )
        elif r.status in ("inconclusive", "waived"):
            cases.append(
                f"{head}>\n      <skipped message={quoteattr(r.status + ': ' + r.summary)}/>\n    </testcase>"
            )
        elif r.status in ("warned", "noted") and r.findings:
            body = "\n".join(f"{f.location()}: {f.message}" for f in r.findings)
            cases.append(f"{head}>\n      <system-out>{escape(body)}</system-out>\n    </testcase>")
        else:
            cases.append(f"{head}/>")
    props = "".join(f'\n      <property name="capture" value={quoteattr(c.name)}/>' for c in captures)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites name="kafka-analyzer check" tests="{len(results)}" failures="{fails}" '
        f'errors="0" time="{seconds:.3f}">\n'
        f'  <testsuite name={quoteattr(suite)} tests="{len(results)}" failures="{fails}" errors="0" '
        f'skipped="{skipped}" time="{seconds:.3f}">\n'
        f"    <properties>{props}\n    </properties>\n"
        + "\n".join(cases)
        + "\n  </testsuite>\n</testsuites>\n"
    )


def sarif(results: list[Result], captures: list[CaptureInfo], exit_code: int) -> str:
    """SARIF 2.1.0: the rules as the tool's rules, every finding a result on the capture file."""
    artifacts: list[dict] = []
    index: dict[str, int] = {}
    for c in captures:
        for name in c.name.split(" + "):
            if name not in index:
                index[name] = len(artifacts)
                artifacts.append({"location": {"uri": _uri(name)}})
    rules = []
    out = []
    for i, r in enumerate(results):
        rules.append(
            {
                "id": r.rule,
                "name": r.rule.replace(".", "-"),
                "shortDescription": {"text": r.summary if r.source != "built-in" else (r.help or r.rule)},
                "fullDescription": {"text": r.help or r.summary},
                "defaultConfiguration": {"level": _LEVEL[r.severity]},
                "properties": {"source": r.source},
            }
        )
        for f in r.findings:
            res: dict = {
                "ruleId": r.rule,
                "ruleIndex": i,
                "level": _LEVEL[r.severity] if r.status in ("failed", "warned", "waived") else "note",
                "message": {"text": f"{f.location()}: {f.message}"},
                "properties": {
                    "exchange": f.exchange,
                    "connection": f.connection,
                    "packets": list(f.packets),
                    "api": f.api,
                    "correlation_id": f.correlation_id,
                },
            }
            art = f.capture
            if art in index:
                res["locations"] = [
                    {"physicalLocation": {"artifactLocation": {"uri": _uri(art), "index": index[art]}}}
                ]
            if f.waived:
                res["suppressions"] = [{"kind": "external", "justification": f.waived}]
            out.append(res)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kafka-analyzer",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "artifacts": artifacts,
                "results": out,
                "invocations": [{"executionSuccessful": exit_code in (0, 1), "exitCode": exit_code}],
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _uri(path: str) -> str:
    return path.replace(os.sep, "/")


def write_atomically(path: str, text: str) -> None:
    """Write a report file whole or not at all (a temporary file renamed over it)."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".kafka-analyzer-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
