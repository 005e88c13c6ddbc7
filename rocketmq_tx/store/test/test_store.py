"""DefaultMessageStore: put, get, lookups, batches, statuses."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.message import Message, properties_to_string, string_to_properties
from rocketmq_tx.common.messagecodec import decode_message, decode_messages, encode_batch, java_string_hash
from rocketmq_tx.common.msgid import create_offset_msg_id, decode_offset_msg_id
from rocketmq_tx.common.sysflag import BLANK_MAGIC_CODE, MessageSysFlag
from rocketmq_tx.store import (
    GetMessageStatus,
    MessageExtBatch,
    PutMessageStatus,
    TagsFilter,
)
from rocketmq_tx.store.formats import BLANK_HEAD, CQ_ENTRY
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root


class PutGetTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock()
        self.store = open_store(self.root, self.clock)
        self.addCleanup(self.store.shutdown)

    def test_put_then_get(self) -> None:
        r = self.store.put_message(message(tags="TagA", keys="k1 k2", uniq="U1", body=b"payload"))
        self.assertEqual(r.status, PutMessageStatus.PUT_OK)
        a = r.append_result
        self.assertEqual((a.wrote_offset, a.logics_offset, a.msg_num), (0, 0, 1))
        self.assertEqual(a.msg_id, create_offset_msg_id("127.0.0.1", 10911, 0))
        self.assertEqual(a.store_timestamp, int(self.clock() * 1000))
        g = self.store.get_message("g", "TopicTest", 0, 0, 32)
        self.assertEqual(g.status, GetMessageStatus.FOUND)
        self.assertEqual((g.next_begin_offset, g.min_offset, g.max_offset), (1, 0, 1))
        [msg] = decode_messages(g.body())
        self.assertEqual(msg.body, b"payload")
        self.assertEqual(msg.topic, "TopicTest")
        self.assertEqual(msg.tags, "TagA")
        self.assertEqual(msg.queue_offset, 0)
        self.assertEqual(msg.commit_log_offset, 0)
        self.assertEqual(msg.store_host, ("127.0.0.1", 10911))
        self.assertEqual(msg.born_host, ("10.0.0.9", 5555))
        self.assertEqual(msg.store_size, a.wrote_bytes)
        decode_message(g.body(), check_crc=True)

    def test_record_bytes_and_cq_entry(self) -> None:
        self.store.put_message(message(tags="TagA"))
        r = self.store.put_message(message(tags="TagB", body=b"second"))
        raw = self.store.select_one_message_by_offset(r.append_result.wrote_offset)
        self.assertEqual(int.from_bytes(raw[28:36], "big"), r.append_result.wrote_offset)
        self.assertEqual(int.from_bytes(raw[20:28], "big"), 1)
        cq_path = os.path.join(self.root, "consumequeue", "TopicTest", "0", "00000000000000000000")
        with open(cq_path, "rb") as fh:
            data = fh.read(40)
        self.assertEqual(CQ_ENTRY.unpack_from(data, 20),
                         (r.append_result.wrote_offset, len(raw), java_string_hash("TagB")))

    def test_record_by_offset_alone(self) -> None:
        """A read without a size takes TOTALSIZE from the record: the whole record, nothing past
        it; an offset past the written end, or mid-record where TOTALSIZE is no length, reads nothing."""
        first = self.store.put_message(message(tags="TagA")).append_result
        second = self.store.put_message(message(tags="TagB", body=b"second")).append_result
        for a in (first, second):
            raw = self.store.select_one_message_by_offset(a.wrote_offset)
            self.assertEqual(raw, self.store.select_one_message_by_offset(a.wrote_offset, a.wrote_bytes))
            self.assertEqual(len(raw), a.wrote_bytes)
        end = second.wrote_offset + second.wrote_bytes
        self.assertIsNone(self.store.select_one_message_by_offset(end))
        self.assertIsNone(self.store.select_one_message_by_offset(end - 2))  # 4 bytes would pass the end
        self.assertIsNone(self.store.select_one_message_by_offset(second.wrote_offset + 4))  # MAGICCODE: < 0
        self.assertIsNone(self.store.select_one_message_by_offset(second.wrote_offset - 4))  # past the end
        self.assertEqual(self.store.look_message_by_offset(second.wrote_offset).body, b"second")

    def test_queue_offsets_per_queue(self) -> None:
        for i in range(10):
            r = self.store.put_message(message(queue_id=i % 3))
            self.assertEqual(r.append_result.logics_offset, i // 3)
        self.assertEqual([self.store.get_max_offset_in_queue("TopicTest", q) for q in range(3)], [4, 3, 3])
        self.assertEqual(self.store.get_min_offset_in_queue("TopicTest", 0), 0)

    def test_blank_at_end_of_file(self) -> None:
        body = b"x" * 3000
        offsets = [self.store.put_message(message(body=body)).append_result.wrote_offset for _ in range(30)]
        size = 64 * 1024
        crossing = next(o for o in offsets if o >= size)
        self.assertEqual(crossing, size)
        last_in_first = max(o for o in offsets if o < size)
        rec_len = self.store.put_message(message(body=body)).append_result.wrote_bytes
        blank_at = last_in_first + rec_len
        with open(os.path.join(self.root, "commitlog", "00000000000000000000"), "rb") as fh:
            data = fh.read()
        self.assertEqual(BLANK_HEAD.unpack_from(data, blank_at), (size - blank_at, BLANK_MAGIC_CODE))
        self.assertTrue(os.path.exists(os.path.join(self.root, "commitlog", "00000000000000065536")))
        g = self.store.get_message("g", "TopicTest", 0, 0, 32)
        self.assertEqual(len(decode_messages(g.body())), g.message_count)

    def test_batch(self) -> None:
        msgs = [Message("TopicTest", f"b{i}".encode(), 0, {"KEYS": f"bk{i}", "UNIQ_KEY": f"BU{i}", "TAGS": "T"})
                for i in range(5)]
        batch = MessageExtBatch("TopicTest", encode_batch(msgs), b"CLUSTER\x01c1", queue_id=1,
                                born_timestamp=5, born_host=("10.0.0.1", 1))
        r = self.store.put_messages(batch)
        self.assertEqual(r.status, PutMessageStatus.PUT_OK)
        self.assertEqual(r.append_result.msg_num, 5)
        ids = r.append_result.msg_id.split(",")
        self.assertEqual(len(ids), 5)
        g = self.store.get_message("g", "TopicTest", 1, 0, 32)
        got = decode_messages(g.body(), check_crc=True)
        self.assertEqual([m.body for m in got], [f"b{i}".encode() for i in range(5)])
        self.assertEqual([m.queue_offset for m in got], list(range(5)))
        self.assertEqual([m.offset_msg_id for m in got], ids)
        self.assertEqual(got[2].properties["CLUSTER"], "c1")
        self.assertEqual(got[2].properties["KEYS"], "bk2")
        end = int(self.clock() * 1000) + 1
        q = self.store.query_message("TopicTest", "bk3", 32, 0, end)
        self.assertEqual(decode_messages(b"".join(q.message_buffers))[0].body, b"b3")

    def test_statuses(self) -> None:
        s = self.store
        self.assertEqual(s.put_message(message(topic="t" * 128)).status, PutMessageStatus.MESSAGE_ILLEGAL)
        big = message(body=b"x" * (s.config.max_message_size + 1))
        self.assertEqual(s.put_message(big).status, PutMessageStatus.MESSAGE_ILLEGAL)
        m = message()
        m.properties = b"a\x01" + b"b" * 40000
        self.assertEqual(s.put_message(m).status, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        self.assertEqual(s.commit_log.get_max_offset(), 0)

    def test_get_statuses(self) -> None:
        s = self.store
        g = s.get_message("g", "Nope", 0, 5, 32)  # Java creates the queue on lookup: "no message"
        self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0))
        for _ in range(3):
            s.put_message(message())
        g = s.get_message("g", "TopicTest", 0, 3, 32)
        self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.OFFSET_OVERFLOW_ONE, 3))
        g = s.get_message("g", "TopicTest", 0, 9, 32)  # 4.9 corrects to the max offset
        self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3))
        g = s.get_message("g", "TopicTest", 0, 1, 1)
        self.assertEqual((g.status, g.next_begin_offset, g.message_count), (GetMessageStatus.FOUND, 2, 1))
        s.find_consume_queue("TopicTest", 7)
        g = s.get_message("g", "TopicTest", 7, 4, 32)
        self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0))

    def test_tag_filter(self) -> None:
        for i in range(10):
            self.store.put_message(message(tags="A" if i % 2 else "B", body=bytes([i])))
        g = self.store.get_message("g", "TopicTest", 0, 0, 32, TagsFilter(["A"]))
        self.assertEqual(g.status, GetMessageStatus.FOUND)
        self.assertEqual([m.body[0] for m in decode_messages(g.body())], [1, 3, 5, 7, 9])
        self.assertEqual(g.message_queue_offsets, [1, 3, 5, 7, 9])
        g = self.store.get_message("g", "TopicTest", 0, 0, 32, TagsFilter(["C"]))
        self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.NO_MATCHED_MESSAGE, 10))

    def test_pull_limits(self) -> None:
        for _ in range(40):
            self.store.put_message(message())
        g = self.store.get_message("g", "TopicTest", 0, 0, 100)
        self.assertEqual(g.message_count, 32)  # maxTransferCountOnMessageInMemory
        self.assertEqual(g.next_begin_offset, 32)

    def test_pull_reads_a_bounded_index(self) -> None:
        """A pull far behind copies the ConsumeQueue entries it may scan (16,000 bytes, Java's
        maxFilterMessageSize floor), not the rest of the file; the tag filter still reaches the
        end of that window and says where the next pull starts."""
        store = open_store(temp_root(self), Clock(), mapped_file_size_commit_log=1 << 20,
                           mapped_file_size_consume_queue=20 * 2000)
        self.addCleanup(store.shutdown)
        for i in range(1200):
            store.put_message(message(tags="A" if i == 1100 else "B", body=b"x"))
        cq = store.find_consume_queue("TopicTest", 0)
        self.assertEqual(len(cq.get_index_buffer(0)[0]), 1200 * 20)
        self.assertEqual(len(cq.get_index_buffer(10, 100)[0]), 100)
        self.assertEqual(len(cq.get_index_buffer(10, 0)[0]), 20)  # at least one entry
        sizes: list[int] = []
        original = type(cq).get_index_buffer
        self.patch(type(cq), "get_index_buffer",
                   lambda q, i, *bound: sizes.append(len(original(q, i, *bound)[0])) or original(q, i, *bound))
        g = store.get_message("g", "TopicTest", 0, 0, 32, TagsFilter(["A"]))
        self.assertEqual((g.status, g.next_begin_offset), (GetMessageStatus.NO_MATCHED_MESSAGE, 800))
        g = store.get_message("g", "TopicTest", 0, 800, 32, TagsFilter(["A"]))
        self.assertEqual((g.status, g.message_queue_offsets), (GetMessageStatus.FOUND, [1100]))
        self.assertEqual(sizes, [16000, 8000])

    def test_lookups(self) -> None:
        s = self.store
        offsets = []
        for i in range(5):
            offsets.append(s.put_message(message(keys=f"key{i}", uniq=f"UNIQ{i}", body=bytes([i]))).append_result)
            self.clock.advance(10)
        self.assertEqual(s.get_earliest_message_time("TopicTest", 0), offsets[0].store_timestamp)
        self.assertEqual(s.get_earliest_message_time(), offsets[0].store_timestamp)
        self.assertEqual(s.get_offset_in_queue_by_time("TopicTest", 0, offsets[2].store_timestamp), 2)
        self.assertEqual(s.get_offset_in_queue_by_time("TopicTest", 0, offsets[2].store_timestamp + 1000), 2)
        self.assertEqual(s.get_offset_in_queue_by_time("TopicTest", 0, offsets[2].store_timestamp + 9000), 3)
        self.assertEqual(s.get_offset_in_queue_by_time("TopicTest", 0, 0), 0)
        host, port, phy = decode_offset_msg_id(offsets[3].msg_id)
        msg = s.look_message_by_offset(phy)
        self.assertEqual((msg.body, msg.keys), (b"\x03", ["key3"]))
        self.assertIsNone(s.look_message_by_offset(10**9))
        end = int(self.clock() * 1000)
        q = s.query_message("TopicTest", "UNIQ4", 32, 0, end)
        self.assertEqual(decode_messages(b"".join(q.message_buffers))[0].body, b"\x04")
        q = s.query_message("TopicTest", "key1", 32, offsets[3].store_timestamp, end)
        self.assertEqual(q.message_buffers, [])
        q = s.query_message("Other", "key1", 32, 0, end)
        self.assertEqual(q.message_buffers, [])
        self.assertEqual(s.get_commit_log_offset_in_queue("TopicTest", 0, 2), offsets[2].wrote_offset)

    def test_prepared_gets_no_cq_entry(self) -> None:
        r = self.store.put_message(message(sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE))
        self.assertEqual(r.status, PutMessageStatus.PUT_OK)
        self.assertEqual(r.append_result.logics_offset, 0)
        self.assertEqual(self.store.get_max_offset_in_queue("TopicTest", 0), 0)
        r = self.store.put_message(message())
        self.assertEqual(r.append_result.logics_offset, 0)

    def test_delay_level(self) -> None:
        r = self.store.put_message(message(extra={"DELAY": "3"}, queue_id=2))
        ts = r.append_result.store_timestamp
        self.assertEqual(self.store.get_max_offset_in_queue("TopicTest", 2), 0)
        g = self.store.get_message("g", "SCHEDULE_TOPIC_XXXX", 2, 0, 32)
        [msg] = decode_messages(g.body())
        self.assertEqual(msg.properties["REAL_TOPIC"], "TopicTest")
        self.assertEqual(msg.properties["REAL_QID"], "2")
        cq = self.store.find_consume_queue("SCHEDULE_TOPIC_XXXX", 2)
        self.assertEqual(cq.get_entry(0)[2], ts + 10_000)

    def test_shutdown_refuses(self) -> None:
        self.store.shutdown()
        self.assertEqual(self.store.put_message(message()).status, PutMessageStatus.SERVICE_NOT_AVAILABLE)
        self.store = open_store(self.root, self.clock)

    def test_lock(self) -> None:
        from rocketmq_tx.store.store import DefaultMessageStore
        from rocketmq_tx.store.test.util import small_config
        other = DefaultMessageStore(small_config(self.root))
        # lockf locks are per process: the same process may re-lock, so only check the file exists
        self.assertTrue(os.path.exists(os.path.join(self.root, "lock")))
        self.assertTrue(os.path.exists(os.path.join(self.root, "abort")))
        del other

    def test_properties_roundtrip_bytes_as_given(self) -> None:
        props = properties_to_string({"TAGS": "x", "Z": "1"}).encode() + b"\x02"  # 5.x trailing separator
        m = message()
        m.properties = props
        r = self.store.put_message(m)
        raw = self.store.select_one_message_by_offset(r.append_result.wrote_offset)
        self.assertTrue(raw.endswith(props))
        self.assertEqual(string_to_properties(props.decode())["Z"], "1")


class GetPropertyTests(SynchronousTestCase):
    """The put path's direct property lookup agrees with the full parser."""

    from hypothesis import given as _given
    from hypothesis import strategies as _st

    _value = _st.text(_st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)),
                      max_size=8)

    @_given(_st.dictionaries(_st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "DELAY", "XKEYS", "A"]), _value),
            _st.booleans())
    def test_matches_parser(self, props: dict, trailing: bool) -> None:
        from rocketmq_tx.store.commitlog import get_property
        text = properties_to_string(props) + ("\x02" if trailing else "")
        parsed = string_to_properties(text)
        for name in ("KEYS", "TAGS", "UNIQ_KEY", "DELAY"):
            self.assertEqual(get_property(text.encode(), name.encode() + b"\x01"), parsed.get(name) or None)
