"""
Small JSON summaries of benchmark runs, kept in the repository so that every figure quoted
in docs/benchmarks.md can be traced to the run that produced it: ``bench/results/<name>-<UTC
time>.json``, a few KB each, with the commit measured, the command and its settings, the load
average and the figures reported. The raw results files (every tool line; tens of KB) stay
beside their scripts and are gitignored.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

__all__ = ["RESULTS", "command_line", "git_commit", "loadavg", "machine", "default_path", "dumps", "write"]


def git_commit() -> str:
    """The commit measured, ``-dirty`` when the working tree has changes."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--exclude", "*"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def loadavg() -> list[float]:
    """The 1, 5 and 15-minute load averages."""
    return [round(v, 2) for v in os.getloadavg()]


def machine() -> dict:
    return {"cpus": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()}


def command_line(script: str) -> str:
    """The command as typed from the repository's root (*script*: its path from there)."""
    return " ".join(["python3", script, *sys.argv[1:]])


def default_path(name: str, started: dt.datetime) -> Path:
    return RESULTS / f"{name}-{started.astimezone(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}.json"


def write(summary: dict, path: Path) -> Path:
    """Write *summary* to *path* (its directory created); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(summary) + "\n", encoding="utf-8")
    return path


def dumps(summary: dict) -> str:
    """Indented JSON, with lists of numbers and strings kept on one line (the rounds' figures)."""
    text = json.dumps(summary, indent=1, ensure_ascii=False)
    # a newline is structure (inside a string it is escaped), so only the lists are touched
    return re.sub(r"\[\n\s*([^\[\]{}]*?)\n\s*\]",
                  lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)
