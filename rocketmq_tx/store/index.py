# -*- test-case-name: rocketmq_tx.store.test.test_index -*-
"""
IndexFile and IndexService (Java ``IndexFile``/``IndexService``): a hash index from
``topic#key`` (message keys and UNIQ_KEY) to CommitLog offsets, in files named by their
creation time (``yyyyMMddHHmmssSSS``, local time).

Layout (protocol notes §6.3): a 40-byte header, ``maxHashSlotNum`` int32 slots holding the
newest entry of each bucket, and ``maxIndexNum`` 20-byte entries chained backwards.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import lru_cache
from operator import mul as _mul

from rocketmq_tx.common.javatext import time_millis_to_human_string
from rocketmq_tx.common.message import KEY_SEPARATOR
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.store.formats import (
    INDEX_ENTRY,
    INDEX_ENTRY_SIZE,
    INDEX_HASH_SLOT_SIZE,
    INDEX_HEADER,
    INDEX_HEADER_SIZE,
    INDEX_SLOT,
)
from rocketmq_tx.store.mappedfile import CREATING_SUFFIX, MappedFile

__all__ = ["IndexFile", "IndexService", "index_key_hash", "build_key"]

log = logging.getLogger("rocketmq_tx.store")
_MAX_INT = 0x7FFFFFFF


_POWERS: dict[int, list[int]] = {}


def _powers(n: int) -> list[int]:
    p = _POWERS.get(n)
    if p is None:
        p = [pow(31, n - 1 - i, 1 << 32) for i in range(n)]
        if n <= 512:
            _POWERS[n] = p
    return p


def fast_string_hash(text: str) -> int:
    """
    Java ``String.hashCode`` as an unsigned 32-bit value: for ASCII text one C-level
    multiply-and-sum with precomputed powers of 31 (about 4x faster than the loop in
    :func:`~rocketmq_tx.common.messagecodec.java_string_hash`, which handles the rest).
    """
    if text.isascii():
        data = text.encode("ascii")
        return sum(map(_mul, data, _powers(len(data)))) & 0xFFFFFFFF
    return java_string_hash(text) & 0xFFFFFFFF


def _abs_hash(h: int) -> int:
    if h & 0x80000000:
        h = 0x100000000 - h
    return 0 if h > _MAX_INT else h


def index_key_hash(key: str) -> int:
    """Java ``indexKeyHashMethod``: ``abs(key.hashCode())``, 0 for Integer.MIN_VALUE."""
    return _abs_hash(fast_string_hash(key))


@lru_cache(maxsize=1024)
def _prefix(topic: str) -> tuple[int, bool]:
    return fast_string_hash(topic + "#"), topic.isascii()


@lru_cache(maxsize=512)
def _pow31(n: int) -> int:
    return pow(31, n, 1 << 32)


def _plain_str(text: str) -> str:
    """
    *text* as an exact ``str``: a subclass's ``__hash__``/``__eq__`` must not reach
    :func:`_prefix`'s cache (nor its ``__str__`` an f-string), as the C version reads only the
    characters; ``TypeError``, as it raises, for anything else.
    """
    if not isinstance(text, str):
        raise TypeError("topic_key_hash(topic: str, key: str)")
    return str.__str__(text)


def _topic_key_hash(topic: str, key: str) -> int:
    """``index_key_hash(topic + "#" + key)``, reusing the hash of the ``topic#`` prefix."""
    if topic.__class__ is not str or key.__class__ is not str:
        topic, key = _plain_str(topic), _plain_str(key)
    prefix_hash, ascii_topic = _prefix(topic)
    if ascii_topic and key.isascii():
        data = key.encode("ascii")
        n = len(data)
        return _abs_hash((prefix_hash * _pow31(n) + sum(map(_mul, data, _powers(n)))) & 0xFFFFFFFF)
    return index_key_hash(build_key(topic, key))


topic_key_hash: Callable[[str, str], int] = speedups.topic_key_hash if speedups else _topic_key_hash
_native_put_keys = speedups.index_put_keys if speedups else None


def index_items(uniq_key: str | None, keys: str | None, tags: str | None) -> list[str]:
    """
    What Java's ``buildIndex`` indexes for one message, in order: UNIQ_KEY, each word of KEYS,
    and ``T#`` + TAGS (given only when tags are indexed).
    """
    items = [uniq_key] if uniq_key else []
    if keys:
        items.extend(k for k in keys.split(KEY_SEPARATOR) if k)
    if tags:
        items.append("T#" + tags)
    return items


def build_key(topic: str, key: str) -> str:
    return f"{topic}#{key}"


class IndexFile:
    __slots__ = ("path", "hash_slot_num", "index_num", "file_size", "mapped_file", "mm", "begin_timestamp",
                 "end_timestamp", "begin_phy_offset", "end_phy_offset", "hash_slot_count", "index_count",
                 "_entries_base")

    def __init__(self, path: str, hash_slot_num: int, index_num: int, end_phy_offset: int = 0,
                 end_timestamp: int = 0, *, create: bool = True) -> None:
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.file_size = INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE
        # Allocated up front (Java leaves it sparse): a full disk then fails the creation of an
        # index file instead of raising SIGBUS on a later write into a hole.
        self.mapped_file = MappedFile(path, self.file_size, create=create)
        self.mm = self.mapped_file.mm
        self.path = path
        (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
         self.hash_slot_count, self.index_count) = INDEX_HEADER.unpack_from(self.mm, 0)
        if self.index_count <= 0:
            self.index_count = 1
        if end_phy_offset > 0:
            self.begin_phy_offset = self.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            self.begin_timestamp = self.end_timestamp = end_timestamp
        self._entries_base = INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE

    def _write_header(self) -> None:
        INDEX_HEADER.pack_into(self.mm, 0, self.begin_timestamp, self.end_timestamp,
                               self.begin_phy_offset, self.end_phy_offset, self.hash_slot_count,
                               self.index_count)

    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Add one entry; ``False`` when the file is full (Java ``putKey``)."""
        return self.put_hash(index_key_hash(key), phy_offset, store_timestamp)

    def put_hash(self, key_hash: int, phy_offset: int, store_timestamp: int) -> bool:
        """:meth:`put_key` with the key's hash already computed."""
        if self.index_count >= self.index_num:
            return False
        slot_pos = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * INDEX_HASH_SLOT_SIZE
        slot_value = INDEX_SLOT.unpack_from(self.mm, slot_pos)[0]
        if slot_value <= 0 or slot_value > self.index_count:
            slot_value = 0
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            time_diff = (store_timestamp - self.begin_timestamp) // 1000 if store_timestamp >= self.begin_timestamp \
                else -((self.begin_timestamp - store_timestamp) // 1000)
            time_diff = min(max(time_diff, 0), _MAX_INT)
        pos = self._entries_base + self.index_count * INDEX_ENTRY_SIZE
        INDEX_ENTRY.pack_into(self.mm, pos, key_hash, phy_offset, time_diff, slot_value)
        INDEX_SLOT.pack_into(self.mm, slot_pos, self.index_count)
        if self.index_count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        self._write_header()
        return True

    def _put_keys(self, topic: str, uniq_key: str | None, keys: str | None, tags: str | None,
                  phy_offset: int, store_timestamp: int, skip: int = 0) -> int:
        """
        Index one message (:func:`index_items` as ``topic#item``), skipping the first *skip*
        items. :return: -1 when all are in, else the position of the first item that did not
        fit (the file is full).
        """
        # the C version's TypeError, also for what index_items would skip (a falsy non-str)
        if not isinstance(topic, str):
            raise TypeError("index_put_keys: topic must be a str, the keys str or None")
        for text in (uniq_key, keys, tags):
            if text is not None and text.__class__ is not str and not isinstance(text, str):
                raise TypeError("index_put_keys: topic must be a str, the keys str or None")
        items = index_items(uniq_key, keys, tags)
        for i in range(skip, len(items)):
            if not self.put_hash(topic_key_hash(topic, items[i]), phy_offset, store_timestamp):
                return i
        return -1

    def _put_keys_native(self, topic: str, uniq_key: str | None, keys: str | None, tags: str | None,
                         phy_offset: int, store_timestamp: int, skip: int = 0) -> int:
        assert _native_put_keys is not None  # put_keys is this method only with the accelerator
        (nxt, self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
         self.hash_slot_count, self.index_count) = _native_put_keys(
            self.mm, self.hash_slot_num, self.index_num, self._entries_base, self.begin_timestamp,
            self.end_timestamp, self.begin_phy_offset, self.end_phy_offset, self.hash_slot_count,
            self.index_count, topic, uniq_key, keys, tags, skip, phy_offset, store_timestamp)
        return nxt

    put_keys = _put_keys_native if speedups else _put_keys

    def is_time_matched(self, begin: int, end: int) -> bool:
        return ((begin < self.begin_timestamp and end > self.end_timestamp)
                or self.begin_timestamp <= begin <= self.end_timestamp
                or self.begin_timestamp <= end <= self.end_timestamp)

    def select_phy_offset(self, out: list[int], key: str, max_num: int, begin: int, end: int) -> None:
        """Append to *out* the offsets of entries for *key* stored within [begin, end]."""
        key_hash = index_key_hash(key)
        slot_pos = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * INDEX_HASH_SLOT_SIZE
        slot_value = INDEX_SLOT.unpack_from(self.mm, slot_pos)[0]
        if slot_value <= 0 or slot_value > self.index_count or self.index_count <= 1:
            return
        next_index = slot_value
        seen = 0
        while len(out) < max_num and seen <= self.index_count:
            seen += 1
            pos = self._entries_base + next_index * INDEX_ENTRY_SIZE
            hash_read, phy_read, time_diff, prev = INDEX_ENTRY.unpack_from(self.mm, pos)
            if time_diff < 0:
                break
            time_read = self.begin_timestamp + time_diff * 1000
            matched = begin <= time_read <= end
            if hash_read == key_hash and matched:
                out.append(phy_read)
            if prev <= 0 or prev > self.index_count or prev == next_index or time_read < begin:
                break
            next_index = prev

    def flush(self) -> None:
        self.mapped_file.wrote_position = self.file_size
        self.mapped_file.flushed_position = 0
        self.mapped_file.flush(0)

    def destroy(self) -> bool:
        return self.mapped_file.destroy()

    def close(self) -> None:
        self.mapped_file.close()


class IndexService:
    """The index files of ``<root>/index`` (Java ``IndexService``)."""

    def __init__(self, store_path: str, hash_slot_num: int, index_num: int,
                 now_ms: Callable[[], int], index_tags: bool = False) -> None:
        self.index_tags = index_tags
        self.store_path = store_path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.now_ms = now_ms
        self.files: list[IndexFile] = []

    def load(self, last_exit_ok: bool, index_msg_timestamp: int) -> bool:
        if not os.path.isdir(self.store_path):
            return True
        size = INDEX_HEADER_SIZE + self.hash_slot_num * INDEX_HASH_SLOT_SIZE + self.index_num * INDEX_ENTRY_SIZE
        for name in sorted(os.listdir(self.store_path)):
            path = os.path.join(self.store_path, name)
            if name.endswith(CREATING_SUFFIX):
                os.unlink(path)
                continue
            if not name.isdigit() or os.path.getsize(path) != size:
                log.warning("ignoring index file %s (name or size does not match)", path)
                continue
            f = IndexFile(path, self.hash_slot_num, self.index_num, create=False)
            if not last_exit_ok and f.end_timestamp > index_msg_timestamp:
                f.destroy()
                continue
            self.files.append(f)
        return True

    def _last_file(self) -> IndexFile:
        if self.files and not self.files[-1].is_write_full():
            return self.files[-1]
        prev = self.files[-1] if self.files else None
        end_phy = prev.end_phy_offset if prev else 0
        end_ts = prev.end_timestamp if prev else 0
        os.makedirs(self.store_path, exist_ok=True)
        ms = self.now_ms()
        name = time_millis_to_human_string(ms)
        taken = {os.path.basename(f.path) for f in self.files}  # once: a stopped clock rolls many in one ms
        while name in taken:
            ms += 1
            name = time_millis_to_human_string(ms)
        f = IndexFile(os.path.join(self.store_path, name), self.hash_slot_num, self.index_num,
                      end_phy, end_ts)
        if prev is not None:
            prev.flush()
        self.files = self.files + [f]
        return f

    def build_index(self, topic: str, commit_log_offset: int, store_timestamp: int, sys_flag: int,
                    keys: str, uniq_key: str | None, tags: str | None = None) -> None:
        """Index one message (Java ``buildIndex``); already-indexed offsets are skipped."""
        try:
            f = self._last_file()
        except OSError as e:
            log.error("cannot create an index file in %s: %s; message not indexed", self.store_path, e)
            return
        if commit_log_offset < f.end_phy_offset:
            return
        if sys_flag & MessageSysFlag.TRANSACTION_MASK == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
            return
        nxt = f.put_keys(topic, uniq_key, keys, tags if self.index_tags else None, commit_log_offset,
                         store_timestamp)
        while nxt >= 0:
            try:
                f = self._last_file()
            except OSError as e:
                log.error("cannot create an index file: %s", e)
                return
            nxt = f.put_keys(topic, uniq_key, keys, tags if self.index_tags else None, commit_log_offset,
                             store_timestamp, nxt)

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """
        :return: ``(phy_offsets, index_last_update_timestamp, index_last_update_phyoffset)``
            (Java ``QueryOffsetResult``), newest files first.
        """
        offsets: list[int] = []
        last_ts = last_phy = 0
        files = self.files
        for i in range(len(files) - 1, -1, -1):
            f = files[i]
            if i == len(files) - 1:
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end):
                f.select_phy_offset(offsets, build_key(topic, key), max_num, begin, end)
            if f.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return offsets, last_ts, last_phy

    def delete_expired_file(self, min_commit_log_offset: int) -> int:
        files = self.files
        doomed = [f for f in files[:-1] if f.end_phy_offset < min_commit_log_offset]
        if not doomed:
            return 0
        self.files = [f for f in files if f not in doomed]
        for f in doomed:
            f.destroy()
        return len(doomed)

    def flush(self) -> int:
        """Flush the newest file; return its end timestamp (for the checkpoint)."""
        if not self.files:
            return 0
        f = self.files[-1]
        f.flush()
        return f.end_timestamp

    def close(self) -> None:
        for f in self.files:
            f.close()
