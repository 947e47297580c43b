"""A local Spark session for the tests (pyspark imported only when one is opened)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import pytest

# The JVMs the tests start (the local session's driver; the standalone master, workers, driver
# and executors of test_spark): C1 only and the serial collector. A test's work is seconds of
# small jobs, where C2's compiling is most of the JVM's CPU: the same split analysis (the bundled
# captures in 4 KB splits, local[2]) took 24 s of JVM CPU with these against 52 s without.
# And the bytecode of Spark's jars (tens of thousands of classes a JVM loads) not verified as it
# loads: the jars come from the installed pyspark wheel, not from the network. A local session's
# start and one small job: 8.8-9.2 s of JVM CPU against 9.9-11.5 s; the standalone cluster test
# (six JVMs): 30-31.5 s of CPU against 33-35 s, measured alternately.
JVM_OPTIONS = (
    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
)
# Projections interpreted, not generated: the events' schema is wide (18 kinds' structs, 292
# columns), and each plan over it generated (and cleaned with regexes, before the compiled code's
# cache is looked up) thousands of lines of Java; a test's rows are a few thousand. The same
# Spark run of the SASL captures in 4 KB splits took 5.6 s of JVM CPU with codegen and 4.2 s
# without. The product's own session keeps Spark's default (the CLI's and the standalone
# cluster's tests run it).
CODEGEN_FACTORY = "NO_CODEGEN"


@contextlib.contextmanager
def local_spark(app: str) -> Iterator:
    """A ``local[2]`` session on loopback only: no UI, 2 shuffle partitions, Python workers
    running this interpreter (which can import the analyzer), a JVM of JVM_OPTIONS; stopped on
    exit."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:  # the process's shared one (tests/spark/conftest.py): not stopped here
        yield active
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        mp.setenv("PYSPARK_PYTHON", sys.executable)
        s = (
            SparkSession.builder.master("local[2]")
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.extraJavaOptions", JVM_OPTIONS)
            .config("spark.sql.codegen.factoryMode", CODEGEN_FACTORY)
            .getOrCreate()
        )
        s.sparkContext.setLogLevel("ERROR")
        try:
            yield s
        finally:
            s.stop()
