# -*- test-case-name: rocketmq_tx.store.test.test_store,rocketmq_tx.store.test.test_recovery -*-
"""
ConsumeQueue (Java ``ConsumeQueue``): per topic and queue id, 20-byte entries
``(commitLogOffset int64, size int32, tagsCode int64)`` in files of
``mappedFileSizeConsumeQueue`` bytes named by their byte offset; logical offset = byte
position / 20.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from rocketmq_tx.store.formats import CQ_ENTRY, CQ_STORE_UNIT_SIZE
from rocketmq_tx.store.mappedfile import MappedFile, MappedFileQueue

__all__ = ["ConsumeQueue", "FILLER_SIZE"]

log = logging.getLogger("rocketmq_tx.store")

#: Size of the filler entries ``(0, Integer.MAX_VALUE, 0)`` Java puts before the first entry of
#: a queue that starts at a non-zero logical offset.
FILLER_SIZE = 0x7FFFFFFF
_UNIT = CQ_STORE_UNIT_SIZE
_pack = CQ_ENTRY.pack
_unpack_from = CQ_ENTRY.unpack_from


class ConsumeQueue:
    __slots__ = ("topic", "queue_id", "store_path", "mapped_file_size", "mapped_file_queue", "max_physic_offset",
                 "min_logic_offset")

    def __init__(self, topic: str, queue_id: int, root: str, mapped_file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        # Java rounds the file size down to a whole number of entries.
        size = mapped_file_size - mapped_file_size % _UNIT
        self.mapped_file_size = size
        self.store_path = os.path.join(root, topic, str(queue_id))
        self.mapped_file_queue = MappedFileQueue(self.store_path, size)
        self.max_physic_offset = -1
        self.min_logic_offset = 0

    def load(self) -> bool:
        return self.mapped_file_queue.load()

    # -- recovery

    def recover(self) -> None:
        """Find the last valid entry, starting three files from the end (Java ``recover``)."""
        files = self.mapped_file_queue.files
        if not files:
            return
        index = max(0, len(files) - 3)
        process_offset = files[index].file_from_offset
        while True:
            f = files[index]
            buf = f.mm
            pos = 0
            while pos < f.file_size:
                offset, size, _tags = _unpack_from(buf, pos)
                if offset >= 0 and size > 0:
                    pos += _UNIT
                    if not (offset == 0 and size == FILLER_SIZE):
                        self.max_physic_offset = offset + size
                else:
                    break
            if pos == f.file_size and index + 1 < len(files):
                index += 1
                process_offset = files[index].file_from_offset
                continue
            process_offset = f.file_from_offset + pos
            break
        self.mapped_file_queue.truncate_dirty_files(process_offset)
        self.mapped_file_queue.flushed_where = process_offset
        self._fix_full_last(process_offset)

    def _fix_full_last(self, offset: int) -> None:
        last = self.mapped_file_queue.last()
        if last is not None and offset == last.file_tail_offset:
            last.wrote_position = last.flushed_position = last.file_size

    def drop_last_entry(self) -> None:
        """Remove the newest entry (a torn or stale one found at recovery)."""
        n = self.get_max_offset_in_queue()
        if n <= 0:
            return
        end = (n - 1) * _UNIT
        self.mapped_file_queue.truncate_dirty_files(end)
        self.mapped_file_queue.flushed_where = min(self.mapped_file_queue.flushed_where, end)
        prev = self.get_entry(n - 2) if n >= 2 else None
        if prev is None or (prev[0] == 0 and prev[1] == FILLER_SIZE):
            self.max_physic_offset = -1
        else:
            self.max_physic_offset = prev[0] + prev[1]

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """Set the minimum logical offset to the first entry at or after *phy_min_offset*."""
        f = self.mapped_file_queue.first()
        if f is None:
            return
        pos = 0
        end = f.wrote_position
        found = False
        while pos < end:
            offset, size, _ = _unpack_from(f.mm, pos)
            if offset >= phy_min_offset and not (offset == 0 and size == FILLER_SIZE):
                self.min_logic_offset = f.file_from_offset + pos
                found = True
                break
            pos += _UNIT
        if not found:
            self.min_logic_offset = max(self.min_logic_offset, f.file_from_offset + end)

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop entries pointing at or past the CommitLog end *phy_offset*."""
        queue = self.mapped_file_queue
        while True:
            last = queue.last()
            if last is None:
                self.max_physic_offset = -1
                return
            pos = last.wrote_position - _UNIT
            keep_end = None
            while pos >= 0:
                offset, size, _ = _unpack_from(last.mm, pos)
                if offset == 0 and size == FILLER_SIZE:
                    keep_end = pos + _UNIT
                    break
                if offset + size <= phy_offset:
                    keep_end = pos + _UNIT
                    self.max_physic_offset = offset + size
                    break
                pos -= _UNIT
            if keep_end is None:
                queue.delete_last_mapped_file()
                continue
            if keep_end < last.wrote_position:
                end = last.file_from_offset + keep_end
                queue.truncate_dirty_files(end)
                queue.flushed_where = min(queue.flushed_where, end)
            return

    # -- writing

    def put_message_position_info(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """
        Append the entry for logical offset *cq_offset* (Java ``putMessagePositionInfo``).
        Entries already present (a re-dispatch after recovery) are skipped.

        :raises OSError: if a file cannot be created.
        """
        if offset + size <= self.max_physic_offset:
            return True
        expect = cq_offset * _UNIT
        f = self.mapped_file_queue.get_last_mapped_file(expect, True)
        assert f is not None
        if f.first_create_in_queue and cq_offset != 0 and f.wrote_position == 0:
            self.min_logic_offset = expect
            self.mapped_file_queue.flushed_where = expect
            self._fill_pre_blank(f, expect)
        current = f.file_from_offset + f.wrote_position
        if cq_offset != 0:
            if expect < current:
                log.warning("ConsumeQueue %s-%d: repeated entry for offset %d (at %d)", self.topic,
                            self.queue_id, cq_offset, current // _UNIT)
                return True
            if expect != current:
                log.error("ConsumeQueue %s-%d: logic offset %d expected, %d found", self.topic,
                          self.queue_id, current // _UNIT, cq_offset)
        self.max_physic_offset = offset + size
        f.append(_pack(offset, size, tags_code))
        return True

    def _fill_pre_blank(self, f: MappedFile, until: int) -> None:
        filler = _pack(0, FILLER_SIZE, 0)
        pos = 0
        end = until % self.mapped_file_size
        chunk = filler * max(1, min(4096, end // _UNIT))
        while pos < end:
            part = chunk[: end - pos]
            f.write_at(pos, part)
            pos += len(part)
        f.wrote_position = end

    def ensure_writable(self, cq_offset: int) -> None:
        """Create the file that will hold *cq_offset* now (raises ``OSError`` if it cannot)."""
        expect = cq_offset * _UNIT
        last = self.mapped_file_queue.last()
        if last is None or (last.is_full() and expect >= last.file_tail_offset):
            self.mapped_file_queue.get_last_mapped_file(expect, True)

    # -- reading

    def get_min_offset_in_queue(self) -> int:
        return self.min_logic_offset // _UNIT

    def get_max_offset_in_queue(self) -> int:
        return self.mapped_file_queue.get_max_offset() // _UNIT

    def get_index_buffer(self, start_index: int, max_bytes: int | None = None) -> tuple[bytes, int] | None:
        """
        Entries from *start_index* to the end of the written part of its file (Java
        ``getIndexBuffer``), at most *max_bytes* of them, as ``(bytes, start_index)``; ``None``
        if that file is gone.

        Java hands out a slice of the mapping; this is a copy, so the callers bound it by
        what they will read: unbounded, a consumer far behind would copy up to a whole file
        (6 MB) to read 32 entries.
        """
        offset = start_index * _UNIT
        if offset < self.min_logic_offset:
            return None
        f = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if f is None:
            return None
        pos = offset - f.file_from_offset
        wrote = f.wrote_position
        if pos >= wrote:
            return None
        size = wrote - pos if max_bytes is None else min(wrote - pos, max(max_bytes, _UNIT))
        data = f.read(pos, size)
        if data is None:
            return None
        return data, start_index

    def get_entry(self, index: int) -> tuple[int, int, int] | None:
        offset = index * _UNIT
        f = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if f is None or offset - f.file_from_offset + _UNIT > f.wrote_position:
            return None
        data = f.read(offset - f.file_from_offset, _UNIT)
        if data is None:
            return None
        return _unpack_from(data, 0)

    def roll_next_file(self, index: int) -> int:
        per_file = self.mapped_file_size // _UNIT
        return index + per_file - index % per_file

    def get_offset_in_queue_by_time(self, timestamp: int, store_time_of: Callable[[int, int], int],
                                    min_physic_offset: int) -> int:
        """
        The logical offset whose message was stored at *timestamp*, or the nearer neighbour
        (Java's rule), by binary search over the queue's entries.
        """
        low = self.get_min_offset_in_queue()
        high = self.get_max_offset_in_queue() - 1
        if high < low:
            return low
        left = right = -1
        left_value = right_value = -1
        while low <= high:
            mid = (low + high) // 2
            entry = self.get_entry(mid)
            if entry is None:
                return 0
            phy, size, _ = entry
            if phy < min_physic_offset or size == FILLER_SIZE:
                low = mid + 1
                left = mid
                continue
            store_time = store_time_of(phy, size)
            if store_time < 0:
                return 0
            if store_time == timestamp:
                # the first of equal timestamps
                while mid > self.get_min_offset_in_queue():
                    prev = self.get_entry(mid - 1)
                    if prev is None or prev[0] < min_physic_offset or store_time_of(prev[0], prev[1]) != timestamp:
                        break
                    mid -= 1
                return mid
            if store_time > timestamp:
                high = mid - 1
                right, right_value = mid, store_time
            else:
                low = mid + 1
                left, left_value = mid, store_time
        if left_value == -1:
            return right if right != -1 else max(left, 0)
        if right_value == -1:
            return left
        return right if timestamp - left_value > right_value - timestamp else left

    def get_last_entry_phy(self, f: MappedFile) -> int | None:
        """CommitLog offset of the last entry of *f* (for expiry)."""
        if f.wrote_position < _UNIT:
            return None
        data = f.read(f.wrote_position - _UNIT, _UNIT)
        if data is None:
            return None
        return _unpack_from(data, 0)[0]

    # -- maintenance

    def flush(self, least_pages: int) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    def delete_expired_file(self, min_commit_log_offset: int) -> int:
        n = self.mapped_file_queue.delete_expired_file_by_offset(
            min_commit_log_offset, _UNIT, self.get_last_entry_phy)
        self.correct_min_offset(min_commit_log_offset)
        return n

    def close(self) -> None:
        self.mapped_file_queue.close()

    def destroy(self) -> None:
        self.mapped_file_queue.destroy()
        self.max_physic_offset = -1
        self.min_logic_offset = 0
