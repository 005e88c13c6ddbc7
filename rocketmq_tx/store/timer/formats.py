# -*- test-case-name: rocketmq_tx.store.timer.test.test_formats -*-
"""
Byte layouts of the timer store (Java 5.x ``TimerLog``, ``Slot``/``TimerWheel``,
``TimerCheckpoint``), all big-endian as Java's ``ByteBuffer``.

TimerLog unit, 52 bytes: size (int, always 52), prevPos (long: the previous unit of the
same slot, -1 for the first), magic (int), currWriteTimeMs (long: the wheel's write time
when enqueued), delayedTime (int: deliver time minus currWriteTimeMs), offsetPy (long:
CommitLog offset of the message in ``rmq_sys_wheel_timer``), sizePy (int), hash of the
real topic (int, Java ``String.hashCode``), reserved (long, 0).

Wheel slot, 32 bytes: timeMs / precisionMs (long), firstPos (long), lastPos (long), num
(int), magic (int). The wheel holds ``2 * 7 * 86400`` slots whatever the precision.

Checkpoint: lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset,
masterTimerQueueOffset, then the DataVersion's stateVersion, timestamp and counter, seven
longs (56 bytes) at the start of a 4096-byte file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

__all__ = [
    "UNIT", "UNIT_SIZE", "BLANK_MAGIC_CODE", "MIN_BLANK_LEN", "UNIT_PRE_SIZE_FOR_MSG", "SLOT", "SLOT_SIZE",
    "CHECKPOINT", "CHECKPOINT_SIZE", "CHECKPOINT_FILE_SIZE", "MAGIC_DEFAULT", "MAGIC_ROLL", "MAGIC_DELETE",
    "TimerUnit", "Slot", "CheckpointData", "is_magic_ok", "blank",
]

UNIT = struct.Struct(">iqiqiqiiq")
UNIT_SIZE = UNIT.size  # 52
#: Java ``0xBBCCDDEE ^ 1880681586 + 8``: ``+`` binds first; as a signed int.
BLANK_MAGIC_CODE = struct.unpack(">i", struct.pack(">I", 0xBBCCDDEE ^ (1880681586 + 8)))[0]
MIN_BLANK_LEN = 4 + 8 + 4
_BLANK = struct.Struct(">iqi")
#: where offsetPy starts inside a unit (Java ``UNIT_PRE_SIZE_FOR_MSG``)
UNIT_PRE_SIZE_FOR_MSG = 28

SLOT = struct.Struct(">qqqii")
SLOT_SIZE = SLOT.size  # 32

CHECKPOINT = struct.Struct(">7q")
CHECKPOINT_SIZE = CHECKPOINT.size  # 56
#: Java maps one OS page of ``timercheck`` (``DefaultMappedFile.OS_PAGE_SIZE``)
CHECKPOINT_FILE_SIZE = 4096

MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2


def is_magic_ok(magic: int) -> bool:
    """Java ``isMagicOK``: only the low four bits may be set."""
    return (magic | 0xF) == 0xF


@dataclass(frozen=True, slots=True)
class TimerUnit:
    """One TimerLog unit (the fields after ``size``)."""

    prev_pos: int
    magic: int
    curr_write_time_ms: int
    delayed_time: int  # relative to curr_write_time_ms, as stored
    offset_py: int
    size_py: int
    hash_topic: int
    reserved: int = 0

    @property
    def deliver_time_ms(self) -> int:
        return self.curr_write_time_ms + self.delayed_time

    def encode(self) -> bytes:
        return UNIT.pack(UNIT_SIZE, self.prev_pos, self.magic, self.curr_write_time_ms, self.delayed_time,
                         self.offset_py, self.size_py, self.hash_topic, self.reserved)

    @classmethod
    def decode(cls, data: Any, pos: int = 0) -> tuple[int, TimerUnit]:
        """``(size field, unit)`` read at *pos* of a buffer (bytes, memoryview, mmap)."""
        size, prev, magic, wt, delay, off, sz, h, res = UNIT.unpack_from(data, pos)
        return size, cls(prev, magic, wt, delay, off, sz, h, res)


def blank(length: int) -> bytes:
    """The end-of-file filler Java writes when a unit does not fit: its length, 0L, the blank magic."""
    return _BLANK.pack(length, 0, BLANK_MAGIC_CODE)


@dataclass(frozen=True, slots=True)
class Slot:
    """A wheel slot; ``time_ms`` is -1 for a slot holding another round's (or no) data."""

    time_ms: int
    first_pos: int
    last_pos: int
    num: int = 0
    magic: int = 0


EMPTY_SLOT = Slot(-1, -1, -1)


@dataclass(slots=True)
class CheckpointData:
    """Java ``TimerCheckpoint``'s fields (``encode``/``decode`` are GET_TIMER_CHECK_POINT's body)."""

    last_read_time_ms: int = 0
    last_timer_log_flush_pos: int = 0
    last_timer_queue_offset: int = 0
    master_timer_queue_offset: int = 0
    state_version: int = 0
    timestamp: int = 0
    counter: int = 0

    def encode(self) -> bytes:
        return CHECKPOINT.pack(self.last_read_time_ms, self.last_timer_log_flush_pos, self.last_timer_queue_offset,
                               self.master_timer_queue_offset, self.state_version, self.timestamp, self.counter)

    @classmethod
    def decode(cls, data: bytes) -> CheckpointData:
        """Java ``decode``: four longs, then the DataVersion's three when present."""
        if len(data) >= CHECKPOINT_SIZE:
            return cls(*CHECKPOINT.unpack_from(data))
        if len(data) >= 32:
            return cls(*struct.unpack_from(">4q", data))
        raise ValueError(f"a timer checkpoint needs at least 32 bytes, got {len(data)}")
