"""The Prometheus exposition of :mod:`analyzer.session.metrics` through ``prometheus_client``:
a custom collector over the plain families, written to a file (``stats --metrics-file``,
node_exporter's textfile collector: written whole under a temporary name, then renamed) or
served over HTTP (``live --metrics ADDR:PORT``: ``/metrics`` and ``/healthz``)."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from analyzer.session.bounded import DEFAULT_BUCKETS

if TYPE_CHECKING:
    from analyzer.session.metrics import Family, MetricLimits

MISSING = "prometheus_client is needed for metrics: pip install 'kafka-analyzer[live]' (or prometheus_client)"


def add_metric_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("metrics (label bounds: the values with the most traffic; the rest as 'other')")
    g.add_argument("--metrics-clients", type=int, default=50, metavar="N", help="client ids shown (50)")
    g.add_argument("--metrics-topics", type=int, default=50, metavar="N", help="topics shown (50)")
    g.add_argument("--metrics-software", type=int, default=20, metavar="N", help="client software names (20)")
    g.add_argument("--metrics-groups", type=int, default=50, metavar="N", help="consumer groups shown (50)")
    g.add_argument(
        "--metrics-partitions", type=int, default=500, metavar="N", help="consumer lag series shown (500)"
    )
    g.add_argument(
        "--metrics-track",
        type=int,
        default=10,
        metavar="K",
        help="values of each label counted apart: K times its limit (10); later ones count as 'other'",
    )
    g.add_argument(
        "--metrics-buckets",
        metavar="S,S,...",
        help="latency histogram bounds in seconds (default " + ",".join(map(str, DEFAULT_BUCKETS)) + ")",
    )


def limits(args) -> MetricLimits | str:
    """The bounds the arguments ask for, or why they are wrong."""
    from analyzer.session.metrics import MetricLimits  # (a run with metrics: loaded then)

    buckets = DEFAULT_BUCKETS
    if args.metrics_buckets:
        try:
            buckets = tuple(float(x) for x in args.metrics_buckets.split(",") if x.strip())
        except ValueError:
            return f"--metrics-buckets: not a list of seconds: {args.metrics_buckets!r}"
        if not buckets or list(buckets) != sorted(set(buckets)) or buckets[0] <= 0:
            return "--metrics-buckets: give increasing positive seconds, e.g. 0.001,0.01,0.1,1"
    counts = {
        "--metrics-clients": args.metrics_clients,
        "--metrics-topics": args.metrics_topics,
        "--metrics-software": args.metrics_software,
        "--metrics-groups": args.metrics_groups,
        "--metrics-partitions": args.metrics_partitions,
        "--metrics-track": args.metrics_track,
    }
    for name, n in counts.items():
        if n < 1:
            return f"{name}: at least 1"
    return MetricLimits(
        clients=args.metrics_clients,
        topics=args.metrics_topics,
        software=args.metrics_software,
        groups=args.metrics_groups,
        partitions=args.metrics_partitions,
        track=args.metrics_track,
        buckets=buckets,
    )


def available() -> str | None:
    """None when prometheus_client can be imported, else what to install."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return MISSING
    return None


class Collector:
    """prometheus_client's collector over the families ``source()`` gives at each collection."""

    def __init__(self, source: Callable[[], list[Family]]) -> None:
        self.source = source

    def collect(self) -> Iterator:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        for f in self.source():
            labels = list(f.labels)
            if f.kind == "counter":
                c = CounterMetricFamily(f.name, f.help, labels=labels)
                for values, v in f.samples:
                    c.add_metric(list(values), v)
                yield c
            elif f.kind == "gauge":
                g = GaugeMetricFamily(f.name, f.help, labels=labels)
                for values, v in f.samples:
                    g.add_metric(list(values), v)
                yield g
            else:
                h = HistogramMetricFamily(f.name, f.help, labels=labels)
                for values, (buckets, total, _count) in f.samples:
                    h.add_metric(list(values), [(floatToGoString(le), n) for le, n in buckets], total)
                yield h


def registry(source: Callable[[], list[Family]]):
    from prometheus_client import CollectorRegistry

    r = CollectorRegistry(auto_describe=False)
    r.register(Collector(source))
    return r


def write_file(path: str, fams: list[Family]) -> None:
    """The exposition written to ``path`` at once (a temporary file renamed: a textfile
    collector never reads half of it)."""
    from prometheus_client import write_to_textfile

    write_to_textfile(path, registry(lambda: fams))


class Server:
    """``/metrics`` (the exposition) and ``/healthz`` (JSON; 200 while capturing, else 503) on a
    thread of prometheus_client's threading WSGI server."""

    def __init__(self, host: str, port: int, source: Callable[[], list[Family]], health: Callable[[], dict]):
        import json
        from wsgiref.simple_server import WSGIRequestHandler, make_server

        from prometheus_client import make_wsgi_app
        from prometheus_client.exposition import ThreadingWSGIServer

        metrics_app = make_wsgi_app(registry(source))

        def app(environ, start_response):
            path = environ.get("PATH_INFO", "")
            if path == "/metrics":
                return metrics_app(environ, start_response)
            if path == "/healthz":
                state = health()
                body = json.dumps(state).encode()
                status = "200 OK" if state.get("capturing") else "503 Service Unavailable"
                start_response(
                    status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
                )
                return [body]
            body = b"not found: /metrics, /healthz\n"
            start_response(
                "404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
            )
            return [body]

        class Quiet(WSGIRequestHandler):
            def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
                pass

        class Threading(ThreadingWSGIServer):
            address_family = _family(host)

        self.httpd = make_server(host, port, app, Threading, handler_class=Quiet)
        self.port = self.httpd.server_port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="metrics")
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _family(host: str):
    import socket

    return socket.AF_INET6 if ":" in host else socket.AF_INET


def parse_address(text: str) -> tuple[str, int] | str:
    """``ADDR:PORT`` (``[::1]:9100``, ``:9100`` for every address) or why it is not one."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        return f"--metrics: give ADDR:PORT (e.g. 0.0.0.0:9308, [::]:9308), not {text!r}"
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)
