"""POP consumption: POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, revival, restarts."""

from __future__ import annotations

from twisted.internet.defer import Deferred

from rocketmq_tx.broker.pop import REVIVE_GROUP
from rocketmq_tx.broker.pop.orderinfo import ConsumerOrderInfoManager
from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.test.test_processors import BrokerTestCase, props
from rocketmq_tx.broker.test.util import make_controller
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting import extrainfo as ei
from rocketmq_tx.remoting.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    NotificationRequestHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_tx.remoting.popbodies import BatchAck, BatchAckMessageRequestBody, PopCheckPoint

TOPIC = "TopicTest"
GROUP = "g"
REVIVE = "rmq_sys_REVIVE_LOG_DefaultCluster"
INVISIBLE = 10_000


class PopTestCase(BrokerTestCase):
    # Retry topic read last, so a test sees normal messages first.
    keys = {"popFromRetryProbability": 0}

    def setUp(self) -> None:
        super().setUp()
        self.controller.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 1, 1))

    def put(self, tags: str = "TagA", body: bytes = b"hello") -> None:
        response = self.send(TOPIC, body=body, queue_id=0, body_props=props(TAGS=tags))
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)

    def pop_ext(self, max_nums: int = 32, poll_time: int = 0, queue_id: int = -1, exp: str | None = None,
                order: bool | None = None, invisible: int = INVISIBLE) -> dict:
        return PopMessageRequestHeader(GROUP, TOPIC, queue_id, max_nums, invisible, poll_time,
                                       self.controller.now_ms(), 0, "TAG" if exp else None, exp, order).to_ext_fields()

    def pop(self, **kw) -> RemotingCommand:  # type: ignore[no-untyped-def]
        return self.call(RequestCode.POP_MESSAGE, self.pop_ext(**kw))

    def messages(self, response: RemotingCommand) -> list:  # type: ignore[type-arg]
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        return decode_messages(response.body)

    def extra_info(self, response: RemotingCommand, msg) -> str:  # type: ignore[no-untyped-def]
        """What the 5.x client puts in POP_CK for *msg* (MQClientAPIImpl.processPopResponse)."""
        if "POP_CK" in msg.properties:
            return str(msg.properties["POP_CK"])
        header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
        start = ei.parse_start_offset_info(header.start_offset_info)[ei.start_offset_info_key(msg.topic, msg.queue_id)]
        return ei.build_extra_info(start, header.pop_time, header.invisible_time, header.revive_qid, msg.topic,
                                   "broker-a", msg.queue_id, msg.queue_offset)

    def ack(self, response: RemotingCommand, msg, topic: str | None = None) -> RemotingCommand:  # type: ignore[no-untyped-def]
        extra = self.extra_info(response, msg)
        real = ei.parse_extra_info(extra).real_topic(topic or msg.topic, GROUP)
        header = AckMessageRequestHeader(GROUP, real, msg.queue_id, extra, msg.queue_offset)
        return self.call(RequestCode.ACK_MESSAGE, header.to_ext_fields())

    def revive(self, advance_ms: int) -> int:
        self.reactor.advance(advance_ms / 1000.0)
        return self.controller.pop_service.revive_due(self.controller.now_ms())


class PopMessageTests(PopTestCase):
    def test_pop_found(self) -> None:
        """Messages popped with Java's response header; a ck record in the revive log; the offset moves past them."""
        self.put(body=b"a")
        self.put(body=b"b")
        response = self.pop()
        msgs = self.messages(response)
        self.assertEqual([m.body for m in msgs], [b"a", b"b"])
        header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
        self.assertEqual((header.invisible_time, header.rest_num, header.start_offset_info, header.msg_offset_info),
                         (INVISIBLE, 0, "0 0 0", "0 0 0,1"))
        self.assertEqual(response.remark, "FOUND")
        self.assertEqual(self.controller.consumer_offset_manager.query_offset(GROUP, TOPIC, 0), 2)
        result = self.store.get_message(REVIVE_GROUP, REVIVE, header.revive_qid, 0, 32)
        (record,) = decode_messages(b"".join(result.message_buffers))
        self.assertEqual(record.properties["TAGS"], "ck")
        ck = PopCheckPoint.from_json(record.body)
        self.assertEqual((ck.start_offset, ck.num, ck.queue_offset_diff, ck.cid, ck.topic, ck.pop_time),
                         (0, 2, [0, 1], GROUP, TOPIC, header.pop_time))
        # Nothing left: POLLING_TIMEOUT without a poll time.
        response = self.pop()
        self.assertEqual((response.code, response.remark), (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE"))

    def test_refusals(self) -> None:
        """Java's codes for too many messages, a missing topic, a bad queue, a missing group."""
        self.assertEqual(self.pop(max_nums=33).code, ResponseCode.INVALID_PARAMETER)
        self.assertEqual(self.pop(queue_id=1).code, ResponseCode.INVALID_PARAMETER)
        ext = self.pop_ext()
        ext["topic"] = "Nope"
        self.assertEqual(self.call(RequestCode.POP_MESSAGE, ext).code, ResponseCode.TOPIC_NOT_EXIST)

    def test_tag_filter(self) -> None:
        """Only matching tags are popped; the rest is skipped past."""
        self.put("A", b"a")
        self.put("B", b"b")
        self.assertEqual([m.body for m in self.messages(self.pop(exp="B"))], [b"b"])
        self.assertEqual(self.controller.consumer_offset_manager.query_offset(GROUP, TOPIC, 0), 2)


class AckReviveTests(PopTestCase):
    def test_ack_not_revived(self) -> None:
        """An acked message does not come back after its invisible time."""
        self.put()
        response = self.pop()
        (msg,) = self.messages(response)
        self.assertEqual(self.ack(response, msg).code, ResponseCode.SUCCESS)
        self.assertEqual(self.revive(INVISIBLE + 1), 0)
        self.assertEqual(self.pop().code, ResponseCode.POLLING_TIMEOUT)
        self.assertEqual(self.controller.pop_service.table, {})
        # the revive group's offset moved past the ck and the ack
        self.assertEqual(self.controller.consumer_offset_manager.query_offset(
            REVIVE_GROUP, REVIVE, PopMessageResponseHeader.from_ext_fields(response.ext_fields).revive_qid), 2)

    def test_not_acked_revived(self) -> None:
        """Not acked: re-put to %RETRY%g_TopicTest at the invisible time, reconsume times +1, popped again."""
        self.put(body=b"x")
        first = self.pop()
        self.messages(first)
        self.assertEqual(self.revive(INVISIBLE - 1000), 0)
        self.assertEqual(self.revive(1001), 1)
        retry = "%RETRY%g_TopicTest"
        self.assertEqual(self.store.get_max_offset_in_queue(retry, 0), 1)
        again = self.pop()
        (msg,) = self.messages(again)
        self.assertEqual((msg.topic, msg.body, msg.reconsume_times), (TOPIC, b"x", 1))
        self.assertEqual(msg.properties["1ST_POP_TIME"],
                         str(PopMessageResponseHeader.from_ext_fields(first.ext_fields).pop_time))
        self.assertEqual(msg.properties["ORIGIN_GROUP"], "g")
        extra = ei.parse_extra_info(msg.properties["POP_CK"])
        self.assertEqual((extra.retry, extra.queue_offset), ("1", 0))
        self.assertEqual(self.ack(again, msg, TOPIC).code, ResponseCode.SUCCESS)
        self.assertEqual(self.revive(INVISIBLE + 1), 0)

    def test_retry_again_counts(self) -> None:
        """A retried message not acked comes back again with reconsume times 2 (same retry topic)."""
        self.put()
        self.pop()
        self.revive(INVISIBLE + 1)
        self.messages(self.pop())
        self.assertEqual(self.revive(INVISIBLE + 1), 1)
        (msg,) = self.messages(self.pop())
        self.assertEqual(msg.reconsume_times, 2)

    def test_revive_in_slices(self) -> None:
        """A tick re-puts at most about revive_batch messages; the rest follow in the next ticks."""
        self.controller.pop_service.revive_batch = 2
        for i in range(3):
            self.put(body=b"%d" % i)
            self.assertEqual(len(self.messages(self.pop(max_nums=1))), 1)  # three checkpoints
        self.assertEqual(self.revive(INVISIBLE + 1), 2)
        self.assertEqual(self.revive(0), 1)
        self.assertEqual(self.revive(0), 0)

    def test_batch_ack(self) -> None:
        """BATCH_ACK_MESSAGE acks the offsets of its bitset only."""
        for body in (b"a", b"b", b"c"):
            self.put(body=body)
        response = self.pop()
        self.messages(response)
        header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
        back = BatchAck(GROUP, TOPIC, "0", 0, 0, header.revive_qid, header.pop_time, INVISIBLE, 0b101)
        body = BatchAckMessageRequestBody("broker-a", [back]).encode()
        self.assertEqual(self.call(RequestCode.BATCH_ACK_MESSAGE, body=body).code, ResponseCode.SUCCESS)
        self.assertEqual(self.revive(INVISIBLE + 1), 1)
        (msg,) = self.messages(self.pop())
        self.assertEqual(msg.body, b"b")
        self.assertEqual(self.call(RequestCode.BATCH_ACK_MESSAGE, body=b"{}").code, ResponseCode.NO_MESSAGE)
        self.assertEqual(self.call(RequestCode.BATCH_ACK_MESSAGE, body=b"[").code, ResponseCode.SYSTEM_ERROR)

    def test_ack_refusals(self) -> None:
        """Bad queue, offset out of range, malformed extra info, a revive queue outside the topic's."""
        self.put()
        response = self.pop()
        (msg,) = self.messages(response)
        extra = self.extra_info(response, msg)
        cases = [(AckMessageRequestHeader(GROUP, TOPIC, 5, extra, 0), ResponseCode.MESSAGE_ILLEGAL),
                 (AckMessageRequestHeader(GROUP, TOPIC, 0, extra, 7), ResponseCode.NO_MESSAGE),
                 (AckMessageRequestHeader(GROUP, TOPIC, 0, "1 2 3", 0), ResponseCode.SYSTEM_ERROR),
                 (AckMessageRequestHeader(GROUP, TOPIC, 0, "0 1 2 5000 0 broker-a 0", 0), ResponseCode.SYSTEM_ERROR)]
        for header, code in cases:
            self.assertEqual(self.call(RequestCode.ACK_MESSAGE, header.to_ext_fields()).code, code)
        self.assertEqual(self.store.get_max_offset_in_queue(REVIVE, 5000), 0)
        self.assertEqual(self.revive(INVISIBLE + 1), 1)


class FifoPopTestCase(PopTestCase):
    def fifo(self, max_nums: int = 32, attempt: str | None = None) -> RemotingCommand:
        ext = self.pop_ext(max_nums=max_nums, order=True)
        if attempt is not None:
            ext["attemptId"] = attempt
        return self.call(RequestCode.POP_MESSAGE, ext)

    def ack_fifo(self, response: RemotingCommand, msg) -> RemotingCommand:  # type: ignore[no-untyped-def]
        return self.call(RequestCode.ACK_MESSAGE, AckMessageRequestHeader(
            GROUP, TOPIC, msg.queue_id, self.extra_info(response, msg), msg.queue_offset).to_ext_fields())


class FifoPopTests(FifoPopTestCase):
    def test_blocks_until_acked(self) -> None:
        """A FIFO POP blocks its queue until its messages are acked; the offset moves with the acks."""
        for body in (b"a", b"b", b"c"):
            self.put(body=body)
        first = self.fifo(max_nums=2)
        msgs = self.messages(first)
        self.assertEqual([m.body for m in msgs], [b"a", b"b"])
        header = PopMessageResponseHeader.from_ext_fields(first.ext_fields)
        self.assertEqual((header.revive_qid, header.order_count_info, header.start_offset_info),
                         (999, "0 0 0", "0 0 0"))
        self.assertEqual(self.controller.pop_service.table, {})  # no checkpoint
        offsets = self.controller.consumer_offset_manager
        self.assertEqual(offsets.query_offset(GROUP, TOPIC, 0), 0)
        self.assertEqual(self.fifo().code, ResponseCode.POLLING_TIMEOUT)  # blocked
        self.assertEqual(self.ack_fifo(first, msgs[0]).code, ResponseCode.SUCCESS)
        self.assertEqual(offsets.query_offset(GROUP, TOPIC, 0), 1)
        self.assertEqual(self.fifo().code, ResponseCode.POLLING_TIMEOUT)  # b still out
        self.assertEqual(self.ack_fifo(first, msgs[1]).code, ResponseCode.SUCCESS)
        self.assertEqual(offsets.query_offset(GROUP, TOPIC, 0), 2)
        self.assertEqual([m.body for m in self.messages(self.fifo())], [b"c"])

    def test_redelivered_in_order_with_counts(self) -> None:
        """Not acked in time: the same messages again, in order, counted in orderCountInfo."""
        for body in (b"a", b"b"):
            self.put(body=body)
        self.messages(self.fifo())
        self.reactor.advance(INVISIBLE / 1000 - 1)
        self.assertEqual(self.fifo().code, ResponseCode.POLLING_TIMEOUT)
        self.assertEqual(self.fifo(attempt=None).code, ResponseCode.POLLING_TIMEOUT)
        self.reactor.advance(1.001)
        again = self.fifo()
        self.assertEqual([m.body for m in self.messages(again)], [b"a", b"b"])
        info = PopMessageResponseHeader.from_ext_fields(again.ext_fields).order_count_info
        self.assertEqual(ei.parse_order_count_info(info), {"0@qo0%0": 1, "0@qo0%1": 1, "0@0": 1})

    def test_same_attempt_not_blocked(self) -> None:
        """A request retried with the same attemptId gets the messages again."""
        self.put()
        self.messages(self.fifo(attempt="A1"))
        self.assertEqual(len(self.messages(self.fifo(attempt="A1"))), 1)
        self.assertEqual(self.fifo(attempt="A2").code, ResponseCode.POLLING_TIMEOUT)

    def test_change_invisible_time(self) -> None:
        """A FIFO message's visibility moves; the answer keeps the POP's time."""
        self.put()
        response = self.fifo()
        (msg,) = self.messages(response)
        pop_time = PopMessageResponseHeader.from_ext_fields(response.ext_fields).pop_time
        header = ChangeInvisibleTimeRequestHeader(GROUP, TOPIC, 0, self.extra_info(response, msg), 0, 30_000)
        changed = self.call(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())
        self.assertEqual((changed.code, changed.ext_fields["popTime"], changed.ext_fields["reviveQid"],
                          changed.ext_fields["invisibleTime"]),
                         (ResponseCode.SUCCESS, str(pop_time), "999", "30000"))
        self.reactor.advance(INVISIBLE / 1000 + 1)
        self.assertEqual(self.fifo().code, ResponseCode.POLLING_TIMEOUT)  # still invisible
        self.reactor.advance(20)
        self.assertEqual(len(self.messages(self.fifo())), 1)

    def test_ack_refusals(self) -> None:
        """An offset the POP did not hand out: MESSAGE_ILLEGAL; an ack from an older POP: ignored."""
        self.put()
        self.put()
        response = self.fifo(max_nums=1)
        (msg,) = self.messages(response)
        extra = self.extra_info(response, msg)
        wrong = AckMessageRequestHeader(GROUP, TOPIC, 0, extra, 1)
        refused = self.call(RequestCode.ACK_MESSAGE, wrong.to_ext_fields())
        self.assertEqual(refused.code, ResponseCode.MESSAGE_ILLEGAL)
        self.assertTrue(refused.remark.startswith("offset is illegal, key:TopicTest@g@0, old:0, commit:1, next:-1"))
        stale = ei.parse_extra_info(extra)
        stale_extra = ei.ExtraInfo(stale.ck_queue_offset, stale.pop_time - 1, stale.invisible_time, 999, "0",
                                   stale.broker_name, 0, 0).encode()
        ignored = AckMessageRequestHeader(GROUP, TOPIC, 0, stale_extra, 0)
        self.assertEqual(self.call(RequestCode.ACK_MESSAGE, ignored.to_ext_fields()).code, ResponseCode.SUCCESS)
        self.assertEqual(self.controller.consumer_offset_manager.query_offset(GROUP, TOPIC, 0), 0)

    def test_ack_wakes_waiting_pop(self) -> None:
        """The last ack unblocks the queue and wakes a FIFO POP waiting on it."""
        self.put(body=b"a")
        self.put(body=b"b")
        first = self.fifo(max_nums=1)
        (msg,) = self.messages(first)
        ext = self.pop_ext(order=True, poll_time=5_000)
        d = self.dispatch(RequestCode.POP_MESSAGE, ext)
        assert isinstance(d, Deferred)
        got: list[RemotingCommand] = []
        d.addCallback(got.append)
        self.assertEqual(self.ack_fifo(first, msg).code, ResponseCode.SUCCESS)
        self.reactor.advance(0)
        self.assertEqual([m.body for m in self.messages(got[0])], [b"b"])


class ChangeInvisibleTimeTests(PopTestCase):
    def test_change(self) -> None:
        """The message comes back at the new time, not the old one; the answer names the new checkpoint."""
        self.put()
        response = self.pop()
        (msg,) = self.messages(response)
        self.reactor.advance(1)
        header = ChangeInvisibleTimeRequestHeader(GROUP, TOPIC, 0, self.extra_info(response, msg), 0, 30_000)
        changed = self.call(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())
        self.assertEqual(changed.code, ResponseCode.SUCCESS)
        self.assertEqual(changed.ext_fields["popTime"], str(self.controller.now_ms()))
        self.assertEqual(changed.ext_fields["invisibleTime"], "30000")
        self.assertEqual(self.revive(INVISIBLE + 1), 0)
        self.assertEqual(self.revive(30_000 - INVISIBLE), 1)

    def test_change_then_ack(self) -> None:
        """After a change, an ack with the new extra info (built from the answer) keeps it from coming back."""
        self.put()
        response = self.pop()
        (msg,) = self.messages(response)
        old = ei.parse_extra_info(self.extra_info(response, msg))
        header = ChangeInvisibleTimeRequestHeader(GROUP, TOPIC, 0, old.encode(), 0, 30_000)
        changed = self.call(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())
        new = ei.build_extra_info(0, int(changed.ext_fields["popTime"]), 30_000, old.revive_qid, TOPIC, "broker-a", 0)
        ack = AckMessageRequestHeader(GROUP, TOPIC, 0, new, 0)
        self.assertEqual(self.call(RequestCode.ACK_MESSAGE, ack.to_ext_fields()).code, ResponseCode.SUCCESS)
        self.assertEqual(self.revive(40_000), 0)

    def test_offset_past_end(self) -> None:
        """An offset at or past the queue's end: NO_MESSAGE, as Java."""
        header = ChangeInvisibleTimeRequestHeader(GROUP, TOPIC, 0, "0 1 2 0 0 broker-a 0", 0, 30_000)
        self.assertEqual(self.call(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields()).code,
                         ResponseCode.NO_MESSAGE)


class LongPollingTests(PopTestCase):
    def test_wakes_on_arrival(self) -> None:
        """A POP with a poll time waits and is answered when a message arrives."""
        d = self.dispatch(RequestCode.POP_MESSAGE, self.pop_ext(poll_time=15_000))
        self.assertIsInstance(d, Deferred)
        assert isinstance(d, Deferred)
        got: list[RemotingCommand] = []
        d.addCallback(got.append)
        self.put(body=b"late")
        self.reactor.advance(0)
        self.assertEqual([m.body for m in self.messages(got[0])], [b"late"])

    def test_times_out(self) -> None:
        """Nothing arrives: POLLING_TIMEOUT at the poll time."""
        d = self.dispatch(RequestCode.POP_MESSAGE, self.pop_ext(poll_time=5_000))
        assert isinstance(d, Deferred)
        got: list[RemotingCommand] = []
        d.addCallback(got.append)
        self.reactor.advance(4.9)
        self.assertEqual(got, [])
        self.reactor.advance(0.2)
        self.assertEqual(got[0].code, ResponseCode.POLLING_TIMEOUT)

    def test_woken_for_nothing_waits_on(self) -> None:
        """Woken by a message another POP took: it waits on until its own deadline, then POLLING_TIMEOUT."""
        d = self.dispatch(RequestCode.POP_MESSAGE, self.pop_ext(poll_time=5_000))
        assert isinstance(d, Deferred)
        got: list[RemotingCommand] = []
        d.addCallback(got.append)
        self.reactor.advance(1)
        self.put()
        self.assertEqual(len(self.messages(self.pop())), 1)  # taken before the waiting POP runs
        self.reactor.advance(0)
        self.assertEqual(got, [])
        self.assertEqual(self.controller.pop_long_polling.held(), 1)
        self.reactor.advance(3.9)
        self.assertEqual(got, [])
        self.reactor.advance(0.2)
        self.assertEqual(got[0].code, ResponseCode.POLLING_TIMEOUT)
        self.assertEqual(self.controller.pop_long_polling.held(), 0)

    def test_dropped_with_connection(self) -> None:
        """A closed connection forgets its waiting POPs."""
        self.dispatch(RequestCode.POP_MESSAGE, self.pop_ext(poll_time=5_000))
        self.assertEqual(self.controller.pop_long_polling.held(), 1)
        self.controller.channel_closed(self.ctx)
        self.assertEqual(self.controller.pop_long_polling.held(), 0)


class RestartTests(PopTestCase):
    def test_acks_and_checkpoints_survive(self) -> None:
        """After a restart the revive log is read back: the acked message stays acked, the other comes back."""
        self.put(body=b"a")
        self.put(body=b"b")
        response = self.pop()
        msgs = self.messages(response)
        self.assertEqual(self.ack(response, msgs[0]).code, ResponseCode.SUCCESS)
        root = self.controller.store_config.store_path_root_dir
        self.controller.shutdown()
        self.controller = make_controller(self, self.reactor, root=root, popFromRetryProbability=0)
        self.table = processor_table(self.controller)
        pop = self.controller.pop_service
        self.assertTrue(pop.recovering)
        self.assertEqual(self.revive(INVISIBLE + 1), 0)  # not while recovering
        while not pop.recover_slice():
            pass
        self.assertEqual(self.revive(0), 1)
        (msg,) = self.messages(self.pop())
        self.assertEqual((msg.body, msg.reconsume_times), (b"b", 1))

    def test_offset_restored_after_kill(self) -> None:
        """consumerOffset.json older than the POP (a kill -9): the offset is moved past the popped messages again."""
        self.put(body=b"a")
        self.put(body=b"b")
        self.messages(self.pop())
        root = self.controller.store_config.store_path_root_dir
        self.controller.shutdown()
        self.controller = make_controller(self, self.reactor, root=root, popFromRetryProbability=0)
        self.table = processor_table(self.controller)
        offsets = self.controller.consumer_offset_manager
        offsets.commit_offset(GROUP, TOPIC, 0, 0)  # as the file was before the POP
        response = self.pop()  # while the revive log is read back: nothing popped
        self.assertEqual(response.code, ResponseCode.POLLING_TIMEOUT)
        while not self.controller.pop_service.recover_slice():
            pass
        self.assertEqual(offsets.query_offset(GROUP, TOPIC, 0), 2)
        self.assertEqual(self.pop().code, ResponseCode.POLLING_TIMEOUT)
        self.assertEqual(self.revive(INVISIBLE + 1), 2)


class PeekAndPollingInfoTests(PopTestCase):
    def test_peek_does_not_pop(self) -> None:
        """PEEK_MESSAGE returns what a POP would get, without a checkpoint or an offset moved."""
        self.put(body=b"a")
        peek = PeekMessageRequestHeader(GROUP, TOPIC, -1, 32).to_ext_fields()
        for _ in range(2):
            response = self.call(RequestCode.PEEK_MESSAGE, peek)
            self.assertEqual([m.body for m in self.messages(response)], [b"a"])
            self.assertEqual(response.ext_fields["restNum"], "1")
        self.assertEqual(self.controller.pop_service.table, {})
        self.assertEqual(self.controller.consumer_offset_manager.query_offset(GROUP, TOPIC, 0), -1)
        self.messages(self.pop())
        response = self.call(RequestCode.PEEK_MESSAGE, peek)
        self.assertEqual((response.code, response.remark), (ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE"))
        bad = PeekMessageRequestHeader(GROUP, TOPIC, 3, 32).to_ext_fields()
        self.assertEqual(self.call(RequestCode.PEEK_MESSAGE, bad).code, ResponseCode.INVALID_PARAMETER)

    def test_polling_info(self) -> None:
        """POLLING_INFO counts the waiting POPs under Java's key topic@group@queueId."""
        info = PollingInfoRequestHeader(GROUP, TOPIC, -1).to_ext_fields()
        self.assertEqual(self.call(RequestCode.POLLING_INFO, info).ext_fields["pollingNum"], "0")
        self.dispatch(RequestCode.POP_MESSAGE, self.pop_ext(poll_time=5_000))
        self.dispatch(RequestCode.POP_MESSAGE, self.pop_ext(poll_time=5_000))
        self.assertEqual(self.call(RequestCode.POLLING_INFO, info).ext_fields["pollingNum"], "2")
        other = PollingInfoRequestHeader(GROUP, TOPIC, 0).to_ext_fields()
        self.assertEqual(self.call(RequestCode.POLLING_INFO, other).ext_fields["pollingNum"], "0")
        self.reactor.advance(6)
        self.assertEqual(self.call(RequestCode.POLLING_INFO, info).ext_fields["pollingNum"], "0")


class NotificationTests(PopTestCase):
    def notify_ext(self, poll_time: int = 0) -> dict:
        return NotificationRequestHeader(GROUP, TOPIC, -1, poll_time, self.controller.now_ms()).to_ext_fields()

    def test_has_msg(self) -> None:
        """hasMsg says whether a POP would find something; nothing is popped."""
        response = self.call(RequestCode.NOTIFICATION, self.notify_ext())
        self.assertEqual((response.code, response.ext_fields), (ResponseCode.SUCCESS,
                                                                 {"hasMsg": "false", "pollingFull": "false"}))
        self.put()
        for _ in range(2):
            self.assertEqual(self.call(RequestCode.NOTIFICATION, self.notify_ext()).ext_fields["hasMsg"], "true")
        self.messages(self.pop())
        self.assertEqual(self.call(RequestCode.NOTIFICATION, self.notify_ext()).ext_fields["hasMsg"], "false")

    def test_waits_for_a_message(self) -> None:
        """With a poll time it waits: answered hasMsg=true on an arrival, hasMsg=false at its deadline."""
        d = self.dispatch(RequestCode.NOTIFICATION, self.notify_ext(5_000))
        assert isinstance(d, Deferred)
        got: list[RemotingCommand] = []
        d.addCallback(got.append)
        self.reactor.advance(1)
        self.assertEqual(got, [])
        self.put()
        self.reactor.advance(0)
        self.assertEqual(got[0].ext_fields["hasMsg"], "true")
        self.messages(self.pop())
        d = self.dispatch(RequestCode.NOTIFICATION, self.notify_ext(2_000))
        assert isinstance(d, Deferred)
        d.addCallback(got.append)
        self.reactor.advance(2.1)
        self.assertEqual(got[1].ext_fields, {"hasMsg": "false", "pollingFull": "false"})
        self.assertEqual(self.controller.pop_long_polling.held(), 0)


#: config/consumerOrderInfo.json as the Java 5.5.0 broker wrote it after compat-tests'
#: FIFO scenario (f0, f1 popped; f0 acked; f1 and f2 popped again, f1 counted once; both acked):
#: integer keys unquoted, offsets as the first and differences from it, fields sorted.
JAVA_ORDER_INFO = """{
\t"orderInfoCount":1,
\t"orderedConsumptionLevel":"QUEUE",
\t"table":{
\t\t"FifoTopicJava@FifoGroupJava":{
\t\t\t0:{
\t\t\t\t"cm":3,
\t\t\t\t"i":4000,
\t\t\t\t"l":1795601123496,
\t\t\t\t"o":[1,1],
\t\t\t\t"oc":{
\t\t\t\t\t1:1
\t\t\t\t},
\t\t\t\t"popTime":1795601123495
\t\t\t}
\t\t}
\t}
}"""


class ConsumerOrderInfoFileTests(FifoPopTestCase):
    """config/consumerOrderInfo.json: FIFO POP's blocked queues across restarts, in Java's shape."""

    def restart(self) -> None:
        root = self.controller.store_config.store_path_root_dir
        self.controller.shutdown()
        self.controller = make_controller(self, self.reactor, root=root, popFromRetryProbability=0)
        self.table = processor_table(self.controller)

    def test_blocked_across_restart(self) -> None:
        """A queue blocked at shutdown is still blocked after the start; the redelivery is counted."""
        for body in (b"a", b"b"):
            self.put(body=body)
        first = self.fifo()
        msgs = self.messages(first)
        self.assertEqual(self.ack_fifo(first, msgs[0]).code, ResponseCode.SUCCESS)
        self.restart()
        self.assertEqual(self.fifo().code, ResponseCode.POLLING_TIMEOUT)
        self.reactor.advance(INVISIBLE / 1000 + 0.001)
        again = self.fifo()
        self.assertEqual([m.body for m in self.messages(again)], [b"b"])
        info = PopMessageResponseHeader.from_ext_fields(again.ext_fields).order_count_info
        self.assertEqual(ei.parse_order_count_info(info), {"0@qo0%1": 1, "0@0": 1})

    def test_java_file_read(self) -> None:
        """The Java broker's file: offsets expanded, keys read as numbers."""
        path = self.controller.pop_service.order_info.file.path
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(JAVA_ORDER_INFO)
        manager = ConsumerOrderInfoManager(path)
        self.assertTrue(manager.load())
        (info,) = manager.table[("FifoTopicJava", "FifoGroupJava")].values()
        self.assertEqual((info.offsets, info.commit_bits, info.consumed_count, info.invisible_time, info.pop_time,
                          info.last_consume_timestamp, info.attempt_id),
                         ([1, 2], 3, {1: 1}, 4000, 1795601123495, 1795601123496, None))
        self.assertEqual(info.next_offset(), 3)
        self.assertEqual(list(manager.table[("FifoTopicJava", "FifoGroupJava")]), [0])

    def test_written_as_java_writes(self) -> None:
        """Our encoding of the same state: the fields Java writes, with quoted keys (which fastjson reads)."""
        manager = ConsumerOrderInfoManager(self.mktemp())
        manager.read_queue_nums = lambda topic: 1
        manager.group_exists = lambda group: True
        manager.update("A", "T", "G", 0, 1000, 4000, [5, 6, 9])
        manager.update_next_visible_time("T", "G", 0, 6, 1000, 9000)
        manager.commit_and_next("T", "G", 0, 5, 1000)
        self.assertEqual(fastjson.loads(manager.snapshot(2000)()), {
            "orderInfoCount": 1, "orderedConsumptionLevel": "QUEUE",
            "table": {"T@G": {"0": {"popTime": 1000, "i": 4000, "o": [5, 1, 4], "ot": {"6": 9000}, "l": 1000,
                                    "cm": 1, "a": "A"}}}})
        manager.file.persist(manager.snapshot(2000)())
        again = ConsumerOrderInfoManager(manager.file.path)
        self.assertTrue(again.load())
        self.assertEqual(again.table[("T", "G")][0].to_json(), manager.table[("T", "G")][0].to_json())

    def test_auto_clean(self) -> None:
        """Encoding forgets gone topics, gone groups, queues past the read queues and day-old entries."""
        manager = ConsumerOrderInfoManager(self.mktemp())
        manager.read_queue_nums = lambda topic: {"T": 2}.get(topic)
        manager.group_exists = lambda group: group == "G"
        for topic, group, qid, when in (("T", "G", 0, 0), ("T", "G", 1, 10**8), ("T", "G", 2, 10**8),
                                        ("Gone", "G", 0, 10**8), ("T", "Other", 0, 10**8)):
            manager.update(None, topic, group, qid, when, 4000, [1])
        manager.snapshot(10**8 + 1)
        self.assertEqual({k: list(v) for k, v in manager.table.items()}, {("T", "G"): [1]})

    def test_unreadable_file(self) -> None:
        """A file that does not parse into order info: load says so and keeps nothing."""
        path = self.mktemp()
        with open(path, "w", encoding="utf-8") as fh:
            fh.write('{"table": {"T@G": {"x": {}}}}')
        manager = ConsumerOrderInfoManager(path)
        self.assertFalse(manager.load())
        self.assertEqual(manager.table, {})
