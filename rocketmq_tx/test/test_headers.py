"""
Every ``-*- test-case-name: ... -*-`` header names test modules that exist (``trial
--testmodule`` and editors run what it names), and sits where Twisted looks for it: the
first line, or the second after a ``#!`` line.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

ROOT = Path(__file__).resolve().parents[2]
#: where our Python lives (compat-tests/ and bench/ import their own helpers by path)
TREES = ("rocketmq_tx", "twisted", "bench", "compat-tests", "examples")
SKIP_DIRS = {"__pycache__", ".work", "build", "target", "java", ".hypothesis"}
HEADER = re.compile(r"^#.*-\*-\s*test-case-name:\s*(.*?)\s*-\*-")


def python_files() -> list[Path]:
    files = []
    for tree in TREES:
        for dirpath, dirnames, filenames in os.walk(ROOT / tree):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith("_trial_temp")]
            files.extend(Path(dirpath) / f for f in filenames if f.endswith(".py"))
    return sorted(files)


def headers(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, named modules) of every test-case-name header in *path*."""
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = HEADER.search(line)
            if m:
                out.append((number, [name.strip() for name in m.group(1).split(",") if name.strip()]))
    return out


class TestCaseNameHeaderTests(SynchronousTestCase):
    def test_headers_name_importable_test_modules(self) -> None:
        problems = []
        found = 0
        for path in python_files():
            rel = path.relative_to(ROOT)
            text_start = path.read_text(encoding="utf-8").split("\n", 2)
            first_line_allowed = 2 if text_start and text_start[0].startswith("#!") else 1
            for number, names in headers(path):
                found += 1
                if number > first_line_allowed:
                    problems.append(f"{rel}:{number}: header not on the first line")
                if not names:
                    problems.append(f"{rel}:{number}: header names nothing")
                for name in names:
                    if not name.rsplit(".", 1)[-1].startswith("test_"):
                        problems.append(f"{rel}:{number}: {name} is not a test module")
                    elif not _importable(name):
                        problems.append(f"{rel}:{number}: {name} does not exist")
        self.assertEqual(problems, [])
        self.assertGreater(found, 100)


def _importable(name: str) -> bool:
    """A module of this tree: its file exists and each package on the way has an __init__.py
    (found without importing it, so a package broken for other reasons does not count here)."""
    parts = name.split(".")
    if (ROOT / parts[0]).is_dir():
        packages = [ROOT.joinpath(*parts[:i]) for i in range(1, len(parts))]
        return (all((p / "__init__.py").is_file() for p in packages)
                and ROOT.joinpath(*parts[:-1], parts[-1] + ".py").is_file())
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
