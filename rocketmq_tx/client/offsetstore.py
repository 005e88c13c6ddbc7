# -*- test-case-name: rocketmq_tx.client.test.test_push -*-
"""
Consumer offsets kept in a local file, for broadcasting consumers (Java
``LocalFileOffsetStore``): ``<dir>/<clientId>/<group>/offsets.json`` holding
``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset, ...}}``, the
MessageQueue objects as keys as fastjson writes them, so Java and Python read each
other's files.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.remoting.api import parse_reset_offset_body

__all__ = ["LocalOffsetStore", "default_offset_dir"]


def default_offset_dir() -> Path:
    """Java's ``rocketmq.client.localOffsetStoreDir`` default: ``~/.rocketmq_offsets``."""
    return Path(os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR", Path.home() / ".rocketmq_offsets"))


class LocalOffsetStore:
    """Offsets of one group and client in one JSON file, rewritten whole (through a temporary file)."""

    def __init__(self, directory: Path | str, client_id: str, group: str) -> None:
        self.path = Path(directory) / client_id / group / "offsets.json"
        self.offsets: dict[MessageQueue, int] = {}
        self.load()

    def load(self) -> None:
        if self.path.exists():
            # The same shape as ResetOffsetBody: a table keyed by MessageQueue objects.
            self.offsets = parse_reset_offset_body(self.path.read_bytes())

    def read(self, mq: MessageQueue) -> int | None:
        return self.offsets.get(mq)

    def update(self, mq: MessageQueue, offset: int) -> None:
        self.offsets[mq] = offset

    def persist(self) -> None:
        table = {fastjson.ObjectKey({"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}): off
                 for mq, off in sorted(self.offsets.items())}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_bytes(fastjson.dumps({"offsetTable": table}))
        os.replace(tmp, self.path)
