"""
The push consumer's flow control (docs/compatibility.md, "Flow control"): a queue's next pull
is sent only once its previous batch is consumed, so at most one pull batch per queue is held.
Watched from the broker's side of the fake network, with a listener the test answers by hand.
"""

from __future__ import annotations

from collections import defaultdict

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client import Message, MessageQueue, Producer
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.litepull import CONSUME_FROM_FIRST_OFFSET
from rocketmq_tx.client.push import ConsumeOrderlyStatus, ConsumeStatus, PushConsumer
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_tx.testing.fakebroker import FakeCluster
from rocketmq_tx.testing.fakenet import FakeNetwork

BROKER = "10.0.0.1:10911"
PULL_BATCH = 4
STORED = {0: 10, 1: 3}  # messages per queue of T


class FlowControlTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.cluster = FakeCluster({"broker-a": BROKER})
        self.cluster.add_topic("T", len(STORED))
        self.net = FakeNetwork(self.cluster)
        self.instance = MQClientInstance(self.net.reactor, "127.0.0.1:9876", remoting=self.net.client)
        producer = Producer("PG", instance=self.instance)
        for queue_id, count in STORED.items():
            mq = MessageQueue("T", "broker-a", queue_id)
            for i in range(count):
                d = producer.send(Message("T", f"q{queue_id}-{i}".encode()), queue=mq)
                self.net.flush()
                self.successResultOf(d)
        #: per queue of T: pulls received, messages the broker handed out and the listener has
        #: not finished, the most ever held, and whether a suspended pull is waiting
        self.pulls: dict[int, int] = defaultdict(int)
        self.held: dict[int, int] = defaultdict(int)
        self.most_held: dict[int, int] = defaultdict(int)
        self.suspended: dict[int, bool] = defaultdict(bool)
        self.violations: list[str] = []
        self._seen: set[int] = set()
        handle = self.cluster.handle

        def observed(addr: str, request: RemotingCommand) -> RemotingCommand | None:
            response = handle(addr, request)
            if request.code == RequestCode.PULL_MESSAGE and response is not None:
                self._pulled(request, response)
            return response

        self.cluster.handle = observed  # type: ignore[method-assign]
        #: listener calls not answered yet, oldest first: (messages, the Deferred returned)
        self.pending: list[tuple[list[MessageExt], Deferred[object]]] = []
        self.consumed: list[MessageExt] = []

    def _pulled(self, request: RemotingCommand, response: RemotingCommand) -> None:
        header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
        if header.topic != "T":
            return
        q = header.queue_id
        if request.opaque not in self._seen:  # a new pull (a suspended one is handled twice)
            self._seen.add(request.opaque)
            self.pulls[q] += 1
            if self.suspended[q] or self.held[q]:
                self.violations.append(f"pull {self.pulls[q]} of queue {q} while another pull waits "
                                       f"({self.suspended[q]}) or {self.held[q]} messages are not consumed")
            self.suspended[q] = response.code == ResponseCode.PULL_NOT_FOUND and bool(header.sys_flag & 0x2)
        else:
            self.suspended[q] = False
        if response.code == ResponseCode.SUCCESS:
            found = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
            self.held[q] += found.next_begin_offset - header.queue_offset
            self.most_held[q] = max(self.most_held[q], self.held[q])

    def consumer(self, orderly: bool) -> PushConsumer:
        consumer = PushConsumer("CG", instance=self.instance, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                                pull_batch_size=PULL_BATCH, consume_batch_size=2)
        consumer.subscribe("T")

        def listener(msgs: list[MessageExt]) -> Deferred[object]:
            d: Deferred[object] = Deferred()
            self.pending.append((msgs, d))
            return d

        consumer.register_listener(listener, orderly=orderly)
        self.addCleanup(self.stop, consumer)
        return consumer

    def stop(self, consumer: PushConsumer) -> None:
        d = consumer.stop()
        self.net.flush()
        self.successResultOf(d)

    def answer_oldest(self, status: object) -> None:
        msgs, d = self.pending.pop(0)
        d.callback(status)
        self.consumed += msgs
        for m in msgs:
            self.held[m.queue_id] -= 1
        self.net.flush()

    def check_one_batch_per_queue(self, orderly: bool, status: object) -> None:
        self.consumer(orderly).start()
        self.net.flush()
        self.assertEqual(dict(self.pulls), {0: 1, 1: 1})
        self.assertEqual(dict(self.held), {0: PULL_BATCH, 1: STORED[1]})
        # A listener that does not answer for a minute (long-poll timeouts, rebalances and
        # commits come and go): no further pull, nothing more held.
        for _ in range(60):
            self.net.advance(1.0)
        self.assertEqual(dict(self.pulls), {0: 1, 1: 1})
        self.assertEqual(dict(self.held), {0: PULL_BATCH, 1: STORED[1]})
        self.assertEqual(len(self.pending), 2)  # the first listener call of each queue
        while self.pending:
            self.answer_oldest(status)
        self.assertEqual(self.violations, [])
        self.assertEqual(dict(self.most_held), {0: PULL_BATCH, 1: STORED[1]})
        self.assertEqual(self.pulls[0], 3 + 1)  # 4 + 4 + 2 messages, then a long poll finding nothing
        for q, count in STORED.items():
            self.assertEqual([m.body for m in self.consumed if m.queue_id == q],
                             [f"q{q}-{i}".encode() for i in range(count)])

    def test_concurrent_listener(self) -> None:
        self.check_one_batch_per_queue(False, ConsumeStatus.CONSUME_SUCCESS)

    def test_orderly_listener(self) -> None:
        self.check_one_batch_per_queue(True, ConsumeOrderlyStatus.SUCCESS)
