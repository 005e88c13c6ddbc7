"""How Java prints numbers in texts we must match (javatext)."""

from __future__ import annotations

import math

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.javatext import double_to_string, format_fixed, human_readable_byte_count


class JavaTextTests(SynchronousTestCase):
    def test_format_fixed_rounds_half_up(self) -> None:
        """String.format("%.2f") rounds the shortest decimal digits half up, unlike Python's %."""
        for value, places, text in [(0.125, 2, "0.13"), (1.005, 2, "1.01"), (0.0, 2, "0.00"), (29.0, 2, "29.00"),
                                    (1.25, 1, "1.3"), (1.35, 1, "1.4"), (2.0, 1, "2.0"), (123.456, 2, "123.46")]:
            self.assertEqual(format_fixed(value, places), text, value)
        self.assertEqual(format_fixed(math.nan, 2), "NaN")

    def test_human_readable_byte_count(self) -> None:
        """MixAll.humanReadableByteCount, binary units: bytes alone below 1024, else one decimal."""
        for count, text in [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1280, "1.3 KiB"), (1536, "1.5 KiB"),
                            (5 * 1024 * 1024, "5.0 MiB"), (3 * 1024 ** 3 + 1, "3.0 GiB")]:
            self.assertEqual(human_readable_byte_count(count), text, count)
        self.assertEqual(human_readable_byte_count(1500, si=True), "1.5 kB")

    def test_double_to_string(self) -> None:
        """Double.toString for the rates: plain between 1e-3 and 1e7, else Java's E form."""
        for value, text in [(50.0, "50.0"), (8.5, "8.5"), (1e7, "1.0E7"), (0.0001, "1.0E-4")]:
            self.assertEqual(double_to_string(value), text)
