# -*- test-case-name: rocketmq_tx.broker.test.test_managers -*-
"""
Who is connected: ``ConsumerManager`` (groups, their clients and subscriptions) and
``ProducerManager`` (producer groups), fed by HEART_BEAT and UNREGISTER_CLIENT and
emptied when connections close or stay silent for 120 s.

A *channel* is whatever object stands for the connection (the broker passes its
:class:`~rocketmq_tx.net.protocol.RemotingProtocol`); this module only hashes it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rocketmq_tx.remoting.api import MAX_SUBSCRIPTION_EXPRESSION_LENGTH, SubscriptionData

__all__ = ["ClientChannelInfo", "ConsumerGroupInfo", "ConsumerManager", "ProducerManager", "CHANNEL_EXPIRED_TIMEOUT",
           "CompiledFilter", "ConsumerFilterManager", "is_tag_type"]

CHANNEL_EXPIRED_TIMEOUT = 120_000

#: (event, group, payload): "CHANGE" with the group's channels, "UNREGISTER" with nothing,
#: "REGISTER" with the subscriptions (Java's ConsumerIdsChangeListener).
Listener = Callable[[str, str, Any], object]


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    channel: Hashable
    client_id: str
    language: str = "JAVA"
    version: int = 0
    last_update_timestamp: int = 0

    @property
    def address(self) -> str:
        return str(getattr(self.channel, "peer", self.channel))


@dataclass(slots=True, eq=False)
class ConsumerGroupInfo:
    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channel_info_table: dict[Hashable, ClientChannelInfo] = field(default_factory=dict)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update_timestamp: int = 0

    def all_channels(self) -> list[Hashable]:
        return list(self.channel_info_table)

    def all_client_ids(self) -> list[str]:
        return [info.client_id for info in self.channel_info_table.values()]

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channel_info_table.values():
            if info.client_id == client_id:
                return info
        return None

    def update_channel(self, new: ClientChannelInfo, consume_type: str, message_model: str,
                       consume_from_where: str, now: int) -> bool:
        self.consume_type, self.message_model, self.consume_from_where = consume_type, message_model, consume_from_where
        old = self.channel_info_table.get(new.channel)
        updated = False
        if old is None or old.client_id != new.client_id:
            self.channel_info_table[new.channel] = new
            updated = old is None
            old = new
        self.last_update_timestamp = now
        old.last_update_timestamp = now
        return updated

    def update_subscription(self, subs: Iterable[SubscriptionData], now: int) -> bool:
        subs = list(subs)
        updated = False
        for sub in subs:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        topics = {s.topic for s in subs}
        for topic in list(self.subscription_table):
            if topic not in topics:
                del self.subscription_table[topic]
                updated = True
        self.last_update_timestamp = now
        return updated


def is_tag_type(expression_type: str | None) -> bool:
    """Java ``ExpressionType.isTagType``: absent, empty and ``TAG`` all mean tags."""
    return not expression_type or expression_type == "TAG"


class CompiledFilter(Protocol):
    """What ``rocketmq_tx.filter.compile_sql92`` returns."""

    @property
    def tags(self) -> frozenset[str] | None: ...

    def matches(self, properties: Mapping[str, str]) -> bool: ...


def _compile_sql92(expression: str) -> CompiledFilter:
    from rocketmq_tx.filter import compile_sql92  # the parser is only needed once SQL92 is used

    return compile_sql92(expression)


class FilterCompileError(Exception):
    """A subscription's expression did not compile; ``str()`` is the parser's remark."""


class ConsumerFilterManager:
    """
    Java ``ConsumerFilterManager`` without the bloom filter: each (group, topic) SQL92
    subscription compiled once and kept while its expression stays the same (a new
    expression from a heartbeat or a pull replaces it), the *capacity* most recently used
    at most, so groups that come and go cannot grow memory. A failed compilation is kept
    too (as its error), so a bad expression is not parsed again on every pull.

    :param compiler: ``expression -> compiled filter``, raising on a malformed one
        (``rocketmq_tx.filter.compile_sql92``; tests may pass their own).
    """

    def __init__(self, capacity: int = 4096,
                 compiler: Callable[[str], CompiledFilter] | None = None) -> None:
        self.capacity = capacity
        self._compile = compiler or _compile_sql92
        self._table: OrderedDict[tuple[str, str], tuple[str, str, CompiledFilter | FilterCompileError]] = \
            OrderedDict()
        self.compilations = 0

    def get(self, group: str, topic: str, expression_type: str, expression: str) -> CompiledFilter:
        """
        The compiled filter of *group*'s subscription to *topic*.

        :raises FilterCompileError: the expression is malformed, or its type is neither TAG
            nor SQL92 (Java's ``FilterFactory`` knows no other).
        """
        key = (group, topic)
        table = self._table
        entry = table.get(key)
        if entry is not None and entry[0] == expression_type and entry[1] == expression:
            table.move_to_end(key)
            compiled = entry[2]
        else:
            compiled = self._build(expression_type, expression)
            table[key] = (expression_type, expression, compiled)
            table.move_to_end(key)
            while len(table) > self.capacity:
                table.popitem(last=False)
        if isinstance(compiled, FilterCompileError):
            raise compiled
        return compiled

    def _build(self, expression_type: str, expression: str) -> CompiledFilter | FilterCompileError:
        self.compilations += 1
        if expression_type != "SQL92":
            return FilterCompileError(f"expression type {expression_type} is not supported")
        if len(expression) > MAX_SUBSCRIPTION_EXPRESSION_LENGTH:
            # the bound TAG expressions have: parsing is linear, but it runs on the reactor
            return FilterCompileError(f"expression of {len(expression)} characters exceeds "
                                      f"{MAX_SUBSCRIPTION_EXPRESSION_LENGTH}")
        try:
            return self._compile(expression)
        except Exception as e:  # FilterExpressionError; anything else is a parser bug, refused the same way
            return FilterCompileError(str(e))

    def register(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """A heartbeat's subscriptions: compile the non-TAG ones now (errors show at the pull)."""
        for sub in subscriptions:
            if not is_tag_type(sub.expression_type) and sub.sub_string:
                try:
                    self.get(group, sub.topic, sub.expression_type, sub.sub_string)
                except FilterCompileError:
                    pass

    def unregister(self, group: str) -> None:
        """The group has no client left: forget its filters."""
        for key in [k for k in self._table if k[0] == group]:
            del self._table[key]

    def __len__(self) -> int:
        return len(self._table)


class ConsumerManager:
    """:param listener: told about membership changes (the broker notifies the clients)."""

    def __init__(self, listener: Listener | None = None, now_ms: Callable[[], int] = _now_ms,
                 channel_expired_timeout: int = CHANNEL_EXPIRED_TIMEOUT) -> None:
        self.listener = listener or (lambda *a: None)
        self.now_ms = now_ms
        self.channel_expired_timeout = channel_expired_timeout
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}
        #: Compiled SQL92 subscriptions (Java keeps them in its ConsumerFilterManager).
        self.filters = ConsumerFilterManager()

    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumer_table.get(group)

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.consumer_table.get(group)
        return info.find_channel(client_id) if info is not None else None

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_table.get(group)
        return info.subscription_table.get(topic) if info is not None else None

    def register_consumer(self, group: str, client: ClientChannelInfo, consume_type: str, message_model: str,
                          consume_from_where: str, subs: Iterable[SubscriptionData], notify: bool) -> bool:
        now = self.now_ms()
        info = self.consumer_table.get(group)
        if info is None:
            info = self.consumer_table[group] = ConsumerGroupInfo(group, consume_type, message_model,
                                                                  consume_from_where)
        subs = list(subs)
        r1 = info.update_channel(client, consume_type, message_model, consume_from_where, now)
        r2 = info.update_subscription(subs, now)
        if (r1 or r2) and notify:
            self.listener("CHANGE", group, info.all_channels())
        self.filters.register(group, subs)
        self.listener("REGISTER", group, subs)
        return r1 or r2

    def unregister_consumer(self, group: str, client: ClientChannelInfo, notify: bool) -> None:
        info = self.consumer_table.get(group)
        if info is None:
            return
        info.channel_info_table.pop(client.channel, None)
        if not info.channel_info_table:
            del self.consumer_table[group]
            self.filters.unregister(group)
            self.listener("UNREGISTER", group, None)
        if notify:
            self.listener("CHANGE", group, info.all_channels())

    def do_channel_close_event(self, channel: Hashable) -> None:
        for group, info in list(self.consumer_table.items()):
            if info.channel_info_table.pop(channel, None) is None:
                continue
            if not info.channel_info_table:
                del self.consumer_table[group]
                self.filters.unregister(group)
                self.listener("UNREGISTER", group, None)
            self.listener("CHANGE", group, info.all_channels())

    def scan_not_active_channel(self, close: Callable[[Hashable], object]) -> int:
        now = self.now_ms()
        removed = 0
        for group, info in list(self.consumer_table.items()):
            for channel, client in list(info.channel_info_table.items()):
                if now - client.last_update_timestamp > self.channel_expired_timeout:
                    close(channel)
                    del info.channel_info_table[channel]
                    removed += 1
            if not info.channel_info_table:
                del self.consumer_table[group]
                self.filters.unregister(group)
        return removed

    def query_topic_consume_by_who(self, topic: str) -> set[str]:
        return {g for g, info in self.consumer_table.items() if topic in info.subscription_table}


class ProducerManager:
    def __init__(self, now_ms: Callable[[], int] = _now_ms,
                 channel_expired_timeout: int = CHANNEL_EXPIRED_TIMEOUT) -> None:
        self.now_ms = now_ms
        self.channel_expired_timeout = channel_expired_timeout
        self.group_channel_table: dict[str, dict[Hashable, ClientChannelInfo]] = {}

    def register_producer(self, group: str, client: ClientChannelInfo) -> None:
        channels = self.group_channel_table.setdefault(group, {})
        old = channels.get(client.channel)
        if old is None:
            channels[client.channel] = old = client
        old.last_update_timestamp = self.now_ms()

    def unregister_producer(self, group: str, client: ClientChannelInfo) -> None:
        channels = self.group_channel_table.get(group)
        if channels is not None:
            channels.pop(client.channel, None)
            if not channels:
                del self.group_channel_table[group]

    def do_channel_close_event(self, channel: Hashable) -> None:
        for group, channels in list(self.group_channel_table.items()):
            channels.pop(channel, None)
            if not channels:
                del self.group_channel_table[group]

    def scan_not_active_channel(self, close: Callable[[Hashable], object]) -> int:
        now = self.now_ms()
        removed = 0
        for group, channels in list(self.group_channel_table.items()):
            for channel, client in list(channels.items()):
                if now - client.last_update_timestamp > self.channel_expired_timeout:
                    close(channel)
                    del channels[channel]
                    removed += 1
            if not channels:
                del self.group_channel_table[group]
        return removed

    def get_available_channel(self, group: str | None) -> Hashable | None:
        """
        Java ``getAvailableChannel``: one connected channel of *group*'s producers, taken in
        turn (a counter over the group's channels, up to three tries past dead ones), for
        CHECK_TRANSACTION_STATE; ``None`` when the group has none.
        """
        if group is None:
            return None
        channels = list(self.group_channel_table.get(group, ()))
        if not channels:
            return None
        self._counter = (getattr(self, "_counter", 0) + 1) & 0x7FFFFFFF
        index = self._counter % len(channels)
        last_active = None
        for _ in range(1 + GET_AVAILABLE_CHANNEL_RETRY_COUNT):
            channel = channels[index]
            if getattr(channel, "connected", True):
                if _writable(channel):
                    return channel
                last_active = channel
            index = (index + 1) % len(channels)
        return last_active

    def find_channel(self, client_id: str) -> Hashable | None:
        for channels in self.group_channel_table.values():
            for channel, client in channels.items():
                if client.client_id == client_id:
                    return channel
        return None


#: ``ProducerManager.GET_AVAILABLE_CHANNEL_RETRY_COUNT``
GET_AVAILABLE_CHANNEL_RETRY_COUNT = 3


def _writable(channel: Hashable) -> bool:
    """Netty's ``isWritable``: the connection's transport is not holding a backlog."""
    transport = getattr(channel, "transport", None)
    producer = getattr(transport, "producer", None)
    return not getattr(producer, "paused", False)
