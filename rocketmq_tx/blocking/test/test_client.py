"""Tests for the blocking producer and pull client against the scripted fake cluster over TCP."""

from __future__ import annotations

import pickle
import time
import zlib

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.blocking import BlockingMQClient, BlockingProducer, BlockingPullClient
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.remoting import MQBrokerError, RemotingTimeoutError, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import MQClientError, PullStatus, SendStatus
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeaderV2
from rocketmq_tx.testing.fakebroker import SILENT, ThreadedFakeServer


class Base(SynchronousTestCase):
    brokers: tuple[str, ...] = ("broker-a", "broker-b")
    namesrvs = 1
    chunk: int | None = None

    def setUp(self) -> None:
        self.server = ThreadedFakeServer(self.brokers, self.namesrvs, chunk=self.chunk)
        self.addCleanup(self.server.close)
        self.cluster = self.server.cluster
        self.cluster.add_topic("T", 2)

    def producer(self, **kwargs: object) -> BlockingProducer:
        producer = BlockingProducer("PG", self.server.namesrv_addr, **kwargs)  # type: ignore[arg-type]
        self.addCleanup(producer.close)
        return producer

    def sends(self) -> list[tuple[str, SendMessageRequestHeaderV2]]:
        return [(a, SendMessageRequestHeaderV2.from_ext_fields(r.ext_fields)) for a, r in self.cluster.seen
                if r.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)]


class ProducerTests(Base):
    chunk = 7  # every response arrives in 7-byte pieces

    def test_send_and_pull_back(self) -> None:
        """A sent message is stored with body, keys, tags, properties; ids as Java reports them."""
        producer = self.producer()
        msg = Message("T", b"hello")
        msg.tags, msg.keys = "TagA", ["k1"]
        msg.put_property("color", "red")
        result = producer.send(msg)
        self.assertEqual(result.send_status, SendStatus.SEND_OK)
        self.assertEqual(result.msg_id, msg.unique_key)
        mq = result.message_queue
        stored = self.cluster.messages[(mq.broker_name, "T", mq.queue_id)][result.queue_offset]
        self.assertEqual(result.offset_msg_id, stored.offset_msg_id)
        self.assertEqual((stored.body, stored.tags, stored.keys, stored.properties["color"]),
                         (b"hello", "TagA", ["k1"], "red"))

    def test_compressed_body(self) -> None:
        producer = self.producer()
        result = producer.send(Message("T", b"z" * 5000))
        stored = self.cluster.messages[(result.message_queue.broker_name, "T", result.message_queue.queue_id)][0]
        self.assertEqual(stored.sys_flag & 0x301, MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE)
        self.assertEqual(zlib.decompress(stored.body), b"z" * 5000)

    def test_retry_on_other_broker(self) -> None:
        """A retryable broker error moves the next attempt to the other broker."""
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_BUSY)
        self.assertRaises(MQBrokerError, self.producer().send, Message("T", b"x"))
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_ERROR)
        result = self.producer().send(Message("T", b"x"))
        first, second = [a for a, _ in self.sends()][-2:]
        self.assertNotEqual(first, second)
        self.assertEqual(self.cluster.brokers[result.message_queue.broker_name], second)

    def test_retries_exhausted(self) -> None:
        """Three attempts (retryTimesWhenSendFailed 2), then MQClientError with the last code."""
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, *[ResponseCode.SYSTEM_ERROR] * 3)
        error = self.assertRaises(MQClientError, self.producer().send, Message("T", b"x"))
        self.assertEqual(error.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(len(self.sends()), 3)

    def test_timeout_spends_the_send_timeout(self) -> None:
        """As in Java, the send timeout covers every attempt: a silent broker uses it all up."""
        self.cluster.script(RequestCode.SEND_MESSAGE_V2, SILENT)
        producer = self.producer()
        given: list[float] = []
        real = producer.client.remoting.invoke

        def recording(addr, request, timeout=None):  # type: ignore[no-untyped-def]
            if request.code == RequestCode.SEND_MESSAGE_V2:  # not the route lookup
                given.append(timeout)
            return real(addr, request, timeout)
        self.patch(producer.client.remoting, "invoke", recording)
        error = self.assertRaises(MQClientError, producer.send, Message("T", b"x"), timeout=0.5)
        self.assertIsInstance(error.__cause__, RemotingTimeoutError)
        # One attempt, given the whole budget; none after it timed out (not 3 x 0.5 s).
        self.assertEqual(len(given), 1)
        self.assertLessEqual(given[0], 0.5)
        self.assertEqual(len(self.sends()), 1)
        self.assertEqual(producer.send(Message("T", b"x")).send_status, SendStatus.SEND_OK)

    def test_ordered_send(self) -> None:
        producer = self.producer()
        queues = {producer.send_orderly(Message("T", f"{i}".encode()), "order-7").message_queue for i in range(5)}
        self.assertEqual(len(queues), 1)
        mq = MessageQueue("T", "broker-b", 1)
        self.assertEqual(producer.send(Message("T", b"q"), queue=mq).message_queue, mq)
        chosen = producer.send(Message("T", b"s"), selector=lambda qs, m, a: qs[a], arg=0).message_queue
        self.assertEqual(chosen, MessageQueue("T", "broker-a", 0))

    def test_batch_and_oneway(self) -> None:
        producer = self.producer()
        msgs = [Message("T", b"a"), Message("T", b"b")]
        result = producer.send_batch(msgs)
        self.assertEqual(result.msg_id.split(","), [m.unique_key for m in msgs])
        self.assertEqual(len(result.offset_msg_id.split(",")), 2)
        producer.send_oneway(Message("T", b"o"))
        deadline = time.monotonic() + 5
        while sum(len(v) for v in self.cluster.messages.values()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)  # the oneway send is acknowledged by nothing; poll the fake's state
        self.assertEqual(sum(len(v) for v in self.cluster.messages.values()), 3)

    def test_auto_create_through_template(self) -> None:
        """An unknown topic is sent through TBW102's route (the broker creates it)."""
        self.cluster.add_topic("TBW102", 8)
        result = self.producer().send(Message("NEW", b"x"))
        self.assertLess(result.message_queue.queue_id, 4)

    def test_no_route(self) -> None:
        error = self.assertRaises(MQBrokerError, self.producer().send, Message("NOPE", b"x"))
        self.assertEqual(error.code, ResponseCode.TOPIC_NOT_EXIST)

    def test_pickle(self) -> None:
        producer = self.producer(retry_times_when_send_failed=5)
        producer.send(Message("T", b"x"))
        copy = pickle.loads(pickle.dumps(producer))
        self.addCleanup(copy.close)
        self.assertEqual(copy.retry_times_when_send_failed, 5)
        self.assertEqual(copy.send(Message("T", b"y")).send_status, SendStatus.SEND_OK)

    def test_pickle_keeps_tls(self) -> None:
        """The TLS settings travel with a pickled producer or pull client (Spark executors)."""
        from rocketmq_tx.blocking.client import BlockingProducer, BlockingPullClient
        from rocketmq_tx.tlsconfig import TlsSettings

        tls = TlsSettings.from_sources({"tls.config.file": "", "tls.enable": "true"})
        for client in (BlockingProducer("g", "127.0.0.1:1", tls=tls), BlockingPullClient("g", "127.0.0.1:1", tls=tls)):
            copy = pickle.loads(pickle.dumps(client))
            self.assertTrue(copy.client.tls["tls.enable"])
            self.assertIsNotNone(copy.client.remoting.tls)


class NameServerFailoverTests(Base):
    namesrvs = 2

    def test_failover(self) -> None:
        """A dead first name server is skipped; later lookups stick to the live one."""
        first, second = self.cluster.namesrvs
        self.cluster.down.add(first)
        with BlockingMQClient(self.server.namesrv_addr) as client:
            self.assertEqual(len(client.fetch_queues("T")), 4)
            self.assertEqual(client.namesrvs.ordered()[0], second)

    def test_cached_route_when_all_down(self) -> None:
        with BlockingMQClient(self.server.namesrv_addr, timeout=0.5, route_ttl=0) as client:
            route = client.route("T")
            self.cluster.down.update(self.cluster.namesrvs)
            client.remoting.close()
            self.assertEqual(client.route("T"), route)

    def test_name_server_timeout(self) -> None:
        self.cluster.script(RequestCode.GET_ROUTEINFO_BY_TOPIC, SILENT, SILENT)
        with BlockingMQClient(self.server.namesrv_addr, timeout=0.2) as client:
            self.assertRaises(RemotingTimeoutError, client.route, "T")


class PullClientTests(Base):
    def setUp(self) -> None:
        super().setUp()
        producer = self.producer()
        self.mq = MessageQueue("T", "broker-a", 0)
        for i in range(5):
            msg = Message("T", f"m{i}".encode())
            msg.tags = "A" if i % 2 == 0 else "B"
            msg.keys = [f"key{i}"]
            self.last = producer.send(msg, queue=self.mq)
        self.pull = BlockingPullClient("CG", self.server.namesrv_addr)
        self.addCleanup(self.pull.close)

    def test_pull_by_offset(self) -> None:
        result = self.pull.pull(self.mq, 0, 3)
        self.assertEqual(result.pull_status, PullStatus.FOUND)
        self.assertEqual([m.body for m in result.msg_found_list], [b"m0", b"m1", b"m2"])
        self.assertEqual(result.next_begin_offset, 3)
        self.assertEqual(result.msg_found_list[0].properties["MAX_OFFSET"], "5")
        tagged = self.pull.pull(self.mq, 0, 32, "A")
        self.assertEqual([m.body for m in tagged.msg_found_list], [b"m0", b"m2", b"m4"])
        self.assertEqual(self.pull.pull(self.mq, 5).pull_status, PullStatus.NO_NEW_MSG)
        self.assertEqual(self.pull.pull(self.mq, 9).pull_status, PullStatus.OFFSET_ILLEGAL)

    def test_offsets(self) -> None:
        self.assertEqual((self.pull.min_offset(self.mq), self.pull.max_offset(self.mq)), (0, 5))
        self.assertEqual(self.pull.search_offset(self.mq, 0), 0)
        self.assertEqual(self.pull.search_offset(self.mq, int(time.time() * 1000) + 60000), 5)
        self.assertGreater(self.pull.earliest_msg_store_time(self.mq), 0)
        self.assertIsNone(self.pull.committed_offset(self.mq))
        self.pull.commit_offset(self.mq, 3)
        self.assertEqual(self.pull.committed_offset(self.mq), 3)
        self.assertEqual(self.cluster.offsets[("CG", "T", 0)], 3)

    def test_slave_read(self) -> None:
        """Java 4.9's PullAPIWrapper: pull where the answer suggests; offsets to the master, else the slave."""
        slave = self.server.add_slave("broker-a")
        master = self.cluster.brokers["broker-a"]
        self.cluster.suggest[master] = 1
        self.pull.client.route("T", refresh=True)
        self.assertEqual(len(self.pull.pull(self.mq, 0, 2).msg_found_list), 2)
        self.assertEqual([m.body for m in self.pull.pull(self.mq, 2, 2).msg_found_list], [b"m2", b"m3"])
        self.assertEqual([a for a, _ in self.cluster.requests(RequestCode.PULL_MESSAGE)], [master, slave])
        self.pull.commit_offset(self.mq, 4)
        self.assertEqual(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)[-1][0], master)
        self.cluster.unrouted.add(master)  # the master died: routes name the slave alone
        self.pull.client.route("T", refresh=True)
        self.pull.commit_offset(self.mq, 5)
        self.assertEqual(self.cluster.requests(RequestCode.UPDATE_CONSUMER_OFFSET)[-1][0], slave)
        self.assertEqual(self.pull.committed_offset(self.mq), 5)
        self.cluster.unrouted.clear()
        self.pull.client.route("T", refresh=True)
        self.pull.send_heartbeat(["T"])  # a consumer's heartbeat reaches the slave too (Java 4.9)
        self.assertIn(slave, self.cluster.heartbeats)

    def test_broker_error_code(self) -> None:
        self.cluster.script(RequestCode.PULL_MESSAGE, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
        error = self.assertRaises(MQBrokerError, self.pull.pull, self.mq, 0)
        self.assertEqual(error.code, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)

    def test_heartbeat_and_queries(self) -> None:
        self.pull.send_heartbeat(["T"])
        self.assertEqual(len(self.cluster.heartbeats), 2)
        body = next(iter(self.cluster.heartbeats.values()))[0]
        self.assertEqual(body["consumerDataSet"][0]["groupName"], "CG")
        client = self.pull.client
        found = client.query_messages("T", "key3")
        self.assertEqual([m.body for m in found], [b"m3"])
        self.assertEqual(client.view_message(self.last.offset_msg_id).body, b"m4")

    def test_pickle(self) -> None:
        copy = pickle.loads(pickle.dumps(self.pull))
        self.addCleanup(copy.close)
        self.assertEqual(copy.pull(self.mq, 4).msg_found_list[0].body, b"m4")
