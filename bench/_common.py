"""Shared helpers of the benchmarks: the Java harness, timing, and table printing."""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))

import javaharness  # noqa: E402  (compat-tests is not a package)

__all__ = ["javaharness", "best_us", "table"]


def best_us(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Best-of-*repeat* microseconds per call (the least disturbed measurement)."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
