# -*- test-case-name: rocketmq_tx.blocking.test.test_simpleconsumer -*-
"""
:class:`BlockingSimpleConsumer`: the simple consumer of
:class:`~rocketmq_tx.client.simpleconsumer.SimpleConsumer` without a reactor: the same plans
(:class:`rocketmq_tx.remoting.popapi.SimpleConsumerBase`), each call blocking. Having no
threads, it heartbeats when it starts and then from its own calls once the heartbeat interval
has passed (a broker forgets a client after 120 s without one; POP itself does not need it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TypeVar

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.blocking.client import BlockingMQClient
from rocketmq_tx.remoting import api
from rocketmq_tx.remoting.api import ConsumerData, HeartbeatData, MessageSelector, MQClientError
from rocketmq_tx.remoting.errors import MQBrokerError, RemotingError
from rocketmq_tx.remoting.plans import Plan
from rocketmq_tx.remoting.popapi import CONSUME_INIT_MODE_MAX, ReceivedMessage, SimpleConsumerBase
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["BlockingSimpleConsumer", "ReceivedMessage"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Java ``heartbeatBrokerInterval``, seconds.
HEARTBEAT_INTERVAL = 30.0


class BlockingSimpleConsumer(SimpleConsumerBase):
    """
    ``receive``, ``ack`` and ``change_invisible_duration`` of
    :class:`~rocketmq_tx.remoting.popapi.SimpleConsumerBase`, blocking.

    :param group: the consumer group.
    :param namesrv_addr: ``"a:9876;b:9876"``.
    :param subscriptions: ``{topic: tag expression or MessageSelector}``.
    :param await_duration: seconds a receive waits at the broker while there is nothing (30).
    :param fifo: FIFO receive (POP ``order=true``), see
        :class:`~rocketmq_tx.remoting.popapi.SimpleConsumerBase`.
    :param timeout: seconds per request other than a long-polling receive.
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*), or with one ``credentials``.
    """

    def __init__(self, group: str, namesrv_addr: str, *, subscriptions: Mapping[str, str | MessageSelector],
                 await_duration: float = 30.0, init_mode: int = CONSUME_INIT_MODE_MAX, fifo: bool = False,
                 timeout: float = 3.0, client_id: str | None = None, tls: TlsSettings | None = None,
                 access_key: str | None = None, secret_key: str | None = None, security_token: str | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        self.client = BlockingMQClient.create(namesrv_addr, timeout=timeout, client_id=client_id, tls=tls,
                                              access_key=access_key, secret_key=secret_key,
                                              security_token=security_token, credentials=credentials)
        super().__init__(group, self.client.route_table, subscriptions, await_duration=await_duration,
                         init_mode=init_mode, fifo=fifo)
        self.running = False
        self._last_heartbeat: float | None = None

    def _run(self, plan: Plan[T]) -> T:
        if not self.running:
            plan.close()
            raise MQClientError("the simple consumer is not started")
        if self._last_heartbeat is None or time.monotonic() - self._last_heartbeat >= HEARTBEAT_INTERVAL:
            self.heartbeat()
        return self.client.run(plan)

    def __enter__(self) -> BlockingSimpleConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Read the subscribed topics' routes and heartbeat to their brokers."""
        self.running = True
        self.heartbeat()

    def heartbeat(self) -> None:
        """HEART_BEAT as a consumer of the group to every broker of the subscribed topics."""
        self._last_heartbeat = time.monotonic()
        data = HeartbeatData(self.client.client_id, [], [ConsumerData(
            self.group, "CONSUME_ACTIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET",
            [self.subscriptions[t] for t in sorted(self.subscriptions)])])
        for topic in sorted(self.subscriptions):
            try:
                self.client.heartbeat(data, topic)
            except (MQBrokerError, RemotingError) as e:
                log.warning("heartbeat for topic %s failed: %s", topic, e)

    def close(self) -> None:
        """Unregister from the brokers of the subscribed topics and close the connections."""
        if self.running:
            self.running = False
            for addr in self.client.route_table.master_addresses():
                request = api.unregister_client_request(self.client.client_id, consumer_group=self.group)
                try:
                    self.client.remoting.invoke(addr, request, self.client.timeout)
                except RemotingError as e:
                    log.warning("unregister from %s failed: %s", addr, e)
        self.client.close()
