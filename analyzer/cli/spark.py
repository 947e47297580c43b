"""``spark``: analyse capture sets on Spark; thin: the work is in :mod:`analyzer.spark.jobs`
(pyspark is imported only when the command runs)."""

from __future__ import annotations

import argparse

from analyzer.cli.args import add_display_filter_arg, add_limit_args, byte_size
from analyzer.cli.common import EXIT_USAGE, usage


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "spark",
        help="analyse capture sets on Spark (local mode, or a cluster with --master): Parquet "
        "tables partitioned by date/hour/capture set",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="capture files, globs, directories or Hadoop URIs (hdfs://, s3a://)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where the Parquet tables go (a path or URI)")
    p.add_argument("--master", metavar="URL", help="Spark master (default: spark-submit's, else local[*])")
    p.add_argument("--records", action="store_true", help="decode record bodies: also the records table")
    p.add_argument(
        "--set", metavar="NAME", help="the capture_set partition (default: the first INPUT's folder or name)"
    )
    p.add_argument("--port", type=int, action="append", metavar="PORT", help="a broker port (repeatable)")
    p.add_argument("--tls-keylog", metavar="FILE", help="decrypt TLS with this NSS key log (read here)")
    p.add_argument(
        "--separate",
        action="store_true",
        help="analyse each file on its own, even when files are rotated pieces of one recording",
    )
    p.add_argument("--recursive", action="store_true", help="take the files of subdirectories too")
    add_limit_args(p)
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="do not mask SASL passwords, SCRAM proofs and signatures (in the Parquet tables)",
    )
    p.add_argument("--partitions", type=int, metavar="N", help="number of analysis tasks")
    p.add_argument(
        "--split-size",
        type=byte_size,
        metavar="SIZE",
        help="cut a capture file (local or a URI) bigger than SIZE (bytes; K, M, G suffixes) into"
        " splits of about SIZE analysed by several tasks and stitched (default 128M; 0: never)",
    )
    add_display_filter_arg(p, "only the exchanges matching EXPR (and their records)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    p.add_argument(
        "--log-level", default="OFF", help="Spark's log level (default OFF; WARN or INFO to diagnose)"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        from analyzer.spark.jobs import spark_command
    except ImportError as exc:
        usage(f"the spark command needs PySpark (pip install 'kafka-analyzer[spark]'): {exc}")
        return EXIT_USAGE
    return spark_command(args)
