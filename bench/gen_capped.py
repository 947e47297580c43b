"""Record the benchmark capture with the mock cluster capped at what tshark 4.0 decodes.

    sudo .venv/bin/python bench/gen_capped.py SIZE_MB --out DIR

Same traffic as ``tools/gen_captures.py --bench SIZE_MB --out DIR`` (it calls that very code),
except that the mock cluster advertises at most the request versions tshark 4.0 dissects
(``TSHARK40_CAPS``: Produce v8, Fetch v11, ListOffsets v5, Metadata v8, OffsetCommit v8, no
telemetry APIs), as the ``librdkafka-capped-apis-gzip`` scenario does. librdkafka then speaks
versions tshark understands, so tshark decodes the record batches as well and the comparison
of ``export --records`` with ``tshark -T json`` is like for like.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_gen():
    spec = importlib.util.spec_from_file_location("gen_captures", ROOT / "tools" / "gen_captures.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_captures"] = gen
    spec.loader.exec_module(gen)
    return gen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("size_mb", type=float)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    gen = load_gen()
    gen.mock_cluster = functools.partial(gen.mock_cluster, caps=gen.TSHARK40_CAPS)
    gen.bench(args.size_mb, args.out)
    meta = args.out / f"bench-{args.size_mb:g}mb.json"
    d = json.loads(meta.read_text())
    d["mock_api_caps"] = [list(c) for c in gen.TSHARK40_CAPS]
    meta.write_text(json.dumps(d, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
