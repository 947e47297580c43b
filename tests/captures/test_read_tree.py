"""``read -V``: under each exchange line, its field tree (the TUI's detail tree as text: the
TUI's own comparison is tests/tui/test_app.py's test_read_tree_is_the_detail_tree); a line per
message, per decoded field (every one, records included, indented by depth) and per issue."""

import pytest

from analyzer import cli
from analyzer.dissect.message import Options
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from analyzer.session.fieldtree import field_parts, plain
from analyzer.session.internal import annotate
from tests.helpers.captures import CAPTURES


def _blocks(text: str) -> list[list[str]]:
    """The exchange lines (``--absolute``: not indented) each with the tree lines under it."""
    out: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(" "):
            out[-1].append(line)
        else:
            out.append([line])
    return out


@pytest.mark.parametrize(
    "name", ["librdkafka-produce-consume-gzip.pcap", "kafka-python-0.10.0-snappy.pcap", "group-internal.pcap"]
)
def test_a_line_per_node_indented_by_depth(capsys, name):
    capsys.readouterr()
    assert cli.main(["read", str(CAPTURES / name), "-V", "--absolute"]) == 0
    blocks = [b for b in _blocks(capsys.readouterr().out) if "TLS connection:" not in b[0]]
    exs = [
        ev for ev in Analysis(CAPTURES / name, Options(records_bodies=True)).events() if type(ev) is Exchange
    ]
    assert len(blocks) == len(exs)
    for block, ex in zip(blocks, exs, strict=True):
        annotate(ex.request)  # internal topics' records: their coordinator fields, as in the TUI
        annotate(ex.response)
        fields = []
        for m in (ex.request, ex.response):
            for root in (m.header, m.body) if m is not None else ():
                if root is not None:
                    stack = [(root, 2)]
                    while stack:
                        f, depth = stack.pop()
                        fields.append("  " * depth + plain(field_parts(f)))
                        stack.extend((c, depth + 1) for c in reversed(f.children or ()))
        tree = block[1:]
        if any(line.startswith("  Issues (") for line in tree):
            at = next(i for i, line in enumerate(tree) if line.startswith("  Issues ("))
            assert len(tree) - at - 1 == len(ex.all_issues())
            tree = tree[:at]
        heads = [line.split()[0] for line in tree if not line.startswith("    ")]
        assert heads == ["Request", "Response"] or (not ex.request or not ex.response), heads
        got = [line for line in tree if line.startswith("    ") and line != "    (nothing decoded)"]
        assert got == fields, ex.api_key


def test_internal_records_show_their_keys_and_values(capsys):
    capsys.readouterr()
    cap = CAPTURES / "group-internal.pcap"
    assert cli.main(["read", str(cap), "-V", "--api", "Fetch", "--topic", "__consumer_offsets"]) == 0
    out = capsys.readouterr().out
    assert "key: 'OffsetCommit key v1'" in out and "value: 'GroupMetadata value" in out
    assert "value: null  (tombstone)" in out or "tombstone" in out
