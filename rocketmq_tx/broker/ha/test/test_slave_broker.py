"""A SLAVE broker's requests: sends refused, pulls of replicated data served as Java 4.9's slave serves them."""

from __future__ import annotations

from rocketmq_tx.broker.test.test_processors import props
from rocketmq_tx.broker.test.test_pull import TOPIC, PullTestCase
from rocketmq_tx.broker.test.util import make_controller
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import ResponseCode
from rocketmq_tx.store.commitlog import MessageExtBrokerInner
from rocketmq_tx.store.test.util import message


class SlaveBrokerTests(PullTestCase):
    keys = {"brokerRole": "SLAVE", "brokerId": 1}

    def setUp(self) -> None:
        super().setUp()
        self.master = make_controller(self)
        self.master.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 4, 4))

    def replicate(self) -> None:
        src = self.master.store
        off = self.store.get_max_phy_offset()
        while off < src.get_max_phy_offset():
            data = src.commit_log.get_data(off, 32 * 1024)
            assert data is not None
            self.assertTrue(self.store.append_to_commit_log(off, data))
            off += len(data)

    def test_no_master_work(self) -> None:
        """A slave runs no timer store (its master delivers) and replicates through an HA client."""
        self.assertIsNone(self.controller.timer_message_service)
        self.assertIsNone(self.controller.ha_service)
        self.assertIsNotNone(self.controller.ha_client)

    def test_send_refused(self) -> None:
        """Java 4.9: the store refuses, SERVICE_NOT_AVAILABLE with the "put to the slave" remark."""
        response = self.send(TOPIC, body=b"x", queue_id=0, body_props=props(TAGS="a"))
        self.assertEqual(response.code, ResponseCode.SERVICE_NOT_AVAILABLE)
        self.assertIn("messages are put to the slave", response.remark or "")

    def test_pull_replicated_no_offset_commit(self) -> None:
        for i in range(3):
            r = self.master.put_message(self._inner(b"m%d" % i))
            self.assertTrue(r.is_ok())  # type: ignore[union-attr]
        self.replicate()
        response = self.pull(0, commit=2)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual([m.body for m in decode_messages(response.body)], [b"m0", b"m1", b"m2"])
        # a slave's consumer offsets are its master's (SlaveSynchronize): a pull commits nothing
        self.assertEqual(self.controller.consumer_offset_manager.query_offset("g", TOPIC, 0), -1)

    def test_offset_moved_is_retry(self) -> None:
        """A slave behind its master does not move the consumer: PULL_RETRY_IMMEDIATELY (offsetCheckInSlave off)."""
        self.master.put_message(self._inner(b"m"))
        self.replicate()
        response = self.pull(9)
        self.assertEqual(response.code, ResponseCode.PULL_RETRY_IMMEDIATELY)
        self.assertEqual(response.ext_fields["suggestWhichBrokerId"], "0")

    def _inner(self, body: bytes) -> MessageExtBrokerInner:
        return message(TOPIC, body, 0, tags="TagA")
