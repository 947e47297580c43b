"""Record the benchmark capture with the mock cluster capped at what tshark 4.0 decodes.

    sudo .venv/bin/python bench/gen_capped.py SIZE_MB --out DIR

Same traffic as ``tools/gen_captures.py --bench SIZE_MB --out DIR`` (it calls that very code,
tools/gen/bench.py), except that the mock cluster advertises at most the request versions tshark 4.0 dissects
(``TSHARK40_CAPS``: Produce v8, Fetch v11, ListOffsets v5, Metadata v8, OffsetCommit v8, no
telemetry APIs), as the ``librdkafka-capped-apis-gzip`` scenario does. librdkafka then speaks
versions tshark understands, so tshark decodes the record batches as well and the comparison
of ``export --records`` with ``tshark -T json`` is like for like.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tools.gen (and the analyzer constants it uses)

from tools.gen.bench import bench  # noqa: E402
from tools.gen.core import TSHARK40_CAPS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("size_mb", type=float)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    bench(args.size_mb, args.out, caps=TSHARK40_CAPS)  # its JSON summary says mock_api_caps
    return 0


if __name__ == "__main__":
    sys.exit(main())
