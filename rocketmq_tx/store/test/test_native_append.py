"""
The one-call append of the C accelerator (in ``DefaultMessageStore.async_put_message``) against the
general path it stands in for: the same puts into two stores, one of them with the C append
switched off, must give the same results and byte-identical CommitLog, ConsumeQueue and index
files, across file roll-overs, full index files, delay levels, transactions and batches.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.message import Message
from rocketmq_tx.common.messagecodec import encode_batch
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.common.test.test_native import _require_native
from rocketmq_tx.store import FlushDiskType, MessageExtBatch
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root

words = st.text(st.characters(blacklist_characters="\x01\x02 ", blacklist_categories=("Cs",)), min_size=1,
                max_size=6)
keys = st.one_of(st.none(), st.lists(words, min_size=1, max_size=3).map(" ".join), st.just(" a  b "))
tx_flags = st.sampled_from([0, 0, 0, MessageSysFlag.TRANSACTION_COMMIT_TYPE,
                            MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE])

single = st.fixed_dictionaries({
    "topic": st.sampled_from(["TopicA", "TopicB", "%RETRY%g", "T\u00e9"]),
    "queue_id": st.integers(0, 2),
    "body": st.integers(0, 3000).map(lambda n: bytes(range(256)) * (n // 256) + b"x" * (n % 256)),
    "tags": st.one_of(st.none(), st.just(""), words),
    "keys": keys,
    "uniq": st.one_of(st.none(), words),
    "delay": st.one_of(st.none(), st.none(), st.sampled_from(["1", "3", "99", "x"])),
    "sys_flag": tx_flags,
    "tags_code": st.one_of(st.none(), st.none(), st.integers(-(2**40), 2**40)),
    "born_v6": st.booleans(),
    "advance": st.sampled_from([0, 0, 0.001, 1, 3600]),
})
batch = st.fixed_dictionaries({
    "queue_id": st.integers(0, 2),
    "n": st.integers(1, 4),
    "advance": st.sampled_from([0, 1]),
})
operations = st.lists(st.one_of(single, single, single, batch), min_size=1, max_size=60)


def _files(root: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if rel.split(os.sep)[0] in ("commitlog", "consumequeue", "index"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    out[rel] = f.read()
    return out


class NativeAppendTests(SynchronousTestCase):
    def setUp(self) -> None:
        _require_native(self)

    def _stores(self, **overrides):
        clocks = Clock(), Clock()
        roots = temp_root(self), temp_root(self)
        native = open_store(os.path.join(roots[0], "s"), clocks[0], **overrides)
        general = open_store(os.path.join(roots[1], "s"), clocks[1], **overrides)
        general.append_message_native = None
        calls = []
        inner = native.append_message_native

        def counting(*args):
            r = inner(*args)
            calls.append(r is not None)
            self.write_fds.append(args[16] if len(args) > 16 else -1)
            return r
        native.append_message_native = counting  # read at every put
        self.write_fds: list[int] = []
        return (native, general), clocks, calls

    def _put_all(self, ops, **overrides) -> list:
        stores, clocks, calls = self._stores(**overrides)
        try:
            for op in ops:
                results = []
                for store, clock in zip(stores, clocks):
                    clock.advance(op["advance"])
                    if "n" in op:
                        body = encode_batch([Message("TopicA", b"b%d" % i, 0, {"KEYS": f"k{i}"})
                                             for i in range(op["n"])])
                        r = store.put_messages(MessageExtBatch("TopicA", body, queue_id=op["queue_id"]))
                    else:
                        extra = {"DELAY": op["delay"]} if op["delay"] else None
                        m = message(op["topic"], op["body"], op["queue_id"], tags=op["tags"], keys=op["keys"],
                                    uniq=op["uniq"], extra=extra, sys_flag=op["sys_flag"],
                                    tags_code=op["tags_code"])
                        if op["born_v6"]:
                            m.born_host = ("::1", 7)
                        r = store.put_message(m)
                    a = r.append_result
                    results.append((r.status, a and (a.status, a.wrote_offset, a.wrote_bytes, a.logics_offset,
                                                     a.msg_num, a.store_timestamp, a.msg_id)))
                self.assertEqual(results[0], results[1])
            for store in stores:
                store.flush()
            native, general = (_files(s.config.store_path_root_dir) for s in stores)
            self.assertEqual(sorted(native), sorted(general))
            for name, data in native.items():
                if data != general[name]:
                    at = next(i for i, (x, y) in enumerate(zip(data, general[name])) if x != y) \
                        if len(data) == len(general[name]) else "the length"
                    self.fail(f"{name} differs at {at}")
            for s in stores:
                self.assertEqual(s.topic_queue_table, stores[0].topic_queue_table)
        finally:
            for store in stores:
                store.shutdown()
        return calls

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(operations)
    def test_same_bytes(self, ops) -> None:
        self._put_all(ops)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(operations)
    def test_same_bytes_tags_indexed(self, ops) -> None:
        self._put_all(ops, index_tags=True)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(operations)
    def test_same_bytes_without_index(self, ops) -> None:
        self._put_all(ops, message_index_enable=False)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(operations)
    def test_same_bytes_sync_flush(self, ops) -> None:
        """With SYNC_FLUSH the one-call append writes the record with pwrite, not through the mapping."""
        self._put_all(ops, flush_disk_type=FlushDiskType.SYNC_FLUSH)
        self.assertTrue(all(fd >= 0 for fd in self.write_fds))

    def test_common_case_is_native(self) -> None:
        """Most puts take the one-call path; files roll over through the general one."""
        ops = [{"topic": "TopicA", "queue_id": i % 2, "body": b"m" * 900, "tags": "t", "keys": f"k{i} j{i}",
                "uniq": f"U{i}", "delay": None, "sys_flag": 0, "tags_code": None, "born_v6": False,
                "advance": 0.001} for i in range(300)]
        for flush, through_fd in ((FlushDiskType.ASYNC_FLUSH, False), (FlushDiskType.SYNC_FLUSH, True)):
            calls = self._put_all(ops, flush_disk_type=flush)
            self.assertEqual({fd >= 0 for fd in self.write_fds}, {through_fd})
            self.assertGreater(calls.count(True), 250)
            self.assertGreater(calls.count(False), 3)  # CommitLog, ConsumeQueue and index roll-overs
