# -*- test-case-name: rocketmq_tx.spark.test.test_writing -*-
"""
Rows to messages for ``df.write.format("rocketmq")``: each row's ``body`` (binary or
string) and optional ``topic``, ``keys`` (a string or an array of strings), ``tags`` and
``properties`` (a map of strings) become one message sent with the blocking producer.
Other columns are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rocketmq_tx.blocking import BlockingProducer
from rocketmq_tx.common.message import Message
from rocketmq_tx.spark.options import OptionError, WriteOptions

__all__ = ["check_columns", "row_to_message", "send_rows"]


def check_columns(options: WriteOptions, columns: Sequence[str]) -> None:
    """Fail on the driver when rows cannot become messages."""
    if "body" not in columns:
        raise OptionError(f"the DataFrame written to rocketmq needs a 'body' column; it has {list(columns)}")
    if "topic" not in columns and options.topic is None:
        raise OptionError("no topic: set the 'topic' option or give the DataFrame a 'topic' column")


def row_to_message(options: WriteOptions, row: Mapping[str, Any]) -> Message:
    """One row as a message (``row`` is a Spark ``Row`` or any mapping)."""
    topic = row.get("topic") or options.topic
    if not topic:
        raise ValueError("a row has no topic and the writer has no 'topic' option")
    body = row.get("body")
    if body is None:
        raise ValueError(f"a row for topic {topic} has a null body")
    if isinstance(body, str):
        body = body.encode("utf-8")
    msg = Message(topic, bytes(body))
    properties = row.get("properties")
    if properties:
        msg.properties.update({str(k): str(v) for k, v in dict(properties).items() if v is not None})
    keys = row.get("keys")
    if keys:
        msg.keys = keys if isinstance(keys, str) else [str(k) for k in keys]
    tags = row.get("tags")
    if tags:
        msg.tags = str(tags)
    return msg


def send_rows(options: WriteOptions, columns: Sequence[str], rows: Iterable[Any]) -> int:
    """Send every row (synchronously, so a failure fails the task); returns how many were sent."""
    wanted = [c for c in ("topic", "body", "keys", "tags", "properties") if c in columns]
    sent = 0
    with BlockingProducer(options.producer_group, options.name_server, send_timeout=options.send_timeout_ms / 1000,
                          tls=options.tls, credentials=options.credentials) as producer:
        for row in rows:
            values = {c: row[c] for c in wanted}
            producer.send(row_to_message(options, values))
            sent += 1
    return sent
