"""
The Java library behaviours the filter relies on (checked against Java 17's).
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.filter._java import (
    JavaError,
    compare_double,
    compare_string,
    double_to_string,
    parse_boolean,
    parse_double,
    parse_int,
    parse_long,
)


class NumberParsingTests(SynchronousTestCase):
    """Integer.valueOf, Long.valueOf, Double.valueOf and Boolean.valueOf on Strings."""

    def test_int(self) -> None:
        """A sign and decimal digits (any Unicode decimal digit of the BMP), within int range."""
        for text, value in [("5", 5), ("+5", 5), ("-5", -5), ("007", 7), ("2147483647", 2147483647),
                            ("-2147483648", -2147483648), ("\u0665", 5)]:
            self.assertEqual(parse_int(text), value, text)
        for text in ["", "+", "-", " 5", "5 ", "5.0", "1_000", "2147483648", "0x10", "5L", "\U0001d7d3"]:
            self.assertRaises(JavaError, parse_int, text)

    def test_long(self) -> None:
        """Long.valueOf takes the long range."""
        self.assertEqual(parse_long("9223372036854775807"), 9223372036854775807)
        self.assertEqual(parse_long("-9223372036854775808"), -9223372036854775808)
        self.assertRaises(JavaError, parse_long, "9223372036854775808")

    def test_double(self) -> None:
        """Trimmed; decimal, hexadecimal, NaN and Infinity; an f or d suffix."""
        for text, value in [("1.5", 1.5), (" 1.5\t", 1.5), ("1.", 1.0), (".5", 0.5), ("1e3", 1000.0),
                            ("-1E-1", -0.1), ("5d", 5.0), ("5F", 5.0), ("0x1p3", 8.0), ("0x.8P1", 1.0),
                            ("Infinity", math.inf), ("-Infinity", -math.inf), ("+5", 5.0)]:
            self.assertEqual(parse_double(text), value, text)
        self.assertTrue(math.isnan(parse_double("NaN")))
        for text in ["", "  ", "nan", "inf", "infinity", "1_0", "0x10", "1e", "e1", ".", "\u0665", "NaNd", "1 0"]:
            self.assertRaises(JavaError, parse_double, text)

    def test_boolean(self) -> None:
        """Only "true", in any case, is true."""
        self.assertTrue(parse_boolean("TrUe"))
        for text in ["yes", "1", " true", "truee", ""]:
            self.assertFalse(parse_boolean(text))

    @given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
    def test_long_round_trip(self, value: int) -> None:
        """Every long reads back from its decimal text."""
        self.assertEqual(parse_long(str(value)), value)


class CompareTests(SynchronousTestCase):
    """Double.compare and String.compareTo."""

    def test_double_compare(self) -> None:
        """-0.0 is below 0.0 and NaN is above everything, equal to itself."""
        self.assertEqual(compare_double(-0.0, 0.0), -1)
        self.assertEqual(compare_double(0.0, -0.0), 1)
        self.assertEqual(compare_double(math.nan, math.inf), 1)
        self.assertEqual(compare_double(math.nan, math.nan), 0)
        self.assertEqual(compare_double(1.0, math.nan), -1)
        self.assertEqual(compare_double(1.0, 1.0), 0)

    def test_string_compare(self) -> None:
        """Strings order by UTF-16 code units (a supplementary character sorts below U+FFFF)."""
        self.assertEqual(compare_string("\U00010000", "\uffff"), -1)
        self.assertEqual(compare_string("a", "ab"), -1)
        self.assertEqual(compare_string("b", "ab"), 1)
        self.assertEqual(compare_string("x", "x"), 0)


class DoubleToStringTests(SynchronousTestCase):
    """Double.toString, as Java prints a Double in error texts."""

    def test_forms(self) -> None:
        """Plain between 10^-3 and 10^7, computerized scientific notation outside."""
        for value, text in [(1.0, "1.0"), (1.5, "1.5"), (0.001, "0.001"), (1234567.0, "1234567.0"),
                            (1e7, "1.0E7"), (1.7976931348623157e308, "1.7976931348623157E308"),
                            (0.0001, "1.0E-4"), (-2.5, "-2.5"), (123.456, "123.456")]:
            self.assertEqual(double_to_string(value), text, value)
        self.assertEqual(double_to_string(math.nan), "NaN")
        self.assertEqual(double_to_string(-math.inf), "-Infinity")
        self.assertEqual(double_to_string(-0.0), "-0.0")
