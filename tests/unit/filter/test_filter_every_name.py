"""Every decoded name a filter accepts (with and without its API prefix), compared with a value
of its type (and with contains/matches for text), evaluates without raising on the real
exchanges of the bundled captures, and at least finds what the captures hold."""

from analyzer.dissect.decoder import snake
from analyzer.dissect.message import Options
from analyzer.dissect.protocol_table import API_NAMES
from analyzer.filter import FilterError, compile_filter
from analyzer.filter import fields as F
from analyzer.model import Exchange
from analyzer.pipeline import Analysis
from tests.helpers.captures import CAPTURES, project_captures

CAPS = [
    "librdkafka-admin.pcap",
    "librdkafka-txn.pcap",
    "librdkafka-kip848.pcap",
    "kafka-python-0.9-gzip.pcap",
]

_EXPRS = {
    "int": ["{n} >= 0", "{n} in {{-1, 0, 1}}"],
    "float": ["{n} > 0.5"],
    "string": ['{n} contains "a"', '{n} matches "^[a-z]"', '{n} < "m"'],
    "bytes": ['{n} contains "a"', '{n} matches "x"'],
    "bool": ["{n} == true"],
}


def test_every_decoded_name_evaluates_on_real_exchanges():
    exchanges = []
    for cap in CAPS:
        a = Analysis(CAPTURES / cap, Options(records_bodies=True))
        exchanges += [ev for ev in a.events() if type(ev) is Exchange]
    keys = {e.api_key for e in exchanges}
    names = []
    for suffix in F.suffix_index():
        names.append(".".join(suffix))
    for key in keys:
        if key is None or key not in F.api_prefixes().values():
            continue
        prefix = snake(API_NAMES[key])
        names += [f"{prefix}.{'.'.join(p)}" for p in F.api_paths(key)]
    found = compiled = 0
    for n in names:
        exists = compile_filter(n)
        hits = [e for e in exchanges if exists(e)]
        found += bool(hits)
        for exprs in _EXPRS.values():
            for e in exprs:
                try:
                    f = compile_filter(e.format(n=n))
                except FilterError:  # not this field's type
                    continue
                compiled += 1
                for ex in hits:
                    assert f(ex) in (True, False)
    assert compiled > len(names)
    assert found > 150


def test_record_fields_equal_the_records_view_on_every_capture():
    """records.key/value/offset/timestamp/headers.* (read from the records parser's rows) give
    what :func:`analyzer.session.records.iter_records` (the Field trees) gives, record for
    record, on every bundled capture."""
    from analyzer.filter.compiler import _record_getter
    from analyzer.session.records import iter_records

    getters = {
        w: _record_getter(w) for w in ("key", "value", "offset", "timestamp", "headers.key", "headers.value")
    }
    seen = 0
    for cap in project_captures():
        a = Analysis(cap, Options(records_bodies=True))
        for ex in a.events():
            if type(ex) is not Exchange:
                continue
            views = [
                r
                for m in (ex.request, ex.response)
                if m is not None and m.api_key in (0, 1)
                for r in iter_records(m)
            ]
            want = {
                "key": [r.key for r in views if r.key is not None],
                "value": [r.value for r in views if r.value is not None],
                "offset": [r.offset for r in views if r.offset is not None],
                "timestamp": [r.timestamp for r in views if r.timestamp is not None],
                "headers.key": [k for r in views for k, _ in r.headers if k is not None],
                "headers.value": [v for r in views for _, v in r.headers if v is not None],
            }
            for w, get in getters.items():
                assert get(ex) == want[w], (cap.name, ex.correlation_id, w)
            seen += len(views)
    assert seen > 400
