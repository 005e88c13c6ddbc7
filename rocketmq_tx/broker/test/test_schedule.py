"""ScheduleMessageService: delay levels delivered on time, in order, once, across restarts."""

from __future__ import annotations

import os
from pathlib import Path

from twisted.trial.unittest import TestCase

from rocketmq_tx.broker.schedule import ScheduleMessageService, delay_offset_path, message_timeup
from rocketmq_tx.common.message import MessageConst
from rocketmq_tx.common.messagecodec import decode_message, java_string_hash
from rocketmq_tx.store.commitlog import RMQ_SYS_SCHEDULE_TOPIC
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.test.util import T0, Clock, message, open_store, temp_root

JAVA_DATA = Path(__file__).resolve().parents[2] / "store" / "test" / "data"
T0_MS = int(T0 * 1000)
TOPIC = "TopicTest"


class ScheduleTestBase(TestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock()
        self.store = open_store(self.root, self.clock)
        self.addCleanup(self._shutdown)
        self.service = self.make_service()

    def _shutdown(self) -> None:
        if not self.store.shutdown_flag:
            self.store.shutdown()

    def make_service(self) -> ScheduleMessageService:
        service = ScheduleMessageService(self.store, delay_offset_path(self.root))
        self.assertTrue(service.load())
        return service

    def reopen(self) -> None:
        """Clean store shutdown and reload, with a fresh service reading delayOffset.json."""
        self.assertTrue(self.service.persist())
        self.store.shutdown()
        self.store = open_store(self.root, self.clock)
        self.service = self.make_service()

    def put_delayed(self, level: int, body: bytes = b"hello", queue_id: int = 0, **kw) -> None:
        extra = dict(kw.pop("extra", {}))
        extra[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(level)
        result = self.store.put_message(message(TOPIC, body, queue_id, extra=extra, **kw))
        self.assertIs(result.status, PutMessageStatus.PUT_OK)

    def at(self, seconds: float) -> int:
        """Set the clock to T0 + *seconds*; returns the time in ms."""
        self.clock.t = T0 + seconds
        return self.store.now_ms()

    def real_messages(self, queue_id: int = 0):
        result = self.store.get_message("g", TOPIC, queue_id, 0, 32)
        return [decode_message(b, 0)[0] for b in result.message_buffers]


class DeliveryTests(ScheduleTestBase):
    def test_due_after_level_delay(self) -> None:
        """A DELAY=1 message stays out of its topic for 1 s, then appears exactly once."""
        self.put_delayed(1, queue_id=2)
        self.assertEqual(self.store.get_max_offset_in_queue(TOPIC, 2), 0)
        self.assertEqual(self.store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, 0), 1)
        self.assertEqual(self.service.next_due_ms(), T0_MS + 1000)
        self.assertEqual(self.service.deliver_due(self.at(0.999)), 0)
        self.assertEqual(self.real_messages(2), [])
        self.assertEqual(self.service.deliver_due(self.at(1.0)), 1)
        self.assertEqual(len(self.real_messages(2)), 1)
        self.assertEqual(self.service.deliver_due(self.at(10)), 0)
        self.assertEqual(len(self.real_messages(2)), 1)
        self.assertIsNone(self.service.next_due_ms())
        self.assertEqual(self.service.offset_table, {1: 1})
        self.assertEqual(self.service.runtime_info(), {"scheduleMessageOffset_1": "1,1"})

    def test_message_rebuilt_like_java(self) -> None:
        """Body, flag, tags, keys, hosts and reconsume times kept; topic and queue restored."""
        self.put_delayed(2, b"payload", queue_id=3, tags="TagA", keys="k1 k2", uniq="UNIQ1",
                         extra={"user": "v"}, flag=7, reconsume_times=2)
        sched = decode_message(self.store.select_one_message_by_offset(0), 0)[0]
        self.assertEqual(self.service.deliver_due(self.at(5)), 1)
        [msg] = self.real_messages(3)
        self.assertEqual((msg.topic, msg.queue_id, msg.queue_offset), (TOPIC, 3, 0))
        self.assertEqual((msg.body, msg.flag, msg.reconsume_times), (b"payload", 7, 2))
        self.assertEqual((msg.born_timestamp, msg.born_host, msg.sys_flag),
                         (sched.born_timestamp, sched.born_host, sched.sys_flag))
        self.assertEqual(msg.store_timestamp, self.at(5))
        self.assertEqual((msg.tags, msg.keys, msg.unique_key, msg.properties["user"]),
                         ("TagA", ["k1", "k2"], "UNIQ1", "v"))
        self.assertEqual((msg.properties[MessageConst.PROPERTY_REAL_TOPIC],
                          msg.properties[MessageConst.PROPERTY_REAL_QUEUE_ID]), (TOPIC, "3"))
        # Java 4.9.8 serialises the properties before it clears DELAY from the map, so the
        # stored record keeps DELAY; the store must not schedule it a second time.
        self.assertEqual(msg.properties[MessageConst.PROPERTY_DELAY_TIME_LEVEL], "2")
        self.assertEqual(self.store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, 1), 1)
        cq = self.store.find_consume_queue(TOPIC, 3, create=False)
        self.assertEqual(cq.get_entry(0)[2], java_string_hash("TagA"))
        # the key index finds the delivered record under the real topic
        found = self.store.query_message(TOPIC, "k2", 10, 0, 2**62).message_buffers
        self.assertEqual([decode_message(b, 0)[0].commit_log_offset for b in found], [msg.commit_log_offset])

    def test_timeup_clears_delay_in_memory(self) -> None:
        """The rebuilt message: DELAY gone from the map the store consults, WAIT=false, no flush wait."""
        self.put_delayed(1, tags="T")
        inner = message_timeup(self.store.look_message_by_offset(0))
        self.assertNotIn(MessageConst.PROPERTY_DELAY_TIME_LEVEL, inner.get_properties())
        self.assertEqual(inner.get_properties()[MessageConst.PROPERTY_WAIT_STORE_MSG_OK], "false")
        self.assertFalse(inner.wait_store_msg_ok)
        self.assertEqual(inner.tags_code, java_string_hash("T"))

    def test_order_within_level(self) -> None:
        for i in range(3):
            self.at(i)
            self.put_delayed(2, b"m%d" % i)
        self.assertEqual(self.service.deliver_due(self.at(6.5)), 2)
        self.assertEqual([m.body for m in self.real_messages()], [b"m0", b"m1"])
        self.assertEqual(self.service.next_due_ms(), T0_MS + 7000)
        self.assertEqual(self.service.deliver_due(self.at(7)), 1)
        self.assertEqual([m.body for m in self.real_messages()], [b"m0", b"m1", b"m2"])

    def test_levels_independent(self) -> None:
        """A long level waiting does not hold up a short one queued after it."""
        self.put_delayed(3, b"ten")
        self.at(0.5)
        self.put_delayed(1, b"one")
        self.assertEqual(self.service.next_due_ms(), T0_MS + 1500)
        self.assertEqual(self.service.deliver_due(self.at(1.5)), 1)
        self.assertEqual([m.body for m in self.real_messages()], [b"one"])
        self.assertEqual(self.service.next_due_ms(), T0_MS + 10_000)
        self.assertEqual(self.service.deliver_due(self.at(10)), 1)
        self.assertEqual([m.body for m in self.real_messages()], [b"one", b"ten"])
        self.assertEqual(self.service.offset_table, {1: 1, 3: 1})

    def test_clock_moved_back(self) -> None:
        """Java correctDeliverTimestamp: a deliver time beyond now + level delay is due now."""
        self.put_delayed(1)
        self.assertEqual(self.service.deliver_due(self.at(0.5)), 0)
        self.assertEqual(self.service.deliver_due(self.at(-2)), 1)

    def test_idle_tick_reads_nothing(self) -> None:
        """With only a not-yet-due head, a tick reads neither ConsumeQueue nor CommitLog."""
        self.put_delayed(18)
        self.assertEqual(self.service.deliver_due(self.at(1)), 0)
        cq = self.store.find_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, 17, create=False)
        calls = []
        original = type(cq).get_index_buffer
        self.patch(type(cq), "get_index_buffer",
                   lambda q, i, *bound: (calls.append(i) if q is cq else None) or original(q, i, *bound))
        for s in range(2, 50):
            self.assertEqual(self.service.deliver_due(self.at(s)), 0)
        self.assertEqual(calls, [])
        self.assertEqual(self.service.deliver_due(self.at(7200)), 1)

    def test_batch_size(self) -> None:
        self.service.batch_size = 2
        for i in range(5):
            self.put_delayed(1, b"%d" % i)
        now = self.at(2)
        self.assertEqual([self.service.deliver_due(now) for _ in range(4)], [2, 2, 1, 0])
        self.assertEqual([m.body for m in self.real_messages()], [b"0", b"1", b"2", b"3", b"4"])

    def test_failed_put_retried(self) -> None:
        """A refused put leaves the offset where it was; the next tick delivers, once."""
        self.put_delayed(1, b"a")
        self.put_delayed(1, b"b")
        self.store.writeable = False
        self.assertEqual(self.service.deliver_due(self.at(1)), 0)
        self.assertEqual(self.service.offset_table.get(1, 0), 0)
        self.assertEqual(self.service.next_due_ms(), self.at(1))
        self.store.writeable = True
        self.assertEqual(self.service.deliver_due(self.at(1.1)), 2)
        self.assertEqual(self.service.deliver_due(self.at(1.2)), 0)
        self.assertEqual([m.body for m in self.real_messages()], [b"a", b"b"])

    def test_half_topic_discarded(self) -> None:
        """Java drops a scheduled message whose real topic is the transaction half topic."""
        result = self.store.put_message(message("RMQ_SYS_TRANS_HALF_TOPIC", b"x",
                                                extra={MessageConst.PROPERTY_DELAY_TIME_LEVEL: "1"}))
        self.assertIs(result.status, PutMessageStatus.PUT_OK)
        self.put_delayed(1, b"ok")
        self.assertEqual(self.service.deliver_due(self.at(1)), 1)
        self.assertEqual(self.store.get_max_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0), 0)
        self.assertEqual(self.service.offset_table, {1: 2})


class PersistenceTests(ScheduleTestBase):
    def test_reload_no_double_delivery(self) -> None:
        self.put_delayed(1, b"a")
        self.put_delayed(1, b"b")
        self.put_delayed(4, b"c")
        self.assertEqual(self.service.deliver_due(self.at(1)), 2)
        self.reopen()
        self.assertEqual(Path(delay_offset_path(self.root)).read_text(), '{\n\t"offsetTable":{1:2\n\t}\n}')
        self.assertEqual(self.service.offset_table, {1: 2})
        self.assertEqual(self.service.deliver_due(self.at(5)), 0)
        self.assertEqual(self.service.deliver_due(self.at(30)), 1)
        self.reopen()
        self.assertEqual(self.service.offset_table, {1: 2, 4: 1})
        self.assertEqual(self.service.deliver_due(self.at(100)), 0)
        self.assertEqual([m.body for m in self.real_messages()], [b"a", b"b", b"c"])

    def test_java_pretty_file(self) -> None:
        """A tab-indented file as a 4.9 broker writes it, integer keys unquoted."""
        for _ in range(3):
            self.put_delayed(2)
        path = delay_offset_path(self.root)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_text('{\n\t"offsetTable":{2:1,3:0,\n\t\t5:4\n\t}\n}')
        service = self.make_service()
        self.assertEqual(service.offset_table, {2: 1, 3: 0, 5: 4})
        self.assertEqual(service.deliver_due(self.at(5)), 2)
        self.assertEqual(service.offset_table_json(), '{"offsetTable":{2:3,3:0,5:4}}')

    def test_java_sample_files(self) -> None:
        """Files captured from 4.9.7 and 5.5.0 brokers load; ours are byte-identical to 4.9's."""
        for version in ("4.9.7", "5.5.0"):
            service = ScheduleMessageService(self.store, str(JAVA_DATA / f"java-{version}" / "delayOffset.json"))
            self.assertTrue(service.load())
            self.assertEqual(service.offset_table, {4: 1})  # no level-4 queue: kept, as Java does
        self.assertEqual(service.offset_table_json(), '{"offsetTable":{4:1}}')
        self.service.offset_table[4] = 1
        self.assertTrue(self.service.persist())
        self.assertEqual(Path(delay_offset_path(self.root)).read_bytes(),
                         (JAVA_DATA / "java-4.9.7" / "delayOffset.json").read_bytes())

    def test_correct_delay_offset(self) -> None:
        """Java correctDelayOffset: an offset past the queue's end is pulled back on load."""
        self.put_delayed(1)
        path = delay_offset_path(self.root)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_text('{"offsetTable":{1:57}}')
        service = self.make_service()
        self.assertEqual(service.offset_table, {1: 1})

    def test_missing_and_broken_files(self) -> None:
        self.assertEqual(self.service.offset_table, {})
        self.assertEqual(self.service.offset_table_json(), '{"offsetTable":{}}')
        self.assertTrue(self.service.persist())
        self.assertEqual(Path(delay_offset_path(self.root)).read_text(), '{\n\t"offsetTable":{}\n}')
        self.service.offset_table[1] = 0
        self.assertTrue(self.service.persist())  # the first content becomes the .bak
        Path(delay_offset_path(self.root)).write_text("{not json")
        self.assertEqual(self.make_service().offset_table, {})  # .bak used
        Path(delay_offset_path(self.root) + ".bak").write_text("garbage")
        service = ScheduleMessageService(self.store, delay_offset_path(self.root))
        self.assertFalse(service.load())
