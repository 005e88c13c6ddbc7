# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
Offsets and consumption progress: queue offsets and store queries, ConsumeQueue units,
consume stats, consumer and delay offsets, time spans, offset correction and cloning.
"""

from __future__ import annotations

import struct

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.admin import AdminProcessor
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import (
    ConsumeQueueData,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeStatsList,
    OffsetWrapper,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
)
from rocketmq_tx.remoting.headers.admin import (
    CloneGroupOffsetRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
)
from rocketmq_tx.remoting.headers.client import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    SearchOffsetRequestHeader,
)

__all__ = ["OffsetAdminProcessor"]

#: Java's ``Long.MAX_VALUE``: QUERY_CORRECTION_OFFSET's "no correction" value.
_LONG_MAX = 2 ** 63 - 1
_CQ_UNIT = struct.Struct(">qiq")


class OffsetAdminProcessor(AdminProcessor):
    """
    GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME,
    QUERY_CONSUME_QUEUE, GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS, GET_ALL_CONSUMER_OFFSET,
    GET_ALL_DELAY_OFFSET, QUERY_CONSUME_TIME_SPAN, QUERY_CORRECTION_OFFSET, CLONE_GROUP_OFFSET.
    """

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_BROKER_CONSUME_STATS: self.fetch_all_consume_stats_in_broker,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.query_consume_time_span,
            RequestCode.QUERY_CORRECTION_OFFSET: self.query_correction_offset,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_group_offset,
        }

    def _subscription_skipped(self, group: str, topic: str) -> bool:
        """Java: an online group that does not subscribe *topic* is left out of its stats."""
        cm = self.controller.consumer_manager
        info = cm.get_consumer_group_info(group)
        return cm.find_subscription_data(group, topic) is None and info is not None and bool(info.subscription_table)

    def _offset_wrapper(self, group: str, topic: str, qid: int) -> OffsetWrapper:
        store = self.controller.store
        broker_offset = max(store.get_max_offset_in_queue(topic, qid), 0)
        consumer_offset = max(self.controller.consumer_offset_manager.query_offset(group, topic, qid), 0)
        wrapper = OffsetWrapper(broker_offset, consumer_offset)
        if consumer_offset - 1 >= 0:
            last = store.get_message_store_timestamp(topic, qid, consumer_offset - 1)
            if last > 0:
                wrapper.last_timestamp = last
        return wrapper

    def get_max_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.controller.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return request.make_response(ext_fields=OffsetResponseHeader(offset).to_ext_fields())

    def get_min_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetMinOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.controller.store.get_min_offset_in_queue(header.topic, header.queue_id)
        return request.make_response(ext_fields=OffsetResponseHeader(offset).to_ext_fields())

    def search_offset_by_timestamp(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = SearchOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.controller.store.get_offset_in_queue_by_time(header.topic, header.queue_id, header.timestamp)
        return request.make_response(ext_fields=OffsetResponseHeader(offset).to_ext_fields())

    def get_earliest_msg_storetime(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetEarliestMsgStoretimeRequestHeader.from_ext_fields(request.ext_fields)
        ts = self.controller.store.get_earliest_message_time(header.topic, header.queue_id)
        return request.make_response(ext_fields=GetEarliestMsgStoretimeResponseHeader(ts).to_ext_fields())

    def query_consume_queue(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """QUERY_CONSUME_QUEUE (321): raw ConsumeQueue units from an index (mqadmin queryCq)."""
        header = QueryConsumeQueueRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        topic = header.topic or ""
        cq = c.store.find_consume_queue(topic, header.queue_id, create=False)
        if cq is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"{header.queue_id}@{header.topic} is not exist!")
        body = QueryConsumeQueueResponseBody(max_queue_index=cq.get_max_offset_in_queue(),
                                             min_queue_index=cq.get_min_offset_in_queue())
        if header.consumer_group is not None:
            sub = c.consumer_manager.find_subscription_data(header.consumer_group, topic)
            body.subscription_data = sub
            # Tag subscriptions have no filter data: Java writes JSON null as text.
            body.filter_data = f"{header.consumer_group}@{header.topic} is not online!" if sub is None else "null"
        buffer = cq.get_index_buffer(header.index, max(header.count, 0) * _CQ_UNIT.size)
        if buffer is None:
            return request.make_response(
                ResponseCode.SUCCESS, f"Index {header.index} of {header.queue_id}@{header.topic} is not exist!")
        data = buffer[0]
        units = []
        for pos in range(0, min(len(data), header.count * _CQ_UNIT.size), _CQ_UNIT.size):
            if pos + _CQ_UNIT.size > len(data):
                break
            phy, size, tags_code = _CQ_UNIT.unpack_from(data, pos)
            units.append(ConsumeQueueData(phy, size, tags_code))
        body.queue_data = units
        return request.make_response(body=fastjson.dumps(body.to_json()))

    def get_consume_stats(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumeStatsRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        group = header.consumer_group
        if header.topic is None or not header.topic.strip():
            topics = c.consumer_offset_manager.which_topic_by_consumer(group)
        else:
            topics = {header.topic}
        stats = ConsumeStats()
        for topic in sorted(topics):
            tc = c.topic_config_manager.select_topic_config(topic)
            if tc is None or self._subscription_skipped(group, topic):
                continue
            for qid in range(tc.read_queue_nums):
                stats.offset_table[MessageQueue(topic, self.broker_name, qid)] = self._offset_wrapper(group, topic, qid)
            stats.consume_tps += c.stats.consume_tps(group, topic)
        return request.make_response(body=fastjson.dumps(stats.to_json()))

    def fetch_all_consume_stats_in_broker(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_CONSUME_STATS (317): every group's stats per topic (mqadmin brokerConsumeStats)."""
        header = GetConsumeStatsInBrokerHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        entries: list[dict[str, list[ConsumeStats]]] = []
        total_diff = 0
        for group in list(c.subscription_group_manager.subscription_group_table):
            per_topic: list[ConsumeStats] = []
            for topic in sorted(c.consumer_offset_manager.which_topic_by_consumer(group)):
                tc = c.topic_config_manager.select_topic_config(topic)
                if tc is None or (header.is_order and not tc.order) or self._subscription_skipped(group, topic):
                    continue
                stats = ConsumeStats()
                for qid in range(tc.write_queue_nums):
                    stats.offset_table[MessageQueue(topic, self.broker_name, qid)] = \
                        self._offset_wrapper(group, topic, qid)
                stats.consume_tps = c.stats.consume_tps(group, topic)
                total_diff += stats.compute_total_diff()
                per_topic.append(stats)
            entries.append({group: per_topic})
        body = ConsumeStatsList(entries, c.broker_addr, total_diff)
        return request.make_response(body=fastjson.dumps(body.to_json()))

    def get_all_consumer_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        table = self.controller.consumer_offset_manager.offset_table
        # Java's fastjson writes the queue ids unquoted; dumps_legacy gives the same bytes.
        return request.make_response(body=fastjson.dumps_legacy(ConsumerOffsetSerializeWrapper(table).to_json()))

    def get_all_delay_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        content = self.controller.schedule_message_service.offset_table_json()
        if not content:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "No delay offset in this broker")
        return request.make_response(body=content.encode("utf-8"))

    def query_consume_time_span(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumeTimeSpanRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        topic = header.topic
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = c.store
        spans = []
        for qid in range(tc.write_queue_nums):
            span = QueueTimeSpan(MessageQueue(topic, self.broker_name, qid))
            span.min_time_stamp = min_time = store.get_earliest_message_time(topic, qid)
            max_offset = store.get_max_offset_in_queue(topic, qid)
            span.max_time_stamp = store.get_message_store_timestamp(topic, qid, max_offset - 1)
            consumer_offset = c.consumer_offset_manager.query_offset(header.group, topic, qid)
            if consumer_offset > 0:
                span.consume_time_stamp = store.get_message_store_timestamp(topic, qid, consumer_offset - 1)
            else:
                span.consume_time_stamp = min_time
            if consumer_offset < max_offset:
                next_time = store.get_message_store_timestamp(topic, qid, consumer_offset)
                span.delay_time = c.now_ms() - next_time
            spans.append(span)
        return request.make_response(body=fastjson.dumps(QueryConsumeTimeSpanBody(spans).to_json()))

    def query_correction_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryCorrectionOffsetHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        topic = header.topic
        skip = {g for g in (header.filter_groups or "").split(",") if g.strip()}
        correction: dict[int, int] = {}
        for key, offsets in list(c.consumer_offset_manager.offset_table.items()):
            key_topic, sep, group = key.partition("@")
            if not sep or key_topic != topic or group in skip:
                continue
            for qid, offset in offsets.items():
                # Java only counts offsets still inside the queue.
                if offset >= c.store.get_min_offset_in_queue(topic, qid):
                    correction[qid] = min(correction.get(qid, offset), offset)
        # Java looks the compare group up with topic and group swapped ("group@topic"),
        # so in practice the comparison never applies; the same key is used here.
        compare = c.consumer_offset_manager.offset_table.get(f"{header.compare_group}@{topic}") or {}
        for qid, offset in compare.items():
            if qid in correction:
                correction[qid] = _LONG_MAX if correction[qid] > offset else correction[qid]
        return request.make_response(body=fastjson.dumps(QueryCorrectionOffsetBody(correction).to_json()))

    def clone_group_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = CloneGroupOffsetRequestHeader.from_ext_fields(request.ext_fields)
        error = self._group_error(request, header.dest_group)
        if error is not None:
            return error
        c = self.controller
        if header.topic is None or not header.topic.strip():
            topics = c.consumer_offset_manager.which_topic_by_consumer(header.src_group)
        else:
            topics = {header.topic}
        for topic in topics:
            if c.topic_config_manager.select_topic_config(topic) is None:
                continue
            if not header.offline and self._subscription_skipped(header.src_group, topic):
                continue
            # Java clones the header's topic (not the loop's): without -t nothing is copied.
            if header.topic:
                c.consumer_offset_manager.clone_offset(header.src_group, header.dest_group, header.topic)
        return request.make_response()
