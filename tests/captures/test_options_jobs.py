"""Every option of ``stats`` and ``export`` gives the same bytes with ``-j 2`` as with ``-j 1``.

The options are enumerated from the command line's own parser, so a new option is covered
(a flag at once; an option taking a value once it has a value below, else this test fails
saying so). Limits included: the processes of ``-j`` decode as one process does, and when one
run would close connections early (``--max-connections``) the work falls back to one process.
"""

import argparse
import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from analyzer import cli
from tests.helpers.captures import CAPTURES

# a few captures: transactions over many connections, compressed record batches, legacy
# compressed wrappers, and a pcapng with TLS and its secrets inside
PATHS = [
    CAPTURES / "librdkafka-txn.pcap",
    CAPTURES / "librdkafka-produce-consume-zstd.pcap",
    CAPTURES / "kafka-python-0.9-gzip.pcap",
    CAPTURES / "kafka-python-tls-tls13-aes128gcm-dsb.pcapng",
]

# the values given to the options that take one (each value a run); a choice option gets each
# of its choices
VALUES: dict[str, list[list[str]]] = {
    "--port": [["9092"], ["9093"]],
    "--max-records": [["3"], ["0"]],
    "--max-decompressed": [["0"]],
    "--max-elements": [["5"]],
    "--max-connections": [["1"], ["3"]],
    "--tls-keylog": [[str(CAPTURES / "kafka-python-tls-tls13-aes128gcm.keys")]],
    "-Y": [["api == Fetch"]],
    "--state-idle": [["1"], ["0"]],
    "--state-max": [["2"]],
    "--exact-latencies": [["3"]],
}

# options that do not apply, and why
SKIP = {
    "-h": "prints the help and exits",
    "-j": "what is compared",
    "-o": "where the output goes (the same writer; test_parallel_export covers a file)",
    "--parquet": "reads the Parquet output of `kafka-analyzer spark`, not captures",
    "--set": "names a capture set of --parquet's output",
    "--metrics-file": "another output beside the tables (tests/unit/cli/test_metrics.py: -j 2 alike)",
    "--metrics-clients": "a bound of --metrics-file's labels (tests/unit/cli/test_metrics.py)",
    "--metrics-topics": "a bound of --metrics-file's labels (tests/unit/cli/test_metrics.py)",
    "--metrics-software": "a bound of --metrics-file's labels (tests/unit/cli/test_metrics.py)",
    "--metrics-groups": "a bound of --metrics-file's labels (tests/unit/cli/test_metrics.py)",
    "--metrics-partitions": "a bound of --metrics-file's labels (tests/unit/cli/test_metrics.py)",
    "--metrics-track": "a bound of --metrics-file's labels (tests/unit/cli/test_metrics.py)",
    "--metrics-buckets": "the latency buckets of --metrics-file (tests/unit/cli/test_metrics.py)",
}


def _subparser(name: str) -> argparse.ArgumentParser:
    ap = cli.build_parser()
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _runs(command: str) -> list[tuple[str, ...]]:
    """The option arguments to try: each flag, each option with each of its values."""
    runs: list[tuple[str, ...]] = [()]
    for action in _subparser(command)._actions:
        if not action.option_strings:
            continue  # the captures
        name = action.option_strings[0]
        if name in SKIP or any(o in SKIP for o in action.option_strings):
            continue
        if action.nargs == 0:
            runs.append((name,))
        elif action.choices is not None:
            runs += [(name, str(c)) for c in action.choices]
        else:
            values = next((VALUES[o] for o in action.option_strings if o in VALUES), None)
            assert values is not None, f"{command} {name}: give it values in VALUES (or a reason in SKIP)"
            runs += [(name, *v) for v in values]
    return runs


def _run(*args: str) -> tuple[int, bytes]:
    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8")
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        rc = cli.main(list(args))
        out.flush()
    return rc, buf.getvalue()


CASES = [("stats", o) for o in _runs("stats")] + [("export", o) for o in _runs("export")]
# record bodies change what the limits act on: each export option with --records too
CASES += [("export", ("--records", *o)) for o in _runs("export") if o and o != ("--records",)]


@pytest.mark.parametrize(
    ("command", "options"), CASES, ids=lambda x: " ".join(x) if isinstance(x, tuple) else x
)
def test_jobs_give_the_bytes_of_one_process(command, options):
    for path in PATHS:
        one = _run(command, *options, str(path))
        two = _run(command, "-j", "2", *options, str(path))
        assert two == one, (command, options, path.name)


def test_the_options_are_enumerated():
    stats = {o for run in _runs("stats") for o in run}
    export = {o for run in _runs("export") for o in run}
    for option in ("--max-connections", "--max-records", "--max-elements", "--max-decompressed", "--port"):
        assert option in stats and option in export
    assert "--records" in export and "--no-spans" in export


def test_processes_keep_the_work_exactly_while_one_run_evicts_nothing():
    """``--max-connections`` at the edge: one run closes connections early at 7 connections
    tracked (so ``-j`` leaves the work to one process), not at 8 (so the processes share it)."""
    from analyzer.dissect.codecs import Limits
    from analyzer.dissect.message import Options
    from analyzer.export import parallel
    from analyzer.pipeline import Analysis

    path = str(CAPTURES / "librdkafka-txn.pcap")
    for n in (7, 8):
        opts = Options(limits=Limits(max_connections=n))
        evicted = any(i.code == "stream.evicted" for i in Analysis(path, opts).run().capture_issues)
        assert evicted == (n == 7)
        if evicted:
            with pytest.raises(parallel.OneProcess):
                parallel.run([path], 2, opts, render=False)
        else:
            assert len(parallel.run([path], 2, opts, render=False)) == 2
