"""A live process gives the C heap's free pages back (analyzer.fanout.keep_heap_trimmed): blocks
Python took from the C heap and freed among blocks still alive stay in the process's RSS until
trimmed; with the trimmer running they leave it within its period. In a child process of its own,
so that the test's RSS is nobody else's."""

import json
import subprocess
import sys

import pytest

from tests.helpers.captures import ROOT

CHILD = """
import json, time
from analyzer.fanout import keep_heap_trimmed

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

base = rss_mb()
blocks = [bytes(2000) + bytes([i & 255]) for i in range(100_000)]  # 200 MB of the C heap
kept = blocks[::50]  # one block in 50 alive: the pages around them cannot go back by themselves
del blocks
time.sleep(0.3)
freed = rss_mb()
trimmer = keep_heap_trimmed(0.05)
end = time.monotonic() + 5
while rss_mb() > base + 80 and time.monotonic() < end:
    time.sleep(0.05)
print(json.dumps({"base": base, "freed": freed, "trimmed": rss_mb(), "thread": trimmer is not None,
                  "daemon": trimmer is not None and trimmer.daemon, "kept": len(kept)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and glibc")
def test_free_pages_among_live_blocks_leave_the_rss():
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    if not r["thread"]:
        pytest.skip("this C library has no malloc_trim")
    assert r["daemon"]
    assert r["freed"] - r["base"] > 150, r  # freed, and still in the RSS
    assert r["trimmed"] < r["base"] + 80, r  # given back within the trimmer's period
