"""Real SASL traffic (the ``sasl`` entries of captures/manifest.json): every connection
authenticates (SaslHandshake v0 + raw tokens, or SaslHandshake v1 + SaslAuthenticate), the requests
after authentication decode normally, and the password and the SCRAM client proofs appear in no
output of the CLI unless --show-secrets."""

import os
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from analyzer.dissect.constants import ApiKey
from analyzer.dissect.message import Options
from analyzer.events import CaptureIssue, ConnIssue
from analyzer.model import Exchange, Severity
from analyzer.pipeline import Analysis
from analyzer.session.records import iter_records
from tests.helpers.captures import CAPTURES, ROOT, known_malformed
from tests.helpers.secrets import SASL, secrets, shown_secrets, shows

RAW = "kafka-python-0.10.0-sasl-plain"  # SaslHandshake v0: raw tokens


def by_connection(entry) -> tuple[dict[int, list[Exchange]], list, dict]:
    """Exchanges per connection id in request order (responses without request last), the
    stream-level issues, and the topic ids learned (Fetch v13+ names topics by id)."""
    conns: dict[int, list[Exchange]] = defaultdict(list)
    stream_issues = []
    a = Analysis(CAPTURES / entry["file"], Options(records_bodies=True))
    for ev in a.events():
        if type(ev) in (ConnIssue, CaptureIssue):
            stream_issues.append(ev.issue)
        elif isinstance(ev, Exchange):
            conns[ev.conn.id].append(ev)
    for exs in conns.values():
        exs.sort(key=lambda e: e.request.frame.offset if e.request else float("inf"))
    return conns, stream_issues, a.knowledge.topic_ids


def split_auth(exs: list[Exchange]) -> tuple[list[Exchange], list[Exchange]]:
    """(exchanges up to and including the last SASL one, the rest)."""
    last = max(
        (
            i
            for i, e in enumerate(exs)
            if e.api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, None)
        ),
        default=-1,
    )
    return exs[: last + 1], exs[last + 1 :]


def test_the_sasl_captures_are_there():
    assert {e["scenario"] for e in SASL} == {
        "librdkafka-sasl-plain",
        "librdkafka-sasl-scram",
        "kafka-python-sasl-plain",
        RAW,
    }


@pytest.mark.parametrize("entry", SASL, ids=lambda e: e["file"])
def test_every_connection_authenticates(entry):
    conns, _, _ = by_connection(entry)
    mechanism = entry["sasl"]["mechanism"]
    rounds = 1 if mechanism == "PLAIN" else 2  # SCRAM: client-first, client-final
    assert len(conns) >= 3
    for exs in conns.values():
        auth, after = split_auth(exs)
        assert auth, f"connection {exs[0].conn.id} does not authenticate"
        kinds = [(e.api_key, e.api_version) for e in auth]
        # ApiVersions first (librdkafka: v3, answered UNSUPPORTED_VERSION, then v0)
        assert kinds[0][0] == ApiKey.API_VERSIONS and kinds[-1 - rounds][0] == ApiKey.SASL_HANDSHAKE, kinds
        assert all(k == ApiKey.API_VERSIONS for k, _ in kinds[: -1 - rounds]), kinds
        handshake = auth[-1 - rounds]
        assert handshake.request.body.get("mechanism") == mechanism
        assert handshake.response.body.get("error_code") == 0
        offered = [m.value for m in handshake.response.body.child("mechanisms").children]
        assert offered == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        tokens = auth[-rounds:]
        if entry["scenario"] == RAW:
            # SaslHandshake v0: then size-prefixed raw tokens, not Kafka requests
            assert handshake.api_version == 0
            assert [(e.api_key, e.api_version, e.correlation_id) for e in tokens] == [(None, None, None)]
            tok = tokens[0]
            assert tok.request.body.name == "sasl_token" and tok.response.body.name == "sasl_token"
            req_tok = tok.request.body.children[0]
            assert req_tok.display == "PLAIN authzid='alice' user='alice' password=********"
            assert tok.response.body.children[0].value == b""  # PLAIN: the broker's empty answer
        else:
            assert handshake.api_version == 1
            assert [e.api_key for e in tokens] == [ApiKey.SASL_AUTHENTICATE] * rounds
            assert all(e.response.body.get("error_code") == 0 for e in tokens)
            shown = [e.request.body.child("auth_bytes").display for e in tokens]
            if mechanism == "PLAIN":  # librdkafka sends no authzid, kafka-python the user name
                authzid = "" if entry["client"] == "librdkafka" else "alice"
                assert shown == [f"PLAIN authzid={authzid!r} user='alice' password=********"]
            else:
                assert shown == ["SCRAM client-first-message", "SCRAM client-final-message (proof masked)"]
                server_final = tokens[1].response.body.get("auth_bytes")
                assert server_final.startswith(b"v=")
        for e in auth:
            assert e.request is not None and e.response is not None
            assert not [i for i in e.all_issues() if i.severity >= Severity.ERROR and not named(e, i)]
        # after authentication: Kafka requests only
        assert all(e.api_key is not None for e in after)


def named(e: Exchange, issue) -> bool:
    """The mock's malformed UNSUPPORTED_VERSION answer to ApiVersions v3 (tests.helpers.captures)."""
    m = e.response
    return (
        m is not None
        and issue in m.issues
        and bool(known_malformed(e.api_key, m.kind, m.body.get("error_code") if m.body else None))
    )


def text(b):
    return None if b is None else b.decode()


def rec_key(r):
    return (r.topic, text(r.key), text(r.value), tuple((k, text(v)) for k, v in r.headers))


@pytest.mark.parametrize("entry", SASL, ids=lambda e: e["file"])
def test_requests_after_authentication_decode_normally(entry):
    conns, stream_issues, topic_ids = by_connection(entry)
    assert not [i for i in stream_issues if i.severity >= Severity.WARNING]
    produced, fetched, apis = Counter(), Counter(), Counter()
    for exs in conns.values():
        _, after = split_auth(exs)
        assert after, "no Kafka request after authentication"
        for e in after:
            apis[e.api_key] += 1
            assert e.request is not None, e.all_issues()  # no response without its request
            assert not [i for i in e.all_issues() if i.severity >= Severity.ERROR], e.all_issues()
            if e.api_key == ApiKey.PRODUCE:
                produced.update(rec_key(r) for r in iter_records(e.request, topic_ids))
            if e.api_key == ApiKey.FETCH and e.response is not None:
                fetched.update(rec_key(r) for r in iter_records(e.response, topic_ids) if not r.control)
    assert apis[ApiKey.PRODUCE] and apis[ApiKey.FETCH] and apis[3]  # Metadata
    want = Counter(
        (r["topic"], r["key"], r["value"], tuple(tuple(h) for h in r["headers"] or ()))
        for r in entry["produced"]
    )
    assert len(entry["produced"]) == 6 and produced == want
    assert set(fetched) == {
        (r["topic"], r["key"], r["value"], tuple(tuple(h) for h in r["headers"] or ()))
        for r in entry["consumed"]
    }


# -- secrets ------------------------------------------------------------------------------------


def run(*args: str, ok=(0,)) -> bytes:
    r = subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode in ok, r.stderr
    return r.stdout + r.stderr


OUTPUTS = [
    ("read",),
    ("read", "-v"),
    ("read", "-V"),
    ("read", "--api", "SaslHandshake,SaslAuthenticate"),
    ("stats",),
    ("stats", "--format", "json"),
    ("export",),
    ("export", "--format", "ndjson"),
    ("export", "--records", "--format", "ndjson"),
    ("check",),
    ("check", "-v", "--format", "json"),
    ("check", "--format", "github"),
]
# the outputs that carry message bytes: --show-secrets must put the secrets there
BYTES_OUTPUTS = [("export",), ("export", "--format", "ndjson"), ("export", "--records", "--format", "ndjson")]


def command_output(args, path: str, tmp_path) -> list[tuple[bytes, bool]]:
    """Everything the command wrote, each with whether it is JSON; check's JUnit report too."""
    if args[0] == "check":
        junit = tmp_path / "report.xml"
        out = run(*args, "--junit", str(junit), path, ok=(0, 1))
        return [(out, "json" in args), (junit.read_bytes(), False)]
    return [(run(*args, path), args[0] == "export" or "json" in args)]


@pytest.mark.parametrize("args", OUTPUTS, ids=" ".join)
@pytest.mark.parametrize("entry", SASL, ids=lambda e: e["file"])
def test_secrets_are_in_no_output(entry, args, tmp_path):
    outs = command_output(args, str((CAPTURES / entry["file"]).relative_to(ROOT)), tmp_path)
    if args[0] in ("read", "export"):
        assert b"SaslHandshake" in outs[0][0]
    for out, is_json in outs:
        for secret in secrets(entry):
            assert not shows(out, secret, is_json), secret


@pytest.mark.parametrize("args", BYTES_OUTPUTS, ids=" ".join)
@pytest.mark.parametrize("entry", SASL, ids=lambda e: e["file"])
def test_show_secrets_shows_them(entry, args, tmp_path):
    """The same check fails with --show-secrets: the secrets are there, so the test sees them."""
    path = str((CAPTURES / entry["file"]).relative_to(ROOT))
    ((out, is_json),) = command_output((*args, "--show-secrets"), path, tmp_path)
    for secret in shown_secrets(entry):
        assert shows(out, secret, is_json), secret
    if entry["sasl"]["mechanism"] != "PLAIN":  # SCRAM sends no password, only proofs
        assert not shows(out, entry["sasl"]["password"].encode(), is_json)


def tui_views(entry, show: bool) -> bytes:
    """What the TUI shows of every message: its field tree labels and its hex view's bytes."""
    from analyzer.session.fieldtree import message_roots
    from analyzer.tui.widgets.labels import field_label, hex_target, message_label

    out = []
    a = Analysis(CAPTURES / entry["file"], Options(records_bodies=True, show_secrets=show))
    for ev in a.events():
        if not isinstance(ev, Exchange):
            continue
        for kind, m in (("request", ev.request), ("response", ev.response)):
            if m is None:
                continue
            out.append(message_label(m).plain.encode())
            for root in message_roots(m):
                for f in root.walk():
                    out.append(field_label(f).plain.encode())
            target = hex_target(ev, kind, None, show)
            out.append(target.data if target is not None else b"")
    return b"\n".join(out)


@pytest.mark.parametrize("entry", SASL, ids=lambda e: e["file"])
def test_tui_field_tree_and_hex_mask_secrets(entry):
    out = tui_views(entry, show=False)
    for secret in secrets(entry):
        assert not shows(out, secret, False), secret
    shown = tui_views(entry, show=True)
    for secret in shown_secrets(entry):
        assert secret in shown, secret
