"""One local Spark session for every Spark test module run by a process (a JVM starts in
10-20 s of CPU): the tests of tests/spark form one xdist group (tests/conftest.py), so one
worker opens it once while the other workers run the rest of the suite."""

import pytest

from tests.helpers.spark import local_spark


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    with local_spark("kafka-analyzer-tests") as s:
        yield s
