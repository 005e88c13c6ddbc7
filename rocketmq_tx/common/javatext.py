# -*- test-case-name: rocketmq_tx.common.test.test_javatext -*-
"""
How Java prints numbers where our texts must read the same as Java's: ``Double.toString``
(SQL92 error texts, the runtime info's rates), ``String.format("%.Nf")`` and RocketMQ's
``MixAll.humanReadableByteCount``; and ``UtilAll.timeMillisToHumanString``.
"""

from __future__ import annotations

import math
import time
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["double_to_string", "format_fixed", "human_readable_byte_count", "time_millis_to_human_string"]


def double_to_string(value: float) -> str:
    """``Double.toString`` (the shortest digits that read back, as Java 19+ prints them)."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    digits_tuple = Decimal(repr(magnitude)).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = int(digits_tuple.exponent) + len(digits) - 1  # of the first digit
    if 1e-3 <= magnitude < 1e7:
        if exponent >= 0:
            whole = digits[:exponent + 1].ljust(exponent + 1, "0")
            frac = digits[exponent + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def format_fixed(value: float, places: int) -> str:
    """
    ``String.format("%.<places>f", value)``: Java rounds the shortest decimal digits of the
    double half up (0.125 gives 0.13, 1.005 gives 1.01), where Python's ``%`` rounds the
    binary value (0.12, 1.00).
    """
    if value != value or math.isinf(value):
        return double_to_string(value)  # Java prints NaN and Infinity as such
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def human_readable_byte_count(count: int, si: bool = False) -> str:
    """RocketMQ's ``MixAll.humanReadableByteCount``: ``512 B``, ``1.5 KiB``, ``2.0 MiB`` (``si``: kB, MB)."""
    unit = 1000 if si else 1024
    if count < unit:
        return f"{count} B"
    exp = int(math.log(count) / math.log(unit))
    prefix = ("kMGTPE" if si else "KMGTPE")[exp - 1] + ("" if si else "i")
    return f"{format_fixed(count / math.pow(unit, exp), 1)} {prefix}B"


def time_millis_to_human_string(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: local time as ``yyyyMMddHHmmssSSS`` (index file
    names, ``ProcessQueueInfo.toString``)."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(ms / 1000)) + f"{ms % 1000:03d}"
