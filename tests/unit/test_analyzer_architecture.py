"""The shape of the code: the core (model, events, capture files, reassembly, dissect, session,
pipeline) never imports the front ends' libraries (checked in a fresh interpreter and by the
import-linter contracts in pyproject.toml), mypy and ruff find nothing, and tests/unit mirrors the
package module by module."""

import subprocess
import sys
from pathlib import Path

from tests.helpers.captures import ROOT

CORE = [
    "analyzer.model",
    "analyzer.issues",
    "analyzer.netconst",
    "analyzer.dissect.constants",
    "analyzer.capture.files",
    "analyzer.capture.ring",
    "analyzer.capture.pcapwriter",
    "analyzer.reassembly.packet",
    "analyzer.reassembly.tcp",
    "analyzer.tls.layer",
    "analyzer.dissect.framing",
    "analyzer.dissect.decoder",
    "analyzer.dissect.message",
    "analyzer.dissect.records",
    "analyzer.session.pairing",
    "analyzer.session.knowledge",
    "analyzer.session.entities",
    "analyzer.session.stats",
    "analyzer.session.records",
    "analyzer.session.report",
    "analyzer.pipeline",
    "analyzer.fanout",
    "analyzer.export.writer",
    "analyzer.filter",
]
FORBIDDEN = ("scapy", "textual", "rich", "pyspark", "analyzer.cli", "analyzer.tui")


def test_core_imports_no_front_end_library():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "from analyzer.pipeline import Analysis\n"
        + "from analyzer.capture.ring import preload\n"
        + "preload()\n"
        + f"list(Analysis({str(ROOT / 'captures' / 'aiokafka-gzip.pcap')!r}).events())\n"
        + f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r} or m in {FORBIDDEN!r})\n"
        + "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def _tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def test_import_contracts():
    """import-linter: the stages are layered and the core imports no front end (pyproject.toml)."""
    r = subprocess.run([_tool("lint-imports")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


# the core packages mypy checks (config: [tool.mypy] in pyproject.toml)
MYPY_CORE = [
    "analyzer/model.py",
    "analyzer/events.py",
    "analyzer/issues.py",
    "analyzer/netconst.py",
    "analyzer/pipeline.py",
    "analyzer/capture",
    "analyzer/reassembly",
    "analyzer/tls",
    "analyzer/dissect",
    "analyzer/session",
    "analyzer/filter",
]


def test_mypy():
    """mypy finds no type error in the core (check_untyped_defs: the bodies of untyped functions too)."""
    r = subprocess.run(
        [_tool("mypy"), "--no-incremental", *MYPY_CORE], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff():
    r = subprocess.run(
        [_tool("ruff"), "check", "--no-cache", "."], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stdout[-4000:]
    r = subprocess.run(
        [_tool("ruff"), "format", "--check", "--no-cache", "."],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-4000:]


def _mirrored_target(test: Path) -> str | None:
    """What tests/unit/<dir>/test_<stem>.py tests: a module or subpackage of analyzer/<dir> named by
    a leading part of <stem> (test_records.py, test_stats_merge.py: stats.py, merging), or the
    package analyzer/<dir> itself (test_filter_fuzz.py in tests/unit/filter/). None: no such thing."""
    rel = test.parent.relative_to(ROOT / "tests" / "unit")
    package = ROOT / "analyzer" / rel
    if not (package / "__init__.py").is_file():
        return None
    parts = test.stem.removeprefix("test_").split("_")
    for n in range(len(parts), 0, -1):
        name = "_".join(parts[:n])
        if name == package.name:
            return str(package.relative_to(ROOT))
        for target in (package / f"{name}.py", package / name / "__init__.py"):
            if target.is_file():
                return str(target.relative_to(ROOT))
    return None


def test_unit_tests_mirror_the_package():
    """Every tests/unit/**/test_X.py sits at the place of an analyzer module or package and is named
    after it; tests/unit holds nothing else (shared helpers live in tests/helpers)."""
    unit = ROOT / "tests" / "unit"
    strays = [
        str(p.relative_to(ROOT))
        for p in sorted(unit.rglob("*.py"))
        if p.name not in ("__init__.py", "conftest.py")
        and (not p.name.startswith("test_") or _mirrored_target(p) is None)
    ]
    assert not strays, f"not named after a module of analyzer/ at the mirrored place: {strays}"


def test_tests_never_touch_sys_path():
    """Tests import shared code as the tests.helpers package (pytest's importlib mode, pythonpath
    "." in pyproject.toml), never by inserting folders into sys.path."""
    found = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "tests").rglob("*.py"))
        if any(f"sys.path.{verb}(" in p.read_text(encoding="utf-8") for verb in ("insert", "append"))
        and p.name != Path(__file__).name
    ]
    assert not found, found


def test_no_private_name_is_imported_across_modules():
    """What modules share has a public name: no ``from analyzer.x import _name`` in the front ends
    that split work (export, spark, check, capture, session, the live fanout)."""
    import ast

    found = []
    for top in ("export", "spark", "check", "capture", "session", "fanout.py"):
        base = ROOT / "analyzer" / top
        for path in [base] if base.is_file() else sorted(base.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analyzer"):
                    found += [
                        f"{path.relative_to(ROOT)}:{node.lineno} {a.name}"
                        for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")
                    ]
    assert not found, found


def test_spark_stitching_does_not_import_the_source():
    """analyzer.spark.source imports the stitching (big pieces), never the other way round."""
    text = (ROOT / "analyzer" / "spark" / "stitch.py").read_text(encoding="utf-8")
    assert "analyzer.spark.source" not in text.replace("analyzer.spark.source.", "")
