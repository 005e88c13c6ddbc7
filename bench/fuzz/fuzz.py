"""
Run one fuzz target under atheris (libFuzzer, coverage-guided), or every target in turn.

    python bench/fuzz/fuzz.py TARGET [libFuzzer options] [corpus dir ...]
    python bench/fuzz/fuzz.py all [libFuzzer options]      # each target, its corpus, one after another

Targets are in ``targets.py``; ``make_corpus.py`` writes their seeds to ``corpus/<target>``.
With ``all`` (or a target and no directory given), ``corpus/<target>`` is used. A crash
leaves ``crash-*`` in the working directory (``-artifact_prefix=`` moves it); replay it with
``python bench/fuzz/fuzz.py TARGET crash-...``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    name, options = argv[1], argv[2:]
    if name == "all":
        from make_corpus import TARGET_NAMES
        failed = []
        for each in TARGET_NAMES:
            print(f"==== {each}", flush=True)
            if subprocess.call([sys.executable, __file__, each, *options]) != 0:
                failed.append(each)
        print("failed:", " ".join(failed) if failed else "none")
        return 1 if failed else 0

    import atheris

    # Instrument our modules (not the standard library or construct's) for coverage.
    with atheris.instrument_imports(include=["rocketmq_tx"]):
        import targets
    if name not in targets.TARGETS:
        print(f"unknown target {name!r}; targets: {' '.join(targets.TARGETS)}")
        return 2
    # Recovery logs every torn record it truncates; that is its job, not news.
    logging.disable(logging.CRITICAL)
    dictionary = HERE / "corpus" / "json.dict"
    if name in ("json_header", "bodies") and dictionary.exists() and not any(o.startswith("-dict=") for o in options):
        options.append(f"-dict={dictionary}")
    if not any(not o.startswith("-") for o in options):
        corpus = HERE / "corpus" / name
        corpus.mkdir(parents=True, exist_ok=True)
        options.append(str(corpus))
    atheris.Setup([argv[0], *options], targets.TARGETS[name])
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
