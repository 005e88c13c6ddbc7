# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_push_flowcontrol -*-
"""
:class:`PushConsumer`: Java's ``DefaultMQPushConsumer`` on Twisted, clustering or
broadcasting, with a concurrent or an orderly listener. It composes, one module each:

* :class:`~rocketmq_tx.client.rebalancepush.RebalancePushImpl`: which queues it owns, shared
  with the group's other members every 20 s and when a broker says the membership changed,
  and (orderly) the brokers' locks on them;
* :class:`~rocketmq_tx.client.processqueue.ProcessQueue`: one owned queue, and
  :class:`~rocketmq_tx.client.pullmessage.PullMessageService`: its long-polling pull loop;
* :class:`~rocketmq_tx.client.consumeconcurrently.ConsumeMessageConcurrentlyService` or
  :class:`~rocketmq_tx.client.consumeorderly.ConsumeMessageOrderlyService`: the listener;
* :mod:`~rocketmq_tx.client.offsets`: the offsets, on the brokers or in a local file,
  committed every 5 s, when a queue is dropped and on stop;
* :class:`~rocketmq_tx.client.clientprocessor.ClientRemotingProcessor`: the brokers' requests.

Here are the configuration and the lifecycle. Flow control (Java's ``pullThresholdForQueue``
and ``pullThresholdSizeForQueue``) holds by construction: a queue's next pull is sent only
once its previous batch is consumed, so at most one pull batch per queue is in memory.
"""

from __future__ import annotations

from typing import Any, Unpack

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.client.clientprocessor import ClientRemotingProcessor
from rocketmq_tx.client.consumeconcurrently import ConsumeMessageConcurrentlyService, ConsumeStatus
from rocketmq_tx.client.consumeorderly import ConsumeMessageOrderlyService, ConsumeOrderlyStatus
from rocketmq_tx.client.consumer import (
    BROADCASTING,
    CLUSTERING,
    CONSUME_FROM_LAST_OFFSET,
    ConsumerBase,
    InstanceOptions,
)
from rocketmq_tx.client.consumeservice import ConsumeService, Listener
from rocketmq_tx.client.offsets import Failures, LocalFileOffsetStore
from rocketmq_tx.client.offsetstore import LocalOffsetStore, default_offset_dir
from rocketmq_tx.client.processqueue import ProcessQueue
from rocketmq_tx.client.pullmessage import PullMessageService
from rocketmq_tx.client.rebalancepush import RebalancePushImpl
from rocketmq_tx.client.trace import CONSUME, AsyncTraceDispatcher
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.rebalance import STRATEGIES
from rocketmq_tx.remoting.adminbodies import message_queue_key
from rocketmq_tx.remoting.api import (
    RETRY_GROUP_TOPIC_PREFIX,
    ConsumerData,
    MessageSelector,
    MQClientError,
    SubscriptionData,
)

__all__ = ["PushConsumer", "ConsumeStatus", "ConsumeOrderlyStatus", "CLUSTERING", "BROADCASTING"]

log = Logger()

#: ``MQVersion.getVersionDesc`` of the version our requests carry (the command's default).
CLIENT_VERSION_DESC = "V4_9_8"


class PushConsumer(ConsumerBase):
    """
    :param group: the consumer group.
    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored with ``instance``).
    :param reactor: the reactor (default: the global one).
    :param consume_from_where: where a queue without a committed offset starts (last, first,
        or ``CONSUME_FROM_TIMESTAMP`` with *consume_timestamp_ms*, by default half an hour
        before :meth:`start`).
    :param pull_batch_size: messages per pull of one queue: at most this many are held per queue.
    :param consume_batch_size: messages per listener call.
    :param allocate: ``"AVG"`` (Java's default), ``"AVG_BY_CIRCLE"`` or ``"CONSISTENT_HASH"``.
    :param max_reconsume_times: deliveries before the broker moves a message to the DLQ
        (Java's -1 means 16; orderly: unlimited).
    :param message_model: ``CLUSTERING`` (the group shares the queues, offsets on the
        brokers) or ``BROADCASTING`` (every member reads every queue, offsets in a local
        file under *offset_store_dir*, failed messages are not redelivered, as in Java).
    :param suspend_current_queue_time: orderly: seconds before a suspended batch comes again.
    :param enable_msg_trace: Java's ``enableMsgTrace``: a SubBefore and a SubAfter trace
        record per consumed message, sent to *trace_topic* (default ``RMQ_SYS_TRACE_TOPIC``).
    :param client: ``instance``, ``tls``, ``timeout`` and the ACL 1.0 credentials
        (``access_key``, ``secret_key``, ``security_token`` or ``credentials``): see
        :class:`~rocketmq_tx.client.consumer.InstanceOptions`.
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *,
                 consume_from_where: str = CONSUME_FROM_LAST_OFFSET, consume_timestamp_ms: int | None = None,
                 pull_batch_size: int = 32, consume_batch_size: int = 1, allocate: str = "AVG",
                 max_reconsume_times: int = -1, rebalance_interval: float = 20.0, persist_interval: float = 5.0,
                 message_model: str = CLUSTERING, offset_store_dir: str | None = None,
                 suspend_current_queue_time: float = 1.0, enable_msg_trace: bool = False,
                 trace_topic: str | None = None, **client: Unpack[InstanceOptions]) -> None:
        if message_model not in (CLUSTERING, BROADCASTING):
            raise ValueError(f"unknown message model {message_model!r}")
        ConsumerBase.__init__(self, group, namesrv_addr, reactor, consume_from_where=consume_from_where,
                              consume_timestamp_ms=consume_timestamp_ms, rebalance_interval=rebalance_interval,
                              **client)
        self.pull_batch_size = pull_batch_size
        self.consume_batch_size = consume_batch_size
        self.rebalance_impl = RebalancePushImpl(self, STRATEGIES[allocate])
        self.max_reconsume_times = max_reconsume_times
        self.persist_interval = persist_interval
        self.message_model = message_model
        self.offset_store_dir = offset_store_dir
        self.local_offsets: LocalOffsetStore | None = None
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.listener: Listener | None = None
        self.orderly = False
        self.suspend_current_queue_time = suspend_current_queue_time
        self.queues: dict[MessageQueue, ProcessQueue] = {}
        self.consume_service: ConsumeService | None = None
        self.pull_service = PullMessageService(self)
        self.started_ms = 0
        #: Java's ``enableMsgTrace``: SubBefore/SubAfter records to *trace_topic* (``client.trace``)
        self.trace_dispatcher = AsyncTraceDispatcher(self.instance, group, CONSUME, trace_topic) \
            if enable_msg_trace else None

    # ------------------------------------------------------------ configuration
    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """
        Consume *topic*'s messages whose tag matches *expression* (``"*"``, ``"A || B"``), or
        those a :class:`~rocketmq_tx.remoting.api.MessageSelector` selects
        (``MessageSelector.by_sql("a > 5 AND TAGS = 'x'")``: the broker filters by properties).
        """
        self.subscriptions[topic] = SubscriptionData.of(topic, expression)

    def register_listener(self, listener: Listener, *, orderly: bool = False) -> None:
        """
        *listener(messages)* returns a :class:`ConsumeStatus` (or a Deferred of one); raising
        means RECONSUME_LATER. With *orderly*, it returns a :class:`ConsumeOrderlyStatus`
        (raising means SUSPEND_CURRENT_QUEUE_A_MOMENT) and each queue is consumed under the
        broker's lock, one batch at a time.
        """
        self.listener = listener
        self.orderly = orderly

    @property
    def locking(self) -> bool:
        """Orderly clustering: queues are consumed under the brokers' locks (broadcasting: no locks, as in Java)."""
        return self.orderly and self.message_model == CLUSTERING

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Join the group: heartbeats, rebalance now and every 20 s, commits every 5 s."""
        if self.listener is None:
            raise MQClientError("register a listener before start()")
        if not self.subscriptions:
            raise MQClientError("subscribe to a topic before start()")
        if self.message_model == CLUSTERING:
            # Java subscribes clustering consumers to their retry topic as well.
            retry = RETRY_GROUP_TOPIC_PREFIX + self.group
            self.subscriptions.setdefault(retry, SubscriptionData.build(retry, "*"))
        else:
            store = LocalFileOffsetStore(self.offset_store_dir or default_offset_dir(), self.instance.client_id,
                                         self.group)
            self.offset_store, self.local_offsets = store, store.file
        service = ConsumeMessageOrderlyService if self.orderly else ConsumeMessageConcurrentlyService
        self.consume_service = service(self, self.listener)
        if self.trace_dispatcher is not None:
            self.trace_dispatcher.start()
        for topic in self.subscriptions:
            self.instance.watch_topic(topic)
        ClientRemotingProcessor.of(self.instance).add_push(self.group, self)
        ConsumerBase.start(self)
        self.started_ms = self.now_ms()
        self.every(self.rebalance_interval, self.rebalance, now=True)
        self.every(self.persist_interval, self.persist, now=False)
        self.consume_service.start()

    async def _shutdown(self) -> None:
        # stop(): stop pulling, commit every offset, unlock (orderly), then leave the group.
        for pq in self.queues.values():
            pq.dropped = True
        await self.persist(oneway=False)
        if self.locking:
            await self.rebalance_impl.unlock(list(self.queues))
        self.queues = {}
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.stop()

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(self.group, "CONSUME_PASSIVELY", self.message_model, self.consume_from_where,
                            [self.subscriptions[t] for t in sorted(self.subscriptions)])

    def running_info(self) -> dict[str, Any]:
        """
        Java's ``ConsumerRunningInfo`` as fastjson writes it: what mqadmin ``consumerStatus``
        prints and checks (properties, subscriptions, each owned queue's state; the RT/TPS
        figures are not measured and read 0).
        """
        properties = {
            "PROP_NAMESERVER_ADDR": ";".join(self.instance.namesrvs.addresses),
            "PROP_THREADPOOL_CORE_SIZE": "1",  # listeners run on the reactor thread
            "PROP_CONSUMEORDERLY": "true" if self.orderly else "false",
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
            "PROP_CLIENT_VERSION": CLIENT_VERSION_DESC,
            "PROP_CONSUMER_START_TIMESTAMP": str(self.started_ms),
            "consumerGroup": self.group,
            "messageModel": self.message_model,
            "consumeFromWhere": self.consume_from_where,
            "pullBatchSize": str(self.pull_batch_size),
            "consumeMessageBatchMaxSize": str(self.consume_batch_size),
            "maxReconsumeTimes": str(self.max_reconsume_times),
        }
        now, committed = self.now(), self.offset_store.committed
        mq_table = {message_queue_key(mq): pq.info(now, committed.get(mq, -1 if pq.offset is None else pq.offset),
                                                   self.locking)
                    for mq, pq in sorted(self.queues.items())}
        zero = {"pullRT": 0.0, "pullTPS": 0.0, "consumeRT": 0.0, "consumeOKTPS": 0.0, "consumeFailedTPS": 0.0,
                "consumeFailedMsgs": 0}
        return {
            "properties": properties,
            "subscriptionSet": [self.subscriptions[t].to_json() for t in sorted(self.subscriptions)],
            "mqTable": mq_table,
            "statusTable": {topic: dict(zero) for topic in sorted(self.subscriptions)},
        }

    # ------------------------------------------------------------ queues
    def rebalance(self) -> Deferred[None]:
        """Recompute this member's queues now (one rebalance at a time)."""
        return self.rebalance_impl.run(self.rebalance_impl.rebalance)

    def lock_all(self) -> Deferred[None]:
        """Renew the locks of every owned queue (Java ``lockAll``, every 20 s); a queue not locked pauses."""
        return Deferred.fromCoroutine(self.rebalance_impl.lock_all())

    def reset_offset(self, offsets: dict[MessageQueue, int]) -> Deferred[None]:
        """
        Move the group to *offsets* (what a broker's RESET_CONSUMER_CLIENT_OFFSET asks): each
        owned queue among them gets a fresh process queue that pulls from its new offset,
        and the offset is committed. The old one is dropped: what it still has in flight
        is discarded. The new pull does not wait for the commit or read the offset back, so
        a commit that fails or is answered late cannot undo the reset.
        """
        moved = {mq: offsets[mq] for mq in sorted(offsets) if mq in self.queues}  # the others are not ours
        for mq, offset in moved.items():
            old = self.queues[mq]
            old.dropped = True
            pq = self.queues[mq] = ProcessQueue(mq)
            pq.offset, pq.locked_at = offset, old.locked_at
            self.pull(pq)
        return self.offset_store.commit_all(moved, changed_only=False).addCallback(self._log_failures)

    def pull(self, pq: ProcessQueue) -> None:
        """Start *pq*'s pull loop; it ends when *pq* is dropped."""
        self.pull_service.pull(pq)

    # ------------------------------------------------------------ offsets
    def persist(self, oneway: bool = True) -> Deferred[None]:
        """Commit every owned queue's offset that changed since the last commit (periodically oneway, as Java)."""
        offsets = {mq: pq.offset for mq, pq in self.queues.items() if pq.offset is not None}
        return self.offset_store.commit_all(offsets, oneway=oneway).addCallback(self._log_failures)

    def commit_offset(self, mq: MessageQueue, offset: int) -> Deferred[None]:
        """Commit *mq*'s *offset* now and wait for the answer (a failure is logged)."""
        return self.offset_store.commit_all({mq: offset}, changed_only=False).addCallback(self._log_failures)

    def _log_failures(self, failures: Failures) -> None:
        for mq, failure in failures.items():
            log.warn("commit of {mq} failed: {error}", mq=mq, error=failure.getErrorMessage())
