"""The client.* display-filter fields select exactly what ClientTracker reports, on every bundled
capture, evaluated as a stream (each exchange as it comes, with the knowledge the run has then):

* ``client.removed``: the exchanges whose request version is one of its client's
  ``removed_versions`` for Kafka 4.x; the legacy clients' captures (kafka-python before 0.11,
  sarama's legacy versions) select, the modern clients' (librdkafka, aiokafka, kafkajs...) do not;
* ``client.software``/``client.software_version``: the exchanges of the clients whose software is
  that name and version;
* ``client.all_topics``: as many Metadata requests per client as its share of all-topics requests
  says;

and they work in ``read -Y``, a check rule and the TUI's filter bar."""

import io
import json
import textwrap
from contextlib import redirect_stderr, redirect_stdout

import pytest

from analyzer import cli
from analyzer.dissect.message import Options
from analyzer.filter import compile_filter
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.clients import BEFORE_KIP511, NOT_NAMED, ClientTracker
from analyzer.session.consumption import host_of
from tests.helpers.captures import CAPTURES

PCAPS = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
LEGACY = ("kafka-python-0.8.2-", "kafka-python-0.9-", "kafka-python-0.10.0-")
MODERN = ("librdkafka-", "aiokafka-", "kafkajs-", "kafka-python-0.11-", "producer-", "group-k")


def _run(path, keys, *consumers) -> Analysis:
    a = Analysis(path, Options(), tls_keylog=str(keys))
    a.run(*consumers)
    return a


def _who(ex: Exchange) -> tuple[str, str | None]:
    conn = ex.conn
    client = conn.client if conn.client_direction is not None else conn.a
    return host_of(str(client)), ex.client_id


@pytest.mark.parametrize("path", PCAPS, ids=lambda p: p.name)
def test_client_fields_select_what_the_tracker_reports(path, tmp_path):
    keys = tmp_path / "keys"
    keys.write_bytes(b"".join(k.read_bytes() for k in sorted(CAPTURES.glob("*.keys"))))
    tracker = ClientTracker()
    _run(path, keys, tracker)
    rows = {(r["client"], r["client_id"]): r for r in tracker.rows("4.2")}
    named = sorted({r["software"] for r in rows.values()} - {BEFORE_KIP511, NOT_NAMED})
    exprs = {"removed": "client.removed", "all": "client.all_topics"}
    for sw in named:
        name, _, version = sw.partition(" ")
        exprs[sw] = f'client.software == "{name}" and client.software_version == "{version}"'
    # a second run, each exchange filtered as it comes (the knowledge the run has then)
    a = Analysis(path, Options(), tls_keylog=str(keys))
    flts = {k: compile_filter(text) for k, text in exprs.items()}
    for f in flts.values():
        f.knowledge = a.knowledge
    seen: list[tuple[Exchange, dict[str, bool]]] = []

    class Probe:
        def event(self, ev):
            if type(ev) is Exchange:
                seen.append((ev, {k: bool(f(ev)) for k, f in flts.items()}))

    a.run(Probe())
    refused = {k: {(x["api_key"], x["version"]) for x in r["removed_versions"]} for k, r in rows.items()}
    selected = 0
    for ex, said in seen:
        req = ex.request
        expected = req is not None and (req.api_key, req.api_version) in refused.get(_who(ex), ())
        assert said["removed"] == expected, (ex.api_key, ex.api_version, _who(ex))
        selected += said["removed"]
    if path.name.startswith(LEGACY):
        assert selected > 0
    if path.name.startswith(MODERN):
        assert selected == 0
    all_topics: dict = {}
    for ex, said in seen:
        if said["all"]:
            all_topics[_who(ex)] = all_topics.get(_who(ex), 0) + 1
    for k, r in rows.items():
        share = r["metadata_all_topics"]
        assert all_topics.get(k, 0) == (round(share * r["metadata_requests"]) if share else 0), k
    # the software: each named client's exchanges, and no other
    for sw in named:
        same = [i for i, (ex, _) in enumerate(seen) if rows.get(_who(ex), {}).get("software") == sw]
        assert [i for i, (_, said) in enumerate(seen) if said[sw]] == same, sw


def test_the_fields_are_listed(capsys):
    rc = cli.main(["filters"])
    out = capsys.readouterr().out
    assert rc == 0
    for name in ("client.software", "client.software_version", "client.removed", "client.all_topics"):
        assert f"  {name} " in out


def test_read_check_and_the_tui_filter_bar(tmp_path, capsys):
    legacy = CAPTURES / "kafka-python-0.9-none.pcap"
    rc = cli.main(["read", str(legacy), "-Y", "client.removed"])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0 and len(lines) == 3 + 15 + 3  # Produce v1 x3, Fetch v1 x15, ListOffsets v0 x3
    assert all(" Produce v1 " in x or " Fetch v1 " in x or " ListOffsets v0 " in x for x in lines)
    rules = tmp_path / "rules.toml"
    rules.write_text(
        textwrap.dedent(
            """
            [[rule]]
            id = "no-removed-versions"
            where = "client.removed"
            aggregate = "count"
            max = 0
            """
        )
    )
    for cap, failed in ((legacy, True), (CAPTURES / "librdkafka-produce-consume-gzip.pcap", False)):
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            cli.main(["check", str(cap), "--rules", str(rules), "--format", "json"])
        r = next(r for r in json.loads(out.getvalue())["rules"] if r["id"] == "no-removed-versions")
        assert (r["status"] == "failed") is failed, r
    # the TUI's filter bar: rows answer the API and version without decoding
    from analyzer.tui.session import Session

    s = Session(str(legacy))
    try:
        s.indexer().run(lambda p: s.take(p) is not None or True, lambda: False, str(legacy))
        pred, err, note = s.filter_choice("client.removed")
        assert err is None and note is None and pred is not None
        assert sum(1 for r in s.rows if pred(r)) == 21
    finally:
        s.close()
