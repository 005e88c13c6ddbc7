# -*- test-case-name: rocketmq_tx.store.test.test_configfile -*-
"""
Broker metadata files in Java's shape (Java ``ConfigManager`` + ``MixAll.string2File``):
``config/topics.json``, ``consumerOffset.json``, ``subscriptionGroup.json``,
``delayOffset.json``...

Writing: the new content goes to ``<file>.tmp`` (fsynced), the previous content is copied to
``<file>.bak``, then the temporary file is renamed over the file (atomic, where Java deletes
then renames). Loading falls back to ``.bak`` when the file is missing, empty or unparsable.

Reading tolerates fastjson's output: both the 4.9.7 and the 5.5.0 broker write map keys that
are integers without quotes (``{"offsetTable":{"t@g":{0:5,1:3}}}``, checked against the Java
brokers, see test_configfile); :func:`loads` quotes them before parsing. Writing uses
standard JSON with quoted keys, which fastjson parses into the same maps. The output is
pretty-printed like fastjson (tab indentation, no space after the colon).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Optional

from rocketmq_tx.common import fastjson

__all__ = ["loads", "dumps", "ConfigFile", "int_keys"]

log = logging.getLogger("rocketmq_tx.store")

def loads(text: str | bytes) -> Any:
    """Parse what Java's ConfigManager writes (fastjson: unquoted integer map keys included)."""
    return fastjson.loads(text)


def int_keys(table: dict) -> dict:
    """``{"0": 5}`` -> ``{0: 5}``, for maps Java declares with Integer/Long keys."""
    return {int(k): v for k, v in table.items()}


def _dump(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = "\t" * (depth + 1)
        out.append("{\n")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",\n")
            out.append(inner)
            out.append(json.dumps(str(k), ensure_ascii=False))
            out.append(":")
            _dump(v, depth + 1, out)
        out.append("\n" + "\t" * depth + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = "\t" * (depth + 1)
        out.append("[\n")
        for i, v in enumerate(value):
            if i:
                out.append(",\n")
            out.append(inner)
            _dump(v, depth + 1, out)
        out.append("\n" + "\t" * depth + "]")
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def dumps(value: Any, pretty: bool = True) -> str:
    """Serialise like fastjson's ``PrettyFormat`` (but with every key quoted)."""
    if not pretty:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    out: list[str] = []
    _dump(value, 0, out)
    return "".join(out)


def _write_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


class ConfigFile:
    """One JSON config file with Java's ``.tmp``/``.bak`` protocol."""

    def __init__(self, path: str) -> None:
        self.path = path

    @property
    def bak_path(self) -> str:
        return self.path + ".bak"

    def load(self) -> Optional[Any]:
        """The parsed content, from the ``.bak`` file if the main one is unusable; ``None`` if neither is."""
        for path in (self.path, self.bak_path):
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except FileNotFoundError:
                continue
            except OSError as e:
                log.error("cannot read %s: %s", path, e)
                continue
            if not text.strip():
                continue
            try:
                return loads(text)
            except ValueError as e:
                log.error("cannot parse %s: %s", path, e)
        return None

    def persist(self, value: Any) -> bool:
        """
        Write *value* (a JSON-able object, or already-encoded text). Returns ``False`` and logs
        on failure; the previous file is then left as it was.
        """
        text = value if isinstance(value, str) else dumps(value)
        directory = os.path.dirname(self.path) or "."
        tmp = self.path + ".tmp"
        try:
            os.makedirs(directory, exist_ok=True)
            _write_file(tmp, text.encode("utf-8"))
            try:
                with open(self.path, "rb") as fh:
                    previous = fh.read()
            except FileNotFoundError:
                previous = None
            if previous is not None:
                _write_file(self.bak_path, previous)
            os.replace(tmp, self.path)
            dfd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as e:
            log.error("cannot persist %s: %s", self.path, e)
            return False
        return True
