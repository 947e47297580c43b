"""Kafka over TLS (the ``tls`` entries of captures/manifest.json, recorded through the TLS
front-end of tools/gen/tls.py): with the key log every capture decodes as its clear-text twin
does; without it every connection is reported as TLS with what it negotiated; wrong keys,
corrupted records and truncated handshakes are issues, never tracebacks; tshark agrees."""

import json
import shutil
import subprocess
from collections import Counter

import pytest

from analyzer.cli import main
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnectionEnd, ConnIssue
from analyzer.export.jsonout import message_json
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis, Exit
from tests.helpers.captures import CAPTURES, known_malformed

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)
TLS = [e for e in MANIFEST if (e.get("tls") or {}).get("keylog")]
PLAIN = next((e for e in MANIFEST if e["scenario"] == "kafka-python-tls-plain"), None)
pytestmark = pytest.mark.skipif(not TLS or PLAIN is None, reason="no TLS captures in captures/")


def run(path, keylog=None):
    a = Analysis(path, Options(records_bodies=True), tls_keylog=keylog)
    exchanges, conns, issues = [], [], []
    for ev in a.events():
        if type(ev) is Exchange:
            exchanges.append(ev)
        elif type(ev) is ConnectionEnd:
            conns.append(ev.conn)
        elif type(ev) in (ConnIssue, CaptureIssue):
            issues.append(ev.issue)
    return a, exchanges, conns, issues


def keylog_of(entry):
    return CAPTURES / entry["tls"]["keylog"]


def request_versions(exchanges) -> dict[str, list[int]]:
    seen: dict[str, set[int]] = {}
    for ex in exchanges:
        if ex.request is not None:
            seen.setdefault(str(ex.api_key), set()).add(ex.api_version)
    return {k: sorted(v) for k, v in sorted(seen.items(), key=lambda kv: int(kv[0]))}


VOLATILE = frozenset(("producer_id", "crc", "crc_text"))  # the mock assigns the producer id per run


def _stable(v):
    if isinstance(v, dict):
        return {k: _stable(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [_stable(x) for x in v]
    return v


def produce_bodies(exchanges) -> list[str]:
    """The decoded partitions of the Produce requests (how the producer groups them into
    requests depends on timing): without spans, the producer id and the batch CRC covering it."""
    out = []
    for ex in exchanges:
        if ex.api_key == 0 and ex.request is not None:
            body = _stable(message_json(ex.request, with_spans=False)["body"])
            out.append(json.dumps({k: v for k, v in body.items() if k != "topic_data"}, sort_keys=True))
            for t in body["topic_data"]:
                for part in t["partition_data"]:
                    out.append(json.dumps([t["name"], part], sort_keys=True, default=str))
    return sorted(set(out))


@pytest.fixture(scope="module")
def plain():
    return run(CAPTURES / PLAIN["file"])


@pytest.mark.parametrize("entry", TLS, ids=lambda e: e["file"])
def test_decrypted_like_the_clear_text_twin(entry, plain):
    a, exchanges, conns, issues = run(CAPTURES / entry["file"], keylog_of(entry))
    assert not [i for i in issues if i.severity >= Severity.WARNING]
    assert a.outcome().exit_code() == Exit.OK
    # every connection is TLS, negotiated as recorded, and decrypted
    assert conns and all(c.tls is not None and c.tls["decrypted"] for c in conns)
    for c in conns:
        assert (c.tls["version"], c.tls["cipher"], c.tls["sni"]) == (
            entry["tls"]["version"],
            entry["tls"]["cipher"],
            entry["tls"]["sni"],
        )
        assert c.tls["undecrypted_records"] == 0
    # exactly the plaintext PDUs the front-end relayed
    pdus = entry["kafka_pdus"]
    frames = Counter()
    for c in conns:
        frames["requests"] += c.frames[c.client_direction]
        frames["responses"] += c.frames[1 - c.client_direction]
    assert (frames["requests"], frames["responses"]) == (pdus["requests"], pdus["responses"])
    assert request_versions(exchanges) == pdus["request_versions"]
    for ex in exchanges:
        for m in (ex.request, ex.response):
            if m is not None and not known_malformed(ex.api_key, m.kind, m.body and m.body.get("error_code")):
                assert not [i for i in m.issues if i.severity == Severity.ERROR]
    if entry["client"] != PLAIN["client"]:
        return
    # the same APIs and versions, and the same Produce requests, as in clear text
    _pa, plain_exchanges, _pc, _pi = plain
    assert request_versions(exchanges) == request_versions(plain_exchanges)
    assert produce_bodies(exchanges) == produce_bodies(plain_exchanges)


def test_pcapng_with_embedded_secrets():
    entry = next(e for e in TLS if e["tls"].get("pcapng_with_secrets"))
    a, exchanges, conns, issues = run(CAPTURES / entry["tls"]["pcapng_with_secrets"])
    assert all(c.tls["decrypted"] for c in conns)
    _a, with_file, _c, _i = run(CAPTURES / entry["file"], keylog_of(entry))
    assert len(exchanges) == len(with_file) > 0
    assert produce_bodies(exchanges) == produce_bodies(with_file)


@pytest.mark.parametrize("entry", TLS, ids=lambda e: e["file"])
def test_without_keys_reported_as_tls(entry):
    a, exchanges, conns, issues = run(CAPTURES / entry["file"])
    assert not exchanges and conns
    for c in conns:
        assert c.tls["version"] == entry["tls"]["version"]
        assert c.tls["cipher"] == entry["tls"]["cipher"]
        assert c.tls["sni"] == entry["tls"]["sni"] and not c.tls["decrypted"]
        assert c.not_kafka == "TLS, not decrypted"
    assert [i.code for i in issues] == ["tls.not_decrypted"] * len(conns)
    assert a.outcome().exit_code() == Exit.DAMAGED
    (line,) = a.outcome().problems()
    assert f"{len(conns)} TLS connections (no key log given: --tls-keylog FILE)" in line


def test_cli_stats_read_export_without_and_with_keys(tmp_path, capsys):
    entry = TLS[0]
    path = str(CAPTURES / entry["file"])
    assert main(["stats", path, "--format", "json"]) == Exit.DAMAGED
    out, err = capsys.readouterr()
    tls = json.loads(out)["tls"]
    assert {r["decrypted"] for r in tls} == {"no"} and sum(r["connections"] for r in tls) > 0
    assert "--tls-keylog FILE" in err
    assert main(["read", path, "--tls-keylog", str(keylog_of(entry))]) == Exit.OK
    out, _ = capsys.readouterr()
    assert "TLS connection: " + entry["tls"]["version"] in out and "[decrypted]" in out
    assert "  Produce v" in out
    assert main(["export", path, "--tls-keylog", str(keylog_of(entry)), "-o", str(tmp_path / "x")]) == 0
    conns = [json.loads(x) for x in (tmp_path / "x").read_text().splitlines() if '"connection"' in x[:20]]
    assert conns and all(c["tls"]["decrypted"] for c in conns)
    assert main(["read", path, "--tls-keylog", str(tmp_path / "missing.keys")]) == Exit.USAGE


def test_wrong_keys(tmp_path):
    entry = TLS[0]
    lines = []
    for line in keylog_of(entry).read_text().splitlines():
        if line.startswith("#"):
            continue
        label, cr, secret = line.split()
        lines.append(f"{label} {cr} {'5a' * (len(secret) // 2)}")
    bad = tmp_path / "wrong.keys"
    bad.write_text("\n".join(lines) + "\n")
    a, exchanges, conns, issues = run(CAPTURES / entry["file"], bad)
    assert not exchanges
    codes = Counter(i.code for i in issues)
    assert set(codes) == {"tls.wrong_key"} and codes["tls.wrong_key"] == 2 * len(conns)
    assert all(i.severity == Severity.ERROR for i in issues)


def _flip_in_last_application_record(data: bytes) -> tuple[bytes, int]:
    pos = data.rfind(b"\x17\x03\x03", 0, len(data) - 200)
    while pos > 0 and (data[pos + 3] << 8 | data[pos + 4]) < 100:
        pos = data.rfind(b"\x17\x03\x03", 0, pos)
    at = pos + 5 + 40
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :], pos


@pytest.mark.parametrize("entry", TLS, ids=lambda e: e["file"])
def test_corrupted_record(entry, tmp_path):
    data, _pos = _flip_in_last_application_record((CAPTURES / entry["file"]).read_bytes())
    bad = tmp_path / "flipped.pcap"
    bad.write_bytes(data)
    _a, good, _c, _i = run(CAPTURES / entry["file"], keylog_of(entry))
    a, exchanges, conns, issues = run(bad, keylog_of(entry))
    errors = [i for i in issues if i.severity == Severity.ERROR]
    assert [i.code for i in errors] == ["tls.bad_record"], issues
    assert errors[0].offset is not None and "fails authentication" in errors[0].message
    assert len(good) - 2 <= len(exchanges) <= len(good)


def test_truncated_handshake(tmp_path):
    entry = TLS[0]
    data = (CAPTURES / entry["file"]).read_bytes()
    for cut in (24 + 400, 24 + 700, 24 + 1200, 24 + 2500):
        bad = tmp_path / f"cut{cut}.pcap"
        bad.write_bytes(data[:cut])
        a, exchanges, conns, issues = run(bad, keylog_of(entry))
        assert not exchanges
        assert a.outcome().exit_code() == Exit.DAMAGED
        assert main(["read", str(bad), "--tls-keylog", str(keylog_of(entry))]) == Exit.DAMAGED


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="no tshark")
@pytest.mark.parametrize("entry", TLS, ids=lambda e: e["file"])
def test_tshark_decrypts_as_many_kafka_pdus(entry):
    _a, _ex, conns, _i = run(CAPTURES / entry["file"], keylog_of(entry))
    ours = sum(sum(c.frames) for c in conns)
    args = ["tshark", "-r", str(CAPTURES / entry["file"]), "-o", f"tls.keylog_file:{keylog_of(entry)}"]
    for p in entry["broker_ports"]:
        args += ["-d", f"tls.port=={p},kafka"]
    args += ["-Y", "kafka", "-T", "fields", "-e", "kafka.correlation_id"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    theirs = sum(len(line.split(",")) for line in out.splitlines() if line.strip())
    assert theirs == ours


def _drop_packet(src, dst) -> None:
    """Write ``src`` without the middle data packet of its busiest connection (a pcap)."""
    import struct as _s

    from analyzer.capture.files import CaptureFile
    from analyzer.reassembly.packet import decode_tcp

    packets = [(i, ts, lt, bytes(d)) for i, ts, lt, d in CaptureFile(src)]
    by_conn: dict = {}
    for n, (_i, _ts, lt, d) in enumerate(packets):
        seg = decode_tcp(lt, d)
        if type(seg) is tuple and len(seg[7]):  # (src, sport, dst, dport, seq, ack, flags, payload)
            by_conn.setdefault(tuple(sorted([seg[0:2], seg[2:4]])), []).append(n)
    busiest = max(by_conn.values(), key=len)
    drop = busiest[len(busiest) // 2]
    out = bytearray(_s.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, packets[0][2]))
    for n, (_i, ts, _lt, d) in enumerate(packets):
        if n != drop:
            out += _s.pack("<IIII", int(ts), round((ts % 1) * 1e6) % 1000000, len(d), len(d)) + d
    dst.write_bytes(bytes(out))


@pytest.mark.parametrize("entry", TLS, ids=lambda e: e["file"])
def test_lost_segment_resynchronises(entry, tmp_path):
    bad = tmp_path / "lost.pcap"
    _drop_packet(CAPTURES / entry["file"], bad)
    _a, good, _c, _i = run(CAPTURES / entry["file"], keylog_of(entry))
    a, exchanges, conns, issues = run(bad, keylog_of(entry))
    codes = Counter(i.code for i in issues)
    assert codes["tls.gap"] == 1, issues
    assert not [i for i in issues if i.severity == Severity.ERROR], issues
    assert len(exchanges) >= len(good) - 3


@pytest.mark.parametrize("command", ["stats", "check"])
def test_keylog_from_a_pipe_serves_every_capture(tmp_path, command):
    """`--tls-keylog <(cat *.keys)` or /dev/stdin: a pipe is read once, so the run keeps its
    text for every capture and every process (several captures run one process each): the
    same output as the key log in a file."""
    import sys

    caps = [
        str(CAPTURES / "kafka-python-tls-tls13-aes128gcm.pcap"),
        str(CAPTURES / "librdkafka-tls-tls13-aes128gcm.pcap"),
    ]
    keys = b"".join((CAPTURES / f).read_bytes() for f in sorted(p.name for p in CAPTURES.glob("*.keys")))
    (tmp_path / "keys").write_bytes(keys)

    def run(keylog: str, stdin: bytes | None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "analyzer", command, *caps, "--tls-keylog", keylog],
            input=stdin,
            capture_output=True,
            timeout=300,
        )

    from_file, from_pipe = run(str(tmp_path / "keys"), None), run("/dev/stdin", keys)
    assert from_pipe.returncode == from_file.returncode and from_file.returncode in (0, 1)
    assert from_pipe.stdout == from_file.stdout
    assert b"not decrypted" not in from_pipe.stdout and b"Produce" in from_pipe.stdout or command == "check"
