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

from typing import Any

from twisted.internet import defer
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

    async def _sync(self, addr: str) -> None:
        for name, code, apply in (("topic config", RequestCode.GET_ALL_TOPIC_CONFIG, self._topics),
                                  ("consumer offset", RequestCode.GET_ALL_CONSUMER_OFFSET, self._offsets),
                                  ("delay offset", RequestCode.GET_ALL_DELAY_OFFSET, self._delay_offsets),
                                  ("subscription group", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                                   self._groups)):
            try:
                response = await self.client.invoke(addr, RemotingCommand.request(code, {}), self.timeout)
                if response.code != ResponseCode.SUCCESS:
                    raise ValueError(f"code {response.code} {response.remark}")
                body = response.body or b""
                if len(body) > MAX_BODY:
                    raise ValueError(f"body of {len(body)} bytes")
                apply(fastjson.loads(body) if body else {})
            except Exception as e:  # one part failing does not stop the others (as Java)
                log.error("Sync {name} from master {addr} failed: {error}", name=name, addr=addr, error=e)

    def _topics(self, data: Any) -> None:
        version = DataVersion.from_json(data.get("dataVersion"))
        tcm = self.controller.topic_config_manager
        if tcm.data_version.same_as(version):
            return
        table = {}
        for name, value in dict(data.get("topicConfigTable") or {}).items():
            # names become ConsumeQueue directories: the master's are checked like a client's
            if validate_topic(str(name)) is None:
                table[str(name)] = TopicConfig.from_json(value)
            else:
                log.warn("master {addr} has a topic with an illegal name {name!r}; not copied", addr=self.master_addr,
                         name=str(name)[:200])
        tcm.topic_config_table.clear()
        tcm.topic_config_table.update(table)
        tcm.data_version = version
        tcm.mark_dirty()
        log.info("Update slave topic config from master, {addr}", addr=self.master_addr)

    def _offsets(self, data: Any) -> None:
        com = self.controller.consumer_offset_manager
        for key, queues in dict(data.get("offsetTable") or {}).items():
            topic, sep, group = str(key).partition("@")
            if not sep or validate_topic(topic) is not None or validate_group(group) is not None:
                continue
            com.offset_table[str(key)] = {int(q): int(o) for q, o in int_keys(dict(queues)).items()}
        self.controller.persister.mark_dirty("consumerOffset")

    def _delay_offsets(self, data: Any) -> None:
        sms = self.controller.schedule_message_service
        sms.decode(data)
        self.controller.persister.mark_dirty("delayOffset")

    def _groups(self, data: Any) -> None:
        version = DataVersion.from_json(data.get("dataVersion"))
        sgm = self.controller.subscription_group_manager
        if sgm.data_version.same_as(version):
            return
        table = {str(k): SubscriptionGroupConfig.from_json(v)
                 for k, v in dict(data.get("subscriptionGroupTable") or {}).items() if validate_group(str(k)) is None}
        sgm.subscription_group_table.clear()
        sgm.subscription_group_table.update(table)
        sgm.data_version = version
        sgm.mark_dirty()
