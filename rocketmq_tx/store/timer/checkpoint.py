# -*- test-case-name: rocketmq_tx.store.timer.test.test_formats -*-
"""
Java ``TimerCheckpoint``: ``<root>/config/timercheck``, one 4096-byte page whose first 56
bytes are :class:`~rocketmq_tx.store.timer.formats.CheckpointData`.
"""

from __future__ import annotations

import os

from rocketmq_tx.store.timer.formats import CHECKPOINT_FILE_SIZE, CHECKPOINT_SIZE, CheckpointData

__all__ = ["TimerCheckpoint", "timer_check_path"]


def timer_check_path(root: str) -> str:
    """Java ``BrokerPathConfigHelper.getTimerCheckPath``: ``<root>/config/timercheck``."""
    return os.path.join(root, "config", "timercheck")


class TimerCheckpoint:
    """
    The checkpoint file. :attr:`data` is read at construction (zeros for a new file) and
    written by :meth:`flush`.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        exists = os.path.exists(path)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self.fd).st_size < CHECKPOINT_FILE_SIZE:
            os.ftruncate(self.fd, CHECKPOINT_FILE_SIZE)
        self.data = CheckpointData()
        if exists:
            self.data = CheckpointData.decode(os.pread(self.fd, CHECKPOINT_SIZE, 0))

    def flush(self, data: CheckpointData | None = None) -> None:
        """Write *data* (default :attr:`data`) and sync it."""
        os.pwrite(self.fd, (data or self.data).encode(), 0)
        os.fdatasync(self.fd)

    def shutdown(self) -> None:
        self.flush()
        os.close(self.fd)
        self.fd = -1
