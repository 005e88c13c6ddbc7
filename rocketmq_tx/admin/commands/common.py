# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""What the commands share: argument types, target brokers, how a message is shown."""

from __future__ import annotations

import argparse
import datetime
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from rocketmq_tx.admin.output import (
    Output,
    host_text,
    human_time,
    java_map_text,
)
from rocketmq_tx.admin.registry import CommandError, Session
from rocketmq_tx.common.message import Message, MessageExt, MessageQueue

#: Java ``MixAll.TOOLS_CONSUMER_GROUP``: the group mqadmin pulls as (the broker lets it read anything)
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
#: consumeMessage pulls at most this many messages when -c is not given (Java's default)
DEFAULT_CONSUME_COUNT = 128
#: ...and never more than this, so a command's output stays bounded
MAX_CONSUME_COUNT = 100_000

_T = TypeVar("_T")


def int_arg(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def text_arg(text: str) -> str:
    # mqadmin trims every option value.
    return text.strip()


def parse_timestamp(text: str) -> int:
    """
    mqadmin's time argument: ``now``, milliseconds since the epoch, or local
    ``yyyy-MM-dd#HH:mm:ss:SSS`` (``UtilAll.parseDate`` with ``YYYY_MM_DD_HH_MM_SS_SSS``).
    """
    text = text.strip()
    if text == "now":
        return int(time.time() * 1000)
    try:
        return int(text)
    except ValueError:
        pass
    try:
        t = datetime.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time (now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS): {text!r}") from None
    return int(t.timestamp() * 1000)


def one_target(addr: str | None, cluster: str | None) -> None:
    """The commands that take exactly one of -b and -c refuse neither and both."""
    if bool(addr) == bool(cluster):
        raise CommandError("exactly one of -b brokerAddr or -c clusterName is required")


def master_addrs(session: Session, addr: str | None, cluster: str | None) -> list[str]:
    """-b one broker, or -c every master of the cluster (mqadmin's CommandUtil.fetchMasterAddrByClusterName)."""
    if addr:
        return [addr]
    if cluster:
        return session.admin.fetch_master_addr_by_cluster_name(cluster)
    raise CommandError("one of -b brokerAddr or -c clusterName is required")


def each_broker(out: Output, addrs: Iterable[str], call: Callable[[str], _T], done: str | None = None,
                *done_args: Any) -> list[tuple[str, _T]]:
    """
    The fan-out of the commands that take -b or -c: *call* on each broker in turn, as
    mqadmin's loops do (the first failure ends the command, and its output with it).

    :param done: a line printed after each broker's success, a format whose last ``%s`` is
        the broker's address, after *done_args*.
    :returns: each broker's address and answer, in order.
    """
    answers: list[tuple[str, _T]] = []
    for addr in addrs:
        answers.append((addr, call(addr)))
        if done is not None:
            out.printf(done, *done_args, addr)
    return answers


def queue_text(mq: MessageQueue) -> str:
    # Java MessageQueue.toString
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def java_object_text(name: str, fields: dict[str, Any]) -> str:
    """An object the way Java's generated ``toString`` writes it: ``Name [a=1, b=true]``."""
    def text(value: Any) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else str(value)
    return f"{name} [" + ", ".join(f"{k}={text(v)}" for k, v in fields.items()) + "]"


def all_broker_addrs(session: Session, addr: str | None, cluster: str | None) -> list[str]:
    """-b one broker, or -c every master and slave of the cluster (CommandUtil.fetchMasterAndSlaveAddrByClusterName)."""
    one_target(addr, cluster)
    if addr:
        return [addr]
    assert cluster is not None
    addrs = session.admin.examine_broker_cluster_info().retrieve_all_addr_by_cluster(cluster)
    if not addrs:
        raise CommandError(f"the cluster [{cluster}] has no broker on the name server")
    return addrs


def _props(msg: Message) -> dict[str, str]:
    return dict(msg.properties)


def message_facts(msg: MessageExt) -> dict[str, Any]:
    """A message as ``--json`` shows it."""
    return {"offsetMsgId": msg.offset_msg_id, "msgId": msg.get_property("UNIQ_KEY") or msg.offset_msg_id,
            "topic": msg.topic, "tags": msg.tags, "keys": msg.get_property("KEYS"), "queueId": msg.queue_id,
            "queueOffset": msg.queue_offset, "commitLogOffset": msg.commit_log_offset,
            "reconsumeTimes": msg.reconsume_times, "bornTimestamp": msg.born_timestamp,
            "storeTimestamp": msg.store_timestamp, "bornHost": host_text(msg.born_host),
            "storeHost": host_text(msg.store_host), "sysFlag": msg.sys_flag, "properties": _props(msg),
            "body": msg.body.decode("utf-8", "replace")}


def _body_file(msg: MessageExt) -> str:
    # Java writes the body to /tmp/rocketmq/msgbodys/<msgId> and prints the path.
    folder = os.path.join(tempfile.gettempdir(), "rocketmq", "msgbodys")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, msg.get_property("UNIQ_KEY") or msg.offset_msg_id)
    with open(path, "wb") as f:
        f.write(msg.body)
    return path


def print_message(out: Output, msg: MessageExt) -> None:
    """QueryMsgByIdSubCommand.printMsg's block (without the consumer tracking it appends)."""
    out.printf("%-20s %s", "OffsetID:", msg.offset_msg_id)
    out.printf("%-20s %s", "Topic:", msg.topic)
    out.printf("%-20s %s", "Tags:", f"[{msg.tags}]")
    out.printf("%-20s %s", "Keys:", f"[{msg.get_property('KEYS')}]")
    out.printf("%-20s %d", "Queue ID:", msg.queue_id)
    out.printf("%-20s %d", "Queue Offset:", msg.queue_offset)
    out.printf("%-20s %d", "CommitLog Offset:", msg.commit_log_offset)
    out.printf("%-20s %d", "Reconsume Times:", msg.reconsume_times)
    out.printf("%-20s %s", "Born Timestamp:", human_time(msg.born_timestamp))
    out.printf("%-20s %s", "Store Timestamp:", human_time(msg.store_timestamp))
    out.printf("%-20s %s", "Born Host:", host_text(msg.born_host))
    out.printf("%-20s %s", "Store Host:", host_text(msg.store_host))
    out.printf("%-20s %d", "System Flag:", msg.sys_flag)
    out.printf("%-20s %s", "Properties:", java_map_text(_props(msg)))
    out.printf("%-20s %s", "Message Body Path:", _body_file(msg))
