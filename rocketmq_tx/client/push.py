# -*- test-case-name: rocketmq_tx.client.test.test_push -*-
"""
:class:`PushConsumer`: Java's ``DefaultMQPushConsumer`` (clustering, concurrent listener)
on Twisted, in its first form.

The group's queues are split among its members with the Java strategies of
:mod:`rocketmq_tx.common.rebalance` every 20 s and when a broker says the membership
changed (NOTIFY_CONSUMER_IDS_CHANGED). Each owned queue has one long-polling pull loop;
its messages go to the listener in order, and the queue's offset moves on once they are
handled. RECONSUME_LATER sends the messages back to the broker (CONSUMER_SEND_MSG_BACK),
which redelivers them through ``%RETRY%<group>`` and, after ``max_reconsume_times``, puts
them in ``%DLQ%<group>``. Offsets are committed every 5 s, when a queue is dropped and on
stop.

An orderly listener (Java's ``MessageListenerOrderly``) consumes a queue only while this
member holds the broker's lock on it (LOCK_BATCH_MQ when the queue is assigned, renewed
every 20 s; a lock not renewed for 30 s is treated as lost), so two members never
consume one queue at once even while a rebalance is settling. A suspended batch is
redelivered locally after ``suspend_current_queue_time`` (1 s); past
``max_reconsume_times`` (unlimited by default, as in Java) it goes to the DLQ.

Flow control (Java's ``pullThresholdForQueue`` and ``pullThresholdSizeForQueue``) holds
by construction: a queue's next pull is sent only once its previous batch is consumed,
so at most one pull batch per queue is in memory.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, inlineCallbacks, maybeDeferred, succeed
from twisted.internet.task import LoopingCall, deferLater
from twisted.logger import Logger
from zope.interface import implementer

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.client.instance import MQClientInstance, client_credentials
from rocketmq_tx.client.offsetstore import LocalOffsetStore, default_offset_dir
from rocketmq_tx.client.rebalance import IdsChangedProcessor, RebalanceImpl
from rocketmq_tx.client.litepull import (
    CONSUME_FROM_FIRST_OFFSET,
    CONSUME_FROM_LAST_OFFSET,
    CONSUME_FROM_TIMESTAMP,
    DEFAULT_CONSUME_TIMESTAMP_AGO,
)
from rocketmq_tx.common.message import MessageConst, MessageExt, MessageQueue
from rocketmq_tx.common.rebalance import STRATEGIES
from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import message_queue_key
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.api import RETRY_GROUP_TOPIC_PREFIX, ConsumerData, MQClientError, PullStatus, SubscriptionData
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["PushConsumer", "ConsumeStatus", "ConsumeOrderlyStatus", "CLUSTERING", "BROADCASTING"]

CLUSTERING = "CLUSTERING"
BROADCASTING = "BROADCASTING"

log = Logger()

#: Java ``pullTimeDelayMillsWhenException``, seconds.
PULL_DELAY_WHEN_EXCEPTION = 3.0
#: Java ``brokerSuspendMaxTimeMillis`` and the client-side timeout of a long poll.
BROKER_SUSPEND_MAX_MS = 15000
LONG_POLL_TIMEOUT = 30.0


class ConsumeStatus(enum.Enum):
    """Java ``ConsumeConcurrentlyStatus``."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """Java ``ConsumeOrderlyStatus``."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


Listener = Callable[[list[MessageExt]], Any]  # returns ConsumeStatus or a Deferred of one

#: ``MQVersion.getVersionDesc`` of the version our requests carry (the command's default).
CLIENT_VERSION_DESC = "V4_9_8"

#: Java ``REBALANCE_LOCK_INTERVAL``: how often an orderly consumer renews its queue locks.
LOCK_RENEW_INTERVAL = 20.0
#: Java ``REBALANCE_LOCK_MAX_LIVE_TIME``: a lock not renewed for this long is not trusted.
LOCK_MAX_LIVE = 30.0


@implementer(IRequestProcessor)
class _RunningInfo:
    """GET_CONSUMER_RUNNING_INFO (307), relayed by a broker for mqadmin ``consumerStatus``."""

    def __init__(self) -> None:
        self.consumers: dict[str, PushConsumer] = {}

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        group = request.ext_fields.get("consumerGroup", "")
        consumer = self.consumers.get(group)
        if consumer is None or not consumer.running:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"The Consumer Group <{group}> not exist in this consumer")
        return request.make_response(body=fastjson.dumps(consumer.running_info()))

    def reject_request(self) -> bool:
        return False


@implementer(IRequestProcessor)
class _ResetOffset:
    """RESET_CONSUMER_CLIENT_OFFSET (220, oneway): mqadmin resetOffsetByTime reaching a running consumer."""

    def __init__(self) -> None:
        self.consumers: dict[str, PushConsumer] = {}

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> None:
        consumer = self.consumers.get(request.ext_fields.get("group", ""))
        if consumer is not None and consumer.running:
            offsets = api.parse_reset_offset_body(request.body)
            topic = request.ext_fields.get("topic")
            consumer.reset_offset({mq: off for mq, off in offsets.items() if topic is None or mq.topic == topic})
        return None

    def reject_request(self) -> bool:
        return False


class _ProcessQueue:
    """One owned queue: its pull position, whether it was dropped, and (orderly) its lock."""

    def __init__(self, mq: MessageQueue) -> None:
        self.mq = mq
        self.offset: int | None = None
        self.dropped = False
        #: reactor time of the last successful LOCK_BATCH_MQ for this queue (orderly), or None
        self.locked_at: float | None = None
        #: orderly: local deliveries of the batch now being consumed
        self.attempts = 0
        self.last_pull_ms = 0
        self.last_consume_ms = 0


class PushConsumer:
    """
    :param group: the consumer group.
    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored with *instance*).
    :param consume_from_where: where a queue without a committed offset starts (last, first,
        or ``CONSUME_FROM_TIMESTAMP`` with *consume_timestamp_ms*, by default half an hour
        before :meth:`start`).
    :param allocate: ``"AVG"`` (Java's default), ``"AVG_BY_CIRCLE"`` or ``"CONSISTENT_HASH"``.
    :param max_reconsume_times: deliveries before the broker moves a message to the DLQ
        (Java's -1 means 16).
    :param message_model: ``CLUSTERING`` (the group shares the queues, offsets on the
        brokers) or ``BROADCASTING`` (every member reads every queue, offsets in a local
        file under *offset_store_dir*, failed messages are not redelivered, as in Java).
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*, if any); or give one ``credentials``
        (:class:`~rocketmq_tx.acl.SessionCredentials`). With a shared *instance*, give them
        to the instance.
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *,
                 instance: MQClientInstance | None = None, tls: TlsSettings | None = None,
                 consume_from_where: str = CONSUME_FROM_LAST_OFFSET,
                 pull_batch_size: int = 32, consume_batch_size: int = 1, allocate: str = "AVG",
                 max_reconsume_times: int = -1, rebalance_interval: float = 20.0,
                 persist_interval: float = 5.0, timeout: float = 3.0, consume_timestamp_ms: int | None = None,
                 message_model: str = CLUSTERING, offset_store_dir: str | None = None,
                 suspend_current_queue_time: float = 1.0,
                 access_key: str | None = None, secret_key: str | None = None, security_token: str | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        if reactor is None and instance is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.group = group
        self._own_instance = instance is None
        creds = client_credentials(instance, access_key, secret_key, security_token, credentials)
        self.instance = instance or MQClientInstance(reactor, namesrv_addr, timeout=timeout, tls=tls, credentials=creds)
        self.reactor = self.instance.reactor
        self.consume_from_where = consume_from_where
        self.pull_batch_size = pull_batch_size
        self.consume_batch_size = consume_batch_size
        self.rebalance_impl = RebalanceImpl(self.instance, group, STRATEGIES[allocate])
        self.max_reconsume_times = max_reconsume_times
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self.consume_timestamp_ms = consume_timestamp_ms
        if message_model not in (CLUSTERING, BROADCASTING):
            raise ValueError(f"unknown message model {message_model!r}")
        self.message_model = message_model
        self.offset_store_dir = offset_store_dir
        self.local_offsets: LocalOffsetStore | None = None
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.listener: Listener | None = None
        self.orderly = False
        self.suspend_current_queue_time = suspend_current_queue_time
        self.queues: dict[MessageQueue, _ProcessQueue] = {}
        self._committed: dict[MessageQueue, int] = {}
        self._loops: list[LoopingCall] = []
        self.running = False

    # ------------------------------------------------------------ configuration
    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Consume *topic*'s messages whose tag matches *expression* (``"*"``, ``"A || B"``)."""
        self.subscriptions[topic] = SubscriptionData.build(topic, expression)

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
    def _locking(self) -> bool:
        # Broadcasting members each read every queue: nothing to lock (as in Java).
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
            self.local_offsets = LocalOffsetStore(self.offset_store_dir or default_offset_dir(),
                                                  self.instance.client_id, self.group)
        self.running = True
        self.started_ms = int(self.reactor.seconds() * 1000)
        if self.consume_timestamp_ms is None:
            self.consume_timestamp_ms = int((self.reactor.seconds() - DEFAULT_CONSUME_TIMESTAMP_AGO) * 1000)
        for topic in self.subscriptions:
            self.instance.watch_topic(topic)
        self.instance.register_consumer(self.group, self._consumer_data)
        for code, kind in ((RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, IdsChangedProcessor),
                           (RequestCode.RESET_CONSUMER_CLIENT_OFFSET, _ResetOffset),
                           (RequestCode.GET_CONSUMER_RUNNING_INFO, _RunningInfo)):
            processor = self.instance.processors.lookup(code)
            if not isinstance(processor, kind):
                processor = kind()
                self.instance.processors.register(code, processor)
            processor.consumers[self.group] = self
        if self._own_instance:
            self.instance.start()
        for interval, work in ((self.rebalance_interval, self.rebalance),
                               (self.persist_interval, self.persist)):
            loop = LoopingCall(work)
            loop.clock = self.reactor
            self._loops.append(loop)
        self._loops[0].start(self.rebalance_interval, now=True)
        self._loops[1].start(self.persist_interval, now=False)
        if self._locking:
            loop = LoopingCall(self.lock_all)
            loop.clock = self.reactor
            self._loops.append(loop)
            loop.start(LOCK_RENEW_INTERVAL, now=False)


    @inlineCallbacks
    def stop(self):  # type: ignore[no-untyped-def]
        """Stop pulling, commit every offset, leave the group."""
        self.running = False
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []
        for pq in self.queues.values():
            pq.dropped = True
        yield self.persist(oneway=False)
        if self._locking:
            yield self._unlock(list(self.queues))
        self.queues = {}
        self.instance.unregister_consumer(self.group)
        if self._own_instance:
            yield self.instance.stop()

    async def __aenter__(self) -> PushConsumer:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def running_info(self) -> dict[str, Any]:
        """
        Java's ``ConsumerRunningInfo`` as fastjson writes it: what mqadmin ``consumerStatus``
        prints and checks (properties, subscriptions, each owned queue's state; the RT/TPS
        figures are not measured and read 0).
        """
        now_ms = int(self.reactor.seconds() * 1000)
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
        mq_table = {}
        for mq, pq in sorted(self.queues.items()):
            mq_table[message_queue_key(mq)] = {
                "commitOffset": self._committed.get(mq, pq.offset if pq.offset is not None else -1),
                "cachedMsgMinOffset": 0, "cachedMsgMaxOffset": 0, "cachedMsgCount": 0, "cachedMsgSizeInMiB": 0,
                "transactionMsgMinOffset": 0, "transactionMsgMaxOffset": 0, "transactionMsgCount": 0,
                "locked": self._holds_lock(pq) if self._locking else False,
                "tryUnlockTimes": 0,
                "lastLockTimestamp": int(pq.locked_at * 1000) if pq.locked_at is not None else 0,
                "droped": pq.dropped,
                "lastPullTimestamp": pq.last_pull_ms,
                "lastConsumeTimestamp": pq.last_consume_ms or now_ms,
            }
        zero = {"pullRT": 0.0, "pullTPS": 0.0, "consumeRT": 0.0, "consumeOKTPS": 0.0, "consumeFailedTPS": 0.0,
                "consumeFailedMsgs": 0}
        return {
            "properties": properties,
            "subscriptionSet": [self.subscriptions[t].to_json() for t in sorted(self.subscriptions)],
            "mqTable": mq_table,
            "statusTable": {topic: dict(zero) for topic in sorted(self.subscriptions)},
        }

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(self.group, "CONSUME_PASSIVELY", self.message_model, self.consume_from_where,
                            [self.subscriptions[t] for t in sorted(self.subscriptions)])

    # ------------------------------------------------------------ rebalance
    def rebalance(self) -> Deferred:
        """Recompute this member's queues now (one rebalance at a time)."""
        return self.rebalance_impl.run(self._rebalance)

    @inlineCallbacks
    def _rebalance(self):  # type: ignore[no-untyped-def]
        wanted = yield self.rebalance_impl.allocate(list(self.subscriptions),
                                                    broadcasting=self.message_model == BROADCASTING,
                                                    owned=list(self.queues))
        if not self.running:
            return
        dropped = [mq for mq in self.queues if mq not in wanted]
        for mq in dropped:
            pq = self.queues.pop(mq)
            pq.dropped = True
            if pq.offset is not None:
                yield self._commit_one(mq, pq.offset)
        if self._locking and dropped:
            yield self._unlock(dropped)
        added = sorted(wanted - set(self.queues))
        if self._locking and added:
            # Java: a new queue is taken only once its lock is ours; the rest wait for
            # the member that still holds them to let go (a later rebalance retries).
            locked = yield self._lock(added)
            added = [mq for mq in added if mq in locked]
        for mq in added:
            if not self.running or mq in self.queues:
                continue
            pq = self.queues[mq] = _ProcessQueue(mq)
            if self._locking:
                pq.locked_at = self.reactor.seconds()
            self._pull_loop(pq)

    # ------------------------------------------------------------ orderly locks
    @inlineCallbacks
    def _lock(self, mqs: list[MessageQueue]):  # type: ignore[no-untyped-def]
        """LOCK_BATCH_MQ to each queue's broker; returns the queues now locked by us."""
        locked: set[MessageQueue] = set()
        for broker_name in sorted({mq.broker_name for mq in mqs}):
            mine = [mq for mq in mqs if mq.broker_name == broker_name]
            try:
                request = api.lock_batch_request(self.group, self.instance.client_id, mine)
                response = yield self.instance.invoke_broker(mine[0], request)
                locked |= api.parse_lock_batch_response(response)
            except Exception as e:
                log.warn("lock of {n} queues on {broker} failed: {error}", n=len(mine), broker=broker_name, error=e)
        return locked

    @inlineCallbacks
    def _unlock(self, mqs: list[MessageQueue]):  # type: ignore[no-untyped-def]
        for broker_name in sorted({mq.broker_name for mq in mqs}):
            mine = [mq for mq in mqs if mq.broker_name == broker_name]
            try:
                request = api.unlock_batch_request(self.group, self.instance.client_id, mine)
                api.check_response((yield self.instance.invoke_broker(mine[0], request)))
            except Exception as e:
                log.warn("unlock of {n} queues on {broker} failed: {error}", n=len(mine), broker=broker_name,
                         error=e)

    @inlineCallbacks
    def lock_all(self):  # type: ignore[no-untyped-def]
        """Renew the locks of every owned queue (Java ``lockAll``, every 20 s); a queue not locked pauses."""
        owned = list(self.queues)
        if not owned:
            return
        locked = yield self._lock(owned)
        now = self.reactor.seconds()
        for mq in owned:
            pq = self.queues.get(mq)
            if pq is None:
                continue
            if mq in locked:
                pq.locked_at = now
            elif pq.locked_at is not None:
                log.warn("lost the lock of {mq}; its consumption pauses", mq=mq)
                pq.locked_at = None

    @inlineCallbacks
    def _relock(self, pq: _ProcessQueue):  # type: ignore[no-untyped-def]
        """
        Take *pq*'s lock (it was never ours, was lost, or is too old); when the broker
        refuses, wait 3 s as Java delays the pull of an unlocked queue. True when locked.
        """
        locked = yield self._lock([pq.mq])
        if pq.mq in locked:
            pq.locked_at = self.reactor.seconds()
            return True
        yield deferLater(self.reactor, PULL_DELAY_WHEN_EXCEPTION, lambda: None)
        return False

    def _holds_lock(self, pq: _ProcessQueue) -> bool:
        return pq.locked_at is not None and self.reactor.seconds() - pq.locked_at < LOCK_MAX_LIVE

    @inlineCallbacks
    def reset_offset(self, offsets: dict[MessageQueue, int]):  # type: ignore[no-untyped-def]
        """
        Move the group to *offsets* (what a broker's RESET_CONSUMER_CLIENT_OFFSET asks): each
        owned queue among them gets a fresh process queue that pulls from its new offset,
        and the offset is committed. The old one is dropped: what it still has in flight
        is discarded. The new pull does not wait for the commit or read the offset back, so
        a commit that fails or is answered late cannot undo the reset.
        """
        moved = [mq for mq in sorted(offsets) if mq in self.queues]  # other members' queues are theirs
        for mq in moved:
            old = self.queues[mq]
            old.dropped = True
            pq = self.queues[mq] = _ProcessQueue(mq)
            pq.offset = offsets[mq]
            pq.locked_at = old.locked_at
            self._pull_loop(pq)
        yield DeferredList([self._commit_one(mq, offsets[mq]) for mq in moved])

    # ------------------------------------------------------------ pulling
    @inlineCallbacks
    def _start_offset(self, mq: MessageQueue):  # type: ignore[no-untyped-def]
        if self.local_offsets is not None:
            offset = self.local_offsets.read(mq)
        else:
            response = yield self.instance.invoke_broker(mq, api.query_consumer_offset_request(self.group, mq))
            offset = api.parse_query_consumer_offset_response(response)
        if offset is not None and offset >= 0:
            return offset
        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or self.consume_from_where == CONSUME_FROM_FIRST_OFFSET:
            response = yield self.instance.invoke_broker(mq, api.get_min_offset_request(mq))
        elif self.consume_from_where == CONSUME_FROM_TIMESTAMP:
            request = api.search_offset_request(mq, self.consume_timestamp_ms or 0)
            response = yield self.instance.invoke_broker(mq, request)
        else:
            response = yield self.instance.invoke_broker(mq, api.get_max_offset_request(mq))
        return api.parse_offset_response(response)

    @inlineCallbacks
    def _pull_loop(self, pq: _ProcessQueue):  # type: ignore[no-untyped-def]
        mq = pq.mq
        while self.running and not pq.dropped:
            if self._locking and not self._holds_lock(pq) and not (yield self._relock(pq)):
                continue
            try:
                if pq.offset is None:
                    pq.offset = yield self._start_offset(mq)
                sub = self.subscriptions[mq.topic]
                commit = self._committed_candidate(pq)
                request = api.pull_request(self.group, mq, pq.offset, self.pull_batch_size, sub,
                                           commit_offset=commit, suspend_timeout_ms=BROKER_SUSPEND_MAX_MS)
                pq.last_pull_ms = int(self.reactor.seconds() * 1000)
                response = yield self.instance.invoke_broker(mq, request, LONG_POLL_TIMEOUT)
                result = api.parse_pull_response(response, mq, sub)
            except Exception as e:
                if pq.dropped or not self.running:
                    return
                log.warn("pull of {mq} failed: {error}", mq=mq, error=e)
                yield deferLater(self.reactor, PULL_DELAY_WHEN_EXCEPTION, lambda: None)
                continue
            if pq.dropped:
                return
            if result.msg_found_list:
                yield self._consume(pq, result.msg_found_list)
                pq.last_consume_ms = int(self.reactor.seconds() * 1000)
                if pq.dropped:
                    return
            if result.pull_status is PullStatus.OFFSET_ILLEGAL:
                log.warn("offset {offset} of {mq} illegal, moving to {next}", offset=pq.offset, mq=mq,
                         next=result.next_begin_offset)
            pq.offset = result.next_begin_offset

    def _committed_candidate(self, pq: _ProcessQueue) -> int:
        # Java piggy-backs the in-memory offset on each pull (FLAG_COMMIT_OFFSET) once it is
        # > 0, in clustering only: a broadcasting member's offset is its own.
        if self.message_model != CLUSTERING:
            return 0
        return pq.offset if pq.offset else 0

    @inlineCallbacks
    def _consume(self, pq: _ProcessQueue, messages: list[MessageExt]):  # type: ignore[no-untyped-def]
        assert self.listener is not None
        for msg in messages:
            # Java resetRetryAndNamespace: a redelivered message shows its original topic.
            origin = msg.properties.get(MessageConst.PROPERTY_RETRY_TOPIC)
            if origin and msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                msg.topic = origin
        if self.orderly:
            yield self._consume_orderly(pq, messages)
            return
        for i in range(0, len(messages), self.consume_batch_size):
            batch = messages[i:i + self.consume_batch_size]
            try:
                status = yield maybeDeferred(self.listener, batch)
            except Exception as e:
                log.warn("listener failed: {error}", error=e)
                status = ConsumeStatus.RECONSUME_LATER
            if status is not ConsumeStatus.CONSUME_SUCCESS:
                if self.message_model == BROADCASTING:
                    log.warn("broadcasting: {n} messages not consumed are dropped, as in Java", n=len(batch))
                    continue
                for msg in batch:
                    yield self._send_back(pq.mq, msg)

    @inlineCallbacks
    def _consume_orderly(self, pq: _ProcessQueue, messages: list[MessageExt]):  # type: ignore[no-untyped-def]
        """
        Each batch until the listener succeeds, under the queue's lock; a suspended batch is
        retried after ``suspend_current_queue_time``, and past ``max_reconsume_times``
        (when set) sent to the DLQ so the queue moves on.
        """
        assert self.listener is not None
        for i in range(0, len(messages), self.consume_batch_size):
            batch = messages[i:i + self.consume_batch_size]
            pq.attempts = 0
            while True:
                if pq.dropped or not self.running:
                    return
                if self._locking and not self._holds_lock(pq) and not (yield self._relock(pq)):
                    continue
                for msg in batch:
                    msg.reconsume_times = max(msg.reconsume_times, pq.attempts)
                try:
                    status = yield maybeDeferred(self.listener, batch)
                except Exception as e:
                    log.warn("orderly listener failed: {error}", error=e)
                    status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                if status is ConsumeOrderlyStatus.SUCCESS or status is ConsumeStatus.CONSUME_SUCCESS:
                    break
                pq.attempts += 1
                if 0 <= self.max_reconsume_times <= pq.attempts and self.message_model == CLUSTERING:
                    for msg in batch:
                        yield self._send_back(pq.mq, msg, delay_level=-1)  # straight to %DLQ%
                    break
                yield deferLater(self.reactor, self.suspend_current_queue_time, lambda: None)

    @inlineCallbacks
    def _send_back(self, mq: MessageQueue, msg: MessageExt, delay_level: int = 0):  # type: ignore[no-untyped-def]
        """
        CONSUMER_SEND_MSG_BACK with delay level 0 (the broker picks 3 + reconsume times), or
        -1 to put the message in the group's DLQ at once.
        """
        max_times = 16 if self.max_reconsume_times < 0 else self.max_reconsume_times
        request = api.send_back_request(msg, self.group, delay_level, max_reconsume_times=max_times,
                                        broker_name=mq.broker_name)
        while self.running:
            try:
                response = yield self.instance.invoke_broker(mq, request)
                api.check_response(response)
                return
            except Exception as e:
                log.warn("send back of {id} failed, retrying: {error}", id=msg.msg_id, error=e)
                yield deferLater(self.reactor, PULL_DELAY_WHEN_EXCEPTION, lambda: None)

    # ------------------------------------------------------------ offsets
    def persist(self, oneway: bool = True) -> Deferred:
        """Commit every owned queue's offset that changed since the last commit (periodically oneway, as Java)."""
        if self.local_offsets is not None:
            for mq, pq in self.queues.items():
                if pq.offset is not None:
                    self.local_offsets.update(mq, pq.offset)
            try:
                self.local_offsets.persist()
            except OSError as e:
                log.warn("cannot write {path}: {error}", path=self.local_offsets.path, error=e)
            return succeed(None)
        calls = [self._commit_one(mq, pq.offset, oneway=oneway) for mq, pq in sorted(self.queues.items())
                 if pq.offset is not None and self._committed.get(mq) != pq.offset]
        return DeferredList(calls).addCallback(lambda _: None)

    @inlineCallbacks
    def _commit_one(self, mq: MessageQueue, offset: int, oneway: bool = False):  # type: ignore[no-untyped-def]
        if self.local_offsets is not None:
            self.local_offsets.update(mq, offset)
            self.local_offsets.persist()
            return
        request = api.update_consumer_offset_request(self.group, mq, offset, oneway=oneway)
        try:
            if oneway:
                addr = self.instance.broker_addr(mq.broker_name)
                yield self.instance.remoting.invoke_oneway(addr, request)
            else:
                api.check_response((yield self.instance.invoke_broker(mq, request)))
            self._committed[mq] = offset
        except Exception as e:
            log.warn("commit of {mq} failed: {error}", mq=mq, error=e)
