"""deploy/: the systemd unit (``systemd-analyze verify``, offline), the container recipe and the
Grafana dashboard agree with what `kafka-analyzer` has: every option they give `live` is one of
``live --help``'s, the recipe installs extras pyproject.toml declares, the capabilities are
CAP_NET_RAW and CAP_NET_ADMIN only, and every metric the dashboard's PromQL reads is one the
analyzer's exposition has (``stats --metrics-file``). No container runtime runs here: the
recipe is checked, not built."""

import configparser
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib

import pytest

from tests.helpers.captures import CAPTURES, ROOT

DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "kafka-analyzer.service"
CAPS = {"CAP_NET_RAW", "CAP_NET_ADMIN"}


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *argv], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def live_options() -> set[str]:
    help_text = cli("live", "--help").stdout
    options = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", help_text))
    if "--metrics" not in options:
        pytest.skip("live --metrics does not exist yet (issue #30's metrics)")
    return options


def given_options(argv: list[str]) -> list[str]:
    return [a for a in argv if a.startswith("-") and not a.startswith("${") and a != "-"]


def unit() -> configparser.ConfigParser:
    p = configparser.ConfigParser(strict=False, interpolation=None)
    p.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    p.read(UNIT)
    return p


def test_unit_capabilities_and_hardening():
    s = unit()["Service"]
    assert set(s["AmbientCapabilities"].split()) == CAPS
    assert set(s["CapabilityBoundingSet"].split()) == CAPS
    assert s["User"] == "kafka-analyzer" and s["Restart"] == "on-failure"
    for key, value in (("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"), ("PrivateTmp", "yes")):
        assert s[key] == value, key
    argv = shlex.split(s["ExecStart"])
    assert argv[1] == "live" and argv[argv.index("--user") + 1] == s["User"]
    output = argv[argv.index("-o") + 1]
    assert any(output.startswith(d + "/") for d in s["ReadWritePaths"].split())
    assert output.startswith(("/var/log/", "/var/lib/"))
    assert "-HUP" in s["ExecReload"]


def test_unit_options_exist_in_live():
    argv = shlex.split(unit()["Service"]["ExecStart"])
    env = (DEPLOY / "systemd" / "kafka-analyzer.env").read_text()
    assert {m for m in re.findall(r"\$\{?(\w+)", " ".join(argv))} <= set(re.findall(r"^(\w+)=", env, re.M))
    missing = set(given_options(argv[2:])) - live_options()
    assert not missing, f"options live does not have: {missing}"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze (systemd)")
def test_unit_verifies(tmp_path):
    """``systemd-analyze verify`` offline; the executable is not installed here, so its path is
    replaced by one that exists. Unknown keys and bad values are warnings: none may be printed."""
    true = shutil.which("true") or "/bin/true"
    text = UNIT.read_text().replace("/opt/kafka-analyzer/bin/kafka-analyzer", true)
    copy = tmp_path / UNIT.name
    copy.write_text(text)
    r = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), r.stdout + r.stderr


def test_containerfile_installs_declared_extras_and_runs_known_options():
    text = (DEPLOY / "container" / "Containerfile").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installs = re.findall(r'pip install [^"]*"/src\[([\w,]+)\]"', text)
    assert installs == ["live"] and set(installs[0].split(",")) <= set(extras)
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
    assert cmd[0] == "live"
    missing = set(given_options(cmd[1:])) - live_options()
    assert not missing, f"options live does not have: {missing}"
    assert cmd[cmd.index("--user") + 1] == re.search(r"^USER (\w+)$", text, re.M).group(1)
    assert "cap_net_raw,cap_net_admin+ep" in text
    assert "--cap-drop=ALL --cap-add=NET_RAW --cap-add=NET_ADMIN" in text


def promql_metrics(dashboard: dict) -> set[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if v.get("definition")]
    return {m for e in exprs for m in re.findall(r"\bkafka_analyzer_\w+", e)}


def exposition_names(text: str) -> set[str]:
    """Every series name the text exposition has (samples, and the families it declares: a
    labelled metric with no sample yet still has its TYPE line)."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()[:4]
            names.add(name)
            if kind in ("histogram", "gaugehistogram"):
                names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
            elif kind == "summary":
                names |= {f"{name}_sum", f"{name}_count"}
            elif kind == "counter" and not name.endswith("_total"):
                names.add(f"{name}_total")
        elif line and not line.startswith("#"):
            names.add(re.match(r"[a-zA-Z_:][\w:]*", line).group(0))
    return names


def test_dashboard_reads_metrics_the_analyzer_writes(tmp_path):
    dashboard = json.loads((DEPLOY / "grafana" / "kafka-analyzer.json").read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    wanted = promql_metrics(dashboard)
    assert len(wanted) >= 15
    out = tmp_path / "out.prom"
    r = cli("stats", str(CAPTURES / "producer-txn.pcap"), "--metrics-file", str(out))
    if r.returncode != 0 and "--metrics-file" in r.stderr:
        pytest.skip("stats --metrics-file does not exist yet (issue #30's metrics)")
    assert r.returncode == 0, r.stderr
    missing = wanted - exposition_names(out.read_text())
    assert not missing, f"metrics the dashboard reads that the analyzer does not write: {sorted(missing)}"
