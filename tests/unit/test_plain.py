"""analyzer.plain: the record classes behave as the ``@dataclass(slots=True)`` they replace
(construction, defaults and factories, equality, hashing, frozen, pickling, replace, repr), and
the commands' start loads no ``dataclasses``."""

import copy
import pickle
import subprocess
import sys
from dataclasses import dataclass
from dataclasses import field as dc_field

import pytest

from analyzer.model import ConnInfo, Endpoint, Field, Issue, Message, Severity
from analyzer.pipeline import Outcome
from analyzer.plain import field, record, replace
from analyzer.session.bounded import Bounds
from tests.helpers.captures import ROOT


@record
class Row:
    name: str
    count: int = 0
    seen: list[int] = field(default_factory=list)
    cache: object = field(default=None, compare=False, repr=False)


@record(frozen=True)
class Key:
    topic: str
    partition: int = 0


@dataclass(slots=True)
class RowDC:
    name: str
    count: int = 0
    seen: list[int] = dc_field(default_factory=list)
    cache: object = dc_field(default=None, compare=False, repr=False)


def test_construction_defaults_and_factories():
    a = Row("x")
    assert (a.name, a.count, a.seen, a.cache) == ("x", 0, [], None)
    b = Row("x")
    assert a.seen is not b.seen  # a new list each
    c = Row("y", 3, seen=[1], cache="c")
    assert (c.name, c.count, c.seen, c.cache) == ("y", 3, [1], "c")
    assert Row(name="z", count=2).count == 2


@pytest.mark.parametrize(
    "args,kwargs,message",
    [
        ((), {}, "missing required argument: 'name'"),
        (("a", 1, [], None, 5), {}, "takes 4 arguments but 5 were given"),
        (("a",), {"nope": 1}, "unexpected keyword argument 'nope'"),
        (("a",), {"name": "b"}, "multiple values for argument 'name'"),
    ],
)
def test_bad_arguments_are_type_errors(args, kwargs, message):
    with pytest.raises(TypeError, match=message):
        Row(*args, **kwargs)


def test_equality_repr_and_hash_as_a_dataclass():
    assert Row("x", 1, [2], cache=1) == Row("x", 1, [2], cache=2)  # cache: compare=False
    assert Row("x", 1) != Row("x", 2)
    assert Row("x") != RowDC("x")  # another class: not equal
    assert repr(Row("x", 1, [2], cache=3)) == "Row(name='x', count=1, seen=[2])"
    assert repr(RowDC("x", 1, [2], cache=3)).endswith("RowDC(name='x', count=1, seen=[2])")
    with pytest.raises(TypeError):
        hash(Row("x"))  # mutable: unhashable, as a dataclass with eq
    assert hash(Key("t", 1)) == hash(Key("t", 1))
    assert {Key("t", 1), Key("t", 1), Key("t", 2)} == {Key("t", 1), Key("t", 2)}


def test_slots_and_frozen():
    r = Row("x")
    with pytest.raises(AttributeError):
        r.other = 1  # type: ignore[attr-defined]  # slots: no other attribute
    assert not hasattr(r, "__dict__")
    k = Key("t")
    with pytest.raises(AttributeError, match="cannot assign to field 'partition'"):
        k.partition = 2  # type: ignore[misc]  # frozen
    with pytest.raises(AttributeError):
        del k.topic  # type: ignore[misc]  # frozen


def test_replace():
    r = Row("x", 1, [2])
    s = replace(r, count=5)
    assert (s.name, s.count, s.seen) == ("x", 5, [2])
    assert r.count == 1
    assert replace(Key("t", 1), partition=2) == Key("t", 2)
    with pytest.raises(TypeError, match="no field 'nope'"):
        replace(r, nope=1)


def test_the_project_records_pickle_and_copy():
    """Records cross processes (-j, live workers, Spark): pickled and copied whole, frozen or not."""
    issue = Issue(Severity.ERROR, "decode.truncated", "short", 4, "body")
    conn = ConnInfo(1, Endpoint("10.0.0.1", 5000), Endpoint("10.0.0.2", 9092), 1.0, True)
    conn.frames[0] = 3
    fld = Field("body", "struct", None, 0, 4, [Field("acks", "int16", -1, 0, 2)])
    objs = [issue, conn, fld, Key("t", 1), Row("x", 1, [2]), Bounds(idle=5.0)]
    for o in objs:
        back = pickle.loads(pickle.dumps(o, pickle.HIGHEST_PROTOCOL))
        assert type(back) is type(o)
        assert back == o
        assert copy.deepcopy(o) == o
    assert pickle.loads(pickle.dumps(issue)).where == "body"
    # (an Outcome's knowledge holds objects compared by identity: its fields compared here)
    out = pickle.loads(pickle.dumps(Outcome("cap", packets=3, capture_issues=(issue,))))
    assert (out.name, out.packets, out.capture_issues) == ("cap", 3, (issue,))
    assert hash(pickle.loads(pickle.dumps(issue))) == hash(issue)


def test_hand_written_inits_keep_the_dataclass_defaults():
    m = Message(None, "request", 0, 9, 1, None, None)  # type: ignore[arg-type]  # no frame needed here
    assert m.issues == [] and m.errors == [] and m.client_id is None and m.topic_refs is None
    assert Message(None, "request", 0, 9, 1, None, None).issues is not m.issues  # type: ignore[arg-type]
    c = ConnInfo(1, Endpoint("a", 1), Endpoint("b", 2), 0.0, False)
    assert (c.frames, c.bytes, c.gaps, c.ts_last, c.first_packet) == ([0, 0], [0, 0], [0, 0], 0.0, 0)
    assert c.frames is not ConnInfo(2, Endpoint("a", 1), Endpoint("b", 2), 0.0, False).frames
    assert Issue(Severity.NOTE, "x", "y") == Issue(Severity.NOTE, "x", "y", None, None)
    # topic_refs is a cache: out of equality and repr, as before
    m2 = Message(None, "request", 0, 9, 1, None, None, topic_refs=((), False))  # type: ignore[arg-type]
    assert m2 == m and "topic_refs" not in repr(m2)


def test_stats_starts_without_dataclasses():
    """The records of the stats path cost no dataclass creation (a third of the start-up before)."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['kafka-analyzer', 'stats', 'captures/librdkafka-produce-consume-gzip.pcap']\n"
        "try:\n"
        "    runpy.run_module('analyzer', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('dataclasses' in sys.modules, file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr
