"""
SYNC_MASTER (Java 4.9 ``CommitLog.submitReplicaRequest`` and ``HAService.GroupTransferService``):
a send is answered once a slave acknowledged its end offset, FLUSH_SLAVE_TIMEOUT after
``slaveTimeout`` (3 s; not ``syncFlushTimeout``, as Java 4.9.8's and 5.3.3's CommitLog), SLAVE_NOT_AVAILABLE
at once when no slave is connected or it is more than ``haSlaveFallbehindMax`` behind; the message
is stored in every case.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.controller import defer_both
from rocketmq_tx.broker.test.test_processors import BrokerTestCase, props
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.store.status import PutMessageResult, PutMessageStatus

TOPIC = "SyncTopic"


class SyncMasterTests(BrokerTestCase):
    keys = {"brokerRole": "SYNC_MASTER", "syncFlushTimeout": 9000}

    def setUp(self) -> None:
        super().setUp()
        self.controller.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 4, 4))
        self.ha = self.controller.ha_service
        assert self.ha is not None

    def send_now(self, body: bytes = b"x") -> RemotingCommand:
        return self.send(TOPIC, body=body, queue_id=0, body_props=props(TAGS="a", WAIT="true"))

    def send_later(self, body: bytes = b"x") -> Any:
        header = self.send_header(TOPIC, body_props=props(TAGS="a", WAIT="true"), queue_id=0)
        return self.dispatch(RequestCode.SEND_MESSAGE, header.to_ext_fields(), body)

    def connect_slave(self) -> None:
        # a connected slave that never acknowledges (the service only counts and wakes it)
        self.ha.connections.append(SimpleNamespace(push_now=lambda: None, tick=lambda now: None))  # type: ignore[arg-type]

    def test_no_slave(self) -> None:
        """No slave connected: SLAVE_NOT_AVAILABLE at once, with the message id (Java's sendOK)."""
        response = self.send_now()
        self.assertEqual(response.code, ResponseCode.SLAVE_NOT_AVAILABLE)
        self.assertIn("msgId", response.ext_fields)
        self.assertEqual(self.store.get_max_offset_in_queue(TOPIC, 0), 1)

    def test_acked(self) -> None:
        """Answered when a slave reports an offset at or past the message's end, not before."""
        self.connect_slave()
        d = self.send_later()
        self.assertIsInstance(d, Deferred)
        self.assertNoResult(d)
        end = self.store.get_max_phy_offset()
        self.ha.notify_transfer_some(end - 1)
        self.assertNoResult(d)
        self.ha.notify_transfer_some(end)
        response = self.successResultOf(d)
        self.assertEqual(response.code, ResponseCode.SUCCESS)

    def test_timeout(self) -> None:
        """No ack within slaveTimeout (3 s; syncFlushTimeout is 9 s here): FLUSH_SLAVE_TIMEOUT, message id."""
        self.connect_slave()
        d1 = self.send_later(b"1")
        self.reactor.advance(1.0)
        d2 = self.send_later(b"2")
        self.reactor.advance(2.0)
        r1 = self.successResultOf(d1)
        self.assertEqual(r1.code, ResponseCode.FLUSH_SLAVE_TIMEOUT)
        self.assertIn("msgId", r1.ext_fields)
        self.assertNoResult(d2)
        self.reactor.advance(1.0)
        self.assertEqual(self.successResultOf(d2).code, ResponseCode.FLUSH_SLAVE_TIMEOUT)

    def test_slave_timeout_configurable(self) -> None:
        self.controller.store_config.slave_timeout = 500
        self.connect_slave()
        d = self.send_later()
        self.reactor.advance(0.4)
        self.assertNoResult(d)
        self.reactor.advance(0.1)
        self.assertEqual(self.successResultOf(d).code, ResponseCode.FLUSH_SLAVE_TIMEOUT)

    def test_slave_too_far_behind(self) -> None:
        self.connect_slave()
        self.controller.store_config.ha_slave_fallbehind_max = 10
        response = self.send_now(b"x" * 100)
        self.assertEqual(response.code, ResponseCode.SLAVE_NOT_AVAILABLE)

    def test_async_master_does_not_wait(self) -> None:
        self.controller.store_config.broker_role = type(self.controller.store_config.broker_role).ASYNC_MASTER
        response = self.send_now()
        self.assertIsInstance(response, RemotingCommand)
        self.assertEqual(response.code, ResponseCode.SUCCESS)



class CombineTests(SynchronousTestCase):
    """Java's thenCombine of the flush and the replication: the replica's status wins when not PUT_OK."""

    def test_combine(self) -> None:
        ok, disk, slave, absent = (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                                   PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE)
        for flush_status, replica_status, want in ((ok, ok, ok), (disk, ok, disk), (disk, slave, slave),
                                                   (ok, absent, absent)):
            result = PutMessageResult(ok)
            flushed: Deferred = Deferred()
            replica: Deferred = Deferred()
            d = defer_both(flushed, replica, result)
            replica.callback(replica_status)
            self.assertNoResult(d)  # the flush is not done yet
            result.status = flush_status
            flushed.callback(result)
            self.assertIs(self.successResultOf(d), result)
            self.assertEqual(result.status, want)

    def test_combine_flushed_already(self) -> None:
        """ASYNC_FLUSH: the flush is settled at once (a plain result); the replica's status decides."""
        ok, disk, slave = (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                           PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        for flush_status, replica_status, want in ((ok, ok, ok), (ok, slave, slave), (disk, ok, disk)):
            result = PutMessageResult(flush_status)
            replica: Deferred = Deferred()
            d = defer_both(result, replica, result)
            self.assertNoResult(d)  # the slave has not acknowledged yet
            replica.callback(replica_status)
            self.assertIs(self.successResultOf(d), result)
            self.assertEqual(result.status, want)
