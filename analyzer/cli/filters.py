"""``filters``: the display-filter fields (``-Y``), their types and examples, or the decoded
fields of one API."""

from __future__ import annotations

import argparse
import sys

from analyzer.cli.common import EXIT_OK, EXIT_USAGE, print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("filters", help="the display-filter fields (-Y), their types and examples")
    p.add_argument("api", nargs="?", metavar="API", help="list the decoded fields of this API (name or key)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def _alias_rows() -> list[dict]:
    """A row per Wireshark name (:data:`~analyzer.filter.wireshark.ALIASES`): the native field it
    stands for, with the native field's type."""
    from analyzer.filter import field_values
    from analyzer.filter.wireshark import ALIASES

    rows = []
    for alias, native in ALIASES.items():
        v = field_values(native)
        rows.append(
            {
                "name": alias,
                "alias_of": native,
                "type": v.type,
                "many": v.many,
                "needs_record_bodies": v.needs_records,
                "help": f"Wireshark's name for {native}",
                "example": alias,
            }
        )
    return rows


def run(args) -> int:
    from analyzer.filter import fields

    key = None
    if args.api is not None:
        key = int(args.api) if args.api.lstrip("-").isdigit() else fields.api_key_of(args.api)
        if key is None or key not in fields.api_prefixes().values():
            print(
                f"kafka-analyzer: unknown API {args.api!r} (see `kafka-analyzer protocol`)", file=sys.stderr
            )
            return EXIT_USAGE
    rows = fields.describe(key)
    aliases = _alias_rows() if key is None else []
    if args.format == "json":
        print_json(rows + aliases)
        return EXIT_OK
    out = sys.stdout
    if key is None:
        out.write(fields.SYNTAX_HELP + "\n\nExchange and records fields:\n")
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            many = " [several values]" if r["many"] else ""
            out.write(f"  {r['name']:<{width}}  {r['type']:<8}  {r['help']}{many}\n")
            out.write(f"  {'':<{width}}  {'':<8}  e.g. {r['example']}\n")
        out.write(
            "\nDecoded fields: API.path in the protocol guide's snake_case names (produce.acks,\n"
            "metadata.topics.name, fetch.request.isolation_level), or a path without the API\n"
            "for any API (throttle_time_ms); `kafka-analyzer filters API` lists one API's fields.\n"
        )
        out.write("\nWireshark's Kafka field names (aliases: each selects what its native name selects):\n")
        width = max(len(r["name"]) for r in aliases)
        for r in aliases:
            out.write(f"  {r['name']:<{width}}  = {r['alias_of']}  ({r['type']})\n")
        return EXIT_OK
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        where = "/".join(r["in"])
        many = ", any element" if r["many"] else ""
        out.write(f"{r['name']:<{width}}  {r['type']:<14} ({where}{many})  e.g. {r['example']}\n")
    return EXIT_OK
