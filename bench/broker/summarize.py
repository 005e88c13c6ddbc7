"""
The small JSON summary (``bench/results/``) of broker results files written by
``bench/broker/run.py`` (``bench/broker/results[-tls|-acl|-tx|-sql92]-<UTC time>.json``, gitignored), for
runs made before run.py wrote one itself, or to write one again.

    python3 bench/broker/summarize.py bench/broker/results-acl-20261125T021315Z.json [...]
    python3 bench/broker/summarize.py --print bench/broker/results-*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokerbench import summary  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="raw results files of bench/broker/run.py")
    parser.add_argument("--print", action="store_true", help="print the summaries instead of writing them")
    args = parser.parse_args()
    for path in args.results:
        raw = json.loads(path.read_text())
        if args.print:
            print(summary.dumps(summary.summarize(raw, path)))
        else:
            print(summary.save(raw, path))


if __name__ == "__main__":
    main()
