"""Record real Kafka client traffic into small pcap files (the committed ``captures/``).

The generator is the package ``tools/gen`` (its command line and layout: tools/gen/cli.py);
this file is its entry point, ``sudo .venv/bin/python tools/gen_captures.py --help``, and what
the generator's own processes inside the network namespace run.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # analyzer.dissect.constants (pure Python, no deps) and tools.gen

from tools.gen.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
