# -*- test-case-name: rocketmq_tx.broker.ha.test.test_slavesync -*-
"""
A slave's copy of its master's metadata (Java 4.9 ``SlaveSynchronize``), every 10 s: topics,
consumer offsets, delay offsets and subscription groups, over the admin codes any broker
answers (GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET,
GET_ALL_SUBSCRIPTIONGROUP_CONFIG), persisted as the slave's own files.

As in Java, topics and subscription groups are replaced only when the master's DataVersion
differs; consumer offsets and delay offsets are merged in every time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer, threads
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import DataVersion, TopicConfig
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.common.validators import validate_group, validate_topic
from rocketmq_tx.remoting.codes import RequestCode, ResponseCode
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.store.configfile import int_keys

__all__ = ["SlaveSynchronize", "SYNC_INTERVAL"]

log = Logger()

#: seconds between two rounds (Java schedules syncAll every 10 s on a slave)
SYNC_INTERVAL = 10.0
#: the largest metadata body accepted from the master (a big topic table is a few MiB)
MAX_BODY = 64 * 1024 * 1024


class SlaveSynchronize:
    """
    :param controller: the slave's :class:`~rocketmq_tx.broker.controller.BrokerController`.
    :param client: a :class:`~rocketmq_tx.net.client.RemotingClient` to reach the master.
    :ivar master_addr: the master's broker address (from the name server's REGISTER_BROKER
        answer, ``masterAddr``); ``None``: nothing to do.
    """

    def __init__(self, controller: Any, client: Any, timeout: float = 3.0) -> None:
        self.controller = controller
        self.client = client
        self.timeout = timeout
        self.master_addr: str | None = None
        self._running: defer.Deferred | None = None

    def sync_all(self) -> defer.Deferred:
        """One round (a round still running is not started twice); fires when it is over."""
        if self._running is not None:
            return self._running
        addr = self.master_addr
        if not addr or addr == self.controller.broker_addr:
            return defer.succeed(None)
        d = self._running = defer.ensureDeferred(self._sync(addr))

        def done(result: Any) -> Any:
            self._running = None
            return result
        return d.addBoth(done)

    def _run(self, fn: Callable[..., Any], *args: Any) -> Deferred:
        # Decoding a big table takes tens of ms: a thread does it (a memory reactor: here).
        reactor = self.controller.reactor
        pool = getattr(reactor, "getThreadPool", None)
        if pool is None:
            return defer.maybeDeferred(fn, *args)
        return threads.deferToThreadPool(reactor, pool(), fn, *args)

    async def _sync(self, addr: str) -> None:
        for name, code, decode, apply in (
                ("topic config", RequestCode.GET_ALL_TOPIC_CONFIG, _decode_topics, self._topics),
                ("consumer offset", RequestCode.GET_ALL_CONSUMER_OFFSET, _decode_offsets, self._offsets),
                ("delay offset", RequestCode.GET_ALL_DELAY_OFFSET, fastjson.loads, self._delay_offsets),
                ("subscription group", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, _decode_groups, self._groups)):
            try:
                response = await self.client.invoke(addr, RemotingCommand.request(code, {}), self.timeout)
                if response.code != ResponseCode.SUCCESS:
                    raise ValueError(f"code {response.code} {response.remark}")
                body = response.body or b"{}"
                if len(body) > MAX_BODY:
                    raise ValueError(f"body of {len(body)} bytes")
                apply(await self._run(decode, body))
            except Exception as e:  # one part failing does not stop the others (as Java)
                log.error("Sync {name} from master {addr} failed: {error}", name=name, addr=addr, error=e)

    def _topics(self, decoded: tuple[DataVersion, dict[str, TopicConfig], list[str]]) -> None:
        version, table, refused = decoded
        for name in refused:
            log.warn("master {addr} has a topic with an illegal name {name!r}; not copied", addr=self.master_addr,
                     name=name[:200])
        tcm = self.controller.topic_config_manager
        if tcm.data_version.same_as(version):
            return
        tcm.topic_config_table.clear()
        tcm.topic_config_table.update(table)
        tcm.data_version = version
        tcm.mark_dirty()
        log.info("Update slave topic config from master, {addr}", addr=self.master_addr)

    def _offsets(self, table: dict[str, dict[int, int]]) -> None:
        self.controller.consumer_offset_manager.offset_table.update(table)
        self.controller.persister.mark_dirty("consumerOffset")

    def _delay_offsets(self, data: Any) -> None:
        self.controller.schedule_message_service.decode(data)
        self.controller.persister.mark_dirty("delayOffset")

    def _groups(self, decoded: tuple[DataVersion, dict[str, SubscriptionGroupConfig]]) -> None:
        version, table = decoded
        sgm = self.controller.subscription_group_manager
        if sgm.data_version.same_as(version):
            return
        sgm.subscription_group_table.clear()
        sgm.subscription_group_table.update(table)
        sgm.data_version = version
        sgm.mark_dirty()


# The decoders run in a thread: pure functions of the body.

def _decode_topics(body: bytes) -> tuple[DataVersion, dict[str, TopicConfig], list[str]]:
    data = fastjson.loads(body)
    table: dict[str, TopicConfig] = {}
    refused: list[str] = []
    for name, value in dict(data.get("topicConfigTable") or {}).items():
        # names become ConsumeQueue directories: the master's are checked like a client's
        if validate_topic(str(name)) is None:
            table[str(name)] = TopicConfig.from_json(value)
        else:
            refused.append(str(name))
    return DataVersion.from_json(data.get("dataVersion")), table, refused


def _decode_offsets(body: bytes) -> dict[str, dict[int, int]]:
    data = fastjson.loads(body)
    table = {}
    for key, queues in dict(data.get("offsetTable") or {}).items():
        topic, sep, group = str(key).partition("@")
        if sep and validate_topic(topic) is None and validate_group(group) is None:
            table[str(key)] = {int(q): int(o) for q, o in int_keys(dict(queues)).items()}
    return table


def _decode_groups(body: bytes) -> tuple[DataVersion, dict[str, SubscriptionGroupConfig]]:
    data = fastjson.loads(body)
    table = {str(k): SubscriptionGroupConfig.from_json(v)
             for k, v in dict(data.get("subscriptionGroupTable") or {}).items() if validate_group(str(k)) is None}
    return DataVersion.from_json(data.get("dataVersion")), table
