# -*- test-case-name: rocketmq_tx.store.timer.test.test_formats -*-
"""
Java ``TimerLog``: ``<root>/timerlog``, files of ``mappedFileSizeTimerLog`` bytes named by
their start offset (as the CommitLog), holding 52-byte units
(:mod:`~rocketmq_tx.store.timer.formats`). A unit that does not fit with room for a blank
after it closes the file with a blank (length, 0L, blank magic) and goes to the next one.
"""

from __future__ import annotations

import os

from rocketmq_tx.store.mappedfile import MappedFileQueue
from rocketmq_tx.store.timer.formats import MIN_BLANK_LEN, UNIT_SIZE, TimerUnit, blank

__all__ = ["TimerLog", "timer_log_path"]


def timer_log_path(root: str) -> str:
    """Java ``getTimerLogPath``: ``<root>/timerlog``."""
    return os.path.join(root, "timerlog")


class TimerLog:
    """
    :param store_path: the ``timerlog`` directory.
    :param file_size: Java ``mappedFileSizeTimerLog`` (100 MiB).
    """

    def __init__(self, store_path: str, file_size: int) -> None:
        self.file_size = file_size
        self.mapped_file_queue = MappedFileQueue(store_path, file_size)

    def load(self) -> bool:
        return self.mapped_file_queue.load()

    def append(self, data: bytes) -> int:
        """Write one unit; return its global position. Raises ``OSError`` if no file can be made."""
        mfq = self.mapped_file_queue
        f = mfq.get_last_mapped_file(0)
        assert f is not None
        if len(data) + MIN_BLANK_LEN > f.file_size - f.wrote_position:
            f.append(blank(f.file_size - f.wrote_position))
            f.wrote_position = f.file_size
            f = mfq.get_last_mapped_file(0)
            assert f is not None
        pos = f.file_from_offset + f.wrote_position
        f.append(data)
        return pos

    def read_unit(self, pos: int) -> tuple[int, TimerUnit] | None:
        """``(size field, unit)`` at global *pos*, or ``None`` if no file holds it."""
        f = self.mapped_file_queue.find_mapped_file_by_offset(pos)
        if f is None:
            return None
        rel = pos - f.file_from_offset
        if rel + UNIT_SIZE > f.file_size:
            return None
        return TimerUnit.decode(f.mm, rel)

    def offset_for_last_unit(self) -> int:
        """Java ``getOffsetForLastUnit``: where the last whole unit of a file can start."""
        fs = self.file_size
        return fs - (fs - MIN_BLANK_LEN) % UNIT_SIZE - MIN_BLANK_LEN - UNIT_SIZE

    def flush(self) -> None:
        self.mapped_file_queue.flush(0)

    def shutdown(self) -> None:
        self.mapped_file_queue.flush(0)
        self.mapped_file_queue.close()
