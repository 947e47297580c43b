"""Recording one scenario: its broker (and front-end) inside the namespace, tcpdump, the worker
process that runs the clients, and the manifest entry made from the worker's events; and
``generate``, which records the chosen scenarios and writes the manifest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .core import MANIFEST, Ctx, Events, Scenario, load_manifest
from .groups import build_truth, dump_truth
from .netns import in_ns, namespace, ports_of, self_cmd, stop, tcpdump
from .registry import BROKERS, build_scenarios, client_version
from .sasl import SASL_APIS, SASL_MECHANISMS, SASL_PASSWORD, SASL_USER
from .verify import kafka_pdus


def deps_env(pkgs: tuple[str, ...]) -> dict[str, str] | None:
    """An environment whose PYTHONPATH has ``pkgs`` (pip install --target a cache dir when the
    venv lacks them), or None when nothing extra is needed."""
    import importlib.util

    missing = [p for p in pkgs if importlib.util.find_spec(p) is None]
    if not missing:
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = cache / "kafka-analyzer-gen-captures" / "pydeps"
    if not all((target / p).exists() for p in missing):
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), *missing], check=True
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), env.get("PYTHONPATH")]))
    return env


def run_scenario(scn: Scenario, out_dir: Path) -> dict[str, Any]:
    pcap = out_dir / f"{scn.name}.pcap"
    notes: list[str] = list(scn.notes)
    env = deps_env(scn.needs)
    with tempfile.TemporaryDirectory(prefix="gen-captures-") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        log_path = Path(tmp) / "worker.log"
        tls_dir = Path(tmp) / "tls"
        if scn.tls:
            from .tls import make_certificate

            tls_dir.mkdir()
            cert, _key = make_certificate(tls_dir)
            env = dict(env or os.environ)
            env["KGEN_TLS_CA"] = str(cert)
        with (
            BROKERS[scn.broker].cluster(scn, tls_dir) as bootstrap,
            tcpdump(pcap, notes, BROKERS[scn.broker].capture_ports(scn, bootstrap)),
        ):
            started = time.monotonic()
            cmd = self_cmd(
                "--worker",
                scn.name,
                "--bootstrap",
                bootstrap,
                "--events",
                str(events_path),
                "--timeout",
                str(scn.timeout),
            )
            with log_path.open("w") as log:
                proc = subprocess.Popen(in_ns(cmd), stdout=log, stderr=subprocess.STDOUT, env=env)
                try:
                    rc = proc.wait(scn.timeout + 10)
                except subprocess.TimeoutExpired:
                    stop(proc)
                    rc = None
            elapsed = time.monotonic() - started
        if rc is None:
            notes.append(f"worker hung: killed after {elapsed:.0f} s; capture is partial")
        elif rc != 0:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-1:]
            notes.append(f"worker failed (exit {rc}) after {elapsed:.0f} s: {' '.join(tail)}")
        events = (
            [json.loads(line) for line in events_path.read_text().splitlines() if line.strip()]
            if events_path.exists()
            else []
        )
        tls_entry = tls_pdus = None
        if scn.tls:
            tls_entry, tls_pdus = _tls_outputs(scn, pcap, tls_dir, out_dir)
    notes += [e["text"] for e in events if e["kind"] == "note"]
    truth = build_truth(scn, pcap.name, events)
    if truth is not None:
        (out_dir / f"{scn.name}.truth.json").write_text(dump_truth(truth))
    strip = ("kind",)
    entry = {
        "file": pcap.name,
        "scenario": scn.name,
        "description": scn.description,
        "client": scn.client,
        "client_version": client_version(scn.client),
        "api_version": scn.api_version,
        "codec": scn.codec,
        "broker_ports": ports_of(bootstrap),
        "bootstrap": bootstrap,
        "topics": sorted(set(scn.topics) | {e["topic"] for e in events if "topic" in e}),
        "produced": [
            {k: v for k, v in e.items() if k not in strip} for e in events if e["kind"] == "produced"
        ],
        "consumed": [
            {k: v for k, v in e.items() if k not in strip} for e in events if e["kind"] == "consumed"
        ],
        "operations": [{k: v for k, v in e.items() if k not in strip} for e in events if e["kind"] == "op"],
        "kafka_pdus": tls_pdus
        if scn.tls
        else kafka_pdus(pcap, ports_of(bootstrap))
        if pcap.exists()
        else None,
        "size_bytes": pcap.stat().st_size if pcap.exists() else 0,
        "duration_s": round(elapsed, 1),
        "notes": notes,
    }
    if truth is not None:  # the clients' own view of their groups (captures/README.md)
        entry["truth"] = f"{scn.name}.truth.json"
    extra = BROKERS[scn.broker].manifest_extra(scn)
    if extra:  # after client_version
        items = list(entry.items())
        at = [k for k, _ in items].index("client_version") + 1
        entry = dict(items[:at] + list(extra.items()) + items[at:])
    if not entry["operations"]:
        del entry["operations"]
    if scn.api_caps:
        entry["mock_api_caps"] = [list(c) for c in scn.api_caps]
    if tls_entry is not None:
        entry["tls"] = tls_entry
    if scn.sasl:
        entry["sasl"] = {
            "mechanism": scn.sasl,
            "username": SASL_USER,
            "password": SASL_PASSWORD,
            "front_end_mechanisms": list(SASL_MECHANISMS),
            "front_end_apis": [list(a) for a in SASL_APIS],
        }
    return entry


def _tls_outputs(scn: Scenario, pcap: Path, tls_dir: Path, out_dir: Path) -> tuple[dict, dict]:
    """A TLS scenario's key log (next to the pcap), its pcapng with the keys embedded (TLS 1.3
    AES-128-GCM only), and its manifest ``tls`` object; the relayed plaintext PDU counts."""
    from .tls import HOST, PROFILES, inject_secrets, read_pdus

    pdus = read_pdus(tls_dir)
    if scn.tls == "plain":
        return {"version": None, "cipher": None, "sni": HOST, "keylog": None, "front_end": "plain"}, pdus
    version, _openssl, iana = PROFILES[scn.tls]
    keylog = out_dir / f"{scn.name}.keys"
    src = tls_dir / "keylog.txt"
    keylog.write_text(src.read_text() if src.exists() else "")
    entry: dict[str, Any] = {"version": version, "cipher": iana, "sni": HOST, "keylog": keylog.name}
    if scn.tls == "tls13-aes128gcm" and scn.client == "kafka-python":
        dsb = out_dir / f"{scn.name}-dsb.pcapng"
        if inject_secrets(pcap, keylog, dsb):
            entry["pcapng_with_secrets"] = dsb.name
    return entry, pdus


def run_worker(name: str, bootstrap: str, events_path: Path, timeout: float) -> None:
    scn = {s.name: s for s in build_scenarios()}[name]
    events = Events(events_path)
    ctx = Ctx(name, bootstrap, events, time.monotonic() + timeout)
    try:
        scn.run(ctx)
    except Exception as exc:
        events.note(f"scenario raised {type(exc).__name__}: {exc}")
        raise
    finally:
        events.close()


def generate(names: list[str] | None, out_dir: Path) -> None:
    scenarios = build_scenarios()
    known = {s.name for s in scenarios}
    for n in names or ():
        if n not in known:
            sys.exit(f"unknown scenario {n!r}; --list shows the names")
    chosen = [s for s in scenarios if not names or s.name in names]
    for scn in chosen:  # build the programs first: a missing toolchain stops before any capture
        if scn.prepare is not None:
            scn.prepare()
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / MANIFEST
    entries = {e["scenario"]: e for e in load_manifest(manifest_path)} if names else {}
    with namespace():
        for scn in chosen:
            print(f"{scn.name} ...", end=" ", flush=True)
            entry = run_scenario(scn, out_dir)
            entries[scn.name] = entry
            print(
                f"{entry['size_bytes'] / 1024:.0f} KiB, {len(entry['produced'])} produced, "
                f"{len(entry['consumed'])} consumed, {entry['duration_s']} s"
                + (f"; notes: {entry['notes']}" if entry["notes"] else ""),
                flush=True,
            )
            ordered = [entries[s.name] for s in scenarios if s.name in entries]
            manifest_path.write_text(json.dumps(ordered, indent=1, ensure_ascii=False) + "\n")
