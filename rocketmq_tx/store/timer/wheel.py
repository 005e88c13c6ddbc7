# -*- test-case-name: rocketmq_tx.store.timer.test.test_formats -*-
"""
Java ``TimerWheel``: ``<root>/timerwheel``, ``2 * slotsTotal`` slots of 32 bytes; the slot
of a time is ``time / precisionMs % (2 * slotsTotal)``, and it belongs to that time only if
its stored ``time / precisionMs`` matches (else it is another round's, i.e. empty).

Java edits a heap copy and copies changed bytes to the mapping on flush; here the mapping is
edited directly (the kernel keeps the pages across a kill -9 just the same), and
:meth:`flush` is an ``msync``.
"""

from __future__ import annotations

import mmap
import os

from rocketmq_tx.store.timer.formats import EMPTY_SLOT, SLOT, SLOT_SIZE, Slot

__all__ = ["TimerWheel", "timer_wheel_path", "BLANK", "IGNORE"]

BLANK = -1
IGNORE = -2


def timer_wheel_path(root: str) -> str:
    """Java ``getTimerWheelPath``: ``<root>/timerwheel``."""
    return os.path.join(root, "timerwheel")


class TimerWheel:
    """
    :param path: the ``timerwheel`` file.
    :param slots_total: Java ``TIMER_WHEEL_TTL_DAY * DAY_SECS`` (604800).
    :param precision_ms: ``timerPrecisionMs``.
    :raises ValueError: an existing non-empty file of another length (Java refuses it too).
    """

    def __init__(self, path: str, slots_total: int, precision_ms: int) -> None:
        self.slots_total = slots_total
        self.precision_ms = precision_ms
        self.wheel_length = slots_total * 2 * SLOT_SIZE
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size not in (0, self.wheel_length):
                raise ValueError(f"Timer wheel length:{size} != expected:{self.wheel_length}")
            if size == 0:
                os.ftruncate(fd, self.wheel_length)
            self.mm = mmap.mmap(fd, self.wheel_length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def slot_index(self, time_ms: int) -> int:
        return time_ms // self.precision_ms % (self.slots_total * 2)

    def get_raw_slot(self, time_ms: int) -> Slot:
        t, first, last, num, magic = SLOT.unpack_from(self.mm, self.slot_index(time_ms) * SLOT_SIZE)
        return Slot(t * self.precision_ms, first, last, num, magic)

    def get_slot(self, time_ms: int) -> Slot:
        slot = self.get_raw_slot(time_ms)
        if slot.time_ms != time_ms // self.precision_ms * self.precision_ms:
            return EMPTY_SLOT
        return slot

    def put_slot(self, time_ms: int, first_pos: int, last_pos: int, num: int | None = None,
                 magic: int | None = None) -> None:
        """Java ``putSlot``: the three-argument form leaves num and magic as they are."""
        pos = self.slot_index(time_ms) * SLOT_SIZE
        if num is None or magic is None:
            self.mm[pos:pos + 24] = SLOT.pack(time_ms // self.precision_ms, first_pos, last_pos, 0, 0)[:24]
        else:
            self.mm[pos:pos + SLOT_SIZE] = SLOT.pack(time_ms // self.precision_ms, first_pos, last_pos, num, magic)

    def revise_slot(self, time_ms: int, first_pos: int, last_pos: int, force: bool) -> None:
        """Java ``reviseSlot``: set first/last (``IGNORE`` keeps one) of this time's slot."""
        raw = self.get_raw_slot(time_ms)
        if raw.time_ms // self.precision_ms != time_ms // self.precision_ms:
            if force:
                self.put_slot(time_ms, first_pos if first_pos != IGNORE else last_pos, last_pos)
            return
        self.put_slot(time_ms, raw.first_pos if first_pos == IGNORE else first_pos,
                      raw.last_pos if last_pos == IGNORE else last_pos, raw.num, raw.magic)

    def _each_current(self, time_start_ms: int):
        """
        ``(timeMs, firstPos, lastPos, num)`` of the slots of the current round from *time_start_ms*
        on (Java's scans). All-zero stretches (a new or sparse wheel) are skipped at memcmp
        speed: the full walk of 1.2 M slots in Python would take most of a second.
        """
        p = self.precision_ms
        total = self.slots_total * 2
        start = time_start_ms // p
        first_index = start % total
        mm = self.mm
        chunk = 64 * 1024
        zero = bytes(chunk)
        for base in range(0, self.wheel_length, chunk):
            data = mm[base:base + chunk]
            if data == zero[:len(data)]:
                continue
            for off in range(0, len(data), SLOT_SIZE):
                t, first, last, num, _ = SLOT.unpack_from(data, off)
                if t == 0:
                    continue
                i = ((base + off) // SLOT_SIZE - first_index) % total
                if start + i == t:
                    yield t * p, first, last, num

    def check_phy_pos(self, time_start_ms: int, max_offset: int) -> int:
        """Java ``checkPhyPos``: the smallest firstPos of a slot whose lastPos is past *max_offset*."""
        min_first = 2**63 - 1
        for _, first, last, _ in self._each_current(time_start_ms):
            if last > max_offset and first < min_first:
                min_first = first
        return min_first

    def get_all_num(self, time_start_ms: int) -> int:
        """Java ``getAllNum``: the pending count of every slot from *time_start_ms* on."""
        return sum(num for _, _, _, num in self._each_current(time_start_ms))

    def slot_times(self, time_start_ms: int) -> list[int]:
        """The times of the slots of the current round from *time_start_ms* on, ascending."""
        return sorted(t for t, _, _, _ in self._each_current(time_start_ms))

    def get_num(self, time_ms: int) -> int:
        return self.get_slot(time_ms).num

    def flush(self) -> None:
        self.mm.flush()

    def shutdown(self) -> None:
        self.mm.flush()
        self.mm.close()
        os.close(self.fd)
