"""Record real Kafka client traffic into small pcap files (the committed ``captures/``).

Every scenario runs against a broker inside a private network namespace (``kgen``) whose
loopback has a 1500-byte MTU and no segmentation offloads, so the packets are sized as on a
real Ethernet network; the broker, the clients and ``tcpdump -i lo`` all run in it and nothing
leaves it. The broker is librdkafka's built-in mock cluster (3 brokers on 127.0.0.1, mock.py),
with the SASL front-end (sasl.py) or the TLS front-end (tls.py) in front of it when a scenario
says so.

The generator is the package ``tools/gen``: one module per client (librdkafka.py,
kafka_python.py, aiokafka.py; kafkajs.py, sarama.py and kafka_go.py, whose programs outside
Python, tools/gen/kafkajs/ and tools/gen/go/, external.py runs and go.py builds) and per broker
or front-end (mock.py, sasl.py, tls.py), each
contributing its scenarios to the registry (registry.py); core.py (records, events, scenario),
netns.py (namespace, tcpdump), record.py (one scenario, the manifest), verify.py (PDU counts,
tshark), bench.py (the benchmark capture) and this command line.

Each scenario runs in its own subprocess with a time limit; whatever was captured is kept
even if the client hung or failed, and the manifest says so in ``notes``. Records produced
and consumed are written to ``captures/manifest.json`` (a list, one object per pcap).

Usage (root is needed for the namespace and tcpdump)::

    sudo .venv/bin/python tools/gen_captures.py                      # all scenarios
    sudo .venv/bin/python tools/gen_captures.py --only librdkafka-txn  # one (repeatable)
    sudo .venv/bin/python tools/gen_captures.py --out /tmp/caps        # another directory
    sudo .venv/bin/python tools/gen_captures.py --list                 # scenario names
    .venv/bin/python tools/gen_captures.py --check                     # tshark summary
    sudo .venv/bin/python tools/gen_captures.py --bench 250 --out /tmp/bench

(``python -m tools.gen ...`` from the repository root is the same command.)

Scenarios of clients outside Python build their programs first (``npm ci``, ``go build``,
offline; the scenario's ``prepare``) and stop with what to install when a toolchain is missing:
tools/gen/CLIENTS.md lists the dependencies.

``--only`` replaces just that scenario's entry in an existing manifest. Extra packages a
scenario needs (``xxhash`` for kafka-python LZ4 at 0.8.2/0.9) are pip-installed with
``--target`` into ``~/.cache/kafka-analyzer-gen-captures/pydeps`` when the venv lacks them.

``--check`` runs tshark over the captures listed in the manifest (decoding every broker port
as Kafka) and prints, per file, the Kafka PDUs found by splitting each TCP stream on the
length prefix, tshark's PDU count and its malformed packets.

``--bench SIZE_MB`` records librdkafka producers and a consumer group using every codec until
the pcap reaches SIZE_MB MiB (it ends a little larger: the clients then shut down cleanly),
writing ``bench-<SIZE_MB>mb.pcap`` and ``bench-<SIZE_MB>mb.json`` (a summary, not the
records: payloads follow a seeded rule) into ``--out``.

Internal modes (used by the parent process, run inside the namespace): ``--serve-mock``
starts the mock cluster and prints its bootstrap list; ``--worker NAME`` runs one scenario
and appends JSON lines (records produced/consumed, notes) to ``--events``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .bench import bench, run_bench_worker
from .core import DEFAULT_OUT
from .mock import parse_cap, serve_mock
from .record import generate, run_worker
from .registry import build_scenarios
from .verify import check


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    ap.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this scenario (repeatable); keeps other manifest entries",
    )
    ap.add_argument("--list", action="store_true", help="list the scenarios")
    ap.add_argument("--check", action="store_true", help="summarise the captures with tshark")
    ap.add_argument(
        "--bench",
        type=float,
        metavar="SIZE_MB",
        help="record one large benchmark capture of about SIZE_MB MiB",
    )
    internal = ap.add_argument_group("internal (run inside the namespace)")
    internal.add_argument("--serve-mock", action="store_true", help=argparse.SUPPRESS)
    internal.add_argument("--topics", default="", help=argparse.SUPPRESS)
    internal.add_argument("--api-caps", default="", help=argparse.SUPPRESS)
    internal.add_argument("--sasl", default="", help=argparse.SUPPRESS)
    internal.add_argument("--tls", default="", help=argparse.SUPPRESS)
    internal.add_argument("--tls-dir", default="", help=argparse.SUPPRESS)
    internal.add_argument("--mock-settings", default="", help=argparse.SUPPRESS)
    internal.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    internal.add_argument("--bench-worker", action="store_true", help=argparse.SUPPRESS)
    internal.add_argument("--bootstrap", help=argparse.SUPPRESS)
    internal.add_argument("--events", type=Path, help=argparse.SUPPRESS)
    internal.add_argument("--timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.serve_mock:
        caps = [parse_cap(c) for c in args.api_caps.split(",") if c]
        sasl = tuple(m for m in args.sasl.split(",") if m)
        settings = [(k, int(v)) for k, v in (kv.split("=") for kv in args.mock_settings.split(",") if kv)]
        serve_mock([t for t in args.topics.split(",") if t], 3, caps, sasl, args.tls, args.tls_dir, settings)
    elif args.worker:
        run_worker(args.worker, args.bootstrap, args.events, args.timeout)
    elif args.bench_worker:
        run_bench_worker(args.bootstrap, args.events)
    elif args.list:
        for s in build_scenarios():
            print(f"{s.name:36} {s.description}")
    elif args.check:
        check(args.out)
    elif args.bench:
        bench(args.bench, args.out)
    else:
        generate(args.only, args.out)
