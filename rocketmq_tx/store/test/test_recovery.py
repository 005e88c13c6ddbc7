"""Restart and crash recovery: checkpoint, abort marker, torn tails, model-based checks."""

from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.store import DefaultMessageStore, GetMessageStatus, PutMessageStatus
from rocketmq_tx.store.checkpoint import StoreCheckpoint
from rocketmq_tx.store.formats import CHECKPOINT
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root


def read_all(store: DefaultMessageStore, topic: str, queue_id: int, offsets: list | None = None) -> list:
    out = []
    offset = store.get_min_offset_in_queue(topic, queue_id)
    while True:
        g = store.get_message("g", topic, queue_id, offset, 32)
        if g.status is not GetMessageStatus.FOUND:
            break
        out += decode_messages(g.body(), check_crc=True)
        if offsets is not None:
            offsets += g.message_queue_offsets
        offset = g.next_begin_offset
    return out


class RecoveryTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock()

    def fill(self, store: DefaultMessageStore, n: int, start: int = 0, queues: int = 2) -> None:
        for i in range(start, start + n):
            r = store.put_message(message(body=b"m%05d" % i * 40, queue_id=i % queues, keys=f"k{i}",
                                          uniq=f"U{i}"))
            self.assertEqual(r.status, PutMessageStatus.PUT_OK)
            self.clock.advance(0.01)

    def test_clean_restart(self) -> None:
        s = open_store(self.root, self.clock)
        self.fill(s, 200)
        s.shutdown()
        self.assertFalse(os.path.exists(os.path.join(self.root, "abort")))
        with open(os.path.join(self.root, "checkpoint"), "rb") as fh:
            raw = fh.read()
        self.assertEqual(len(raw), 4096)
        physic, logics, index, _, _ = CHECKPOINT.unpack_from(raw)
        self.assertGreater(physic, 0)
        self.assertEqual(physic, logics)
        s = open_store(self.root, self.clock)
        self.assertTrue(s.last_exit_ok)
        self.assertEqual(len(read_all(s, "TopicTest", 0)), 100)
        r = s.put_message(message(queue_id=1))
        self.assertEqual(r.append_result.logics_offset, 100)
        s.shutdown()

    def test_crash_restart_keeps_everything(self) -> None:
        s = open_store(self.root, self.clock)
        self.fill(s, 300)
        end = s.commit_log.get_max_offset()
        s.simulate_crash()
        s = open_store(self.root, self.clock)
        self.assertFalse(s.last_exit_ok)
        self.assertEqual(s.commit_log.get_max_offset(), end)
        msgs = read_all(s, "TopicTest", 1)
        self.assertEqual([m.queue_offset for m in msgs], list(range(150)))
        q = s.query_message("TopicTest", "k299", 32, 0, int(self.clock() * 1000))
        self.assertEqual(len(q.message_buffers), 1)
        s.shutdown()

    def test_missing_cq_entries_rebuilt(self) -> None:
        s = open_store(self.root, self.clock)
        self.fill(s, 10, queues=1)
        s.simulate_crash()
        cq_file = os.path.join(self.root, "consumequeue", "TopicTest", "0", "00000000000000000000")
        with open(cq_file, "r+b") as fh:  # lose the last three entries
            fh.seek(7 * 20)
            fh.write(bytes(60))
        s = open_store(self.root, self.clock)
        self.assertEqual(s.get_max_offset_in_queue("TopicTest", 0), 10)
        self.assertEqual(len(read_all(s, "TopicTest", 0)), 10)
        s.shutdown()

    def test_cq_entries_past_end_dropped(self) -> None:
        s = open_store(self.root, self.clock)
        self.fill(s, 10, queues=1)
        last = s.commit_log.get_max_offset()
        size = last // 10
        s.simulate_crash()
        with open(os.path.join(self.root, "commitlog", "00000000000000000000"), "r+b") as fh:
            fh.seek(last - 5)  # tear the last record
            fh.write(bytes(5))
        s = open_store(self.root, self.clock)
        self.assertEqual(s.commit_log.get_max_offset(), last - size)
        self.assertEqual(s.get_max_offset_in_queue("TopicTest", 0), 9)
        self.assertEqual(len(read_all(s, "TopicTest", 0)), 9)
        r = s.put_message(message())
        self.assertEqual((r.append_result.logics_offset, r.append_result.wrote_offset), (9, last - size))
        s.shutdown()

    def test_load_refuses_wrong_sized_file(self) -> None:
        s = open_store(self.root, self.clock)
        self.fill(s, 5)
        s.shutdown()
        with open(os.path.join(self.root, "commitlog", "00000000000000000000"), "r+b") as fh:
            fh.truncate(1000)
        store = DefaultMessageStore(s.config, now=self.clock)
        self.assertFalse(store.load())

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(n=st.integers(1, 60), cut=st.integers(1, 400), mode=st.sampled_from(["zero", "flip", "random"]),
           seed=st.integers(0, 2**32))
    def test_damaged_tail(self, n: int, cut: int, mode: str, seed: int) -> None:
        root = temp_root(self)
        clock = Clock()
        s = open_store(root, clock)
        bodies = []
        for i in range(n):
            body = random.Random(seed + i).randbytes(random.Random(i).randint(1, 900))
            bodies.append(body)
            s.put_message(message(body=body, keys=f"k{i}"))
            clock.advance(1)
        end = s.commit_log.get_max_offset()
        s.simulate_crash()
        cut = min(cut, end)
        rng = random.Random(seed)
        path = os.path.join(root, "commitlog", f"{((end - 1) // (64 * 1024)) * 64 * 1024:020d}")
        pos_in_file = (end - 1) % (64 * 1024) + 1
        with open(path, "r+b") as fh:
            start = max(0, pos_in_file - cut)
            fh.seek(start)
            old = fh.read(pos_in_file - start)
            if mode == "zero":
                new = bytes(len(old))
            elif mode == "flip":
                i = rng.randrange(len(old))
                new = old[:i] + bytes([old[i] ^ 0xFF]) + old[i + 1:]
            else:
                new = rng.randbytes(len(old))
            fh.seek(start)
            fh.write(new)
        s = open_store(root, clock)
        queue_offsets: list = []
        got = read_all(s, "TopicTest", 0, queue_offsets)
        self.assertLessEqual(len(got), n)
        self.assertEqual([m.body for m in got], bodies[: len(got)])
        self.assertEqual(queue_offsets, list(range(len(got))))
        self.assertEqual(s.get_max_offset_in_queue("TopicTest", 0), len(got))
        r = s.put_message(message(body=b"after"))
        self.assertEqual(r.append_result.logics_offset, len(got))
        self.assertEqual(read_all(s, "TopicTest", 0)[-1].body, b"after")
        s.shutdown()
        s = open_store(root, clock)
        self.assertEqual(len(read_all(s, "TopicTest", 0)), len(got) + 1)
        s.shutdown()


class ModelTests(SynchronousTestCase):
    """Random puts, clean restarts and crashes against a dict-of-lists model."""

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.one_of(
        st.tuples(st.just("put"), st.integers(0, 2), st.integers(0, 3000)),
        st.tuples(st.just("batch"), st.integers(0, 2), st.integers(1, 5)),
        st.tuples(st.just("restart"), st.just(0), st.just(0)),
        st.tuples(st.just("crash"), st.just(0), st.just(0)),
    ), min_size=1, max_size=40))
    def test_model(self, ops: list) -> None:
        from rocketmq_tx.common.message import Message
        from rocketmq_tx.common.messagecodec import encode_batch
        from rocketmq_tx.store import MessageExtBatch

        root = temp_root(self)
        clock = Clock()
        s = open_store(root, clock)
        model: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
        n = 0
        for op, q, arg in ops:
            clock.advance(0.5)
            if op == "put":
                body = b"%d-" % n + b"z" * arg
                n += 1
                r = s.put_message(message(body=body, queue_id=q, tags=f"t{n % 3}"))
                self.assertEqual(r.append_result.logics_offset, len(model[q]))
                model[q].append(body)
            elif op == "batch":
                bodies = [b"b%d" % (n + i) for i in range(arg)]
                n += arg
                r = s.put_messages(MessageExtBatch("TopicTest", encode_batch(
                    [Message("TopicTest", b) for b in bodies]), queue_id=q))
                self.assertEqual(r.status, PutMessageStatus.PUT_OK)
                model[q] += bodies
            elif op == "restart":
                s.shutdown()
                s = open_store(root, clock)
            else:
                s.simulate_crash()
                s = open_store(root, clock)
            for qid, bodies in model.items():
                self.assertEqual(s.get_max_offset_in_queue("TopicTest", qid), len(bodies))
        for qid, bodies in model.items():
            self.assertEqual([m.body for m in read_all(s, "TopicTest", qid)], bodies)
        s.shutdown()


_ = StoreCheckpoint


class TornConsumeQueueTests(SynchronousTestCase):
    def test_torn_cq_entry_rebuilt(self) -> None:
        root = temp_root(self)
        clock = Clock()
        s = open_store(root, clock)
        for i in range(5):
            s.put_message(message(body=b"%d" % i, tags="x"))
        s.simulate_crash()
        cq_file = os.path.join(root, "consumequeue", "TopicTest", "0", "00000000000000000000")
        with open(cq_file, "r+b") as fh:  # the last entry lost the low bytes of its offset
            fh.seek(4 * 20 + 6)
            fh.write(b"\0\0")
        s = open_store(root, clock)
        self.assertEqual([m.body for m in read_all(s, "TopicTest", 0)], [b"%d" % i for i in range(5)])
        s.shutdown()
