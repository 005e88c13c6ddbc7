"""TimerMessageStore: timers held and delivered on time, in slices, across restarts and crashes."""

from __future__ import annotations

import os
from typing import Any

from twisted.trial.unittest import TestCase

from rocketmq_tx.common.message import MessageConst
from rocketmq_tx.common.messagecodec import decode_message
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.test.util import T0, Clock, message, open_store, temp_root
from rocketmq_tx.store.timer.checkpoint import timer_check_path
from rocketmq_tx.store.timer.formats import MAGIC_DEFAULT, MAGIC_ROLL, UNIT_SIZE
from rocketmq_tx.store.timer.hook import TIMER_TOPIC, transform_timer_message
from rocketmq_tx.store.timer.store import LONG_MAX, TimerMessageStore

TOPIC = "TopicTest"
T0_MS = int(T0 * 1000)


class TimerStoreBase(TestCase):
    # small TimerLog files: the default 100 MiB would be allocated by every test
    overrides: dict[str, Any] = {"mapped_file_size_timer_log": 52 * 40 + 16}

    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock()
        self.open()
        self.addCleanup(self.close)

    def now_ms(self) -> int:
        return int(self.clock.t * 1000)

    def open(self) -> None:
        self.store = open_store(self.root, self.clock, **self.overrides)
        self.timers = TimerMessageStore(self.store, self.store.config, self.now_ms)
        self.assertTrue(self.timers.load())
        cfg = self.store.config
        self.store.timer_hook = lambda msg: transform_timer_message(
            msg, enabled=True, precision_ms=cfg.timer_precision_ms, max_delay_sec=cfg.timer_max_delay_sec,
            now_ms=self.now_ms(), is_reject=self.timers.is_reject)
        self.timers.start()

    def close(self) -> None:
        if not self.store.shutdown_flag:
            self.timers.shutdown()
            self.store.shutdown()

    def crash(self) -> None:
        """Drop both stores without any shutdown step (the files stay as the kernel has them)."""
        for f in self.timers.timer_log.mapped_file_queue.files:
            f.close()
        self.timers.wheel.mm.close()
        os.close(self.timers.wheel.fd)
        os.close(self.timers.checkpoint.fd)
        self.store.commit_log.mapped_file_queue.close()
        for queues in self.store.consume_queue_table.values():
            for cq in queues.values():
                cq.mapped_file_queue.close()
        self.store.shutdown_flag = True
        self.store.index_service.shutdown() if hasattr(self.store.index_service, "shutdown") else None
        if self.store._lock_fd >= 0:
            os.close(self.store._lock_fd)
            self.store._lock_fd = -1

    def at(self, seconds: float) -> None:
        self.clock.t = T0 + seconds

    def put(self, props: dict[str, str], body: bytes = b"hello", queue_id: int = 1, uniq: str | None = None):
        return self.store.put_message(message(TOPIC, body, queue_id, extra=props, uniq=uniq))

    def put_at(self, deliver_ms: int, body: bytes = b"hello", uniq: str | None = None) -> None:
        result = self.put({MessageConst.PROPERTY_TIMER_DELIVER_MS: str(deliver_ms)}, body, uniq=uniq)
        self.assertIs(result.status, PutMessageStatus.PUT_OK)

    def tick(self, budget: int = 10_000) -> None:
        self.timers.enqueue(budget)
        while self.timers.dequeue(budget) > 0:
            pass

    def delivered(self, queue_id: int = 1) -> list:
        result = self.store.get_message("g", TOPIC, queue_id, 0, 32)
        return [decode_message(b, 0)[0] for b in result.message_buffers]


class DeliveryTests(TimerStoreBase):
    def test_held_in_the_timer_topic(self) -> None:
        """A TIMER_DELIVER_MS message goes to rmq_sys_wheel_timer queue 0 with Java's properties."""
        self.put_at(T0_MS + 5000)
        self.assertEqual(self.store.get_max_offset_in_queue(TOPIC, 1), 0)
        self.assertEqual(self.store.get_max_offset_in_queue(TIMER_TOPIC, 0), 1)
        cq = self.store.find_consume_queue(TIMER_TOPIC, 0, create=False)
        assert cq is not None
        entry = cq.get_entry(0)
        assert entry is not None
        stored = self.store.look_message_by_offset(entry[0], entry[1])
        assert stored is not None
        self.assertEqual(stored.properties[MessageConst.PROPERTY_TIMER_OUT_MS], str(T0_MS + 4000))
        self.assertEqual(stored.properties[MessageConst.PROPERTY_REAL_TOPIC], TOPIC)
        self.assertEqual(stored.properties[MessageConst.PROPERTY_REAL_QUEUE_ID], "1")
        self.assertEqual(stored.properties[MessageConst.PROPERTY_TIMER_DELIVER_MS], str(T0_MS + 5000))

    def test_due_exactly_on_time(self) -> None:
        """Delivered once the clock reaches the delivery time, not a millisecond earlier."""
        self.put_at(T0_MS + 5000)
        self.tick()
        for t in (1, 4, 4.999):
            self.at(t)
            self.tick()
            self.assertEqual(self.delivered(), [], t)
        self.at(5.0)
        self.tick()
        got = self.delivered()
        self.assertEqual(len(got), 1)
        m = got[0]
        self.assertEqual(m.topic, TOPIC)
        self.assertEqual(m.queue_id, 1)
        self.assertEqual(m.body, b"hello")
        # as Java: REAL_TOPIC/REAL_QID stay in the stored properties (serialised before they
        # are dropped from the map), with the enqueue and dequeue times added
        self.assertEqual(m.properties[MessageConst.PROPERTY_REAL_TOPIC], TOPIC)
        self.assertEqual(m.properties[MessageConst.PROPERTY_TIMER_OUT_MS], str(T0_MS + 4000))
        self.assertEqual(m.properties[MessageConst.PROPERTY_TIMER_ENQUEUE_MS], str(T0_MS))
        self.assertEqual(m.properties[MessageConst.PROPERTY_TIMER_DEQUEUE_MS], str(T0_MS + 5000))
        self.at(20)
        self.tick()
        self.assertEqual(len(self.delivered()), 1)
        self.assertEqual(self.timers.metrics.get_timing_count(TOPIC), 0)

    def test_not_multiple_of_precision(self) -> None:
        """A time between ticks is delivered at the next tick, not before it."""
        self.put_at(T0_MS + 2500)
        self.at(2.5)
        self.tick()
        self.assertEqual(self.delivered(), [])
        self.at(2.999)
        self.tick()
        self.assertEqual(self.delivered(), [])
        self.at(3.0)
        self.tick()
        self.assertEqual(len(self.delivered()), 1)

    def test_delay_sec_and_ms(self) -> None:
        """TIMER_DELAY_SEC and TIMER_DELAY_MS count from the put."""
        self.at(0.3)
        self.put({MessageConst.PROPERTY_TIMER_DELAY_SEC: "3"})
        self.put({MessageConst.PROPERTY_TIMER_DELAY_MS: "1500"})
        self.tick()
        self.at(1.799)
        self.tick()
        self.assertEqual(self.delivered(), [])
        self.at(2.0)
        self.tick()
        self.assertEqual(len(self.delivered()), 1)
        self.at(3.299)
        self.tick()
        self.assertEqual(len(self.delivered()), 1)
        self.at(4.0)
        self.tick()
        self.assertEqual(len(self.delivered()), 2)

    def test_past_time_stored_at_once(self) -> None:
        """A delivery time not in the future: the message is stored in its topic at once, unchanged."""
        self.put_at(T0_MS - 10)
        self.put_at(T0_MS)
        got = self.delivered()
        self.assertEqual(len(got), 2)
        self.assertNotIn(MessageConst.PROPERTY_TIMER_OUT_MS, got[0].properties)
        self.assertEqual(self.store.get_max_offset_in_queue(TIMER_TOPIC, 0), 0)

    def test_within_precision_delivered_at_next_read(self) -> None:
        """Due within the tick (rounded below the wheel's write time): delivered at once on enqueue."""
        self.at(0.6)
        self.put_at(T0_MS + 900)  # rounds down to T0, before the write time T0 + 0: no
        self.at(1.2)
        self.timers.enqueue(100)
        got = self.delivered()
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0].properties[MessageConst.PROPERTY_TIMER_ENQUEUE_MS], str(LONG_MAX))

    def test_many_in_one_slot_in_slices(self) -> None:
        """300 timers of one slot go out over several budget-bounded calls, all of them, in order."""
        for i in range(300):
            self.put_at(T0_MS + 3000, body=b"m%d" % i)
        self.assertEqual(self.timers.enqueue(100), 100)
        self.assertEqual(self.timers.enqueue(1000), 200)
        self.assertEqual(self.timers.wheel.get_slot(T0_MS + 2000).num, 300)
        self.at(3.0)
        calls = 0
        while self.timers.dequeue(50) > 0:
            calls += 1
            self.assertLessEqual(len(self.delivered()), 300)
        self.assertGreater(calls, 6)
        bodies = []
        for q in range(0, 300, 32):
            result = self.store.get_message("g", TOPIC, 1, q, 32)
            bodies += [decode_message(b, 0)[0].body for b in result.message_buffers]
        self.assertEqual(bodies, [b"m%d" % i for i in range(300)])

    def test_delete_marker_cancels(self) -> None:
        """A TIMER_DEL_UNIQKEY message for the same slot drops the timer it names (Java's delete)."""
        self.put_at(T0_MS + 3000, uniq="U1")
        self.put_at(T0_MS + 3000, body=b"keep", uniq="U2")
        self.put({MessageConst.PROPERTY_TIMER_DELIVER_MS: str(T0_MS + 3000),
                  MessageConst.PROPERTY_TIMER_DEL_UNIQKEY: f"{TOPIC}+U1"}, body=b"del", uniq="U3")
        self.tick()
        self.at(3)
        self.tick()
        self.assertEqual([m.body for m in self.delivered()], [b"keep"])

    def test_roll_beyond_window(self) -> None:
        """Beyond the roll window a timer is parked with the roll magic, re-enqueued, then delivered."""
        self.close()
        self.overrides = {**self.overrides, "timer_roll_window_slot": 10}
        self.open()
        self.put_at(T0_MS + 25_000)
        self.tick()
        self.assertEqual(self.timers.wheel.get_slot(T0_MS + 10_000).num, 1)
        unit = self.timers.timer_log.read_unit(0)
        assert unit is not None
        self.assertEqual(unit[1].magic, MAGIC_DEFAULT | MAGIC_ROLL)
        for t in range(1, 25):
            self.at(t)
            self.tick()
            self.assertEqual(self.delivered(), [], t)
        self.at(25)
        self.tick()
        got = self.delivered()
        self.assertEqual(len(got), 1)
        # rolled at T0+10 s (to T0+21 s: 14 s still beyond the window from T0+11 s) and again
        # at T0+21 s, into the slot of T0+24 s
        self.assertEqual(got[0].properties[MessageConst.PROPERTY_TIMER_ROLL_TIMES], "2")


class RecoveryTests(TimerStoreBase):
    def test_restart_keeps_pending(self) -> None:
        """Pending timers survive a clean restart and are delivered on time, once."""
        self.put_at(T0_MS + 5000, body=b"a")
        self.put_at(T0_MS + 9000, body=b"b")
        self.tick()
        self.at(6)
        self.tick()
        self.assertEqual(len(self.delivered()), 1)
        self.close()
        self.open()
        self.assertEqual(self.timers.curr_queue_offset, 2)
        self.assertEqual(self.timers.curr_read_time_ms, T0_MS + 6000)
        self.at(8.999)
        self.tick()
        self.assertEqual(len(self.delivered()), 1)
        self.at(9)
        self.tick()
        self.assertEqual([m.body for m in self.delivered()], [b"a", b"b"])

    def test_crash_recovers_from_timerlog_and_queue(self) -> None:
        """kill -9 with a checkpoint older than the TimerLog: nothing pending is lost (as Java, a
        timer enqueued after the last checkpoint may be delivered twice: at least once)."""
        self.put_at(T0_MS + 5000, body=b"a")
        self.tick()
        self.timers.flush(self.timers.prepare_checkpoint(), self.timers.metrics.encode())
        self.put_at(T0_MS + 7000, body=b"b")  # enqueued after the last checkpoint
        self.put_at(T0_MS + 8000, body=b"c")  # not even enqueued
        self.timers.enqueue(1)
        self.crash()
        self.open()
        self.at(10)
        self.tick()
        bodies = sorted(m.body for m in self.delivered())
        self.assertEqual(sorted(set(bodies)), [b"a", b"b", b"c"])
        self.assertEqual(bodies.count(b"a"), 1)

    def test_torn_timerlog_tail_is_cut(self) -> None:
        """A garbage unit after the last good one is cut off at recovery."""
        self.put_at(T0_MS + 5000)
        self.tick()
        f = self.timers.timer_log.mapped_file_queue.last()
        assert f is not None
        f.mm[UNIT_SIZE:UNIT_SIZE + 8] = b"\x00\x00\x00\x07garb"
        self.timers.flush(self.timers.prepare_checkpoint(), self.timers.metrics.encode())
        self.close()
        self.open()
        last = self.timers.timer_log.mapped_file_queue.last()
        assert last is not None
        self.assertEqual(last.wrote_position, UNIT_SIZE)
        self.at(5)
        self.tick()
        self.assertEqual(len(self.delivered()), 1)

    def test_checkpoint_file_is_a_page(self) -> None:
        """config/timercheck is 4096 bytes, its first 56 the checkpoint after a shutdown."""
        self.put_at(T0_MS + 5000)
        self.tick()
        self.at(2)
        self.tick()
        self.close()
        path = timer_check_path(self.root)
        self.assertEqual(os.path.getsize(path), 4096)
        with open(path, "rb") as fh:
            data = fh.read(56)
        import struct
        read, flush_pos, qoff, master, state, _ts, counter = struct.unpack(">7q", data)
        self.assertEqual((read, flush_pos, qoff, master, state), (T0_MS + 2000, UNIT_SIZE, 1, 1, 0))
        self.assertGreater(counter, 0)


class MaintenanceTests(TimerStoreBase):
    def test_expired_timerlog_files_deleted(self) -> None:
        """TimerLog files whose last unit points below the CommitLog's first byte go; never the last one."""
        for i in range(100):
            self.put_at(T0_MS + 5000, body=b"%d" % i)
        self.tick()
        files = self.timers.timer_log.mapped_file_queue.files
        self.assertEqual(len(files), 3)
        self.assertEqual(self.timers.delete_expired_timer_log(), 0)
        self.store.get_min_phy_offset = lambda: 2**40  # type: ignore[method-assign]
        self.assertEqual(self.timers.delete_expired_timer_log(), 2)
        self.assertEqual(len(self.timers.timer_log.mapped_file_queue.files), 1)

    def test_failed_put_retried_then_dropped(self) -> None:
        """A put that fails is retried on later calls; after three failures the message is dropped (as Java)."""
        from rocketmq_tx.store.status import PutMessageResult

        self.put_at(T0_MS + 2000, body=b"a")
        self.put_at(T0_MS + 2000, body=b"b")
        self.tick()
        real_put = self.store.put_message
        failures = {"left": 3}

        def flaky(msg):  # type: ignore[no-untyped-def]
            if msg.topic == TOPIC and failures["left"] > 0:
                failures["left"] -= 1
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
            return real_put(msg)
        self.store.put_message = flaky  # type: ignore[method-assign]
        self.at(2)
        self.assertEqual(self.timers.dequeue(100), -1)  # stalled on "a": wait for the next tick
        self.assertEqual(self.delivered(), [])
        self.assertEqual(self.timers.dequeue(100), -1)
        self.tick()  # the third failure drops "a", then "b" goes out
        self.assertEqual([m.body for m in self.delivered()], [b"b"])
        self.assertEqual(self.timers.curr_read_time_ms, T0_MS + 2000)


class CatchUpTests(TimerStoreBase):
    def test_new_store_catches_up_at_once(self) -> None:
        """A new store starts reading 7 days back (as Java); the empty past is jumped in one step."""
        self.assertEqual(self.timers.curr_read_time_ms, T0_MS - (7 * 86400 - 60) * 1000)
        self.timers.dequeue(1)
        self.assertEqual(self.timers.curr_read_time_ms, T0_MS)

    def test_timers_due_while_down_delivered_at_start(self) -> None:
        """Timers that fell due while the broker was down are delivered by the first ticks after it,
        in time order; the empty slots between them are jumped."""
        self.put_at(T0_MS + 5000, body=b"a")
        self.put_at(T0_MS + 3600_000, body=b"b")
        self.tick()
        self.close()
        self.at(7200)
        self.open()
        self.assertEqual(list(self.timers._backlog), [T0_MS + 4000, T0_MS + 3599_000])
        self.assertGreater(self.timers.dequeue(10), 0)
        self.assertEqual([m.body for m in self.delivered()], [b"a", b"b"])
        self.assertEqual(self.timers.curr_read_time_ms, T0_MS + 7200_000)
