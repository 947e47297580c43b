"""SIGHUP's reopening (logrotate: rename, then signal): the --output file and the pcap writer
start a new file under the old name when it was renamed, and go on in the same file when not."""

import os
import signal

from analyzer.cli.reopen import ReopenFile, on_hangup


def test_output_file_reopened_after_rename(tmp_path):
    path = tmp_path / "out.ndjson"
    f = ReopenFile(str(path))
    f.write(b"one\n")
    f.reopen()  # not renamed: the same file goes on
    f.write(b"two\n")
    path.rename(tmp_path / "out.ndjson.1")
    f.write(b"three\n")  # no SIGHUP yet: still the renamed file
    f.reopen()
    f.write(b"four\n")
    f.close()
    assert (tmp_path / "out.ndjson.1").read_bytes() == b"one\ntwo\nthree\n"
    assert path.read_bytes() == b"four\n"


def test_on_hangup_calls_and_restores():
    called = []
    before = signal.getsignal(signal.SIGHUP)
    with on_hangup(lambda: called.append(1), lambda: called.append(2)):
        os.kill(os.getpid(), signal.SIGHUP)
    assert called == [1, 2] and signal.getsignal(signal.SIGHUP) == before
