# -*- test-case-name: rocketmq_tx.common.test.test_fastjson -*-
"""
Reading what Java's fastjson 1.x writes, and writing JSON every Java peer parses.

fastjson is not RFC 8259 JSON in three ways RocketMQ exposes (protocol-notes §4):

* map keys that are numbers travel unquoted: ``{0:"127.0.0.1:10911"}``;
* map keys that are beans travel as objects: ``{{"brokerName":"b","queueId":0,"topic":"t"}:12}``;
* its parser also accepts single quotes, unquoted names, stray commas and a trailing
  ``L`` on longs, which other Java-side writers occasionally rely on.

:func:`loads` tries orjson first (the common case costs nothing extra) and
falls back to a small lenient parser. Unquoted numeric keys come back as strings, so
``{0:"a"}`` and ``{"0":"a"}`` read the same; object keys come back as
:class:`ObjectKey`. :func:`dumps` writes compact standard JSON as UTF-8 bytes (quoted keys), which
fastjson parses into ``Map<Long, String>`` as well; an :class:`ObjectKey` is written
as an object, the only form Java understands for such maps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

__all__ = ["ObjectKey", "loads", "dumps", "dumps_legacy", "JSONDecodeError"]

JSONDecodeError = json.JSONDecodeError


class ObjectKey(Mapping[str, Any]):
    """An immutable, hashable JSON object used as a map key (fastjson bean keys)."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[str, Any]) -> None:
        self._items = dict(sorted(items.items(), key=_key_order))
        self._hash = hash(tuple((k, _freeze(v)) for k, v in self._items.items()))

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"ObjectKey({self._items!r})"


def _key_order(item: tuple[Any, Any]) -> tuple[bool, str]:
    # Keys are strings, or objects (ObjectKey) when an object key holds object keys: these
    # do not compare with strings, so they sort after them, by their text.
    key = item[0]
    return (False, key) if isinstance(key, str) else (True, repr(key))


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted(((k, _freeze(v)) for k, v in value.items()), key=_key_order))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def loads(text: str | bytes) -> Any:
    """
    Parse JSON as fastjson would accept it.

    :raises JSONDecodeError: the text is not even lenient JSON.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise JSONDecodeError(f"invalid UTF-8: {e}", "", 0) from None
    return _LenientParser(text).parse_document()


def dumps(value: Any) -> bytes:
    """Write compact JSON as UTF-8; non-ASCII text stays raw, as fastjson writes it."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        # Maps keyed by ObjectKey get here; orjson cannot write an object as a key.
        return "".join(_write(value)).encode("utf-8")


def dumps_legacy(value: Any) -> bytes:
    """
    Write what plain fastjson writes: integer map keys unquoted (``{0:"a"}``). Only for
    peers that predate standard JSON (a Java client before 4.9.4 asking for a route).
    """
    return "".join(_write(value, legacy=True)).encode("utf-8")


def _write(value: Any, legacy: bool = False) -> Iterator[str]:
    if isinstance(value, Mapping):
        yield "{"
        first = True
        for key, item in value.items():
            if not first:
                yield ","
            first = False
            if isinstance(key, ObjectKey):
                yield from _write(dict(key), legacy)
            elif legacy and isinstance(key, int) and not isinstance(key, bool):
                yield str(key)
            else:
                yield json.dumps(str(key), ensure_ascii=False)
            yield ":"
            yield from _write(item, legacy)
        yield "}"
    elif isinstance(value, (list, tuple)):
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ","
            yield from _write(item, legacy)
        yield "]"
    else:
        yield json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_WS = frozenset(" \t\r\n\f\b")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NAME_END = frozenset(":,}] \t\r\n")


def _join_surrogates(text: str) -> str:
    """
    ``\\u`` escapes are UTF-16 code units: a high and a low surrogate make one character;
    a lone one becomes ``?``, as Java's UTF-8 encoder writes it (a str holding it could not
    be encoded at all).
    """
    out = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if "\ud800" <= ch <= "\udbff" and i + 1 < n and "\udc00" <= text[i + 1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(ch) - 0xD800) << 10) + ord(text[i + 1]) - 0xDC00))
            i += 2
            continue
        out.append("?" if "\ud800" <= ch <= "\udfff" else ch)
        i += 1
    return "".join(out)


class _LenientParser:
    """Recursive descent over the fastjson dialect; positions are kept for errors."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def fail(self, message: str) -> JSONDecodeError:
        return JSONDecodeError(message, self.text, min(self.pos, len(self.text)))

    def skip_ws(self) -> None:
        text, pos, n = self.text, self.pos, len(self.text)
        while pos < n and text[pos] in _WS:
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def parse_document(self) -> Any:
        value = self.parse_value()
        if self.peek():
            raise self.fail("extra data after JSON value")
        return value

    def parse_value(self) -> Any:
        ch = self.peek()
        if not ch:
            raise self.fail("unexpected end of input")
        if ch == "{":
            return self.parse_object()
        if ch == "[":
            return self.parse_array()
        if ch in "\"'":
            return self.parse_string()
        return self.parse_bare()

    def _enter(self) -> None:
        self.depth += 1
        # Well below Python's recursion limit (each level costs up to three frames).
        if self.depth > 200:
            raise self.fail("nesting too deep")

    def parse_object(self) -> dict[Any, Any]:
        self._enter()
        self.pos += 1
        result: dict[Any, Any] = {}
        while True:
            ch = self.peek()
            if not ch:
                raise self.fail("unterminated object")
            if ch == ",":
                self.pos += 1
                continue
            if ch == "}":
                self.pos += 1
                self.depth -= 1
                return result
            key = self.parse_key()
            if self.peek() != ":":
                raise self.fail("expected ':' after key")
            self.pos += 1
            result[key] = self.parse_value()
            ch = self.peek()
            if not ch or ch not in ",}":
                raise self.fail("expected ',' or '}'")

    def parse_key(self) -> Any:
        ch = self.peek()
        if not ch:
            raise self.fail("unexpected end of input in object")
        if ch in "\"'":
            return self.parse_string()
        if ch == "{":
            return ObjectKey(self.parse_object())
        # Unquoted name or number: take everything up to the colon.
        start = self.pos
        text, n = self.text, len(self.text)
        pos = start
        while pos < n and text[pos] not in _NAME_END:
            pos += 1
        if pos == start:
            raise self.fail("empty key")
        self.pos = pos
        raw = text[start:pos]
        if raw[-1] in "Ll" and raw[:-1].lstrip("-").isdigit():
            raw = raw[:-1]
        return raw

    def parse_array(self) -> list[Any]:
        self._enter()
        self.pos += 1
        result: list[Any] = []
        while True:
            ch = self.peek()
            if not ch:
                raise self.fail("unterminated array")
            if ch == ",":
                self.pos += 1
                continue
            if ch == "]":
                self.pos += 1
                self.depth -= 1
                return result
            result.append(self.parse_value())
            ch = self.peek()
            if not ch or ch not in ",]":
                raise self.fail("expected ',' or ']'")

    def parse_string(self) -> str:
        text = self.text
        quote = text[self.pos]
        pos = self.pos + 1
        n = len(text)
        parts: list[str] = []
        start = pos
        surrogates = False
        while True:
            if pos >= n:
                raise self.fail("unterminated string")
            ch = text[pos]
            if ch == quote:
                parts.append(text[start:pos])
                self.pos = pos + 1
                return _join_surrogates("".join(parts)) if surrogates else "".join(parts)
            if ch == "\\":
                parts.append(text[start:pos])
                if pos + 1 >= n:
                    raise self.fail("unterminated escape")
                esc = text[pos + 1]
                if esc == "u":
                    digits = text[pos + 2 : pos + 6]
                    try:
                        code = int(digits, 16)
                    except ValueError:
                        raise self.fail("bad \\u escape") from None
                    surrogates = surrogates or 0xD800 <= code <= 0xDFFF
                    parts.append(chr(code))
                    pos += 6
                elif esc == "x":
                    try:
                        parts.append(chr(int(text[pos + 2 : pos + 4], 16)))
                    except ValueError:
                        raise self.fail("bad \\x escape") from None
                    pos += 4
                elif esc in _ESCAPES:
                    parts.append(_ESCAPES[esc])
                    pos += 2
                else:
                    raise self.fail("bad escape")
                start = pos
                continue
            pos += 1

    def parse_bare(self) -> Any:
        text, n = self.text, len(self.text)
        start = pos = self.pos
        while pos < n and text[pos] not in _NAME_END:
            pos += 1
        raw = text[start:pos]
        self.pos = pos
        if raw == "true":
            return True
        if raw == "false":
            return False
        if raw == "null":
            return None
        if raw and raw[-1] in "LlSsBb" and raw[:-1].lstrip("-").isdigit():
            raw = raw[:-1]
        elif raw and raw[-1] in "FfDd":
            raw = raw[:-1]
        try:
            return int(raw)
        except ValueError:
            pass
        try:
            return float(raw)
        except ValueError:
            raise self.fail(f"unexpected token {raw[:20]!r}") from None
