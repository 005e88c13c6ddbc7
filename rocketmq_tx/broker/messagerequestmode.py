# -*- test-case-name: rocketmq_tx.broker.test.test_metadata5 -*-
"""
``MessageRequestModeManager`` (5.x): how each (topic, consumer group) fetches messages, PULL
or POP, as SET_MESSAGE_REQUEST_MODE sets it (``mqadmin setConsumeMode``), kept in
``config/messageRequestMode.json`` in Java's shape::

    {"messageRequestModeMap": {"<topic>": {"<group>": {"consumerGroup": ..., "mode": "POP",
                                                       "popShareQueueNum": 0, "topic": ...}}}}
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from rocketmq_tx.remoting.adminbodies import SetMessageRequestModeRequestBody
from rocketmq_tx.store.configfile import ConfigFile, dumps

__all__ = ["MessageRequestModeManager", "default_path"]


class MessageRequestModeManager:
    """
    :param path: ``<storePathRootDir>/config/messageRequestMode.json``.
    :ivar on_dirty: called after every change (the broker's persister writes the file soon
        after, off the reactor); without it nothing is written until :meth:`persist`.
    """

    def __init__(self, path: str) -> None:
        self.file = ConfigFile(path)
        self.on_dirty: Callable[[], object] | None = None
        self.message_request_mode_map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = {}

    def load(self) -> bool:
        """Merge the file (missing: empty). ``False`` when it is unreadable."""
        data = self.file.load()
        if data is None:
            return True
        try:
            for topic, groups in dict(data.get("messageRequestModeMap") or {}).items():
                table = self.message_request_mode_map.setdefault(str(topic), {})
                for group, body in dict(groups or {}).items():
                    table[str(group)] = SetMessageRequestModeRequestBody.from_json(body)
        except (TypeError, ValueError, AttributeError):
            return False
        return True

    def encode(self) -> dict[str, Any]:
        """Java's ``encode()``: the file's content and GET_ALL_MESSAGE_REQUEST_MODE's body."""
        return {"messageRequestModeMap": {topic: {group: body.to_json() for group, body in groups.items()}
                                          for topic, groups in self.message_request_mode_map.items()}}

    def snapshot(self) -> Callable[[], str]:
        """The table now (bodies are replaced, never changed); the function encodes it in any thread."""
        table = {topic: dict(groups) for topic, groups in self.message_request_mode_map.items()}
        return lambda: dumps({"messageRequestModeMap": {
            topic: {group: body.to_json() for group, body in groups.items()} for topic, groups in table.items()}})

    def persist(self) -> bool:
        """Write the file now, in the calling thread."""
        return self.file.persist(self.snapshot()())

    def set_message_request_mode(self, topic: str, group: str, body: SetMessageRequestModeRequestBody) -> None:
        self.message_request_mode_map.setdefault(topic, {})[group] = body
        if self.on_dirty is not None:
            self.on_dirty()

    def get_message_request_mode(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        return self.message_request_mode_map.get(topic, {}).get(group)


def default_path(store_root: str) -> str:
    return os.path.join(store_root, "config", "messageRequestMode.json")
