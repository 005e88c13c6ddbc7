# -*- test-case-name: rocketmq_tx.namesrv.test.test_processors -*-
"""``ClientRequestProcessor``: GET_ROUTEINFO_BY_TOPIC (105), the clients' hot path."""

from __future__ import annotations

from rocketmq_tx.common import fastjson
from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.headers import GetRouteInfoRequestHeader

__all__ = ["ClientRequestProcessor", "STANDARD_JSON_VERSION", "topic_not_exist_remark"]

#: ``MQVersion.Version.V4_9_4.ordinal()``: from this client version on, routes are standard JSON.
STANDARD_JSON_VERSION = 401


def topic_not_exist_remark(topic: str) -> str:
    """Java's remark, FAQ hint included."""
    return (f"No topic route info in name server for the topic: {topic}"
            "\nSee http://rocketmq.apache.org/docs/faq/ for further details.")


class ClientRequestProcessor(HandlerProcessor):
    """Answers route queries from the route table."""

    def __init__(self, controller: NamesrvController) -> None:
        self.controller = controller
        # Encoded routes by (topic, standard form, orderTopicConf): clients ask for the
        # same few routes over and over, and the tables change only on registration.
        self._cache: dict[tuple[str, bool, str | None], bytes | None] = {}
        self._cache_generation = -1
        self.handlers = {RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic}

    def get_route_info_by_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        routes = self.controller.route_info_manager
        order_conf = None
        if self.controller.settings["orderMessageEnable"]:
            order_conf = self.controller.kv_config_manager.get(NAMESPACE_ORDER_TOPIC_CONFIG, header.topic)
        standard = request.version >= STANDARD_JSON_VERSION or bool(header.accept_standard_json_only)
        if self._cache_generation != routes.generation:
            self._cache.clear()
            self._cache_generation = routes.generation
        key = (header.topic, standard, order_conf)
        body = self._cache.get(key, b"")
        if body == b"":
            body = self._cache[key] = self._encode(header.topic, standard, order_conf)
        if body is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, topic_not_exist_remark(header.topic))
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def _encode(self, topic: str, standard: bool, order_conf: str | None) -> bytes | None:
        route = self.controller.route_info_manager.pickup_topic_route_data(topic)
        if route is None:
            return None
        route.order_topic_conf = order_conf
        data = route.to_json()
        if not standard:
            return fastjson.dumps_legacy(data)
        # Java: BrowserCompatible + MapSortField, i.e. quoted keys in sorted order.
        for broker in data["brokerDatas"]:
            broker["brokerAddrs"] = dict(sorted(broker["brokerAddrs"].items()))
        return fastjson.dumps(data)
