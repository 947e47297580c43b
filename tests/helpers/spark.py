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
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


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
            .getOrCreate()
        )
        s.sparkContext.setLogLevel("ERROR")
        try:
            yield s
        finally:
            s.stop()
