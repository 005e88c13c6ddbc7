"""DefaultMessageStore against the capability Protocols of store.interfaces and their contract."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.message import Message
from rocketmq_tx.common.messagecodec import decode_messages, encode_batch
from rocketmq_tx.store import GetMessageStatus, MessageExtBatch, PutMessageStatus, TagsFilter
from rocketmq_tx.store.interfaces import IMessageAppender, IMessageReader, IOffsetIndex, IStoreLifecycle
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root


class MessageStoreContractMixin:
    def make_store(self):
        raise NotImplementedError

    def setUp(self) -> None:
        self.clock = Clock()
        self.store = self.make_store()
        self.addCleanup(self.store.shutdown)

    def test_protocols(self) -> None:
        for proto in (IMessageAppender, IMessageReader, IOffsetIndex, IStoreLifecycle):
            self.assertIsInstance(self.store, proto)

    def test_put_get(self) -> None:
        ids = []
        for i in range(5):
            r = self.store.put_message(message(body=b"%d" % i, tags="A" if i % 2 else "B", keys=f"k{i}",
                                               uniq=f"U{i}"))
            self.assertEqual(r.status, PutMessageStatus.PUT_OK)
            self.assertEqual(r.append_result.logics_offset, i)
            ids.append(r.append_result)
            self.clock.advance(1)
        g = self.store.get_message("g", "TopicTest", 0, 0, 32)
        self.assertEqual((g.status, g.next_begin_offset, g.max_offset), (GetMessageStatus.FOUND, 5, 5))
        msgs = decode_messages(g.body(), check_crc=True)
        self.assertEqual([m.body for m in msgs], [b"%d" % i for i in range(5)])
        self.assertEqual([m.offset_msg_id for m in msgs], [a.msg_id for a in ids])
        g = self.store.get_message("g", "TopicTest", 0, 0, 32, TagsFilter(["A"]))
        self.assertEqual(g.message_queue_offsets, [1, 3])
        self.assertEqual(self.store.get_message("g", "TopicTest", 0, 5, 32).status,
                         GetMessageStatus.OFFSET_OVERFLOW_ONE)
        self.assertEqual(self.store.get_message("g", "TopicTest", 0, 9, 32).status,
                         GetMessageStatus.OFFSET_OVERFLOW_BADLY)
        self.assertEqual(self.store.get_message("g", "Nope", 0, 0, 32).status,
                         GetMessageStatus.NO_MESSAGE_IN_QUEUE)
        self.assertEqual(self.store.look_message_by_offset(ids[2].wrote_offset).body, b"2")
        q = self.store.query_message("TopicTest", "k3", 32, 0, int(self.clock() * 1000))
        self.assertEqual(decode_messages(b"".join(q.message_buffers))[0].body, b"3")
        self.assertEqual(self.store.get_offset_in_queue_by_time("TopicTest", 0, ids[3].store_timestamp), 3)
        self.assertEqual(self.store.get_earliest_message_time("TopicTest", 0), ids[0].store_timestamp)
        self.assertEqual(self.store.get_max_offset_in_queue("TopicTest", 0), 5)
        self.assertEqual(self.store.get_min_offset_in_queue("TopicTest", 0), 0)

    def test_batch(self) -> None:
        body = encode_batch([Message("TopicTest", b"b%d" % i, 0, {"KEYS": f"b{i}"}) for i in range(3)])
        r = self.store.put_messages(MessageExtBatch("TopicTest", body, queue_id=1))
        self.assertEqual((r.status, r.append_result.msg_num), (PutMessageStatus.PUT_OK, 3))
        g = self.store.get_message("g", "TopicTest", 1, 0, 32)
        self.assertEqual([m.queue_offset for m in decode_messages(g.body())], [0, 1, 2])

    def test_illegal(self) -> None:
        self.assertEqual(self.store.put_message(message(topic="x" * 200)).status, PutMessageStatus.MESSAGE_ILLEGAL)


class DefaultMessageStoreContractTests(MessageStoreContractMixin, SynchronousTestCase):
    def make_store(self):
        return open_store(temp_root(self), self.clock)

