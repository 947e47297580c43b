"""The filters a field selected in an exchange's tree gives (``field_expressions``, the TUI's
``f``): on bundled captures every one offered compiles and every ``==`` keeps its exchange; the
names come from the filter's own field lists; what the language does not name is refused."""

import pytest

from analyzer.dissect.message import Options
from analyzer.filter import compile_filter, field_expressions, literal
from analyzer.filter.fields import RECORDS_FIELDS
from analyzer.model import Exchange, Field
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES


def _exchanges(name: str) -> list[Exchange]:
    opts = Options(records_bodies=True)
    return [ev for ev in Analysis(CAPTURES / name, opts).events() if type(ev) is Exchange]


def _paths(root: Field):
    stack = [(root,)]
    while stack:
        p = stack.pop()
        yield p
        stack.extend((*p, c) for c in p[-1].children or ())


@pytest.mark.parametrize(
    "name",
    [
        "librdkafka-txn.pcap",  # v2 batches, headers, transactions
        "aiokafka-gzip.pcap",  # JoinGroup/SyncGroup with embedded consumer-protocol bytes
        "kafka-python-0.9-snappy.pcap",  # legacy messages inside compressed wrappers
    ],
)
def test_every_offered_filter_compiles_and_keeps_its_exchange(name):
    offered = 0
    for ex in _exchanges(name):
        for kind, m in (("request", ex.request), ("response", ex.response)):
            if m is None:
                continue
            for root in (m.header, m.body):
                for path in _paths(root) if root is not None else ():
                    found = field_expressions(ex.api_key, kind, path)
                    if isinstance(found, str):
                        continue
                    for expr in found:
                        flt = compile_filter(expr)  # raises when the language does not have it
                        offered += 1
                        assert " == " not in expr or flt(ex), (expr, [p.name for p in path])
    assert offered > 100


def test_names_come_from_the_field_lists():
    ex = next(e for e in _exchanges("librdkafka-txn.pcap") if e.api_key == 0 and e.request.body is not None)
    body = ex.request.body
    batch = next(f for f in body.walk() if f.type == "record_batch")
    records = next(f for f in body.walk() if f.type == "records")
    found = field_expressions(0, "request", (body, records, batch))
    # a batch: its summary's fields, in the order of RECORDS_FIELDS
    names = [e.split(" == ")[0] for e in found]
    assert names[0] == "records.codec" and names == [n for n in RECORDS_FIELDS if n in names]
    # the body root is no field; a field below embedded protocol bytes is not named
    assert field_expressions(0, "request", (body,)) == "select a field of the request or response"
    join = next(e for e in _exchanges("aiokafka-gzip.pcap") if e.api_key == 11)
    sub = next(p for p in _paths(join.request.body) if p[-1].name == "subscription")
    assert "does not name" in field_expressions(11, "request", sub)


@pytest.mark.parametrize(
    "value, text",
    [
        (True, "true"),
        (-1, "-1"),
        (1.5, "1.5"),
        (1e20, "1e20"),
        (float("inf"), None),
        ('a"b', '"a\\"b"'),
        (b"k-1", '"k-1"'),
        (b"\xff", None),
        (None, None),
    ],
)
def test_literal(value, text):
    """A decoded value written in the filter language (and read back by it), or None."""
    assert literal(value) == text
    if isinstance(value, float) and text is not None:
        assert compile_filter(f"latency == {text}")
    elif isinstance(value, str | bytes) and text is not None:
        assert compile_filter(f"client_id == {text}")
