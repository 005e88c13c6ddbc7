"""
Write the seed corpus of every fuzz target to ``corpus/<target>/`` (git-ignored): Java's
captured vectors from ``compat-tests/vectors`` and our encoders' output, each wrapped in
its target's control bytes (``targets.seeds``).

    python bench/fuzz/make_corpus.py
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: The targets, cheapest first (``fuzz.py all`` runs them in this order).
TARGET_NAMES = ("frame", "json_header", "rocketmq_header", "bodies", "records", "recovery")


#: fastjson syntax and hostile values for the libFuzzer dictionary of the JSON targets.
JSON_TOKENS = ("{", "}", "[", "]", ":", ",", '"', "'", "true", "false", "null", "12L", "-1", "2147483648",
               "9223372036854775808", "1e400", "\\u0000", "\\ud800", "\\ud83d\\ude00", "\\x41",
               '{"brokerName":"b","queueId":0,"topic":"t"}')
#: Where the decoders name the JSON fields they read.
JSON_SOURCES = ("remoting/adminbodies.py", "remoting/api.py", "remoting/bodies.py", "common/route.py",
                "common/subscription.py", "remoting/adminapi.py")


def write_json_dict(path: Path) -> int:
    """A libFuzzer dictionary: JSON_TOKENS and every quoted field name the decoders read."""
    import re

    package = HERE.parents[1] / "rocketmq_tx"
    names: set[str] = set()
    for source in JSON_SOURCES:
        text = (package / source).read_text(encoding="utf-8")
        names |= set(re.findall(r'data(?:\.get)?[(\[]"([A-Za-z0-9_]+)"', text))
        names |= set(re.findall(r'\bget\("([A-Za-z0-9_]+)"', text))
        names |= set(re.findall(r'\("([a-z][A-Za-z0-9]+)", "[a-z_]+"', text))
    entries = list(JSON_TOKENS) + [f'"{n}"' for n in sorted(names)]
    path.write_text("".join('"' + e.replace("\\", "\\\\").replace('"', '\\"') + '"\n' for e in entries),
                    encoding="utf-8")
    return len(entries)


def main() -> None:
    import targets

    assert set(TARGET_NAMES) == set(targets.TARGETS), "TARGET_NAMES is out of date"
    for name in TARGET_NAMES:
        out = HERE / "corpus" / name
        out.mkdir(parents=True, exist_ok=True)
        count = 0
        for seed in targets.seeds(name):
            (out / f"seed-{hashlib.sha1(seed).hexdigest()[:16]}").write_bytes(seed)
            count += 1
        print(f"{name}: {count} seeds in {out}")
    entries = write_json_dict(HERE / "corpus" / "json.dict")
    print(f"json.dict: {entries} entries (fuzz.py uses it for json_header and bodies)")


if __name__ == "__main__":
    main()
