"""The long-lived tables' bounds from the command line: a synthetic capture with thousands of
client ids and connections spread over capture time (one every 10 s)."""

from __future__ import annotations

import json

import pytest

from analyzer.cli import main
from tests.helpers.packets import Conversation, api_versions_request, api_versions_response, write_pcap

N = 600
MOST = 50


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    path = tmp_path_factory.mktemp("bounded") / "many-clients.pcap"
    packets = []
    for i in range(N):
        c = Conversation(client=(f"10.1.{i // 200}.{i % 200 + 1}", 40000 + i % 1000)).handshake()
        c.send(0, api_versions_request(i + 1, client_id=f"client-{i}"))
        c.send(1, api_versions_response(i + 1))
        c.close()
        t = 1_700_000_000.0 + i * 10.0
        packets += [(t + k * 0.001, bytes(p)) for k, p in enumerate(c.pkts)]
    write_pcap(path, packets)
    return path


def _json(capsys, *args) -> dict:
    rc = main([*map(str, args), "--format", "json"])
    out, _ = capsys.readouterr()
    assert rc == 0
    return json.loads(out)


def _evicted(report: dict) -> dict[str, int]:
    return {r["table"]: r["expired_idle"] + r["evicted_full"] for r in report.get("evictions", [])}


def test_tables_stay_at_their_maximum_evictions_counted(capsys, many):
    s = _json(capsys, "stats", many, "--state-max", MOST)
    assert len(s["clients"]) == MOST and len(s["connections"]) == MOST
    # (the knowledge's table of client software too: each ApiVersions names it; and each
    # connection comes from a host of its own)
    assert _evicted(s) == {
        "stats_clients": N - MOST,
        "stats_connections": N - MOST,
        "clients": N - MOST,
        "client_software": N - MOST,
        "client_hosts": N - MOST,
    }
    assert s["capture"]["exchanges"] == N
    c = _json(capsys, "clients", many, "--state-max", MOST)
    assert len(c["clients"]) == MOST and _evicted(c) == {"clients": N - MOST, "client_hosts": N - MOST}
    assert c["clients"][-1]["client_id"] == f"client-{N - 1}"


def test_idle_expiry_by_capture_time(capsys, many):
    s = _json(capsys, "stats", many, "--state-idle", 300)
    # idle past 300 s at each sweep (each 60 s): 30 to 36 clients alive at the end
    assert 30 <= len(s["clients"]) <= 37
    rows = {r["table"]: r for r in s["evictions"]}
    assert rows["stats_clients"]["expired_idle"] == N - len(s["clients"])
    assert rows["stats_clients"]["said"] == f"{N - len(s['clients'])} stats clients expired after 5min idle"


def test_two_processes_equal_one_with_evictions(capsys, many):
    one = _json(capsys, "stats", many, "--state-max", MOST, "--state-idle", 3000)
    two = _json(capsys, "stats", many, "--state-max", MOST, "--state-idle", 3000, "-j", "2")
    assert _evicted(one) and one == two


def test_no_evictions_no_section(capsys, many):
    s = _json(capsys, "stats", many)
    assert "evictions" not in s and len(s["clients"]) == N
