# -*- test-case-name: rocketmq_tx.namesrv.test.test_processors -*-
"""
``DefaultRequestProcessor``: every name-server request except route queries — broker
registration and keep-alive, cluster and topic listings, permissions, KV configuration,
the server's own configuration. Response codes and remarks are Java 4.9.8's; the 5.x codes
(REGISTER_TOPIC_IN_NAMESRV, GET_BROKER_MEMBER_GROUP, BROKER_HEARTBEAT) answer as Java 5.x's.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from twisted.internet import threads
from twisted.internet.defer import Deferred

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import DataVersion, TopicRouteData
from rocketmq_tx.config import ConfigError, read_properties_text
from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketmq_tx.net.dispatch import Handler, HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RemotingCommandError, RequestCode, ResponseCode
from rocketmq_tx.remoting.bodies import ClusterInfo, RegisterBrokerBody, kv_table, topic_list
from rocketmq_tx.remoting.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    BrokerHeartbeatRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetBrokerMemberGroupRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RegisterTopicRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

__all__ = ["DefaultRequestProcessor"]

#: REGISTER_BROKER JSON bodies up to this size are checked and decoded on the reactor
#: (well under a millisecond); larger ones, and every compressed one, in a thread.
_DECODE_ON_REACTOR_MAX = 16 * 1024
#: Topics of one registration applied to the route table per reactor turn (~1.6 us each).
_APPLY_SLICE = 2048


class DefaultRequestProcessor(HandlerProcessor):
    """One method per request code; :attr:`handlers` maps codes to them."""

    def __init__(self, controller: NamesrvController) -> None:
        self.controller = controller
        self.routes = controller.route_info_manager
        self.kv = controller.kv_config_manager
        #: broker address -> the token of its registration still being applied in slices
        self._applying: dict[str, object] = {}
        self.handlers: dict[int, Handler] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_broker_topic_config,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.BROKER_HEARTBEAT: self.broker_heartbeat,
            RequestCode.GET_BROKER_MEMBER_GROUP: self.get_broker_member_group,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.REGISTER_TOPIC_IN_NAMESRV: self.register_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self._topic_list_of(self.routes.get_unit_topics),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self._topic_list_of(self.routes.get_has_unit_sub_topic_list),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST:
                self._topic_list_of(self.routes.get_has_unit_sub_un_unit_topic_list),
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
        }

    # -- KV configuration ----------------------------------------------------------

    def put_kv_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv.put(header.namespace, header.key, header.value)
        return request.make_response()

    def get_kv_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                         f"No config item, Namespace: {header.namespace} Key: {header.key}")
        return request.make_response(ext_fields=GetKVConfigResponseHeader(value=value).to_ext_fields())

    def delete_kv_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv.delete(header.namespace, header.key)
        return request.make_response()

    def get_kv_list_by_namespace(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields)
        table = self.kv.list_namespace(header.namespace)
        if table is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}")
        return request.make_response(body=kv_table(table))

    # -- brokers ------------------------------------------------------------------

    def register_broker(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | Deferred | None:
        """
        REGISTER_BROKER. A body that may take more than a few milliseconds to check and
        decode (a large one, or any compressed one: zlib inflates up to ~1000 times) is
        decoded in the reactor's thread pool, reached through the connection's injected
        clock, and applied to the route table back on the reactor; without a thread pool
        (test reactors) it is decoded here. The response is the same either way.
        """
        header = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        clock = getattr(ctx, "clock", None)
        pool = getattr(clock, "getThreadPool", None)
        compressed = bool(header.compressed) and request.version >= 37
        if clock is None or pool is None or not (compressed or len(request.body) > _DECODE_ON_REACTOR_MAX):
            return self._registered(ctx, request, header, self._decode_registration(request, header))
        d = threads.deferToThreadPool(clock, pool(), self._decode_registration, request, header)
        return d.addCallback(lambda body: self._registered(ctx, request, header, body))

    @classmethod
    def _decode_registration(cls, request: RemotingCommand,
                             header: RegisterBrokerRequestHeader) -> RegisterBrokerBody | None:
        """The body's CRC check and decode (``None``: the CRC does not match); no shared state, thread-safe."""
        if header.body_crc32 and (zlib.crc32(request.body) & 0x7FFFFFFF) != header.body_crc32:
            return None
        if not request.body:
            return RegisterBrokerBody()
        # Before V3_0_11 the body was a bare TopicConfigSerializeWrapper.
        return (RegisterBrokerBody.decode(request.body, bool(header.compressed)) if request.version >= 37
                else cls._old_wrapper(request.body))

    def _registered(self, ctx: IRemotingContext, request: RemotingCommand, header: RegisterBrokerRequestHeader,
                    body: RegisterBrokerBody | None) -> RemotingCommand | Deferred | None:
        if body is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if not getattr(ctx, "connected", True):
            # Closed while the body was decoded in a thread: its channel is destroyed already,
            # and registering it now would keep a dead broker until the expiry scan.
            return None
        clock = getattr(ctx, "clock", None)
        result = self.routes.register_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id, header.ha_server_addr,
            body.data_version, body.topic_config_table, body.filter_server_list if request.version >= 37 else None,
            ctx, header.enable_acting_master, apply_limit=_APPLY_SLICE if clock is not None else None,
            heartbeat_timeout_millis=header.heartbeat_timeout_millis,
        )
        order = (self.kv.list_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
                 if self.controller.settings["returnOrderTopicConfigToBroker"] else None)
        response = request.make_response(
            ext_fields=RegisterBrokerResponseHeader(result.ha_server_addr, result.master_addr).to_ext_fields(),
            body=kv_table(order) if order is not None else b"",
        )
        if result.topics_applied:
            # A newer table of this broker supersedes what is left of an older one.
            self._applying.pop(header.broker_addr, None)
        if not result.pending_topics:
            return response
        return self._apply_in_slices(clock, header, result.pending_topics, response)

    def _apply_in_slices(self, clock: Any, header: RegisterBrokerRequestHeader, topics: list,
                         response: RemotingCommand) -> Deferred:
        """
        The rest of a large registration, :data:`_APPLY_SLICE` topics per reactor turn (about
        3 ms each), so other clients are answered in between; the broker gets its answer
        once its routes are complete.
        """
        token = object()
        self._applying[header.broker_addr] = token
        done: Deferred = Deferred()

        def apply(start: int) -> None:
            if self._applying.get(header.broker_addr) is not token:
                done.callback(response)  # superseded: the newer registration is applied instead
                return
            self.routes.apply_topic_configs(header.broker_name, topics[start:start + _APPLY_SLICE])
            if start + _APPLY_SLICE < len(topics):
                clock.callLater(0, apply, start + _APPLY_SLICE)
            else:
                del self._applying[header.broker_addr]
                done.callback(response)

        clock.callLater(0, apply, 0)
        return done

    @staticmethod
    def _old_wrapper(body: bytes) -> RegisterBrokerBody:
        wrapped = fastjson.dumps({"topicConfigSerializeWrapper": fastjson.loads(body)})
        return RegisterBrokerBody.decode(wrapped, False)

    def unregister_broker(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = UnRegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.unregister_broker(header.cluster_name, header.broker_addr, header.broker_name, header.broker_id)
        return request.make_response()

    def broker_heartbeat(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """BROKER_HEARTBEAT (5.x, oneway from a broker in ``enableSlaveActingMaster`` mode): keep it alive."""
        header = BrokerHeartbeatRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.update_broker_info_update_timestamp(header.broker_addr, cluster_name=header.cluster_name)
        return request.make_response()

    def get_broker_member_group(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_MEMBER_GROUP (5.x): the broker ids and addresses of one broker name (empty if unknown)."""
        header = GetBrokerMemberGroupRequestHeader.from_ext_fields(request.ext_fields)
        addrs = self.routes.get_broker_member_group(header.broker_name)
        group = {"brokerAddrs": dict(sorted(addrs.items())), "brokerName": header.broker_name,
                 "cluster": header.cluster_name}
        # Java (fastjson2) writes the Long keys unquoted, as dumps_legacy does.
        return request.make_response(body=fastjson.dumps_legacy({"brokerMemberGroup": group}))

    def query_broker_topic_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields)
        try:
            version = DataVersion.from_json(fastjson.loads(request.body) if request.body else None)
        except (ValueError, TypeError, AttributeError) as e:
            raise RemotingCommandError(f"invalid DataVersion body: {e}") from None
        changed = self.routes.is_broker_topic_config_changed(header.broker_addr, version)
        if not changed:
            self.routes.update_broker_info_update_timestamp(header.broker_addr)
        held = self.routes.query_broker_topic_config(header.broker_addr)
        return request.make_response(ext_fields=QueryDataVersionResponseHeader(changed).to_ext_fields(),
                                     body=fastjson.dumps(held.to_json()) if held is not None else b"")

    def get_broker_cluster_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        brokers, clusters = self.routes.get_all_cluster_info()
        info = ClusterInfo(dict(brokers), {cluster: sorted(names) for cluster, names in clusters.items()})
        return request.make_response(body=fastjson.dumps(info.to_json()))

    def wipe_write_perm_of_broker(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = WipeWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.routes.wipe_write_perm_of_broker(header.broker_name)
        return request.make_response(ext_fields=WipeWritePermOfBrokerResponseHeader(count).to_ext_fields())

    def add_write_perm_of_broker(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = AddWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.routes.add_write_perm_of_broker(header.broker_name)
        return request.make_response(ext_fields=AddWritePermOfBrokerResponseHeader(count).to_ext_fields())

    # -- topics --------------------------------------------------------------------

    def _disabled(self, request: RemotingCommand, key: str) -> RemotingCommand | None:
        # 5.x lets an operator switch topic listings off.
        if self.controller.settings[key]:
            return None
        return request.make_response(ResponseCode.SYSTEM_ERROR, "disable")

    def get_all_topic_list(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        return self._disabled(request, "enableAllTopicList") or request.make_response(
            body=topic_list(self.routes.get_all_topic_list()))

    def delete_topic_in_namesrv(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = DeleteTopicFromNamesrvRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.delete_topic(header.topic, header.cluster_name)
        return request.make_response()

    def register_topic_in_namesrv(self, ctx: IRemotingContext,
                                  request: RemotingCommand) -> RemotingCommand | Deferred:
        """
        REGISTER_TOPIC_IN_NAMESRV (5.x): a broker in ``enableSingleTopicRegister`` mode registers one
        topic it created (a TopicRouteData body with its queue datas) instead of its whole table.
        Answered SUCCESS whatever became of it, as Java does; a large body is decoded in the
        reactor's thread pool as REGISTER_BROKER's is.
        """
        header = RegisterTopicRequestHeader.from_ext_fields(request.ext_fields)
        clock = getattr(ctx, "clock", None)
        pool = getattr(clock, "getThreadPool", None)
        if clock is None or pool is None or len(request.body) <= _DECODE_ON_REACTOR_MAX:
            return self._topic_registered(request, header.topic, self._decode_route(request.body))
        d = threads.deferToThreadPool(clock, pool(), self._decode_route, request.body)
        return d.addCallback(lambda route: self._topic_registered(request, header.topic, route))

    @staticmethod
    def _decode_route(body: bytes) -> TopicRouteData:
        """TopicRouteData from JSON; no shared state, thread-safe."""
        try:
            data = fastjson.loads(body)
            if not isinstance(data, dict):
                raise TypeError(f"a JSON object expected, got {type(data).__name__}")
            return TopicRouteData.from_json(data)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise RemotingCommandError(f"invalid TopicRouteData body: {e}") from None

    def _topic_registered(self, request: RemotingCommand, topic: str, route: TopicRouteData) -> RemotingCommand:
        self.routes.register_topic(topic, route.queue_datas)
        return request.make_response()

    def get_topics_by_cluster(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        disabled = self._disabled(request, "enableTopicList")
        if disabled is not None:
            return disabled
        header = GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields)
        return request.make_response(body=topic_list(self.routes.get_topics_by_cluster(header.cluster)))

    def get_system_topic_list(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        topics, broker_addr = self.routes.get_system_topic_list()
        return request.make_response(body=topic_list(topics, broker_addr))

    def _topic_list_of(self, source: Callable[[], list[str]]) -> Handler:
        def handler(ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
            return self._disabled(request, "enableTopicList") or request.make_response(body=topic_list(source()))
        return handler

    # -- the server's configuration ----------------------------------------------

    def update_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        if request.body:
            try:
                properties = read_properties_text(request.body.decode("utf-8"))
            except (UnicodeDecodeError, ConfigError):
                return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
            if self.controller.black_listed(properties):
                return request.make_response(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
            try:
                self.controller.update_config(properties)
            except ConfigError as e:
                return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        return request.make_response()

    def get_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=self.controller.config_text().encode("utf-8"))
