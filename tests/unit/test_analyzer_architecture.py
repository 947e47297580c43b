"""The shape of the code: the core (model, events, capture files, reassembly, dissect, session,
pipeline) never imports the front ends' libraries (checked in a fresh interpreter and by the
import-linter contracts in pyproject.toml), mypy and ruff find nothing, and tests/unit mirrors the
package module by module; Analysis.run is the one loop over events, no private name crosses a
module, no import cycle, no hand-written module over 1,000 lines (the CLI's over 500)."""

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
FORBIDDEN = ("scapy", "textual", "rich", "pyspark", "prometheus_client", "analyzer.cli", "analyzer.tui")


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


def test_mypy():
    """mypy finds no type error in the whole package, front ends included (config: [tool.mypy] in
    pyproject.toml; check_untyped_defs: the bodies of untyped functions too)."""
    r = subprocess.run(
        [_tool("mypy"), "--no-incremental", "analyzer"], capture_output=True, text=True, cwd=ROOT, timeout=600
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


# -- one loop, one merge, modules of one concern ---------------------------------------------------

SOURCES = sorted((ROOT / "analyzer").rglob("*.py"))
GENERATED = {ROOT / "analyzer" / "dissect" / "protocol_table.py"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, imported name or None, line) of every import in ``path`` (in functions too),
    leaving out ``if TYPE_CHECKING:`` blocks; relative imports resolved."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.extend((a.name, None, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            out.extend((base, a.name, node.lineno) for a in node.names)
    return out


def test_one_loop_over_events():
    """Analysis.run (and its steps) is the only loop over the pipeline's events: no front end
    iterates ``.events()`` or ``.batches()`` itself."""
    import re

    loop = re.compile(r"\.(events|batches)\(")
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in SOURCES
        if p.name != "pipeline.py"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if loop.search(line) and not line.lstrip().startswith("#")
    ]
    assert not found, found


def test_no_private_name_imported_across_modules():
    """A name with a leading underscore belongs to its module: what several modules share is public."""
    found = [
        f"{p.relative_to(ROOT)}:{line}: from {mod} import {name}"
        for p in SOURCES
        for mod, name, line in _imports(p)
        if mod.startswith("analyzer") and name and name.startswith("_") and not name.startswith("__")
    ]
    assert not found, found


def test_no_import_cycle():
    """The modules of analyzer import each other without a cycle (lazy imports in functions count)."""
    names = {_module_name(p) for p in SOURCES}
    graph: dict[str, set[str]] = {}
    for p in SOURCES:
        deps = set()
        for mod, name, _line in _imports(p):
            if not mod.startswith("analyzer"):
                continue
            target = f"{mod}.{name}" if name and f"{mod}.{name}" in names else mod
            while target not in names and "." in target:
                target = target.rpartition(".")[0]
            here = _module_name(p)
            if target != here and not here.startswith(target + "."):  # a package's own __init__
                deps.add(target)
        graph[_module_name(p)] = deps
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_modules_stay_small():
    """No hand-written module over 1,000 lines (the generated protocol table aside); the command
    line's modules, a thin command table and one module per command, at most 500."""
    too_big = []
    for p in SOURCES:
        if p in GENERATED:
            continue
        n = len(p.read_text(encoding="utf-8").splitlines())
        limit = 500 if _module_name(p).startswith("analyzer.cli") else 1000
        if n > limit:
            too_big.append(f"{p.relative_to(ROOT)}: {n} lines (at most {limit})")
    assert not too_big, too_big
