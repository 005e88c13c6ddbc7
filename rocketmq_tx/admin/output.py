# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""
What a command prints: the facts as plain data (``--json``) and mqadmin's text.

mqadmin formats with Java's ``printf``; Python's ``%`` operator takes the same ``%-16s`` /
``%14d`` / ``%9.2f`` conversions, so each command keeps Java's format strings and its
columns line up as they do under mqadmin.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.version import mq_version_desc

__all__ = ["Output", "Progress", "jformat", "mq_version_desc", "java_bool", "human_time", "host_text", "front_at_least",
           "java_map_text"]


@dataclass(slots=True)
class Output:
    """A command's result: *data* for ``--json``, *lines* for people."""

    data: Any = None
    lines: list[str] = field(default_factory=list)

    def printf(self, fmt: str, *args: Any) -> None:
        """One line in Java ``printf`` style (without its ``%n``)."""
        self.lines.append(jformat(fmt, *args) if args else fmt)

    def render(self, as_json: bool) -> str:
        if as_json:
            return fastjson.dumps(self.data).decode("utf-8") + "\n"
        return "".join(line + "\n" for line in self.lines)


class Progress:
    """
    A one-line progress report on a terminal (``stream.isatty()``), redrawn at most every
    *interval* seconds; nothing at all when the stream is a pipe or a file, so scripts and
    ``--json`` output stay clean.
    """

    def __init__(self, stream: TextIO | None, what: str, interval: float = 0.2,
                 clock: Any = time.monotonic) -> None:
        self.stream = stream if stream is not None and stream.isatty() else None
        self.what = what
        self.interval = interval
        self.clock = clock
        self._last = float("-inf")
        self._drawn = False

    def update(self, text: str) -> None:
        if self.stream is None or self.clock() - self._last < self.interval:
            return
        self._last = self.clock()
        self.stream.write(f"\r{self.what}: {text}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self.stream is not None and self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def jformat(fmt: str, *args: Any) -> str:
    """Java ``String.format`` for the conversions mqadmin uses (``%-16s``, ``%14d``, ``%9.2f``)."""
    return fmt % args


def java_bool(text: str) -> bool:
    """Java ``Boolean.parseBoolean``: true only for "true" in any case, everything else is false."""
    return text.strip().lower() == "true"


def human_time(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString2``: local time as ``yyyy-MM-dd HH:mm:ss,SSS``."""
    t = datetime.datetime.fromtimestamp(ms / 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def host_text(host: Any) -> str:
    """A ``(ip, port)`` pair as ``ip:port`` (Java ``RemotingHelper.parseSocketAddressAddr``)."""
    if isinstance(host, tuple) and len(host) == 2:
        return f"{host[0]}:{host[1]}"
    return str(host)


def front_at_least(text: str, size: int) -> str:
    """``UtilAll.frontStringAtLeast``: at most *size* characters (the column's width)."""
    return text[:size]


def java_map_text(mapping: dict[str, str]) -> str:
    """A map as Java's ``AbstractMap.toString`` writes it: ``{k=v, k2=v2}``."""
    return "{" + ", ".join(f"{k}={v}" for k, v in mapping.items()) + "}"
