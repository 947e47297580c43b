"""The issue registry (analyzer/issues.py): well-formed, unique, every code used, the only place
that names codes, the README table and the export schema generated from it, and every issue the
bundled captures produce (whole and cut short) declared with its severity."""

import gzip
import json
import re

import pytest

from analyzer import issues
from analyzer.capture.files import CaptureFile
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnIssue
from analyzer.issues import REGISTRY, STAGES, IssueKind
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from tests.helpers import tools
from tests.helpers.captures import ROOT, project_captures, public_captures

ANALYZER = ROOT / "analyzer"
REGISTRY_FILE = ANALYZER / "issues.py"
PREFIXES = sorted({code.split(".")[0] for code in REGISTRY})


def _constant(kind: IssueKind) -> str:
    return kind.code.upper().replace(".", "_")


def _sources():
    return [p for p in sorted(ANALYZER.rglob("*.py")) if p != REGISTRY_FILE]


# -- the declarations ------------------------------------------------------------------------


def test_codes_are_well_formed_and_documented():
    assert len(REGISTRY) >= 40
    for code, kind in REGISTRY.items():
        assert kind.code == code
        assert issues.CODE_RE.match(code), code
        assert isinstance(kind.severity, Severity), code
        assert kind.stage in STAGES, code
        assert kind.summary and kind.summary[0].isupper() and kind.summary.endswith("."), code
        for sev, when in kind.overrides.items():
            assert isinstance(sev, Severity) and sev != kind.severity, code
            assert when and not when.endswith("."), code


def test_codes_are_unique_and_each_has_its_constant():
    assert len({k.code for k in REGISTRY.values()}) == len(REGISTRY)
    kinds = {name: v for name, v in vars(issues).items() if isinstance(v, IssueKind)}
    assert sorted(kinds) == sorted(_constant(k) for k in REGISTRY.values())
    for kind in REGISTRY.values():
        assert kinds[_constant(kind)] is kind


def test_declarations_follow_the_pipeline_order():
    order = [STAGES.index(k.stage) for k in REGISTRY.values()]
    assert order == sorted(order)


def test_every_code_is_used_in_the_analyzer():
    text = "\n".join(p.read_text(encoding="utf-8") for p in _sources())
    unused = [k.code for k in REGISTRY.values() if not re.search(rf"\b{_constant(k)}\b", text)]
    assert not unused, f"declared but never used: {unused}"


def test_no_code_literal_outside_the_registry():
    """A declared code written as a string anywhere else (display-filter field names such as
    "records.codec" share the look of a code but are not one)."""
    literal = re.compile(r"""["']((?:""" + "|".join(PREFIXES) + r""")\.[a-z0-9_]+)["']""")
    found = []
    for p in _sources():
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if any(m.group(1) in REGISTRY for m in literal.finditer(line)):
                found.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "issue codes written as literals (use analyzer.issues):\n" + "\n".join(found)


# -- building issues -------------------------------------------------------------------------


def test_a_kind_builds_its_issue():
    i = issues.DECODE_TRUNCATED("topics: needs 4 bytes, 2 left", 12, "produce_request.topics")
    assert (i.severity, i.code, i.message, i.offset, i.where) == (
        Severity.ERROR,
        "decode.truncated",
        "topics: needs 4 bytes, 2 left",
        12,
        "produce_request.topics",
    )
    assert i.code == issues.DECODE_TRUNCATED.code
    assert REGISTRY[i.code] is issues.DECODE_TRUNCATED
    gap = issues.STREAM_GAP("lost")
    assert gap.to_dict() == {"severity": "warning", "code": "stream.gap", "message": "lost"}


def test_only_documented_severity_overrides_are_accepted():
    assert issues.DECODE_TRUNCATED("short", 0, severity=Severity.WARNING).severity == Severity.WARNING
    assert issues.PAIRING_NO_REQUEST("x", severity=Severity.NOTE).severity == Severity.NOTE  # the default
    with pytest.raises(ValueError, match="not a documented override"):
        issues.DECODE_TRUNCATED("short", severity=Severity.NOTE)
    with pytest.raises(ValueError, match="not a documented override"):
        issues.RECORDS_CRC_MISMATCH("bad", severity=Severity.WARNING)


# -- generated files -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gen_issues():
    return tools.load("gen_issues")


def test_readme_table_is_up_to_date(gen_issues):
    text = gen_issues.README.read_text(encoding="utf-8")
    assert gen_issues.update_readme(text) == text, "README.md is stale: run tools/gen_issues.py"
    for kind in REGISTRY.values():
        assert f"| `{kind.code}` | " in text


def test_schema_codes_are_up_to_date(gen_issues):
    text = gen_issues.SCHEMA.read_text(encoding="utf-8")
    assert gen_issues.update_schema(text) == text, "schema.json is stale: run tools/gen_issues.py"
    assert json.loads(text)["$defs"]["issue"]["properties"]["code"]["enum"] == list(REGISTRY)


def test_generator_rewrites_a_stale_table_and_schema(gen_issues):
    readme = f"intro\n{gen_issues.BEGIN}\n| old | table |\n{gen_issues.END}\nafter\n"
    out = gen_issues.update_readme(readme)
    assert out.startswith("intro\n") and out.endswith("\nafter\n") and "| old |" not in out
    assert out.count("| `") == len(REGISTRY)
    schema = gen_issues.SCHEMA.read_text(encoding="utf-8")
    stale = gen_issues._CODE_PROPERTY.sub('\\g<indent>"code": {"type": "string"}\\g<comma>', schema, count=1)
    assert stale != schema
    assert gen_issues.update_schema(stale) == schema


# -- what the captures produce ---------------------------------------------------------------


def _issues_of(cap: CaptureFile) -> list:
    out = []
    for ev in Analysis(cap, Options(records_bodies=True)).events():
        if type(ev) in (ConnIssue, CaptureIssue):
            out.append(ev.issue)
        elif isinstance(ev, Exchange):
            out.extend(ev.all_issues())
    return out


def _undeclared(found: list) -> list:
    return [i for i in found if i.code not in REGISTRY or i.severity not in REGISTRY[i.code].severities]


CAPTURES = public_captures() + project_captures()


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_capture_issues_are_declared(path, tmp_path):
    """The whole capture, and the same capture cut in the middle (truncated file, incomplete
    frames and batches) and gzip-compressed then cut."""
    raw = path.read_bytes()
    found = _issues_of(CaptureFile(path))
    cut = tmp_path / ("cut" + path.suffix)
    cut.write_bytes(raw[: len(raw) // 2 + 7])
    found += _issues_of(CaptureFile(cut))
    gz = tmp_path / (path.name + ".gz")
    packed = gzip.compress(raw)
    gz.write_bytes(packed[: len(packed) * 2 // 3])
    found += _issues_of(CaptureFile(gz))
    assert not _undeclared(found)


def test_captures_exercise_many_codes(tmp_path):
    """The captures above are not trivially clean: they produce issues of several stages."""
    seen = set()
    for path in project_captures():
        raw = path.read_bytes()
        cut = tmp_path / path.name
        cut.write_bytes(raw[: len(raw) // 2 + 7])
        seen |= {i.code for i in _issues_of(CaptureFile(path)) + _issues_of(CaptureFile(cut))}
    if not seen:
        pytest.skip("no project captures")
    assert {issues.CAPTURE_TRUNCATED.code, issues.PAIRING_NO_RESPONSE.code} <= seen
    assert len({REGISTRY[c].stage for c in seen}) >= 3
