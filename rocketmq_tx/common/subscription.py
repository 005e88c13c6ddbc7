# -*- test-case-name: rocketmq_tx.common.test.test_subscription -*-
"""
``SubscriptionGroupConfig``: a consumer group's settings as the broker keeps them
(``subscriptionGroup.json``) and as UPDATE_AND_CREATE_SUBSCRIPTIONGROUP carries them.

Like :mod:`rocketmq_tx.common.route`, values convert to and from plain dicts in Java's
JSON shape; this module imports no JSON library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SubscriptionGroupConfig"]


def _bool(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        # fastjson accepts "true"/"false" strings for boolean fields; so do we.
        return value.strip().lower() == "true"
    return bool(value)


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


# Java field name -> (attribute, kind, default) of the fields 4.9.8 writes.
_FIELDS_4X: tuple[tuple[str, str, type, Any], ...] = (
    ("brokerId", "broker_id", int, 0),
    ("consumeBroadcastEnable", "consume_broadcast_enable", bool, True),
    ("consumeEnable", "consume_enable", bool, True),
    ("consumeFromMinEnable", "consume_from_min_enable", bool, True),
    ("notifyConsumerIdsChangedEnable", "notify_consumer_ids_changed_enable", bool, True),
    ("retryMaxTimes", "retry_max_times", int, 16),
    ("retryQueueNums", "retry_queue_nums", int, 1),
    ("whichBrokerWhenConsumeSlowly", "which_broker_when_consume_slowly", int, 1),
)

# Fields only 5.x writes: kept typed when present, left out when absent so a 4.x file
# stays byte-identical through a round trip.
_FIELDS_5X: tuple[tuple[str, str, type], ...] = (
    ("attributes", "attributes", dict),
    ("consumeMessageOrderly", "consume_message_orderly", bool),
    ("consumeTimeoutMinute", "consume_timeout_minute", int),
    ("groupRetryPolicy", "group_retry_policy", dict),
    ("groupSysFlag", "group_sys_flag", int),
    ("subscriptionDataSet", "subscription_data_set", list),
)

_KNOWN = frozenset({"groupName"} | {f[0] for f in _FIELDS_4X} | {f[0] for f in _FIELDS_5X})


@dataclass(slots=True)
class SubscriptionGroupConfig:
    """
    Java ``SubscriptionGroupConfig`` with Java's defaults.

    The 5.x-only fields are ``None`` when the JSON did not carry them.
    ``group_retry_policy`` and ``subscription_data_set`` stay in their JSON form (this
    port does not interpret them); ``extra`` keeps any other key read, so a config
    written by a newer Java broker survives a round trip.
    """

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    # 5.x
    consume_message_orderly: bool | None = None
    group_retry_policy: dict[str, Any] | None = None
    group_sys_flag: int | None = None
    consume_timeout_minute: int | None = None
    subscription_data_set: list[Any] | None = None
    attributes: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The dict fastjson would write: every set field, keys in alphabetical order."""
        out: dict[str, Any] = dict(self.extra)
        out["groupName"] = self.group_name
        for key, attr, _, _ in _FIELDS_4X:
            out[key] = getattr(self, attr)
        for key, attr, kind in _FIELDS_5X:
            value = getattr(self, attr)
            if value is not None:
                out[key] = kind(value)
        return {k: out[k] for k in sorted(out)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SubscriptionGroupConfig:
        """
        Read Java's JSON form; absent fields take Java's defaults.

        :raises KeyError: ``groupName`` is missing.
        :raises ValueError: a numeric field does not parse.
        """
        kwargs: dict[str, Any] = {"group_name": str(data["groupName"])}
        for key, attr, kind, default in _FIELDS_4X:
            value = data.get(key)
            kwargs[attr] = _bool(value, default) if kind is bool else _int(value, default)
        for key, attr, kind in _FIELDS_5X:
            value = data.get(key)
            if value is None:
                continue
            if kind is bool:
                kwargs[attr] = _bool(value, False)
            elif kind is int:
                kwargs[attr] = int(value)
            elif kind is dict:
                kwargs[attr] = dict(value)
            else:
                kwargs[attr] = list(value)
        if kwargs.get("attributes") is not None:
            kwargs["attributes"] = {str(k): str(v) for k, v in kwargs["attributes"].items()}
        kwargs["extra"] = {k: v for k, v in data.items() if k not in _KNOWN}
        return cls(**kwargs)
