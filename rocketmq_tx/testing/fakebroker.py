# -*- test-case-name: rocketmq_tx.blocking.test.test_client -*-
"""
A scripted fake name server and broker built on the codec, for client unit tests.

:class:`FakeCluster` answers the client's requests from memory: routes, sends (stored as
real CommitLog records, so pulls return what a Java broker returns), pulls, offsets,
heartbeats, queue locks, transactions (half messages kept in ``RMQ_SYS_TRANS_HALF_TOPIC``
until END_TRANSACTION commits or rolls them back; :meth:`FakeCluster.check_request` builds the
broker's CHECK_TRANSACTION_STATE), and the admin requests (cluster info, topic list, topic
create and delete, topic and consumer stats, consumer connections, offset reset). Tests script faults
per request code with :meth:`FakeCluster.script`: a canned response code, silence (to make
the client time out), or a callable.

It is reachable three ways: :meth:`FakeCluster.handle` (direct), as a processor for
:class:`rocketmq_tx.net.dispatch.ProcessorTable` (``process_request``/``reject_request``,
for the in-memory pump), and over real TCP with :class:`ThreadedFakeServer` (for the
blocking client). No Twisted import here, so blocking tests stay reactor-free.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import Message, MessageExt, MessageQueue, string_to_properties
from rocketmq_tx.common.messagecodec import decode_batch, encode_message
from rocketmq_tx.common.route import BrokerData, QueueData, TopicRouteData
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.remoting import FrameDecoder, RemotingCommand, RequestCode, ResponseCode, encode_command, split_address
from rocketmq_tx.remoting.adminbodies import (
    Connection,
    ConsumerConnection,
    ConsumeStats,
    LockBatchRequestBody,
    LockBatchResponseBody,
    OffsetWrapper,
    ResetOffsetBody,
    TopicOffset,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from rocketmq_tx.remoting.api import SubscriptionData
from rocketmq_tx.remoting.bodies import ClusterInfo, topic_list
from rocketmq_tx.remoting.headers.admin import (
    CreateTopicRequestHeader,
    GetConsumeStatsRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketmq_tx.remoting.headers.client import (
    GetMaxOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketmq_tx.remoting.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_tx.remoting.headers.route import GetRouteInfoRequestHeader
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

__all__ = ["FakeCluster", "SILENT", "ThreadedFakeServer", "HALF_TOPIC"]

#: Where half messages wait (Java ``TransactionalMessageUtil.buildHalfTopic()``).
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"

#: Scripted outcome: never answer (the client's timeout fires).
SILENT = object()

Script = Any  # int response code | SILENT | Callable[[str, RemotingCommand], RemotingCommand | None]


class FakeCluster:
    """
    Name servers and brokers in one object; *brokers* maps broker name to address.

    :ivar seen: ``(addr, request)`` for every request received, in order.
    :ivar messages: ``(broker_name, topic, queue_id)`` to the stored messages.
    :ivar offsets: ``(group, topic, queue_id)`` to the committed offset.
    :ivar heartbeats: decoded heartbeat bodies by broker address.
    :ivar min_offsets: ``(broker_name, topic, queue_id)`` to the first offset still stored
        (as after expiry); pulls below it answer OFFSET_MOVED like a Java broker.
    :ivar kv: the name server's KV configuration, ``(namespace, key)`` to value.
    :ivar deleted: ``(addr, topic)`` of every DELETE_TOPIC_IN_BROKER / _IN_NAMESRV received.
    :ivar ended: ``(addr, header, remark)`` of every END_TRANSACTION received.
    :ivar slaves: broker name to the address of its slave (broker id 1), which shares the
        master's messages and offsets (as replication and SlaveSynchronize would leave them).
    :ivar unrouted: addresses the name server leaves out of routes (a master that died).
    :ivar suggest: address to the ``suggestWhichBrokerId`` its pull answers carry.
    """

    def __init__(self, brokers: dict[str, str] | None = None, namesrvs: tuple[str, ...] = ("127.0.0.1:9876",),
                 *, queues: int = 4, legacy_json: bool = False) -> None:
        self.brokers = dict(brokers or {"broker-a": "127.0.0.1:10911"})
        self.namesrvs = list(namesrvs)
        self.queues = queues
        self.legacy_json = legacy_json
        self.topics: dict[str, int] = {}
        self.seen: list[tuple[str, RemotingCommand]] = []
        self.messages: dict[tuple[str, str, int], list[MessageExt]] = defaultdict(list)
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.heartbeats: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.min_offsets: dict[tuple[str, str, int], int] = {}
        #: ``(group, MessageQueue)`` to the client id holding its orderly-consumption lock
        #: (group and id as the lock bodies carry them: either may be missing)
        self.locks: dict[tuple[str | None, MessageQueue], str | None] = {}
        self._scripts: dict[tuple[int, str | None], list[Script]] = defaultdict(list)
        self._commit_log = 0
        self._lock = threading.Lock()
        self.down: set[str] = set()
        self.cluster_name = "DefaultCluster"
        self.kv: dict[tuple[str, str], str] = {}
        self.deleted: list[tuple[str, str]] = []
        self.ended: list[tuple[str, EndTransactionRequestHeader, str | None]] = []
        self.slaves: dict[str, str] = {}
        self.unrouted: set[str] = set()
        self.suggest: dict[str, int] = {}

    # ---------------------------------------------------------------- scripting
    def add_topic(self, topic: str, queues: int | None = None) -> None:
        """Make *topic* routable (every broker, *queues* queues each)."""
        self.topics[topic] = self.queues if queues is None else queues

    def script(self, code: int, *outcomes: Script, addr: str | None = None) -> None:
        """
        The next requests with *code* (to *addr*, or anywhere) get these outcomes in turn: a
        response code (with remark ``"scripted"``), :data:`SILENT`, or ``f(addr, request)``.
        """
        self._scripts[(int(code), addr)].extend(outcomes)

    def requests(self, code: int) -> list[tuple[str, RemotingCommand]]:
        """The ``(addr, request)`` pairs seen with *code*."""
        return [(a, r) for a, r in self.seen if r.code == code]

    # ---------------------------------------------------------------- dispatch
    def handle(self, addr: str, request: RemotingCommand) -> RemotingCommand | None:
        """The response to *request* sent to *addr*, or ``None`` for none."""
        with self._lock:
            self.seen.append((addr, request))
            for key in ((request.code, addr), (request.code, None)):
                queue = self._scripts.get(key)
                if queue:
                    outcome = queue.pop(0)
                    if outcome is SILENT:
                        return None
                    if callable(outcome):
                        return outcome(addr, request)
                    return request.make_response(int(outcome), "scripted")
            method = _HANDLERS.get(request.code)
            if method is None:
                return request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                             f" request type {request.code} not supported")
            response = method(self, addr, request)
            return None if request.is_oneway else response

    # ProcessorTable duck type, for the Twisted in-memory pump.
    def processor_for(self, addr: str) -> Any:
        cluster = self

        class _Processor:
            def process_request(self, ctx: object, request: RemotingCommand) -> RemotingCommand | None:
                return cluster.handle(addr, request)

            def reject_request(self) -> bool:
                return False

        return _Processor()

    # ---------------------------------------------------------------- name server
    def route(self, topic: str) -> TopicRouteData:
        queues = self.topics[topic]
        return TopicRouteData(
            [QueueData(name, queues, queues, 6) for name in sorted(self.brokers)],
            [BrokerData(self.cluster_name, name, self._broker_addrs(name)) for name in sorted(self.brokers)],
        )

    def _broker_addrs(self, name: str) -> dict[int, str]:
        addrs = {0: self.brokers[name]}
        if name in self.slaves:
            addrs[1] = self.slaves[name]
        return {i: a for i, a in addrs.items() if a not in self.unrouted}

    def _route(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        topic = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields).topic
        if topic not in self.topics:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST,
                                         f"No topic route info in name server for the topic: {topic}")
        data = self.route(topic).to_json()
        body = fastjson.dumps_legacy(data) if self.legacy_json else fastjson.dumps(data)
        return request.make_response(body=body)

    # ---------------------------------------------------------------- broker
    def _broker_name(self, addr: str) -> str:
        return next(name for table in (self.brokers, self.slaves) for name, a in table.items() if a == addr)

    def _store(self, addr: str, topic: str, queue_id: int, msg: MessageExt) -> MessageExt:
        stored = self.messages[(self._broker_name(addr), topic, queue_id)]
        msg.topic, msg.queue_id, msg.queue_offset = topic, queue_id, len(stored)
        msg.store_host, msg.born_host = split_address(addr), ("127.0.0.1", 50000)
        msg.store_timestamp = int(time.time() * 1000)
        msg.commit_log_offset = self._commit_log
        record = encode_message(msg)
        msg.store_size = len(record)
        self._commit_log += len(record)
        stored.append(msg)
        return msg

    def _send(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
        queue_id = requested_queue = header.queue_id if header.queue_id >= 0 else 0
        inner: Sequence[Message | None]  # None: the request's one message, from the header
        if header.batch:
            batch_props = string_to_properties(header.properties or "")
            inner = decode_batch(request.body, header.topic)
        else:
            batch_props = {}
            inner = [None]
        ids, first = [], None
        for m in inner:
            if m is None:
                props = string_to_properties(header.properties or "")
                msg = MessageExt(header.topic, request.body, header.flag, props, sys_flag=header.sys_flag,
                                 born_timestamp=header.born_timestamp,
                                 reconsume_times=header.reconsume_times or 0)
            else:
                msg = MessageExt(header.topic, m.body, m.flag, {**m.properties, **batch_props},
                                 born_timestamp=header.born_timestamp)
            msg.properties.pop("WAIT", None)
            msg.properties["CLUSTER"] = "DefaultCluster"
            topic, queue_id = header.topic, requested_queue
            if header.sys_flag & MessageSysFlag.TRANSACTION_MASK == MessageSysFlag.TRANSACTION_PREPARED_TYPE:
                # Java's half message: the real topic and queue in properties, queue 0 of the half topic.
                msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"] = topic, str(queue_id)
                topic, queue_id = HALF_TOPIC, 0
            stored = self._store(addr, topic, queue_id, msg)
            first = stored if first is None else first
            ids.append(stored.offset_msg_id)
        assert first is not None
        resp = SendMessageResponseHeader(",".join(ids), requested_queue, first.queue_offset)
        return request.make_response(ext_fields={**resp.to_ext_fields(), "MSG_REGION": "DefaultRegion",
                                                 "TRACE_ON": "true"})

    def _pull(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
        if h.sys_flag & 0x1:  # FLAG_COMMIT_OFFSET: the pull carries the consumer's offset
            self.offsets[(h.consumer_group, h.topic, h.queue_id)] = h.commit_offset
        key = (self._broker_name(addr), h.topic, h.queue_id)
        stored = self.messages[key]
        max_offset = len(stored)
        min_offset = self.min_offsets.get(key, 0)
        tags = None
        if h.subscription and h.subscription.strip() != "*":
            tags = {t.strip() for t in h.subscription.split("||")}

        def respond(code: int, next_offset: int, body: bytes = b"") -> RemotingCommand:
            ext = PullMessageResponseHeader(self.suggest.get(addr, 0), next_offset, min_offset,
                                            max_offset).to_ext_fields()
            return request.make_response(code, None if code == 0 else "scripted", ext, body)

        if h.queue_offset > max_offset or h.queue_offset < 0:
            return respond(ResponseCode.PULL_OFFSET_MOVED, max_offset)
        if h.queue_offset < min_offset:
            return respond(ResponseCode.PULL_OFFSET_MOVED, min_offset)
        if h.queue_offset == max_offset:
            return respond(ResponseCode.PULL_NOT_FOUND, max_offset)
        chosen = stored[h.queue_offset:h.queue_offset + h.max_msg_nums]
        matched = [m for m in chosen if tags is None or m.tags in tags]
        next_offset = h.queue_offset + len(chosen)
        if not matched:
            return respond(ResponseCode.PULL_RETRY_IMMEDIATELY, next_offset)
        return respond(ResponseCode.SUCCESS, next_offset, b"".join(encode_message(m) for m in matched))

    def _query_offset(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.offsets.get((h.consumer_group, h.topic, h.queue_id))
        if offset is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group "
                                                                       "consumer boot first")
        return request.make_response(ext_fields={"offset": str(offset)})

    def _update_offset(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        self.offsets[(h.consumer_group, h.topic, h.queue_id)] = h.commit_offset
        return request.make_response()

    def _max_offset(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        stored = self.messages[(self._broker_name(addr), h.topic, h.queue_id)]
        return request.make_response(ext_fields={"offset": str(len(stored))})

    def _min_offset(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.min_offsets.get((self._broker_name(addr), h.topic, h.queue_id), 0)
        return request.make_response(ext_fields={"offset": str(offset)})

    def _search_offset(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_ext_fields(request.ext_fields)
        stored = self.messages[(self._broker_name(addr), h.topic, h.queue_id)]
        offset = next((m.queue_offset for m in stored if m.store_timestamp >= h.timestamp), len(stored))
        return request.make_response(ext_fields={"offset": str(offset)})

    def _earliest(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        stored = self.messages[(self._broker_name(addr), h.topic, h.queue_id)]
        if not stored:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "Can't get earliest message store time")
        return request.make_response(ext_fields={"timestamp": str(stored[0].store_timestamp)})

    def _heartbeat(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        body = fastjson.loads(request.body)
        self.heartbeats[addr].append(body)
        for consumer in body.get("consumerDataSet") or []:
            # A broker creates a group's retry topic when the group first heartbeats.
            self.topics.setdefault(f"%RETRY%{consumer['groupName']}", 1)
        return request.make_response()

    def _ok(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return request.make_response()

    def half_message(self, broker_name: str, commit_log_offset: int) -> MessageExt | None:
        """The half message stored at *commit_log_offset*, while it is not resolved."""
        return next((m for m in self.messages.get((broker_name, HALF_TOPIC, 0), [])
                     if m.commit_log_offset == commit_log_offset), None)

    def _end_transaction(self, addr: str, request: RemotingCommand) -> RemotingCommand | None:
        header = EndTransactionRequestHeader.from_ext_fields(request.ext_fields)
        self.ended.append((addr, header, request.remark))
        half = self.half_message(self._broker_name(addr), header.commit_log_offset)
        if half is None or header.commit_or_rollback == MessageSysFlag.TRANSACTION_NOT_TYPE:
            return None
        self.messages[(self._broker_name(addr), HALF_TOPIC, 0)].remove(half)
        if header.commit_or_rollback == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
            props = dict(half.properties)
            topic, queue_id = props.pop("REAL_TOPIC"), int(props.pop("REAL_QID"))
            props.pop("TRAN_MSG", None)
            committed = MessageExt(topic, half.body, half.flag, props, born_timestamp=half.born_timestamp,
                                   sys_flag=(half.sys_flag & ~MessageSysFlag.TRANSACTION_MASK)
                                   | MessageSysFlag.TRANSACTION_COMMIT_TYPE)
            committed.prepared_transaction_offset = header.commit_log_offset
            self._store(addr, topic, queue_id, committed)
        return None

    def check_request(self, broker_name: str, commit_log_offset: int) -> RemotingCommand:
        """The CHECK_TRANSACTION_STATE (39, oneway) a broker sends a producer about a half message."""
        half = self.half_message(broker_name, commit_log_offset)
        if half is None:
            raise KeyError(f"no half message at {commit_log_offset} on {broker_name}")
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset, commit_log_offset=half.commit_log_offset,
            msg_id=half.unique_key, transaction_id=half.unique_key, offset_msg_id=half.offset_msg_id)
        ext = {**header.to_ext_fields(), "bname": broker_name}
        return RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, ext, encode_message(half), oneway=True)

    def _consumer_list(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        group = request.ext_fields.get("consumerGroup")
        ids = sorted({hb["clientID"] for hbs in self.heartbeats.values() for hb in hbs
                      if any(c["groupName"] == group for c in hb.get("consumerDataSet", []))})
        if not ids:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return request.make_response(body=fastjson.dumps({"consumerIdList": ids}))

    def _view(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        offset = ViewMessageRequestHeader.from_ext_fields(request.ext_fields).offset
        name = self._broker_name(addr)
        for (broker, _, _), stored in self.messages.items():
            if broker != name:
                continue
            for m in stored:
                if m.commit_log_offset == offset:
                    return request.make_response(body=encode_message(m))
        return request.make_response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")

    def _query(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        topic, key = request.ext_fields["topic"], request.ext_fields["key"]
        name = self._broker_name(addr)
        found = [m for (b, t, _), stored in self.messages.items() if (b, t) == (name, topic) for m in stored
                 if key in m.keys or m.unique_key == key]
        if not found:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                         "can not find message, maybe time range not correct")
        return request.make_response(body=b"".join(encode_message(m) for m in found))

    def _lock_batch(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.from_json(fastjson.loads(request.body))
        locked = []
        for mq in body.mq_set:
            holder = self.locks.setdefault((body.consumer_group, mq), body.client_id)
            if holder == body.client_id:
                locked.append(mq)
        return request.make_response(body=fastjson.dumps(LockBatchResponseBody(locked).to_json()))

    def _unlock_batch(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        body = UnlockBatchRequestBody.from_json(fastjson.loads(request.body))
        for mq in body.mq_set:
            if self.locks.get((body.consumer_group, mq)) == body.client_id:
                del self.locks[(body.consumer_group, mq)]
        return request.make_response()

    # ---------------------------------------------------------------- admin
    def _cluster_info(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        info = ClusterInfo({name: BrokerData(self.cluster_name, name, {0: a}) for name, a in self.brokers.items()},
                           {self.cluster_name: sorted(self.brokers)})
        return request.make_response(body=fastjson.dumps_legacy(info.to_json()))

    def _topic_list(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=topic_list(sorted(self.topics)))

    def _create_topic(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = CreateTopicRequestHeader.from_ext_fields(request.ext_fields)
        self.topics[h.topic] = h.write_queue_nums
        return request.make_response()

    def _delete_topic(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        topic = request.ext_fields["topic"]
        self.deleted.append((addr, topic))
        if addr in self.namesrvs:
            self.topics.pop(topic, None)
        else:
            name = self._broker_name(addr)
            for key in [k for k in self.messages if k[:2] == (name, topic)]:
                del self.messages[key]
        return request.make_response()

    def _put_kv(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        f = request.ext_fields
        self.kv[(f["namespace"], f["key"])] = f["value"]
        return request.make_response()

    def _delete_kv(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        self.kv.pop((request.ext_fields["namespace"], request.ext_fields["key"]), None)
        return request.make_response()

    def _topic_stats(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        topic = request.ext_fields["topic"]
        if topic not in self.topics:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        name = self._broker_name(addr)
        table = TopicStatsTable()
        for qid in range(self.topics[topic]):
            stored = self.messages.get((name, topic, qid), [])
            table.offset_table[MessageQueue(topic, name, qid)] = TopicOffset(
                self.min_offsets.get((name, topic, qid), 0), len(stored), stored[-1].store_timestamp if stored else 0)
        return request.make_response(body=fastjson.dumps(table.to_json()))

    def _consume_stats(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.from_ext_fields(request.ext_fields)
        topics = {h.topic} if h.topic else {t for g, t, _ in self.offsets if g == h.consumer_group}
        name = self._broker_name(addr)
        stats = ConsumeStats()
        for topic in sorted(topics):
            for qid in range(self.topics.get(topic, 0)):
                stored = self.messages.get((name, topic, qid), [])
                consumer = self.offsets.get((h.consumer_group, topic, qid), 0)
                last = stored[consumer - 1].store_timestamp if 0 < consumer <= len(stored) else 0
                stats.offset_table[MessageQueue(topic, name, qid)] = OffsetWrapper(len(stored), consumer, last)
        return request.make_response(body=fastjson.dumps(stats.to_json()))

    def _group_clients(self, addr: str, group: str) -> dict[str, dict[str, Any]]:
        """client id -> the consumer data of *group* in its last heartbeat to *addr*."""
        clients: dict[str, dict[str, Any]] = {}
        for hb in self.heartbeats.get(addr, []):
            for consumer in hb.get("consumerDataSet") or []:
                if consumer["groupName"] == group:
                    clients[hb["clientID"]] = consumer
        return clients

    def _consumer_connections(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        group = request.ext_fields["consumerGroup"]
        clients = self._group_clients(addr, group)
        if not clients:
            return request.make_response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        last = list(clients.values())[-1]
        body = ConsumerConnection(
            [Connection(cid, "127.0.0.1:50000", "PYTHON", 409) for cid in sorted(clients)],
            {s["topic"]: SubscriptionData.from_json(s) for s in last.get("subscriptionDataSet") or []},
            last.get("consumeType"), last.get("messageModel"), last.get("consumeFromWhere"))
        return request.make_response(body=fastjson.dumps(body.to_json()))

    def _reset_offset(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        h = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        if not self._group_clients(addr, h.group):
            return request.make_response(ResponseCode.CONSUMER_NOT_ONLINE,
                                         f"Consumer not online, so can not reset offset, Group: {h.group} "
                                         f"Topic: {h.topic} Timestamp: {h.timestamp}")
        name = self._broker_name(addr)
        table: dict[MessageQueue, int] = {}
        for qid in range(self.topics.get(h.topic, 0)):
            stored = self.messages.get((name, h.topic, qid), [])
            target = len(stored) if h.timestamp == -1 else next(
                (m.queue_offset for m in stored if m.store_timestamp >= h.timestamp), len(stored))
            current = self.offsets.get((h.group, h.topic, qid), 0)
            table[MessageQueue(h.topic, name, qid)] = target if h.is_force or target < current else current
        return request.make_response(body=fastjson.dumps(ResetOffsetBody(table).to_json()))


_HANDLERS: dict[int, Callable[[FakeCluster, str, RemotingCommand], RemotingCommand | None]] = {
    RequestCode.GET_ROUTEINFO_BY_TOPIC: FakeCluster._route,
    RequestCode.SEND_MESSAGE_V2: FakeCluster._send,
    RequestCode.SEND_BATCH_MESSAGE: FakeCluster._send,
    RequestCode.PULL_MESSAGE: FakeCluster._pull,
    RequestCode.QUERY_CONSUMER_OFFSET: FakeCluster._query_offset,
    RequestCode.UPDATE_CONSUMER_OFFSET: FakeCluster._update_offset,
    RequestCode.GET_MAX_OFFSET: FakeCluster._max_offset,
    RequestCode.GET_MIN_OFFSET: FakeCluster._min_offset,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: FakeCluster._search_offset,
    RequestCode.GET_EARLIEST_MSG_STORETIME: FakeCluster._earliest,
    RequestCode.HEART_BEAT: FakeCluster._heartbeat,
    RequestCode.UNREGISTER_CLIENT: FakeCluster._ok,
    RequestCode.END_TRANSACTION: FakeCluster._end_transaction,
    RequestCode.CONSUMER_SEND_MSG_BACK: FakeCluster._ok,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: FakeCluster._consumer_list,
    RequestCode.VIEW_MESSAGE_BY_ID: FakeCluster._view,
    RequestCode.QUERY_MESSAGE: FakeCluster._query,
    RequestCode.LOCK_BATCH_MQ: FakeCluster._lock_batch,
    RequestCode.UNLOCK_BATCH_MQ: FakeCluster._unlock_batch,
    RequestCode.GET_BROKER_CLUSTER_INFO: FakeCluster._cluster_info,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: FakeCluster._topic_list,
    RequestCode.UPDATE_AND_CREATE_TOPIC: FakeCluster._create_topic,
    RequestCode.DELETE_TOPIC_IN_BROKER: FakeCluster._delete_topic,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: FakeCluster._delete_topic,
    RequestCode.PUT_KV_CONFIG: FakeCluster._put_kv,
    RequestCode.DELETE_KV_CONFIG: FakeCluster._delete_kv,
    RequestCode.GET_TOPIC_STATS_INFO: FakeCluster._topic_stats,
    RequestCode.GET_CONSUME_STATS: FakeCluster._consume_stats,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: FakeCluster._consumer_connections,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: FakeCluster._reset_offset,
}


class ThreadedFakeServer:
    """
    Serves a new :class:`FakeCluster` over real TCP on 127.0.0.1 (one listening socket per
    name server and broker, so the cluster's addresses are real ones). Responses may be
    written in *chunk*-byte pieces to exercise partial reads. An address in
    ``cluster.down`` has its connections closed at once.
    """

    def __init__(self, broker_names: tuple[str, ...] = ("broker-a",), namesrvs: int = 1, *,
                 chunk: int | None = None, **cluster_kwargs: Any) -> None:
        self.chunk = chunk
        self._listeners: dict[str, socket.socket] = {}
        self._conns: list[socket.socket] = []
        #: address -> the connections accepted on it (to send broker-to-client requests)
        self.accepted: dict[str, list[socket.socket]] = defaultdict(list)
        self._closed = False
        addrs = [self._listen() for _ in range(namesrvs + len(broker_names))]
        self.cluster = FakeCluster(dict(zip(broker_names, addrs[namesrvs:])), tuple(addrs[:namesrvs]),
                                   **cluster_kwargs)
        for addr, sock in self._listeners.items():
            threading.Thread(target=self._accept, args=(sock, addr), daemon=True).start()

    @property
    def namesrv_addr(self) -> str:
        return ";".join(self.cluster.namesrvs)

    def add_slave(self, broker_name: str) -> str:
        """Listen for *broker_name*'s slave (broker id 1, see :attr:`FakeCluster.slaves`); its address."""
        addr = self._listen()
        self.cluster.slaves[broker_name] = addr
        threading.Thread(target=self._accept, args=(self._listeners[addr], addr), daemon=True).start()
        return addr

    def _listen(self) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        addr = f"127.0.0.1:{sock.getsockname()[1]}"
        self._listeners[addr] = sock
        return addr

    def _accept(self, listener: socket.socket, addr: str) -> None:
        while not self._closed:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            if addr in self.cluster.down:
                conn.close()
                continue
            self._conns.append(conn)
            self.accepted[addr].append(conn)
            threading.Thread(target=self._serve, args=(conn, addr), daemon=True).start()

    def _serve(self, conn: socket.socket, addr: str) -> None:
        decoder = FrameDecoder()
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data or addr in self.cluster.down:
                conn.close()
                return
            for request in decoder.feed(data):
                response = self.cluster.handle(addr, request)
                if response is None:
                    continue
                frame = encode_command(response)
                step = self.chunk or len(frame)
                try:
                    for i in range(0, len(frame), step):
                        conn.sendall(frame[i:i + step])
                except OSError:
                    return

    def push(self, addr: str, request: RemotingCommand) -> int:
        """Send *request* (a broker-to-client request) on every open connection to *addr*; how many."""
        frame = encode_command(request)
        sent = 0
        for conn in list(self.accepted.get(addr, [])):
            try:
                conn.sendall(frame)
            except OSError:
                continue
            sent += 1
        return sent

    def close(self) -> None:
        self._closed = True
        for sock in [*self._listeners.values(), *self._conns]:
            try:
                sock.close()
            except OSError:
                pass
