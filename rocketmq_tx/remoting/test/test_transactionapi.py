"""
Tests for the transactional send plan of rocketmq_tx.remoting.transactionapi, driven
without I/O against the fake cluster (as test_sendapi drives the send plans): the half
message, the local transaction, END_TRANSACTION's header as Java's client sends it, and
the answer to a broker's check.
"""

from __future__ import annotations

from typing import Any

from rocketmq_tx.common.message import Message, MessageConst
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.remoting import RequestCode, ResponseCode, api
from rocketmq_tx.remoting.api import MQClientError, SendStatus
from rocketmq_tx.remoting.command import RPC_ONEWAY
from rocketmq_tx.remoting.errors import RemotingCommandError
from rocketmq_tx.remoting.headers.transaction import EndTransactionRequestHeader
from rocketmq_tx.remoting.plans import Plan
from rocketmq_tx.remoting.test.test_sendapi import Base
from rocketmq_tx.remoting.transactionapi import LocalTransactionState, TransactionProducerBase
from rocketmq_tx.testing.fakebroker import HALF_TOPIC

COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)


class Producer(TransactionProducerBase):
    def __init__(self, base: Base) -> None:
        super().__init__("TXG", base.routes)
        self.base = base

    def _run(self, plan: Plan[Any]) -> Any:
        return self.base.drive(plan)


class TransactionPlanTests(Base):
    def setUp(self) -> None:
        super().setUp()
        self.producer = Producer(self)
        self.calls: list[tuple[Message, Any]] = []

    def local(self, state: Any) -> Any:
        def execute(msg: Message, arg: Any) -> Any:
            self.calls.append((msg, arg))
            if isinstance(state, Exception):
                raise state
            return state
        return execute

    def ended(self) -> tuple[str, EndTransactionRequestHeader, str | None]:
        (end,) = self.cluster.ended
        return end

    def stored(self, topic: str) -> list[Any]:
        return [m for (_, t, _), ms in self.cluster.messages.items() if t == topic for m in ms]

    def test_commit(self) -> None:
        """The half message carries TRAN_MSG, PGROUP and the prepared sysFlag; END_TRANSACTION commits it."""
        msg = Message("T", b"order-1")
        msg.keys = "k1"
        result = self.producer.send_message_in_transaction(msg, "the-arg", local_transaction=self.local(COMMIT))
        self.assertEqual((result.send_status, result.local_transaction_state), (SendStatus.SEND_OK, COMMIT))
        ((seen, arg),) = self.calls
        self.assertIs(seen, msg)
        self.assertEqual((arg, msg.transaction_id), ("the-arg", msg.unique_key))
        (_, send), = self.cluster.requests(RequestCode.SEND_MESSAGE_V2)
        self.assertEqual(int(send.ext_fields["f"]) & MessageSysFlag.TRANSACTION_MASK,
                         MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        self.assertIn("TRAN_MSG\x01true\x02", send.ext_fields["i"])
        self.assertIn("PGROUP\x01TXG\x02", send.ext_fields["i"])
        addr, header, remark = self.ended()
        self.assertEqual(addr, self.cluster.brokers[result.message_queue.broker_name])
        self.assertEqual(header, EndTransactionRequestHeader(
            producer_group="TXG", tran_state_table_offset=result.queue_offset,
            commit_log_offset=self.stored("T")[0].prepared_transaction_offset,
            commit_or_rollback=MessageSysFlag.TRANSACTION_COMMIT_TYPE, msg_id=msg.unique_key,
            broker_name=result.message_queue.broker_name))
        self.assertIsNone(remark)
        (_, end), = self.cluster.requests(RequestCode.END_TRANSACTION)
        self.assertTrue(end.flag & RPC_ONEWAY)
        self.assertEqual(end.ext_fields["bname"], result.message_queue.broker_name)
        self.assertNotIn("fromTransactionCheck", end.ext_fields)
        (committed,) = self.stored("T")
        self.assertEqual((committed.body, committed.unique_key, committed.keys), (b"order-1", msg.unique_key, ["k1"]))
        self.assertEqual(self.stored(HALF_TOPIC), [])

    def test_rollback(self) -> None:
        """ROLLBACK_MESSAGE ends with type 12: the half message is dropped, nothing reaches the topic."""
        result = self.producer.send_message_in_transaction(Message("T", b"x"), local_transaction=self.local(ROLLBACK))
        self.assertEqual(result.local_transaction_state, ROLLBACK)
        self.assertEqual(self.ended()[1].commit_or_rollback, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
        self.assertEqual((self.stored("T"), self.stored(HALF_TOPIC)), ([], []))

    def test_unknown_and_none(self) -> None:
        """UNKNOW and None leave the half message for the broker's check."""
        self.producer.local_transaction = self.local(None)
        self.assertEqual(self.producer.send_message_in_transaction(Message("T", b"x")).local_transaction_state,
                         UNKNOW)
        self.assertEqual(self.ended()[1].commit_or_rollback, MessageSysFlag.TRANSACTION_NOT_TYPE)
        self.assertEqual(len(self.stored(HALF_TOPIC)), 1)

    def test_local_failure(self) -> None:
        """A raising local transaction is UNKNOW, with Java's remark; the send still succeeds."""
        result = self.producer.send_message_in_transaction(Message("T", b"x"),
                                                           local_transaction=self.local(ValueError("db down")))
        self.assertEqual(result.local_transaction_state, UNKNOW)
        _, header, remark = self.ended()
        self.assertEqual((header.commit_or_rollback, remark),
                         (0, "executeLocalTransactionBranch exception: ValueError: db down"))
        self.assertTrue(any("db down" in w for w in self.warnings))

    def test_delay_dropped(self) -> None:
        """A delay level is removed before the half message is sent, as Java ignores it."""
        msg = Message("T", b"x")
        msg.delay_time_level = 3
        self.producer.send_message_in_transaction(msg, local_transaction=self.local(COMMIT))
        (_, send), = self.cluster.requests(RequestCode.SEND_MESSAGE_V2)
        self.assertNotIn("DELAY", send.ext_fields["i"])

    def test_no_listener(self) -> None:
        """Without a local transaction nothing is sent and MQClientError is raised."""
        self.assertRaises(MQClientError, self.producer.send_message_in_transaction, Message("T", b"x"))
        self.assertEqual(self.cluster.seen, [])

    def test_send_refused(self) -> None:
        """A refused half message raises; the local transaction never runs, nothing is ended."""
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, ResponseCode.MESSAGE_ILLEGAL)
        error = self.assertRaises(MQClientError, self.producer.send_message_in_transaction, Message("T", b"x"),
                                  local_transaction=self.local(COMMIT))
        self.assertEqual(error.code, ResponseCode.MESSAGE_ILLEGAL)
        self.assertEqual((self.calls, self.cluster.ended), ([], []))

    def test_flush_timeout_rolls_back(self) -> None:
        """A stored-but-not-flushed half message is rolled back without running the local transaction (Java)."""
        def flush_timeout(addr: str, request: Any) -> Any:
            response = self.cluster._send(addr, request)
            response.code = ResponseCode.FLUSH_DISK_TIMEOUT
            return response
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, flush_timeout)
        result = self.producer.send_message_in_transaction(Message("T", b"x"), local_transaction=self.local(COMMIT))
        self.assertEqual((result.send_status, result.local_transaction_state),
                         (SendStatus.FLUSH_DISK_TIMEOUT, ROLLBACK))
        self.assertEqual(self.calls, [])
        self.assertEqual(self.ended()[1].commit_or_rollback, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)

    def test_check_answer(self) -> None:
        """A check's answer: the check's offsets and transaction id, fromTransactionCheck, the UNIQ_KEY."""
        msg = Message("T", b"x")
        result = self.producer.send_message_in_transaction(msg, local_transaction=self.local(UNKNOW))
        check = self.cluster.check_request(result.message_queue.broker_name, self.ended()[1].commit_log_offset)
        self.assertTrue(check.flag & RPC_ONEWAY)
        header, half = api.parse_check_transaction_state(check)
        self.producer.prepare_check(half)
        self.assertEqual((half.transaction_id, half.get_property(MessageConst.PROPERTY_PRODUCER_GROUP)),
                         (msg.unique_key, "TXG"))
        answer = self.producer.check_answer(header, half, COMMIT, broker_name="broker-x")
        self.assertEqual(answer.code, RequestCode.END_TRANSACTION)
        self.assertTrue(answer.flag & RPC_ONEWAY)
        self.assertEqual(answer.ext_fields, {
            "producerGroup": "TXG", "tranStateTableOffset": str(header.tran_state_table_offset),
            "commitLogOffset": str(half.commit_log_offset), "commitOrRollback": "8",
            "fromTransactionCheck": "true", "msgId": msg.unique_key, "transactionId": msg.unique_key,
            "bname": "broker-x"})
        failed = self.producer.check_answer(header, half, COMMIT, RuntimeError("lost"))
        self.assertEqual((failed.ext_fields["commitOrRollback"], failed.remark),
                         ("0", "checkLocalTransactionState Exception: RuntimeError: lost"))

    def test_check_body_is_one_record(self) -> None:
        """A check body that is not exactly one stored record is refused."""
        self.producer.send_message_in_transaction(Message("T", b"x"), local_transaction=self.local(UNKNOW))
        addr, header, _ = self.ended()
        check = self.cluster.check_request(self.cluster._broker_name(addr), header.commit_log_offset)
        check.body = check.body + check.body
        self.assertRaises(RemotingCommandError, api.parse_check_transaction_state, check)
