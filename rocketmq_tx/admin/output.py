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


def _mq_versions() -> list[str]:
    # Java MQVersion.Version (4.9.8 and 5.x have the same 613 names): 63 early 3.0/3.1
    # names, then a SNAPSHOT and a release per version from 3.1.8 to 5.9.9 (3.3.0 ... 3.9.0
    # were never listed), then HIGHER_VERSION. A client's version number is its ordinal.
    early = (["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"] + [f"V3_0_0_BETA{i}" for i in range(1, 6)]
             + [v for i in range(6, 10) for v in (f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}")]
             + ["V3_0_0_FINAL"] + [v for i in range(1, 16) for v in (f"V3_0_{i}_SNAPSHOT", f"V3_0_{i}")]
             + [v for i in range(0, 8) for v in (f"V3_1_{i}_SNAPSHOT", f"V3_1_{i}")] + ["V3_1_8_SNAPSHOT"])
    later = [v for x in range(3, 6) for y in range(10) for z in range(10)
             if (x, y) > (3, 1) or (x, y, z) >= (3, 1, 8)
             if not (x == 3 and y >= 3 and z == 0)
             for v in (f"V{x}_{y}_{z}_SNAPSHOT", f"V{x}_{y}_{z}")]
    return early + later[1:] + ["HIGHER_VERSION"]


_VERSIONS = _mq_versions()


def mq_version_desc(version: int) -> str:
    """Java ``MQVersion.getVersionDesc``: the version's name (past the table: HIGHER_VERSION)."""
    return _VERSIONS[version] if 0 <= version < len(_VERSIONS) else _VERSIONS[-1]
