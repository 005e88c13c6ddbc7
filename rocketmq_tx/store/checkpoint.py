# -*- test-case-name: rocketmq_tx.store.test.test_recovery -*-
"""
StoreCheckpoint (Java ``StoreCheckpoint``): a 4096-byte file whose head holds the store
times of the last flushed CommitLog message, ConsumeQueue entry and index entry (4.9), plus
``masterFlushedOffset`` and ``confirmPhyOffset`` (5.x; kept as read).
"""

from __future__ import annotations

import os

from rocketmq_tx.store.formats import CHECKPOINT, CHECKPOINT_FILE_SIZE

__all__ = ["StoreCheckpoint"]


class StoreCheckpoint:
    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        exists = os.path.exists(path)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self.fd).st_size < CHECKPOINT_FILE_SIZE:
            os.ftruncate(self.fd, CHECKPOINT_FILE_SIZE)
        head = os.pread(self.fd, CHECKPOINT.size, 0)
        (self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp,
         self.master_flushed_offset, self.confirm_phy_offset) = CHECKPOINT.unpack(head)
        self.existed = exists

    def get_min_timestamp(self) -> int:
        """Java ``getMinTimestamp``: min(physic, logics) - 3 s, floored at 0."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    def get_min_timestamp_index(self) -> int:
        return min(self.get_min_timestamp(), self.index_msg_timestamp)

    def pack(self) -> bytes:
        return CHECKPOINT.pack(self.physic_msg_timestamp, self.logics_msg_timestamp,
                               self.index_msg_timestamp, self.master_flushed_offset,
                               self.confirm_phy_offset)

    def flush(self) -> None:
        os.pwrite(self.fd, self.pack(), 0)
        os.fdatasync(self.fd)

    def shutdown(self) -> None:
        if self.fd >= 0:
            self.flush()
            self.close()

    def close(self) -> None:
        """Close the file without writing it (``shutdown`` writes first)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
