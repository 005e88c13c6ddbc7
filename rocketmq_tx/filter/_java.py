# -*- test-case-name: rocketmq_tx.filter.test.test_java -*-
"""
The few Java library behaviours the SQL92 filter depends on, in Python.

``Integer.valueOf`` / ``Long.valueOf`` / ``Double.valueOf`` / ``Boolean.valueOf`` on a
property's String, ``Double.compare``, ``String.compareTo`` (UTF-16 order) and
``Double.toString`` (for error texts). Each conversion raises :class:`JavaError` where
Java throws, since Java's filter lets that exception end the whole evaluation.
"""

from __future__ import annotations

import math
import re

from rocketmq_tx.common.javatext import double_to_string

__all__ = ["JavaError", "parse_int", "parse_long", "parse_double", "parse_boolean", "compare_double",
           "compare_string", "double_to_string", "INT_MIN", "INT_MAX", "LONG_MIN", "LONG_MAX"]

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


class JavaError(Exception):
    """A Java exception: its class name and message; ``str()`` is Java's ``toString()``."""

    def __init__(self, java_class: str, message: str | None = None) -> None:
        super().__init__(java_class, message)
        self.java_class = java_class
        self.message = message

    def __str__(self) -> str:
        return self.java_class if self.message is None else f"{self.java_class}: {self.message}"


def _number_format(text: str) -> JavaError:
    return JavaError("java.lang.NumberFormatException", f'For input string: "{text}"')


def _parse_integral(text: str, low: int, high: int) -> int:
    # Long.parseLong / Integer.parseInt, radix 10: a sign, then digits as Character.digit
    # sees them (any Unicode decimal digit of the BMP; no spaces, no underscores).
    if text.isascii() and text.isdigit():
        value = int(text)
    else:
        body = text[1:] if text[:1] in ("+", "-") else text
        if not body or not all(c.isdecimal() and ord(c) < 0x10000 for c in body):
            raise _number_format(text)
        value = int(body)
        if text[0] == "-":
            value = -value
    if not low <= value <= high:
        raise _number_format(text)
    return value


def parse_int(text: str) -> int:
    """``Integer.valueOf(String)``.

    :raises JavaError: NumberFormatException
    """
    return _parse_integral(text, INT_MIN, INT_MAX)


def parse_long(text: str) -> int:
    """``Long.valueOf(String)``.

    :raises JavaError: NumberFormatException
    """
    return _parse_integral(text, LONG_MIN, LONG_MAX)


_DOUBLE = re.compile(
    r"([+-]?)(?:(NaN|Infinity)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
    r"|0[xX]((?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)")
_JAVA_TRIM = "".join(chr(i) for i in range(0x21))


def parse_double(text: str) -> float:
    """``Double.valueOf(String)``: trimmed, decimal or hexadecimal, NaN, Infinity, f/d suffix.

    :raises JavaError: NumberFormatException
    """
    trimmed = text.strip(_JAVA_TRIM)
    m = _DOUBLE.fullmatch(trimmed)
    if m is None:
        raise JavaError("java.lang.NumberFormatException",
                        "empty String" if not trimmed else f'For input string: "{text}"')
    sign, special, decimal, hexa = m.groups()
    if special is not None:
        value = math.nan if special == "NaN" else math.inf
    elif decimal is not None:
        value = float(decimal)
    else:
        value = float.fromhex("0x" + hexa)
    return -value if sign == "-" else value


def parse_boolean(text: str) -> bool:
    """``Boolean.valueOf(String)``: true only for "true", in any case."""
    return len(text) == 4 and text.isascii() and text.lower() == "true"


def compare_double(a: float, b: float) -> int:
    """``Double.compare``: -0.0 below 0.0, NaN equal to itself and above everything."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = a != a, b != b
    if a_nan or b_nan:
        return 0 if a_nan and b_nan else (1 if a_nan else -1)
    if a == 0.0:
        a_neg, b_neg = math.copysign(1.0, a) < 0, math.copysign(1.0, b) < 0
        return 0 if a_neg == b_neg else (-1 if a_neg else 1)
    return 0


def compare_string(a: str, b: str) -> int:
    """``String.compareTo``: the sign of the comparison of UTF-16 code units."""
    if a == b:
        return 0
    ea, eb = a.encode("utf-16-be", "surrogatepass"), b.encode("utf-16-be", "surrogatepass")
    return -1 if ea < eb else 1
