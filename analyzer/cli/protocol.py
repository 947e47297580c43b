"""``protocol``: the API keys and versions this analyzer decodes."""

from __future__ import annotations

import argparse

from analyzer.cli.common import EXIT_OK, print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("protocol", help="the API keys and versions this analyzer decodes")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def run(args) -> int:
    from analyzer.dissect import schema
    from analyzer.dissect.protocol_table import API_NAMES

    rows = []
    for key in sorted(API_NAMES):
        rng = schema.version_range(key)
        if rng is None:
            continue
        rows.append({"api_key": key, "name": API_NAMES[key], "min_version": rng[0], "max_version": rng[1]})
    if args.format == "json":
        print_json(rows)
        return EXIT_OK
    print(f"{'key':>4}  {'name':<36} versions")
    for r in rows:
        print(f"{r['api_key']:>4}  {r['name']:<36} v{r['min_version']}-v{r['max_version']}")
    print(f"{len(rows)} APIs; every version decoded from the Kafka 3.9 and 4.2 message schemas")
    return EXIT_OK
