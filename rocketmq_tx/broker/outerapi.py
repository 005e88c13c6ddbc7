# -*- test-case-name: rocketmq_tx.broker.test.test_service -*-
"""
``BrokerOuterAPI``: the broker's calls to the name servers — REGISTER_BROKER to one or every
one of them (in parallel, each failure logged and the others unaffected) and
UNREGISTER_BROKER at shutdown; GET_ROUTEINFO_BY_TOPIC for the broker's own allocation
(QUERY_ASSIGNMENT). When and what to register is
:class:`~rocketmq_tx.broker.registration.BrokerRegistrar`'s business.
"""

from __future__ import annotations

import zlib
from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.logger import Logger

from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.api import parse_route_response, route_request
from rocketmq_tx.remoting.bodies import RegisterBrokerBody
from rocketmq_tx.remoting.errors import MQBrokerError
from rocketmq_tx.remoting.headers.namesrv import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader

__all__ = ["BrokerOuterAPI", "namesrv_addresses"]

log = Logger()


def namesrv_addresses(text: str) -> list[str]:
    """``"a:9876;b:9876"`` -> ``["a:9876", "b:9876"]``."""
    return [a.strip() for a in (text or "").split(";") if a.strip()]


class BrokerOuterAPI:
    def __init__(self, client: RemotingClient, timeout_ms: int = 6000) -> None:
        self.client = client
        self.timeout = timeout_ms / 1000.0

    def connection(self, addr: str) -> Deferred:
        """Fires with the (pooled) connection to *addr*: a new one means a name server that may
        have restarted and forgotten this broker's topics."""
        return self.client.connection(addr)

    def register_broker(self, namesrvs: list[str], cluster: str, broker_addr: str, broker_name: str,
                        broker_id: int, ha_server_addr: str, data_version: DataVersion,
                        topics: dict[str, TopicConfig], compressed: bool = False) -> dict[str, Deferred]:
        """
        REGISTER_BROKER with *topics* (the whole table, or Java's increment: only new ones) and
        *data_version*; the body is encoded once. Returns one Deferred per name server, firing
        with its response (whatever the code) or failing.
        """
        body = RegisterBrokerBody(data_version, topics).encode(compressed)
        header = RegisterBrokerRequestHeader(broker_name, broker_addr, cluster, ha_server_addr, broker_id,
                                             compressed, zlib.crc32(body) & 0x7FFFFFFF)
        return {addr: self.client.invoke(
                    addr, RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body),
                    self.timeout)
                for addr in namesrvs}

    def register_broker_all(self, namesrvs: list[str], cluster: str, broker_addr: str, broker_name: str,
                            broker_id: int, ha_server_addr: str, data_version: DataVersion,
                            topics: dict[str, TopicConfig], compressed: bool = False) -> Deferred:
        """Register with every name server; fires with ``{addr: response or None}`` (failures logged)."""
        calls = []
        sent = self.register_broker(namesrvs, cluster, broker_addr, broker_name, broker_id, ha_server_addr,
                                    data_version, topics, compressed)
        for addr, d in sent.items():
            d.addCallback(self._registered, addr)
            d.addErrback(self._failed, addr, "register")
            calls.append(d)
        return DeferredList(calls, consumeErrors=True).addCallback(
            lambda results: {addr: r for addr, (_, r) in zip(sent, results)})

    def unregister_broker_all(self, namesrvs: list[str], cluster: str, broker_addr: str, broker_name: str,
                              broker_id: int) -> Deferred:
        header = UnRegisterBrokerRequestHeader(broker_name, broker_addr, cluster, broker_id)
        calls = []
        for addr in namesrvs:
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())
            calls.append(self.client.invoke(addr, request, self.timeout).addErrback(self._failed, addr, "unregister"))
        return DeferredList(calls, consumeErrors=True)

    def get_topic_route_info(self, namesrvs: list[str], topic: str) -> Deferred:
        """
        Java ``getTopicRouteInfoFromNameServer``: the route of *topic* from the first name
        server that answers (the next one is tried after a failure to connect or a timeout).
        Fires with the :class:`~rocketmq_tx.common.route.TopicRouteData`, ``None`` when the
        topic has no route (TOPIC_NOT_EXIST) or no name server answers.
        """
        addrs = list(namesrvs)
        result: Deferred = Deferred()

        def attempt(_: Any = None) -> None:
            if not addrs:
                result.callback(None)
                return
            addr = addrs.pop(0)
            d = self.client.invoke(addr, route_request(topic), self.timeout)
            d.addCallbacks(answered, failed, errbackArgs=(addr,))

        def answered(response: RemotingCommand) -> None:
            try:
                result.callback(parse_route_response(response))
            except MQBrokerError as e:
                if e.code != ResponseCode.TOPIC_NOT_EXIST:
                    log.warn("route of {topic}: {error}", topic=topic, error=e)
                result.callback(None)

        def failed(failure: Any, addr: str) -> None:
            log.warn("cannot get the route of {topic} from {addr}: {error}", topic=topic, addr=addr,
                     error=failure.getErrorMessage())
            attempt()

        attempt()
        return result

    @staticmethod
    def _registered(response: RemotingCommand, addr: str) -> Any:
        if response.code != ResponseCode.SUCCESS:
            log.warn("name server {addr} refused the registration: {code} {remark}", addr=addr,
                     code=response.code, remark=response.remark)
        return response

    @staticmethod
    def _failed(failure: Any, addr: str, what: str) -> None:
        log.warn("cannot {what} with name server {addr}: {error}", what=what, addr=addr,
                 error=failure.getErrorMessage())
        return None
