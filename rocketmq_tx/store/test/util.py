"""Helpers for the store tests: small files, a settable clock, message builders."""

from __future__ import annotations

import os
import shutil
from typing import Any

from rocketmq_tx.common.message import properties_to_string
from rocketmq_tx.store.commitlog import MessageExtBrokerInner
from rocketmq_tx.store.config import MessageStoreConfig
from rocketmq_tx.store.store import DefaultMessageStore

#: 2026-01-01 12:00:00 UTC
T0 = 1767268800.0


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def temp_root(case: Any) -> str:
    """``case.mktemp()``, removed again when the test ends (the stores are tens of MB)."""
    root = case.mktemp()
    case.addCleanup(shutil.rmtree, root, True)
    return root


def small_config(root: str, **overrides: Any) -> MessageStoreConfig:
    values: dict[str, Any] = dict(
        store_path_root_dir=root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 64,
        max_hash_slot_num=64,
        max_index_num=256,
    )
    values.update(overrides)
    return MessageStoreConfig(**values)


def open_store(root: str, clock: Clock | None = None, start: bool = True, **overrides: Any) -> DefaultMessageStore:
    os.makedirs(root, exist_ok=True)
    store = DefaultMessageStore(small_config(root, **overrides), now=clock or Clock())
    assert store.load()
    if start:
        store.start()
    return store


def message(topic: str = "TopicTest", body: bytes = b"hello", queue_id: int = 0, *, tags: str | None = None,
            keys: str | None = None, uniq: str | None = None, extra: dict | None = None,
            sys_flag: int = 0, **kw: Any) -> MessageExtBrokerInner:
    props: dict[str, str] = {}
    if tags:
        props["TAGS"] = tags
    if keys:
        props["KEYS"] = keys
    if uniq:
        props["UNIQ_KEY"] = uniq
    if extra:
        props.update(extra)
    return MessageExtBrokerInner(topic, body, properties_to_string(props).encode(), queue_id,
                                 sys_flag=sys_flag, born_timestamp=1767268800000,
                                 born_host=("10.0.0.9", 5555), **kw)
