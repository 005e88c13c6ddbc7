# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
``AdminBrokerProcessor``: the broker's default processor — offsets and store queries, topic
and subscription-group administration, queue locks, broker configuration and statistics,
and the admin requests relayed to clients. One method per request code; :attr:`handlers`
maps codes to them. Codes, remarks and bodies are Java 4.9.8's.

Not handled (REQUEST_CODE_NOT_SUPPORTED, like any code without a handler): the ACL codes
(50-53) and the transaction ones (37 END_TRANSACTION, 323 RESUME_CHECK_HALF_MESSAGE).
One 5.x code is answered beyond 4.9.8's set: GET_TOPIC_CONFIG (351), which 5.x mqadmin needs.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Callable, Iterable

from twisted.internet import defer
from twisted.logger import Logger
from zope.interface import implementer

from rocketmq_tx.broker.broker2client import (
    V3_1_8_SNAPSHOT,
    Broker2Client,
    exception_simple_desc,
    version_desc,
)
from rocketmq_tx.broker.config import _store_field
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.stats import GROUP_GET_NUMS, GROUP_GET_SIZE
from rocketmq_tx.broker.topicconfig import SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC, validate_topic
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.msgid import decode_offset_msg_id
from rocketmq_tx.common.route import DataVersion, PermName, TopicConfig
from rocketmq_tx.common.validators import validate_group
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.config import PATH_KEYS, ConfigError, control_character_error, read_properties_text
from rocketmq_tx.net.dispatch import IRemotingContext, IRequestProcessor
from rocketmq_tx.remoting import LanguageCode, RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import (
    BrokerStatsData,
    ConsumeQueueData,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeStatsList,
    Connection,
    GroupList,
    LockBatchRequestBody,
    LockBatchResponseBody,
    OffsetWrapper,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    TopicOffset,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from rocketmq_tx.remoting.bodies import topic_list
from rocketmq_tx.remoting.errors import RemotingTimeoutError
from rocketmq_tx.remoting.headers.admin import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketmq_tx.remoting.headers.client import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    SearchOffsetRequestHeader,
)
from rocketmq_tx.store.config import BrokerRole

__all__ = ["AdminBrokerProcessor", "broker_config_path", "clean_unused_topic", "clean_expired_consume_queue"]

Handler = Callable[[IRemotingContext, RemotingCommand], Any]

log = Logger()

#: Keys UPDATE_BROKER_CONFIG never changes, whatever ``configBlackList`` says: Java's
#: ``initConfigBlackList``, every path key, and the store's file sizes (files of another
#: size stop the next start).
_ALWAYS_BLACK = PATH_KEYS | {"configBlackList", "mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue"}
#: Java's ``Long.MAX_VALUE``: QUERY_CORRECTION_OFFSET's "no correction" value.
_LONG_MAX = 2 ** 63 - 1
_LMQ_PREFIX = "%LMQ%"
_CQ_UNIT = struct.Struct(">qiq")


def broker_config_path(controller: BrokerController) -> str:
    """Where UPDATE_BROKER_CONFIG persists: ``brokerConfigPath``, else ``<store>/config/broker.properties``."""
    path = controller.settings["brokerConfigPath"]
    if path:
        return str(path)
    return os.path.join(controller.store_config.store_path_root_dir, "config", "broker.properties")


def clean_unused_topic(controller: BrokerController, keep: Iterable[str], only: str | None = None) -> int:
    """
    Java ``DefaultMessageStore.cleanUnusedTopic``: destroy the ConsumeQueues of topics not in
    *keep* (the schedule, transaction-op and LMQ topics always stay); *only* limits it to one
    topic. Returns the number of queues destroyed.
    """
    store = controller.store
    keep = set(keep)
    removed = 0
    # The put lock: a put dispatching to a queue must not recreate it half-way.
    with store.put_lock:
        for topic in list(store.consume_queue_table):
            if only is not None and topic != only:
                continue
            if topic in keep or topic in (SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC):
                continue
            if only is None and topic.startswith(_LMQ_PREFIX):
                continue
            queues = store.consume_queue_table.pop(topic)
            for qid, cq in queues.items():
                cq.destroy()
                store.topic_queue_table.pop(f"{topic}-{qid}", None)
                removed += 1
    return removed


def clean_expired_consume_queue(controller: BrokerController) -> int:
    """
    Java ``cleanExpiredConsumerQueue``: destroy the ConsumeQueues whose last entry points
    below the CommitLog's first byte (their messages are all gone).
    """
    store = controller.store
    min_phy = store.get_min_phy_offset()
    removed = 0
    with store.put_lock:
        for topic in list(store.consume_queue_table):
            if topic == SCHEDULE_TOPIC:
                continue
            queues = store.consume_queue_table[topic]
            for qid, cq in list(queues.items()):
                last = cq.get_max_offset_in_queue() - 1
                entry = cq.get_entry(last) if last >= cq.get_min_offset_in_queue() else None
                if entry is None:
                    continue  # Java: "maxCLOffsetInConsumeQueue == -1", left alone
                if entry[0] + entry[1] < min_phy:
                    store.topic_queue_table.pop(f"{topic}-{qid}", None)
                    cq.destroy()
                    del queues[qid]
                    removed += 1
            if not queues:
                del store.consume_queue_table[topic]
    return removed


def _language_name(language: Any) -> str:
    """A ``LanguageCode`` name for a connection: the heartbeat may have kept the number."""
    text = str(language)
    if text.isdigit():
        try:
            return LanguageCode(int(text)).name
        except ValueError:
            return "OTHER"
    return text


def _as_response(request: RemotingCommand, result: RemotingCommand) -> RemotingCommand:
    # Broker2Client builds bare commands; answer in the request's opaque and serialization.
    return request.make_response(result.code, result.remark, result.ext_fields, result.body)


@implementer(IRequestProcessor)
class AdminBrokerProcessor:
    """The default processor of both broker ports: every code no other processor takes."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.settings = controller.settings
        self.broker2client = Broker2Client(controller)
        self.handlers: dict[int, Handler] = {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.GET_TOPIC_CONFIG: self.get_topic_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RequestCode.GET_ALL_PRODUCER_INFO: self.get_all_producer_info,
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.get_consumer_status,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.query_consume_time_span,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.get_system_topic_list_from_broker,
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commit_log,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.QUERY_CORRECTION_OFFSET: self.query_correction_offset,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_group_offset,
            RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
            RequestCode.GET_BROKER_CONSUME_STATS: self.fetch_all_consume_stats_in_broker,
            RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
        }

    def reject_request(self) -> bool:
        return False

    def process_request(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        handler = self.handlers.get(request.code)
        if handler is None:
            return request.make_unsupported_response()
        return handler(ctx, request)

    # ------------------------------------------------------------------ helpers

    @property
    def broker_name(self) -> str:
        return str(self.settings["brokerName"])

    def _slave_error(self, request: RemotingCommand) -> RemotingCommand | None:
        """Java ``validateSlave``: topics and groups are changed on the master only."""
        if self.controller.store_config.broker_role is BrokerRole.SLAVE:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         "Can't modify topic or subscription group from slave broker, "
                                         "please execute it from master broker.")
        return None

    def _topic_error(self, request: RemotingCommand, topic: str | None) -> RemotingCommand | None:
        """Java ``TopicValidator.validateTopic`` then ``isSystemTopic`` (SYSTEM_ERROR either way)."""
        bad = validate_topic(topic)
        if bad is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, bad)
        assert topic is not None
        if self.controller.topic_config_manager.is_system_topic(topic):
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"The topic[{topic}] is conflict with system topic.")
        return None

    def _queue_nums_error(self, request: RemotingCommand, *counts: int) -> RemotingCommand | None:
        """
        Queue counts within 1..``topicQueueNumsMax``. Java takes any int, and a topic of 2^31
        queues would make every per-queue answer (stats, offsets, routes) loop for minutes.
        """
        limit = self.settings["topicQueueNumsMax"]
        for count in counts:
            if not 1 <= count <= limit:
                return request.make_response(
                    ResponseCode.SYSTEM_ERROR,
                    f"queue nums {count} is illegal, allowing 1..{limit} (topicQueueNumsMax)")
        return None

    def _group_error(self, request: RemotingCommand, group: str | None) -> RemotingCommand | None:
        bad = validate_group(group)
        return None if bad is None else request.make_response(ResponseCode.SYSTEM_ERROR, bad)

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

    # ------------------------------------------------------------------ offsets and store queries

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
        buffer = cq.get_index_buffer(header.index)
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

    # ------------------------------------------------------------------ queue locks

    def lock_batch_mq(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.from_json(fastjson.loads(request.body))
        locked = self.controller.rebalance_lock_manager.try_lock_batch(body.consumer_group or "", body.mq_set,
                                                                       body.client_id or "")
        ordered = [mq for mq in body.mq_set if mq in locked]
        return request.make_response(body=fastjson.dumps(LockBatchResponseBody(ordered).to_json()))

    def unlock_batch_mq(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        body = UnlockBatchRequestBody.from_json(fastjson.loads(request.body))
        self.controller.rebalance_lock_manager.unlock_batch(body.consumer_group or "", body.mq_set,
                                                            body.client_id or "")
        return request.make_response()

    # ------------------------------------------------------------------ topics

    def update_and_create_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        header = CreateTopicRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        error = self._topic_error(request, topic)
        if error is not None:
            return error
        error = self._queue_nums_error(request, header.read_queue_nums, header.write_queue_nums)
        if error is not None:
            return error
        if not 0 <= header.perm < PermName.PERM_PRIORITY:
            # Java checks this in the admin client (Validators.checkTopicConfig); the broker is
            # the last place that sees every caller.
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"topicPermission value: {header.perm} is invalid.")
        # Java 4.9.8 ignores the header's order flag: a topic becomes ordered through the
        # name server's ORDER_TOPIC_CONFIG namespace (mqadmin updateTopic -o writes it there).
        tc = TopicConfig(topic, header.read_queue_nums, header.write_queue_nums, header.perm,
                         header.topic_filter_type, header.topic_sys_flag or 0)
        self.controller.topic_config_manager.update_topic_config(tc)
        self.controller.on_topic_created(tc)
        return request.make_response()

    def delete_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        header = DeleteTopicRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        error = self._topic_error(request, topic)
        if error is not None:
            return error
        c = self.controller
        if topic.startswith(_LMQ_PREFIX):
            clean_unused_topic(c, (), only=topic)
            return request.make_response()
        c.topic_config_manager.delete_topic_config(topic)
        clean_unused_topic(c, c.topic_config_manager.topic_config_table)
        # Java 4.9.8 keeps the offsets of a deleted topic; 5.x drops them, so a topic
        # created again under the same name does not inherit stale positions.
        c.consumer_offset_manager.remove_topic(topic)
        if self.settings["autoDeleteUnusedStats"]:
            c.stats.forget_topic(topic)
        return request.make_response()

    def get_all_topic_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        body = fastjson.dumps(self.controller.topic_config_manager.encode())
        return request.make_response(body=body)

    def get_topic_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        GET_TOPIC_CONFIG (351), a 5.x code a 4.9.8 broker does not know. Answered as 5.x
        does (``TopicConfigAndQueueMapping`` without a mapping: static topics do not exist
        here) because 5.x mqadmin topicStatus and consumerProgress -g fail without it.
        """
        header = GetTopicConfigRequestHeader.from_ext_fields(request.ext_fields)
        tc = self.controller.topic_config_manager.select_topic_config(header.topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST,
                                         f"No topic in this broker. topic: {header.topic}")
        return request.make_response(body=fastjson.dumps(tc.to_json()))

    def get_topic_stats_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetTopicStatsInfoRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.controller.store
        table = TopicStatsTable()
        for qid in range(tc.write_queue_nums):
            low = max(store.get_min_offset_in_queue(topic, qid), 0)
            high = max(store.get_max_offset_in_queue(topic, qid), 0)
            ts = store.get_message_store_timestamp(topic, qid, high - 1) if high > 0 else 0
            table.offset_table[MessageQueue(topic, self.broker_name, qid)] = TopicOffset(low, high, ts)
        return request.make_response(body=fastjson.dumps(table.to_json()))

    def get_system_topic_list_from_broker(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        # Java's TopicValidator set: the fixed system topics plus those this broker added
        # (cluster, broker name, reply and trace topics).
        return request.make_response(body=topic_list(sorted(self.controller.topic_config_manager.system_topics)))

    def clean_expired_consume_queue(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        log.warn("invoke cleanExpiredConsumeQueue start.")
        clean_expired_consume_queue(self.controller)
        log.warn("invoke cleanExpiredConsumeQueue end.")
        return request.make_response()

    def delete_expired_commit_log(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        # As in Java, this only arms the clean-up: the periodic clean service deletes.
        log.warn("invoke deleteExpiredCommitLog start.")
        self.controller.store.execute_delete_files_manually()
        log.warn("invoke deleteExpiredCommitLog end.")
        return request.make_response()

    def clean_unused_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        log.warn("invoke cleanUnusedTopic start.")
        clean_unused_topic(self.controller, self.controller.topic_config_manager.topic_config_table)
        log.warn("invoke cleanUnusedTopic end.")
        return request.make_response()

    # ------------------------------------------------------------------ broker

    def get_broker_runtime_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=fastjson.dumps({"table": self.controller.runtime_info()}))

    def _config_version(self) -> DataVersion:
        # On the controller, not here: the main and fast ports each have a processor.
        return self.controller.config_data_version

    def config_text(self) -> str:
        """GET_BROKER_CONFIG's body: every setting as ``key=value`` lines (Java ``properties2String``)."""
        return "".join(f"{k}={v}\n" for k, v in self.settings.to_properties().items())

    def update_broker_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        UPDATE_BROKER_CONFIG (25): apply the known keys of a properties body at run time
        (unknown keys are ignored, as Java's ``mergeIfExist``), then persist every setting.
        """
        if not request.body:
            return request.make_response()
        try:
            properties = read_properties_text(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ConfigError):
            return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        black = set(_ALWAYS_BLACK)
        black.update(k for k in str(self.settings["configBlackList"]).split(";") if k)
        if any(k in black for k in properties):
            return request.make_response(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        bad = control_character_error(properties)
        if bad is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, bad)
        log.info("updateBrokerConfig, new config: [{props}] client: {peer}", props=properties, peer=ctx.peer)
        store_keys = {k: v for k, v in properties.items() if _store_field(k) is not None}
        known = {k: v for k, v in properties.items() if k in self.settings or k in store_keys}
        try:
            # Tried on a copy first: a value the next start would refuse is refused now, so
            # nothing persisted here can keep the broker from restarting.
            trial = self.settings.copy()
            trial.update_from_properties(known)
            trial.validate()
            self.settings.update_from_properties(known)
        except ConfigError as e:
            # Java sets what parses and logs the rest; refusing the whole update is safer.
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        if store_keys:
            self._apply_store_keys(store_keys)
        self._apply_cached_settings()
        self._config_version().next_version(self.controller.now_ms())
        self._persist_config()
        if "brokerPermission" in properties:
            # Java bumps the topic data version and registers at once with the new permission.
            self.controller.topic_config_manager.data_version.next_version()
            self.controller.on_topic_created(None)
        return request.make_response()

    def _apply_cached_settings(self) -> None:
        # Managers that copied a setting when built see the new value too (Java's read
        # the live BrokerConfig).
        c = self.controller
        c.subscription_group_manager.auto_create = bool(self.settings["autoCreateSubscriptionGroup"])
        timeout = int(self.settings["channelExpiredTimeout"])
        c.consumer_manager.channel_expired_timeout = timeout
        c.producer_manager.channel_expired_timeout = timeout

    def _apply_store_keys(self, keys: dict[str, str]) -> None:
        # The store already runs: copy the changed fields onto its live config, as Java's
        # properties2Object does on the MessageStoreConfig object.
        c = self.controller
        fresh = self.settings.message_store_config(store_host=c.store_config.store_host)
        for key in keys:
            name = _store_field(key)
            if name is not None and hasattr(c.store_config, name):
                setattr(c.store_config, name, getattr(fresh, name))

    def _persist_config(self) -> None:
        # Written in a thread (Java's string2File protocol: .tmp, .bak, fsync); the last text
        # wins when updates come quickly, and a clean stop flushes it.
        self.controller.persister.write_text(broker_config_path(self.controller), self.config_text())

    def get_broker_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        version = fastjson.dumps(self._config_version().to_json()).decode("utf-8")
        return request.make_response(ext_fields=GetBrokerConfigResponseHeader(version).to_ext_fields(),
                                     body=self.config_text().encode("utf-8"))

    def view_broker_stats_data(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader.from_ext_fields(request.ext_fields)
        stats = self.controller.stats
        data = stats.stats_data(header.stats_name, header.stats_key)
        if data is None and header.stats_name.startswith("BROKER_") and \
                header.stats_key == self.settings["brokerClusterName"]:
            # Java keys the broker-wide counters by cluster name; ours use "".
            data = stats.stats_data(header.stats_name, "")
        if data is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"The stats <{header.stats_name}> <{header.stats_key}> not exist")
        body = BrokerStatsData.from_json(data).to_json()
        return request.make_response(body=fastjson.dumps(body))

    # ------------------------------------------------------------------ subscription groups

    def update_and_create_subscription_group(self, ctx: IRemotingContext, request: RemotingCommand
                                             ) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        log.info("updateAndCreateSubscriptionGroup called by {peer}", peer=ctx.peer)
        if request.body:
            data = fastjson.loads(request.body)
            if data is not None:
                config = SubscriptionGroupConfig.from_json(data)
                error = self._group_error(request, config.group_name)
                if error is None and config.retry_queue_nums > 0:
                    # 0 (or less) is Java's "no retry": send-back answers SUCCESS and drops it.
                    error = self._queue_nums_error(request, config.retry_queue_nums)
                if error is not None:
                    return error
                self.controller.subscription_group_manager.update_subscription_group_config(config)
        return request.make_response()

    def get_all_subscription_group(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=fastjson.dumps(self.controller.subscription_group_manager.encode()))

    def delete_subscription_group(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        error = self._slave_error(request)
        if error is not None:
            return error
        header = DeleteSubscriptionGroupRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        c.subscription_group_manager.delete_subscription_group_config(header.group_name)
        if header.should_remove_offset:
            c.consumer_offset_manager.remove_offset(header.group_name)
        if self.settings["autoDeleteUnusedStats"]:
            suffix = "@" + header.group_name
            for name in (GROUP_GET_NUMS, GROUP_GET_SIZE):
                table = c.stats.items.get(name, {})
                for key in [k for k in table if k.endswith(suffix)]:
                    del table[key]
        return request.make_response()

    # ------------------------------------------------------------------ connections

    def get_consumer_connection_list(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        info = self.controller.consumer_manager.get_consumer_group_info(header.consumer_group)
        if info is None:
            return request.make_response(ResponseCode.CONSUMER_NOT_ONLINE,
                                         f"the consumer group[{header.consumer_group}] not online")
        body = ConsumerConnection(
            [Connection(ci.client_id, ci.address, _language_name(ci.language), ci.version)
             for ci in info.channel_info_table.values()],
            dict(info.subscription_table), info.consume_type, info.message_model, info.consume_from_where)
        return request.make_response(body=fastjson.dumps(body.to_json()))

    def get_producer_connection_list(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetProducerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        channels = self.controller.producer_manager.group_channel_table.get(header.producer_group)
        if channels is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"the producer group[{header.producer_group}] not exist")
        body = ProducerConnection([Connection(ci.client_id, ci.address, _language_name(ci.language), ci.version)
                                   for ci in channels.values()])
        return request.make_response(body=fastjson.dumps(body.to_json()))

    def get_all_producer_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        table: dict[str, list[ProducerInfo]] = {}
        for group, channels in self.controller.producer_manager.group_channel_table.items():
            # Java prints the channel's InetSocketAddress: a leading slash.
            table[group] = [ProducerInfo(ci.client_id, "/" + ci.address, _language_name(ci.language), ci.version,
                                         ci.last_update_timestamp) for ci in channels.values()]
        return request.make_response(body=fastjson.dumps(ProducerTableInfo(table).to_json()))

    # ------------------------------------------------------------------ consumer offsets and stats

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

    def query_topic_consume_by_who(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryTopicConsumeByWhoRequestHeader.from_ext_fields(request.ext_fields)
        c = self.controller
        groups = c.consumer_manager.query_topic_consume_by_who(header.topic)
        groups |= c.consumer_offset_manager.which_group_by_topic(header.topic)
        return request.make_response(body=fastjson.dumps(GroupList(sorted(groups)).to_json()))

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

    # ------------------------------------------------------------------ relayed to clients

    def reset_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        log.info("[reset-offset] reset offset started by {peer}. topic={topic}, group={group}, timestamp={ts}, "
                 "isForce={force}", peer=ctx.peer, topic=header.topic, group=header.group, ts=header.timestamp,
                 force=header.is_force)
        is_c = request.language == LanguageCode.CPP
        result = self.broker2client.reset_offset(header.topic, header.group, header.timestamp, header.is_force, is_c)
        return _as_response(request, result)

    def get_consumer_status(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
        d = self.broker2client.get_consume_status(header.topic, header.group, header.client_addr)
        return d.addCallback(lambda result: _as_response(request, result))

    def get_consumer_running_info(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        return self._call_consumer(RequestCode.GET_CONSUMER_RUNNING_INFO, request, header.consumer_group,
                                   header.client_id)

    def consume_message_directly(self, ctx: IRemotingContext, request: RemotingCommand) -> Any:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        request.ext_fields["brokerName"] = self.broker_name
        try:
            _, _, offset = decode_offset_msg_id(header.msg_id or "")
        except Exception as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, exception_simple_desc(e))
        record = self.controller.store.select_one_message_by_offset(offset)
        if record is None:
            # Java fails with a NullPointerException here; say what is missing instead.
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"can not find message by the offset, {offset}")
        request.body = bytes(record)
        return self._call_consumer(RequestCode.CONSUME_MESSAGE_DIRECTLY, request, header.consumer_group,
                                   header.client_id or "")

    def _call_consumer(self, code: int, request: RemotingCommand, group: str, client_id: str) -> Any:
        """Java ``callConsumer``: relay *request* to the client and answer with its response."""
        client = self.controller.consumer_manager.find_channel(group, client_id)
        if client is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        if client.version < V3_1_8_SNAPSHOT:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{version_desc(client.version)}> too low to finish, "
                "please upgrade it to V3_1_8_SNAPSHOT")
        relay = RemotingCommand.request(code, request.ext_fields, request.body)

        def answered(response: RemotingCommand) -> RemotingCommand:
            # The dispatcher gives it the admin's opaque and the response flag.
            return response

        def failed(failure: Any) -> RemotingCommand:
            if failure.check(RemotingTimeoutError, defer.TimeoutError):
                return request.make_response(
                    ResponseCode.CONSUME_MSG_TIMEOUT,
                    f"consumer <{group}> <{client_id}> Timeout: {exception_simple_desc(failure)}")
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {exception_simple_desc(failure)}")

        d = self.broker2client.call_client(client.channel, relay)
        return d.addCallbacks(answered, failed)
