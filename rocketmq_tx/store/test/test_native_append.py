"""
The one-call append of the C accelerator (in ``DefaultMessageStore.async_put_message``) against the
general path it stands in for: the same puts into two stores, one of them with the C append
switched off, must give the same results and byte-identical CommitLog, ConsumeQueue and index
files, across file roll-overs, full index files, delay levels, transactions and batches.
"""

from __future__ import annotations

import errno
import mmap
import os
import resource
import signal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.message import Message
from rocketmq_tx.common.messagecodec import encode_batch
from rocketmq_tx.common.native import speedups
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
        general.appender = None
        calls = []
        inner = native.appender.native

        def counting(*args):
            r = inner(*args)
            calls.append(r is not None)
            self.write_fds.append(args[16] if len(args) > 16 else -1)
            return r
        native.appender.native = counting  # read at every put
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


class _Obj:
    """A store object's stand-in: attributes, and a failing setattr for those named in *fail*."""

    def __init__(self, **attrs) -> None:
        object.__setattr__(self, "fail", ())
        self.__dict__.update(attrs)

    def __setattr__(self, name: str, value) -> None:
        if name in self.fail:
            raise AttributeError(f"{name} cannot be set")
        object.__setattr__(self, name, value)


_POSITIONS = {"clf": ("wrote_position", "store_timestamp"), "cqf": ("wrote_position",), "cq": ("max_physic_offset",),
              "xf": ("begin_timestamp", "end_timestamp", "begin_phy_offset", "end_phy_offset", "hash_slot_count",
                     "index_count")}


class AppendErrorPathTests(SynchronousTestCase):
    """
    append_message called directly on stand-ins, to reach every error after its first write:
    each must leave the record, ConsumeQueue and index bytes and every position as they were
    (returning None means nothing written; an exception, nothing written and nothing moved).
    """

    SLOTS, ENTRIES = 4, 40  # few slots: chains; four index items a put

    def setUp(self) -> None:
        _require_native(self)
        self.fresh()

    def fresh(self) -> None:
        """Empty stand-ins: a CommitLog file, a ConsumeQueue file past Java's filler, an index file."""
        self.fd = -1
        self.clf = _Obj(wrote_position=0, file_from_offset=1 << 20, mm=bytearray(8192), store_timestamp=0)
        self.cqf = _Obj(wrote_position=20, file_from_offset=0, mm=bytearray(400))
        self.cq = _Obj(max_physic_offset=0)
        base = 40 + 4 * self.SLOTS
        self.xf = _Obj(hash_slot_num=self.SLOTS, index_num=self.ENTRIES, _entries_base=base,
                       mm=bytearray(base + 20 * self.ENTRIES), begin_timestamp=0, end_timestamp=0,
                       begin_phy_offset=0, end_phy_offset=0, hash_slot_count=0, index_count=1)
        self.queue_offset = 1

    def put(self, n: int = 0, keys: str = "k1 k2"):
        msg = _Obj(topic="TopicA", body=b"b%d" % n * 50, properties=b"KEYS\x01" + keys.encode(), queue_id=0, flag=0,
                   sys_flag=0, born_timestamp=1, reconsume_times=0, prepared_transaction_offset=0, tags_code=None)
        r = speedups.append_message(msg, self.clf, self.cqf, self.cq, self.xf, self.queue_offset,
                                    1_700_000_000_000 + n, b"TopicA", bytes(8), bytes(8), keys, f"U{n}", "tag", True,
                                    None, 1 << 20, self.fd)
        if r is not None:
            self.queue_offset += 1
        return r

    def state(self):
        objs = {"clf": self.clf, "cqf": self.cqf, "cq": self.cq, "xf": self.xf}
        positions = {(o, a): getattr(objs[o], a) for o, names in _POSITIONS.items() for a in names}
        record = os.pread(self.fd, len(self.clf.mm), 0) if self.fd >= 0 else bytes(self.clf.mm)
        return positions, record, bytes(self.cqf.mm), bytes(self.xf.mm)

    def test_failing_position_takes_everything_back(self) -> None:
        """Each position that cannot be moved, the others moved before it put back and the bytes undone."""
        for obj, name in [(o, a) for o, names in _POSITIONS.items() for a in names]:
            self.fresh()
            for n in range(3):  # entries in the slots already, whose chains the undo must restore
                self.assertIsNotNone(self.put(n))
            before = self.state()
            target = {"clf": self.clf, "cqf": self.cqf, "cq": self.cq, "xf": self.xf}[obj]
            object.__setattr__(target, "fail", (name,))
            self.assertRaises(AttributeError, self.put, 3)
            self.assertEqual(self.state(), before, (obj, name))
            object.__setattr__(target, "fail", ())
            self.assertIsNotNone(self.put(3))  # the same append then goes in as if nothing happened
            after = self.state()
            self.fresh()
            for n in range(4):
                self.put(n)
            self.assertEqual(self.state(), after, (obj, name))

    def commitlog_file(self) -> None:
        """The CommitLog stand-in on a file, mapped, and written with pwrite (SYNC_FLUSH's path)."""
        self.fd = os.open(temp_root(self) + "-cl", os.O_RDWR | os.O_CREAT, 0o644)
        self.addCleanup(os.close, self.fd)
        os.ftruncate(self.fd, len(self.clf.mm))
        self.clf.mm = mmap.mmap(self.fd, len(self.clf.mm))
        self.addCleanup(self.clf.mm.close)

    def test_failing_position_with_pwrite(self) -> None:
        """The record went in with pwrite: it is taken back all the same."""
        self.commitlog_file()
        self.assertIsNotNone(self.put(0))
        before = self.state()
        object.__setattr__(self.clf, "fail", ("store_timestamp",))
        self.assertRaises(AttributeError, self.put, 1)
        self.assertEqual(self.state(), before)

    def test_index_too_small_for_the_entries(self) -> None:
        """An index mapping shorter than its header says: IndexError before anything is written."""
        self.assertIsNotNone(self.put(0))
        self.xf.mm = self.xf.mm[: self.xf._entries_base + 20 * (self.xf.index_count + 2)]  # 2 more entries
        before = self.state()
        self.assertRaises(IndexError, self.put, 1, "a b c d e")
        self.assertEqual(self.state(), before)
        for base in (-1, 2**62, -(2**62)):
            self.xf._entries_base = base
            self.assertRaises(IndexError, self.put, 1)
            self.assertEqual(self.state()[1:], before[1:])

    def test_positions_that_overflow(self) -> None:
        """Positions at int64's ends take the general path (None) with nothing written."""
        before = self.state()
        for obj, name, value in ((self.clf, "file_from_offset", 2**63 - 10), (self.clf, "wrote_position", 2**63 - 1),
                                 (self.cqf, "file_from_offset", 2**63 - 10), (self.cqf, "wrote_position", 2**63 - 1)):
            old = getattr(obj, name)
            setattr(obj, name, value)
            self.assertIsNone(self.put(0))
            setattr(obj, name, old)
            self.assertEqual(self.state()[1:], before[1:])
        self.queue_offset = 2**62
        self.assertIsNone(self.put(0))
        self.assertEqual(self.state(), before)

    def test_short_pwrite_then_error(self) -> None:
        """
        pwrite writes part of the record (TOTALSIZE first) and then fails (here the file size
        limit): OSError, and the part written is zeroed, positions unmoved.
        """
        self.commitlog_file()
        self.assertIsNotNone(self.put(0))
        before = self.state()
        limit = self.clf.wrote_position + 50
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        try:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
            with self.assertRaises(OSError) as e:
                self.put(1)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            signal.signal(signal.SIGXFSZ, handler)
        self.assertEqual(e.exception.errno, errno.EFBIG)
        self.assertEqual(self.state(), before)
        self.assertIsNotNone(self.put(1))
