"""``check --parquet DIR`` peaks within 1.5x of ``check CAPTURE``'s memory (issue #31), measured
in the same run, each command in its own process (its own VmHWM: ``tests.helpers.peak``).

The capture is 24 MiB of ApiVersions exchanges whose requests carry 16 KB strings, so the
exchanges' ``state`` column (the decoded trees ``check --parquet`` replays) holds about as many
bytes as the capture. ``check`` maps the capture and decodes it an exchange at a time; reading the
whole state column at once (its Arrow table, then its Python strings) would cost twice those
bytes on top of pyarrow's own ~30 MB, far past 1.5x; streaming it a batch at a time costs
pyarrow's import and one batch (of about 1 MiB: batches of a fixed number of rows, 256 of these
33 KB states, cost 1.6x). At this size the interpreter's ~35 MB base does not hide that: the test
checks the state column is big enough that holding it whole (twice its bytes) would break the
bound."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.peak import child_argv, read_child_mb
from tests.hostile.gen import reordered

pyspark = pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
MIB = 24


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory) -> tuple[Path, Path]:
    from analyzer.cli import build_parser
    from analyzer.spark.jobs import _spark_run, guarded

    src = tmp_path_factory.mktemp("memory-capture")
    capture = src / "api-versions-24mib.pcap"
    capture.write_bytes(reordered(MIB, None))
    out = tmp_path_factory.mktemp("memory-tables")
    args = build_parser().parse_args(["spark", str(src), "--out", str(out), "--records"])
    args.captures, args.top = args.inputs, 20
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert guarded(args, _spark_run, spark) == 0
    return capture, out


def peak(tmp_path: Path, name: str, args: list[str]) -> tuple[int, str, float]:
    """(exit code, stdout, peak RSS in MB) of ``kafka-analyzer ARGS`` in a process of its own
    running this tree's code."""
    hwm = str(tmp_path / f"{name}.hwm")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(child_argv(hwm, args), capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stdout, read_child_mb(hwm)


def test_check_parquet_peaks_within_1_5x_of_check(written, tmp_path):
    capture, tables = written
    rc_c, out_c, mb_c = peak(tmp_path, "check", ["check", str(capture)])
    rc_p, out_p, mb_p = peak(tmp_path, "parquet", ["check", "--parquet", str(tables)])
    assert rc_p == rc_c and out_p.splitlines()[-1] == out_c.splitlines()[-1]  # the same verdicts
    assert mb_p <= 1.5 * mb_c, (mb_p, mb_c)
    # the size proves it: the states held whole (an Arrow table, then Python strings: twice their
    # bytes) would take the bound's room and more
    states = sum(
        sum(len(s) for s in pq.read_table(f, columns=["state"]).column("state").to_pylist())
        for f in tables.glob("exchanges/**/*.parquet")
    )
    assert 2 * states / (1 << 20) > 1.5 * mb_c - mb_p, (states >> 20, mb_c, mb_p)
