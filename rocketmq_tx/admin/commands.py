# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""
The commands of ``rocketmq-tx-admin``: mqadmin's names, flags and printed layout (Java
4.9.8's ``tools`` module), over :class:`~rocketmq_tx.blocking.admin.BlockingAdmin`.

Why one module: each command is a short function (flags, one or two admin calls, the
printing), independent of the others, read by name like a table.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import tempfile
import time
from typing import Any

from rocketmq_tx.admin.output import (
    Output,
    front_at_least,
    host_text,
    human_time,
    java_bool,
    java_map_text,
    jformat,
    mq_version_desc,
)
from rocketmq_tx.admin.registry import CommandError, Session, command, opt
from rocketmq_tx.common.message import Message, MessageExt, MessageQueue
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.remoting import adminapi
from rocketmq_tx.remoting.adminbodies import message_queue_to_json
from rocketmq_tx.remoting.api import RETRY_GROUP_TOPIC_PREFIX, PullStatus
from rocketmq_tx.remoting.headers.acl import CreateAccessConfigRequestHeader

#: Java ``MixAll.TOOLS_CONSUMER_GROUP``: the group mqadmin pulls as (the broker lets it read anything)
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
#: ``TopicSysFlag``: unit topic and unit subscription bits
_FLAG_UNIT, _FLAG_UNIT_SUB = 0x1, 0x2
#: consumeMessage pulls at most this many messages when -c is not given (Java's default)
DEFAULT_CONSUME_COUNT = 128
#: ...and never more than this, so a command's output stays bounded
MAX_CONSUME_COUNT = 100_000


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _text(text: str) -> str:
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


def _broker_addrs(session: Session, addr: str | None, cluster: str | None) -> list[str]:
    """-b one broker, or -c every master of the cluster (mqadmin's CommandUtil.fetchMasterAddrByClusterName)."""
    if addr:
        return [addr]
    if cluster:
        return session.admin.fetch_master_addr_by_cluster_name(cluster)
    raise CommandError("one of -b brokerAddr or -c clusterName is required")


def _queue_text(mq: MessageQueue) -> str:
    # Java MessageQueue.toString
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def java_object_text(name: str, fields: dict[str, Any]) -> str:
    """An object the way Java's generated ``toString`` writes it: ``Name [a=1, b=true]``."""
    def text(value: Any) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else str(value)
    return f"{name} [" + ", ".join(f"{k}={text(v)}" for k, v in fields.items()) + "]"


def _all_broker_addrs(session: Session, addr: str | None, cluster: str | None) -> list[str]:
    """-b one broker, or -c every master and slave of the cluster (CommandUtil.fetchMasterAndSlaveAddrByClusterName)."""
    if bool(addr) == bool(cluster):
        raise CommandError("exactly one of -b brokerAddr or -c clusterName is required")
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


# --------------------------------------------------------------------------- cluster and brokers

def _cluster_more_stats(session: Session) -> Output:
    """clusterList -m: messages in and out yesterday and today, per broker, from its runtime figures."""
    info = session.admin.examine_broker_cluster_info()
    out = Output(data=[])
    out.printf("%-16s  %-32s %14s %14s %14s %14s", "#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
               "#InTotalToday", "#OutTotalToday")
    for cluster in sorted(info.cluster_addr_table):
        for name in sorted(info.cluster_addr_table[cluster]):
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for bid in sorted(data.broker_addrs):
                figures = [0, 0, 0, 0]
                with contextlib.suppress(Exception):  # as Java: a broker that does not answer shows zeros
                    t = {k: int(v) for k, v in session.admin.fetch_broker_runtime_stats(
                        data.broker_addrs[bid]).items() if k.startswith(("msgPutTotal", "msgGetTotal"))}
                    figures = [t["msgPutTotalTodayMorning"] - t["msgPutTotalYesterdayMorning"],
                               t["msgGetTotalTodayMorning"] - t["msgGetTotalYesterdayMorning"],
                               t["msgPutTotalTodayNow"] - t["msgPutTotalTodayMorning"],
                               t["msgGetTotalTodayNow"] - t["msgGetTotalTodayMorning"]]
                out.data.append({"cluster": cluster, "brokerName": name, "brokerId": bid, "inTotalYest": figures[0],
                                 "outTotalYest": figures[1], "inTotalToday": figures[2], "outTotalToday": figures[3]})
                out.printf("%-16s  %-32s %14d %14d %14d %14d", cluster, name, *figures)
    return out


@command("clusterList", "List all of clusters",
         opt("-m", "--moreStats", action="store_true", help="Print more stats"))
def cluster_list(session: Session, args: argparse.Namespace) -> Output:
    if args.moreStats:
        return _cluster_more_stats(session)
    info = session.admin.examine_broker_cluster_info()
    out = Output(data=[])
    out.printf("%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s", "#Cluster Name", "#Broker Name", "#BID",
               "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")
    for cluster in sorted(info.cluster_addr_table):
        for name in sorted(info.cluster_addr_table[cluster]):
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for bid in sorted(data.broker_addrs):
                addr = data.broker_addrs[bid]
                try:
                    stats = session.admin.fetch_broker_runtime_stats(addr)
                except Exception:  # a broker that does not answer still gets its row, as in Java
                    stats = {}
                put_tps = float((stats.get("putTps") or "0").split(" ")[0] or 0)
                get_tps = float((stats.get("getTransferedTps") or "0").split(" ")[0] or 0)
                earliest = stats.get("earliestMessageTimeStamp")
                hours = (time.time() * 1000 - int(earliest)) / 3_600_000 if earliest else 0.0
                space = float(stats.get("commitLogDiskRatio") or 0.0)
                row = {"cluster": cluster, "brokerName": name, "brokerId": bid, "addr": addr,
                       "version": stats.get("brokerVersionDesc", ""), "inTps": put_tps, "outTps": get_tps,
                       "pageCacheLockTimeMills": stats.get("pageCacheLockTimeMills", ""), "hours": hours,
                       "commitLogDiskRatio": space}
                out.data.append(row)
                out.printf("%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s", cluster, name, bid, addr,
                           row["version"],
                           jformat("%9.2f(%s,%sms)", put_tps, stats.get("sendThreadPoolQueueSize", ""),
                                   stats.get("sendThreadPoolQueueHeadWaitTimeMills", "")),
                           jformat("%9.2f(%s,%sms)", get_tps, stats.get("pullThreadPoolQueueSize", ""),
                                   stats.get("pullThreadPoolQueueHeadWaitTimeMills", "")),
                           row["pageCacheLockTimeMills"], jformat("%2.2f", hours), jformat("%.4f", space))
    return out


@command("brokerStatus", "Fetch broker runtime status data",
         opt("-b", "--brokerAddr", type=_text, help="Broker address"),
         opt("-c", "--clusterName", type=_text, help="which cluster"))
def broker_status(session: Session, args: argparse.Namespace) -> Output:
    addrs = _broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data={})
    for addr in addrs:
        table = session.admin.fetch_broker_runtime_stats(addr)
        out.data[addr] = dict(sorted(table.items()))
        for key, value in sorted(table.items()):
            if args.clusterName and not args.brokerAddr:
                out.printf("%-24s %-32s: %s", addr, key, value)
            else:
                out.printf("%-32s: %s", key, value)
    return out


@command("getBrokerConfig", "Get broker config by cluster or special broker!",
         opt("-b", "--brokerAddr", type=_text, help="get which broker"),
         opt("-c", "--clusterName", type=_text, help="get which cluster"))
def get_broker_config(session: Session, args: argparse.Namespace) -> Output:
    out = Output(data={})
    for addr in _broker_addrs(session, args.brokerAddr, args.clusterName):
        config = session.admin.get_broker_config(addr)
        out.data[addr] = config
        out.printf("============%s============", addr)
        for key, value in sorted(config.items()):
            out.printf("%-50s=  %s", key, value)
        out.printf("")
    return out


@command("updateBrokerConfig", "Update broker's config",
         opt("-b", "--brokerAddr", type=_text, help="update which broker"),
         opt("-c", "--clusterName", type=_text, help="update which cluster"),
         opt("-k", "--key", type=_text, required=True, help="config key"),
         opt("-v", "--value", type=_text, required=True, help="config value"))
def update_broker_config(session: Session, args: argparse.Namespace) -> Output:
    out = Output(data=[])
    for addr in _broker_addrs(session, args.brokerAddr, args.clusterName):
        session.admin.update_broker_config(addr, {args.key: args.value})
        out.data.append(addr)
        out.printf("update broker config success, %s", addr)
    return out


# --------------------------------------------------------------------------- topics

@command("topicList", "Fetch all topic list from name server",
         opt("-c", "--clusterModel", action="store_true", help="clusterModel"))
def topic_list(session: Session, args: argparse.Namespace) -> Output:
    topics = sorted(session.admin.fetch_all_topic_list().topic_list)
    if not args.clusterModel:
        return Output(data=topics, lines=list(topics))
    # -c: each topic's cluster (by its route's brokers)
    info = session.admin.examine_broker_cluster_info()
    cluster_of = {name: c for c, names in info.cluster_addr_table.items() for name in names}
    out = Output(data=[])
    out.printf("%-20s  %-64s", "#Cluster Name", "#Topic")
    for topic in topics:
        try:
            route = session.admin.examine_topic_route_info(topic)
        except Exception:  # a topic gone between the list and its route
            continue
        clusters = sorted({cluster_of.get(b.broker_name, "") for b in route.broker_datas})
        cluster = clusters[0] if clusters else ""
        out.data.append({"cluster": cluster, "topic": topic})
        out.printf("%-20s  %-64s", front_at_least(cluster, 20), front_at_least(topic, 64))
    return out


@command("topicRoute", "Examine topic route info",
         opt("-t", "--topic", type=_text, required=True, help="topic name"),
         opt("-l", "--list", action="store_true", help="Use list format to print data"))
def topic_route(session: Session, args: argparse.Namespace) -> Output:
    route = session.admin.examine_topic_route_info(args.topic)
    data = route.to_json()
    out = Output(data=data)
    if not args.list:
        out.lines = [line for line in _pretty_json(data).splitlines()]
        return out
    out.printf("%-45s %-32s %-50s %-10s %-11s %-5s", "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue",
               "#WriteQueue", "#Perm")
    queues = {q.broker_name: q for q in route.queue_datas}
    for b in route.broker_datas:
        q = queues.get(b.broker_name)
        if q is None:
            continue
        addrs = "{" + ", ".join(f"{i}={a}" for i, a in sorted(b.broker_addrs.items())) + "}"
        out.printf("%-45s %-32s %-50s %-10s %-11s %-5s", b.cluster, b.broker_name, addrs, q.read_queue_nums,
                   q.write_queue_nums, q.perm)
    return out


def _pretty_json(data: Any) -> str:
    import json

    return json.dumps(data, indent=4, ensure_ascii=False)


@command("topicStatus", "Examine topic Status info",
         opt("-t", "--topic", type=_text, required=True, help="topic name"))
def topic_status(session: Session, args: argparse.Namespace) -> Output:
    stats = session.admin.examine_topic_stats(args.topic)
    out = Output(data=[])
    out.printf("%-32s  %-4s  %-20s  %-20s    %s", "#Broker Name", "#QID", "#Min Offset", "#Max Offset",
               "#Last Updated")
    for mq, o in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)):
        last = human_time(o.last_update_timestamp) if o.last_update_timestamp > 0 else ""
        out.data.append({"brokerName": mq.broker_name, "queueId": mq.queue_id, "minOffset": o.min_offset,
                         "maxOffset": o.max_offset, "lastUpdateTimestamp": o.last_update_timestamp})
        out.printf("%-32s  %-4d  %-20d  %-20d    %s", front_at_least(mq.broker_name, 32), mq.queue_id, o.min_offset,
                   o.max_offset, last)
    return out


@command("updateTopic", "Update or create topic",
         opt("-b", "--brokerAddr", type=_text, help="create topic to which broker"),
         opt("-c", "--clusterName", type=_text, help="create topic to which cluster"),
         opt("-t", "--topic", type=_text, required=True, help="topic name"),
         opt("-r", "--readQueueNums", type=_int, default=8, help="set read queue nums"),
         opt("-w", "--writeQueueNums", type=_int, default=8, help="set write queue nums"),
         opt("-p", "--perm", type=_int, default=6, help="set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"),
         opt("-o", "--order", type=java_bool, default=False, help="set topic's order(true|false)"),
         opt("-u", "--unit", type=java_bool, default=False, help="is unit topic (true|false)"),
         opt("-s", "--hasUnitSub", type=java_bool, default=False, help="has unit sub (true|false)"))
def update_topic(session: Session, args: argparse.Namespace) -> Output:
    if bool(args.brokerAddr) == bool(args.clusterName):
        raise CommandError("exactly one of -b brokerAddr or -c clusterName is required")
    flag = (_FLAG_UNIT if args.unit else 0) | (_FLAG_UNIT_SUB if args.hasUnitSub else 0)
    config = TopicConfig(args.topic, args.readQueueNums, args.writeQueueNums, args.perm, topic_sys_flag=flag,
                         order=args.order)
    out = Output()
    if args.brokerAddr:
        session.admin.create_and_update_topic_config(args.brokerAddr, config)
        addrs = [args.brokerAddr]
        if args.order:
            info = session.admin.examine_broker_cluster_info()
            name = next((n for n, b in info.broker_addr_table.items() if args.brokerAddr in b.broker_addrs.values()),
                        None)
            if name is None:
                raise CommandError(f"the broker {args.brokerAddr} is not registered with the name server")
            order_conf = f"{name}:{args.writeQueueNums}"
            session.admin.create_and_update_kv_config(adminapi.ORDER_TOPIC_CONFIG, args.topic, order_conf)
            out.printf("set broker orderConf. isOrder=%s, orderConf=[%s]", "true", order_conf)
    else:
        addrs = session.admin.create_topic_in_cluster(args.clusterName, config)
    for addr in addrs:
        out.printf("create topic to %s success.", addr)
    out.printf("%s", java_object_text("TopicConfig", config.to_json()))
    out.data = {"brokers": addrs, "topicConfig": config.to_json()}
    return out


@command("deleteTopic", "Delete topic from broker and NameServer.",
         opt("-t", "--topic", type=_text, required=True, help="topic name"),
         opt("-c", "--clusterName", type=_text, required=True, help="delete topic from which cluster"))
def delete_topic(session: Session, args: argparse.Namespace) -> Output:
    session.admin.delete_topic(args.topic, args.clusterName)
    out = Output(data={"topic": args.topic, "cluster": args.clusterName})
    out.printf("delete topic [%s] from cluster [%s] success.", args.topic, args.clusterName)
    out.printf("delete topic [%s] from NameServer success.", args.topic)
    return out


# --------------------------------------------------------------------------- subscription groups

@command("updateSubGroup", "Update or create subscription group",
         opt("-b", "--brokerAddr", type=_text, help="create subscription group to which broker"),
         opt("-c", "--clusterName", type=_text, help="create subscription group to which cluster"),
         opt("-g", "--groupName", type=_text, required=True, help="consumer group name"),
         opt("-s", "--consumeEnable", type=java_bool, help="consume enable"),
         opt("-m", "--consumeFromMinEnable", type=java_bool, help="from min offset"),
         opt("-d", "--consumeBroadcastEnable", type=java_bool, help="broadcast"),
         opt("-q", "--retryQueueNums", type=_int, help="retry queue nums"),
         opt("-r", "--retryMaxTimes", type=_int, help="retry max times"),
         opt("-i", "--brokerId", type=_int, help="consumer from which broker id"),
         opt("-w", "--whichBrokerWhenConsumeSlowly", type=_int, help="which broker id when consume slowly"),
         opt("-a", "--notifyConsumerIdsChanged", type=java_bool, help="notify consumerId changed"))
def update_sub_group(session: Session, args: argparse.Namespace) -> Output:
    # mqadmin starts from Java's defaults but turns broadcast and from-min off.
    config = SubscriptionGroupConfig(args.groupName, consume_broadcast_enable=False, consume_from_min_enable=False)
    for flag, attr in (("consumeEnable", "consume_enable"), ("consumeFromMinEnable", "consume_from_min_enable"),
                       ("consumeBroadcastEnable", "consume_broadcast_enable"), ("retryQueueNums", "retry_queue_nums"),
                       ("retryMaxTimes", "retry_max_times"), ("brokerId", "broker_id"),
                       ("whichBrokerWhenConsumeSlowly", "which_broker_when_consume_slowly"),
                       ("notifyConsumerIdsChanged", "notify_consumer_ids_changed_enable")):
        value = getattr(args, flag)
        if value is not None:
            setattr(config, attr, value)
    out = Output()
    addrs = _broker_addrs(session, args.brokerAddr, args.clusterName)
    for addr in addrs:
        session.admin.create_and_update_subscription_group_config(addr, config)
        out.printf("create subscription group to %s success.", addr)
    out.printf("%s", java_object_text("SubscriptionGroupConfig", config.to_json()))
    out.data = {"brokers": addrs, "subscriptionGroupConfig": config.to_json()}
    return out


@command("deleteSubGroup", "Delete subscription group from broker.",
         opt("-b", "--brokerAddr", type=_text, help="delete subscription group from which broker"),
         opt("-c", "--clusterName", type=_text, help="delete subscription group from which cluster"),
         opt("-g", "--groupName", type=_text, required=True, help="subscription group name"),
         opt("-r", "--removeOffset", type=java_bool, default=False, help="remove offset"))
def delete_sub_group(session: Session, args: argparse.Namespace) -> Output:
    out = Output()
    addrs = _broker_addrs(session, args.brokerAddr, args.clusterName)
    for addr in addrs:
        session.admin.delete_subscription_group(addr, args.groupName, args.removeOffset)
        out.printf("delete subscription group [%s] from broker [%s] success.", args.groupName, addr)
    out.data = {"group": args.groupName, "brokers": addrs}
    return out


# --------------------------------------------------------------------------- consumers and producers

@command("consumerProgress", "Query consumers's progress, speed",
         opt("-g", "--groupName", type=_text, help="consumer group name (without it: every group, one line each)"),
         opt("-t", "--topicName", type=_text, help="topic name (5.x)"))
def consumer_progress(session: Session, args: argparse.Namespace) -> Output:
    if not args.groupName:
        return _every_group_progress(session)
    stats = session.admin.examine_consume_stats(args.groupName, args.topicName)
    out = Output(data={"queues": [], "consumeTps": stats.consume_tps, "diffTotal": stats.compute_total_diff()})
    out.printf("%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s", "#Topic", "#Broker Name", "#QID", "#Broker Offset",
               "#Consumer Offset", "#Diff", "#LastTime")
    for mq, w in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)):
        last = human_time(w.last_timestamp) if w.last_timestamp > 0 else "N/A"
        out.data["queues"].append({**message_queue_to_json(mq), **w.to_json()})
        out.printf("%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s", front_at_least(mq.topic, 64),
                   front_at_least(mq.broker_name, 32), mq.queue_id, w.broker_offset, w.consumer_offset,
                   w.broker_offset - w.consumer_offset, last)
    out.printf("")
    out.printf("Consume TPS: %.2f", stats.consume_tps)
    out.printf("Diff Total: %d", stats.compute_total_diff())
    return out


def _every_group_progress(session: Session) -> Output:
    """consumerProgress without -g: each group that has a retry topic, its clients and its total lag."""
    out = Output(data=[])
    out.printf("%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s", "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS",
               "#Diff Total")
    topics = session.admin.fetch_all_topic_list().topic_list
    for group in sorted(t[len(RETRY_GROUP_TOPIC_PREFIX):] for t in topics if t.startswith(RETRY_GROUP_TOPIC_PREFIX)):
        # as Java: a group whose stats or connection cannot be read still gets its line
        tps, diff = 0, 0
        with contextlib.suppress(Exception):
            stats = session.admin.examine_consume_stats(group)
            tps, diff = int(stats.consume_tps), stats.compute_total_diff()
        count, version, kind, model = 0, "OFFLINE", "", ""
        with contextlib.suppress(Exception):
            cc = session.admin.examine_consumer_connection_info(group)
            count = len(cc.connection_set)
            if count:
                version = mq_version_desc(min(c.version for c in cc.connection_set))
                kind = "PULL" if cc.consume_type == "CONSUME_ACTIVELY" else "PUSH"
                model = (cc.message_model or "") if kind == "PUSH" else ""
        out.data.append({"group": group, "count": count, "version": version, "type": kind, "model": model,
                         "tps": tps, "diffTotal": diff})
        out.printf("%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d", front_at_least(group, 64), count, version, kind, model,
                   tps, diff)
    return out


@command("setConsumeMode", "Set consume message mode. pull/pop etc.",
         opt("-b", "--brokerAddr", type=_text, help="create subscription group to which broker"),
         opt("-c", "--clusterName", type=_text, help="create subscription group to which cluster"),
         opt("-t", "--topicName", type=_text, required=True, help="topic name"),
         opt("-g", "--groupName", type=_text, required=True, help="consumer group name"),
         opt("-m", "--mode", type=_text, required=True, choices=("PULL", "POP"), help="consume mode. PULL/POP"),
         opt("-q", "--popShareQueueNum", type=_int, default=0, help="num of queue which share in pop mode"))
def set_consume_mode(session: Session, args: argparse.Namespace) -> Output:
    out = Output()
    addrs = _broker_addrs(session, args.brokerAddr, args.clusterName)
    for addr in addrs:
        session.admin.set_message_request_mode(addr, args.topicName, args.groupName, args.mode,
                                               args.popShareQueueNum)
        out.printf("set consume mode to %s success.", addr)
    out.printf("topic[%s] group[%s] consume mode[%s] popShareQueueNum[%d]", args.topicName, args.groupName,
               args.mode, args.popShareQueueNum)
    out.data = {"brokers": addrs, "topic": args.topicName, "group": args.groupName, "mode": args.mode,
                "popShareQueueNum": args.popShareQueueNum}
    return out


@command("consumerConnection", "Query consumer's socket connection, client version and subscription",
         opt("-g", "--consumerGroup", type=_text, required=True, help="consumer group name"),
         opt("-b", "--brokerAddr", type=_text, help="broker address"))
def consumer_connection(session: Session, args: argparse.Namespace) -> Output:
    cc = session.admin.examine_consumer_connection_info(args.consumerGroup, args.brokerAddr)
    out = Output(data=cc.to_json())
    out.printf("%-36s %-22s %-10s %s", "#ClientId", "#ClientAddr", "#Language", "#Version")
    for conn in cc.connection_set:
        out.printf("%-36s %-22s %-10s %s", conn.client_id, conn.client_addr, conn.language, conn.version)
    out.printf("")
    out.printf("Below is subscription:")
    out.printf("%-20s %s", "#Topic", "#SubExpression")
    for sd in cc.subscription_table.values():
        out.printf("%-20s %s", sd.topic, sd.sub_string)
    out.printf("")
    out.printf("ConsumeType: %s", cc.consume_type)
    out.printf("MessageModel: %s", cc.message_model)
    out.printf("ConsumeFromWhere: %s", cc.consume_from_where)
    return out


@command("producerConnection", "Query producer's socket connection and client version",
         opt("-g", "--producerGroup", type=_text, required=True, help="producer group name"),
         opt("-t", "--topic", type=_text, required=True, help="topic name"))
def producer_connection(session: Session, args: argparse.Namespace) -> Output:
    pc = session.admin.examine_producer_connection_info(args.producerGroup, args.topic)
    out = Output(data=pc.to_json())
    for i, conn in enumerate(pc.connection_set, 1):
        out.printf("%04d  %-32s %-22s %-8s %s", i, conn.client_id, conn.client_addr, conn.language, conn.version)
    return out


# --------------------------------------------------------------------------- messages

@command("queryMsgById", "Query Message by Id",
         opt("-i", "--msgId", type=_text, required=True, help="Message Id (offsetMsgId; several: comma-separated)"))
def query_msg_by_id(session: Session, args: argparse.Namespace) -> Output:
    out = Output(data=[])
    for msg_id in (m.strip() for m in args.msgId.split(",") if m.strip()):
        msg = session.admin.view_message(msg_id)
        out.data.append(message_facts(msg))
        print_message(out, msg)
    return out


@command("queryMsgByUniqueKey", "Query Message by Unique key",
         opt("-i", "--msgId", type=_text, required=True, help="Message Id"),
         opt("-t", "--topic", type=_text, required=True, help="The topic of msg"))
def query_msg_by_unique_key(session: Session, args: argparse.Namespace) -> Output:
    msg = session.admin.query_message_by_uniq_key(args.topic, args.msgId)
    out = Output(data=message_facts(msg))
    print_message(out, msg)
    return out


@command("queryMsgByKey", "Query Message by Key",
         opt("-t", "--topic", type=_text, required=True, help="topic name"),
         opt("-k", "--msgKey", type=_text, required=True, help="Message Key"))
def query_msg_by_key(session: Session, args: argparse.Namespace) -> Output:
    result = session.admin.query_message(args.topic, args.msgKey, 64)
    out = Output(data=[])
    out.printf("%-50s %4s %40s", "#Message ID", "#QID", "#Offset")
    for msg in result.message_list:
        msg_id = msg.get_property("UNIQ_KEY") or msg.offset_msg_id
        out.data.append({"msgId": msg_id, "queueId": msg.queue_id, "queueOffset": msg.queue_offset})
        out.printf("%-50s %4d %40d", msg_id, msg.queue_id, msg.queue_offset)
    return out


@command("queryMsgByOffset", "Query Message by offset",
         opt("-t", "--topic", type=_text, required=True, help="topic name"),
         opt("-b", "--brokerName", type=_text, required=True, help="Broker Name"),
         opt("-i", "--queueId", type=_int, required=True, help="Queue Id"),
         opt("-o", "--offset", type=_int, required=True, help="Queue Offset"))
def query_msg_by_offset(session: Session, args: argparse.Namespace) -> Output:
    mq = MessageQueue(args.topic, args.brokerName, args.queueId)
    result = session.pull_client(TOOLS_CONSUMER_GROUP).pull(mq, args.offset, 1)
    out = Output(data=None)
    # Java prints nothing when the offset holds no message
    if result.pull_status is PullStatus.FOUND and result.msg_found_list:
        out.data = message_facts(result.msg_found_list[0])
        print_message(out, result.msg_found_list[0])
    return out


@command("printMsg", "Print Message Detail",
         opt("-t", "--topic", type=_text, required=True, help="topic name"),
         opt("-c", "--charsetName", type=_text, default="UTF-8", help="CharsetName(eg: UTF-8,GBK)"),
         opt("-s", "--subExpression", type=_text, default="*", help="Subscribe Expression(eg: TagA || TagB)"),
         opt("-b", "--beginTimestamp", type=parse_timestamp,
             help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-e", "--endTimestamp", type=parse_timestamp,
             help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-d", "--printBody", type=java_bool, default=True, help="print body"))
def print_msg(session: Session, args: argparse.Namespace) -> Output:
    try:
        "".encode(args.charsetName)
    except LookupError:
        raise CommandError(f"unknown charset {args.charsetName}") from None
    client = session.pull_client(TOOLS_CONSUMER_GROUP)
    out = Output(data=[])
    progress = session.progress("printMsg")
    queues = sorted(client.fetch_queues(args.topic), key=lambda q: (q.broker_name, q.queue_id))
    for i, mq in enumerate(queues, 1):
        low = client.min_offset(mq) if args.beginTimestamp is None else client.search_offset(mq, args.beginTimestamp)
        high = client.max_offset(mq) if args.endTimestamp is None else client.search_offset(mq, args.endTimestamp)
        out.printf("minOffset=%s, maxOffset=%s, %s", low, high, _queue_text(mq))
        offset = low
        while offset < high:
            if len(out.data) >= MAX_CONSUME_COUNT:
                raise CommandError(f"more than {MAX_CONSUME_COUNT} messages: narrow the range with -b/-e")
            progress.update(f"queue {i}/{len(queues)}, {len(out.data)} messages")
            result = client.pull(mq, offset, 32, args.subExpression)
            stuck = result.next_begin_offset <= offset  # a broker that does not move on ends the queue
            offset = result.next_begin_offset
            if result.pull_status is PullStatus.FOUND:
                for msg in result.msg_found_list:
                    facts = message_facts(msg)
                    body = msg.body.decode(args.charsetName, "replace") if args.printBody else "NOT PRINT BODY"
                    facts["body"] = body
                    out.data.append(facts)
                    out.printf("MSGID: %s %s BODY: %s", facts["msgId"], _queue_text(mq), body)
            elif result.pull_status is PullStatus.NO_MATCHED_MSG:
                out.printf("%s no matched msg. status=%s, offset=%s", _queue_text(mq), result.pull_status.name, offset)
            if stuck or result.pull_status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
                out.printf("%s print msg finished. status=%s, offset=%s", _queue_text(mq), result.pull_status.name,
                           offset)
                break
        out.printf("--------------------------------------------------------")
    progress.finish()
    return out


@command("sendMessage", "Send a message",
         opt("-t", "--topic", type=_text, required=True, help="Topic name"),
         opt("-p", "--body", type=_text, required=True, help="UTF-8 string format of the message body"),
         opt("-k", "--key", type=_text, help="Message keys"),
         opt("-c", "--tags", type=_text, help="Message tags"),
         opt("-b", "--broker", type=_text, help="Send message to target broker"),
         opt("-i", "--qid", type=_int, help="Send message to target queue"))
def send_message(session: Session, args: argparse.Namespace) -> Output:
    if args.qid is not None and not args.broker:
        raise CommandError("Broker name must be set if the queue is chosen!")
    msg = Message(args.topic, args.body.encode("utf-8"))
    if args.tags:
        msg.put_property("TAGS", args.tags)
    if args.key:
        msg.put_property("KEYS", args.key)
    # Java names the tool's producer group after the current time.
    producer = session.producer(str(int(time.time() * 1000)))
    queue = MessageQueue(args.topic, args.broker, args.qid) if args.qid is not None and args.qid > -1 else None
    result = producer.send(msg, queue=queue)
    out = Output(data={"brokerName": result.message_queue.broker_name, "queueId": result.message_queue.queue_id,
                       "sendStatus": result.send_status.name, "msgId": result.msg_id,
                       "offsetMsgId": result.offset_msg_id, "queueOffset": result.queue_offset})
    out.printf("%-32s  %-4s  %-20s    %s", "#Broker Name", "#QID", "#Send Result", "#MsgId")
    out.printf("%-32s  %-4s  %-20s    %s", result.message_queue.broker_name, result.message_queue.queue_id,
               result.send_status.name, result.msg_id)
    return out


@command("consumeMessage", "Consume message",
         opt("-t", "--topic", type=_text, required=True, help="Topic name"),
         opt("-b", "--brokerName", type=_text, help="Broker name"),
         opt("-i", "--queueId", type=_int, help="Queue Id"),
         opt("-o", "--offset", type=_int, help="Queue offset"),
         opt("-g", "--consumerGroup", type=_text, default=TOOLS_CONSUMER_GROUP, help="Consumer group name"),
         opt("-s", "--beginTimestamp", type=parse_timestamp,
             help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-e", "--endTimestamp", type=parse_timestamp,
             help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-c", "--MessageNumber", type=_int, default=DEFAULT_CONSUME_COUNT,
             help="Number of message to be consumed"))
def consume_message(session: Session, args: argparse.Namespace) -> Output:
    count = args.MessageNumber
    if not 0 < count <= MAX_CONSUME_COUNT:
        raise CommandError(f"-c MessageNumber must be within 1..{MAX_CONSUME_COUNT}")
    client = session.pull_client(args.consumerGroup)
    queues = client.fetch_queues(args.topic)
    if args.brokerName:
        queues = [q for q in queues if q.broker_name == args.brokerName]
    if args.queueId is not None:
        queues = [q for q in queues if q.queue_id == args.queueId]
    if not queues:
        raise CommandError(f"no queue of topic {args.topic} matches the -b/-i given")
    out = Output(data=[])
    end_ms = args.endTimestamp
    progress = session.progress("consumeMessage")
    for mq in sorted(queues, key=lambda q: (q.broker_name, q.queue_id)):
        if args.offset is not None:
            offset = args.offset
        elif args.beginTimestamp is not None:
            offset = client.search_offset(mq, args.beginTimestamp)
        else:
            offset = client.min_offset(mq)
        max_offset = client.max_offset(mq)
        while offset < max_offset and len(out.data) < count:
            progress.update(f"{len(out.data)}/{count} messages")
            result = client.pull(mq, offset, min(32, count - len(out.data)))
            if result.pull_status is not PullStatus.FOUND or result.next_begin_offset <= offset:
                break
            offset = result.next_begin_offset
            for msg in result.msg_found_list:
                if end_ms is not None and msg.store_timestamp > end_ms:
                    offset = max_offset  # this queue is past the end time
                    break
                out.data.append(message_facts(msg))
                out.printf("MSGID: %s %s BODY: %s", out.data[-1]["msgId"], _queue_text(mq), out.data[-1]["body"])
        if len(out.data) >= count:
            break
    progress.finish()
    out.printf("Consumed %d message(s)", len(out.data))
    return out


@command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).",
         opt("-g", "--group", type=_text, required=True, help="set the consumer group"),
         opt("-t", "--topic", type=_text, required=True, help="set the topic"),
         opt("-s", "--timestamp", type=parse_timestamp, required=True,
             help="set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"))
def reset_offset_by_time(session: Session, args: argparse.Namespace) -> Output:
    offsets = session.admin.reset_offset_new(args.topic, args.group, args.timestamp)
    out = Output(data=[])
    out.printf("rollback consumer offset by specified group[%s], topic[%s], force[%s], timestamp(long)[%s]",
               args.group, args.topic, "true", args.timestamp)
    out.printf("%-40s  %-40s  %-40s", "#brokerName", "#queueId", "#offset")
    for mq, offset in sorted(offsets.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)):
        out.data.append({"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": offset})
        out.printf("%-40s  %-40d  %-40d", front_at_least(mq.broker_name, 32), mq.queue_id, offset)
    return out


# --------------------------------------------------------------------------- name servers

@command("getNamesrvConfig", "Get configs of name server.")
def get_namesrv_config(session: Session, args: argparse.Namespace) -> Output:
    configs = session.admin.get_name_server_config(session.namesrvs)
    out = Output(data=configs)
    for addr, config in configs.items():
        out.printf("============%s============", addr)
        for key, value in sorted(config.items()):
            out.printf("%-50s=  %s", key, value)
    return out


@command("updateNamesrvConfig", "Update configs of name server.",
         opt("-k", "--key", type=_text, required=True, help="config key"),
         opt("-v", "--value", type=_text, required=True, help="config value"))
def update_namesrv_config(session: Session, args: argparse.Namespace) -> Output:
    session.admin.update_name_server_config({args.key: args.value}, session.namesrvs)
    out = Output(data={"namesrvs": session.namesrvs, "key": args.key, "value": args.value})
    out.printf("update name server config success!%s", session.namesrvs)
    out.printf("%s : %s", args.key, args.value)
    return out


@command("updateKvConfig", "Create or update KV config.",
         opt("-s", "--namespace", type=_text, required=True, help="set the namespace"),
         opt("-k", "--key", type=_text, required=True, help="set the key name"),
         opt("-v", "--value", type=_text, required=True, help="set the key value"))
def update_kv_config(session: Session, args: argparse.Namespace) -> Output:
    session.admin.create_and_update_kv_config(args.namespace, args.key, args.value)
    out = Output(data={"namespace": args.namespace, "key": args.key, "value": args.value})
    out.printf("create or update kv config to namespace success.")
    return out


@command("deleteKvConfig", "Delete KV config.",
         opt("-s", "--namespace", type=_text, required=True, help="set the namespace"),
         opt("-k", "--key", type=_text, required=True, help="set the key name"))
def delete_kv_config(session: Session, args: argparse.Namespace) -> Output:
    session.admin.delete_kv_config(args.namespace, args.key)
    out = Output(data={"namespace": args.namespace, "key": args.key})
    out.printf("delete kv config from namespace success.")
    return out


def _write_perm(session: Session, broker_name: str, wipe: bool) -> Output:
    out = Output(data={})
    word = "wipe" if wipe else "add"
    failed = []
    for addr in session.namesrvs:
        try:
            if wipe:
                count = session.admin.wipe_write_perm_of_broker(addr, broker_name)
            else:
                count = session.admin.add_write_perm_of_broker(addr, broker_name)
        except Exception:  # Java prints "Failed" for that name server and goes on
            out.data[addr] = None
            failed.append(addr)
            out.printf("%s write perm of broker[%s] in name server[%s] Failed", word, broker_name, addr)
            continue
        out.data[addr] = count
        out.printf("%s write perm of broker[%s] in name server[%s] OK, %d", word, broker_name, addr, count)
    if failed and len(failed) == len(session.namesrvs):
        raise CommandError(f"{word} write perm of broker[{broker_name}] failed in every name server")
    return out


@command("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param",
         opt("-b", "--brokerName", type=_text, required=True, help="broker name"))
def wipe_write_perm(session: Session, args: argparse.Namespace) -> Output:
    return _write_perm(session, args.brokerName, wipe=True)


@command("addWritePerm", "Add write perm of broker in all name server you defined in the -n param",
         opt("-b", "--brokerName", type=_text, required=True, help="broker name"))
def add_write_perm(session: Session, args: argparse.Namespace) -> Output:
    return _write_perm(session, args.brokerName, wipe=False)


# --------------------------------------------------------------------------- ACL 1.0 accounts

@command("updateAclConfig", "Update acl config yaml file in broker",
         opt("-b", "--brokerAddr", type=_text, help="update acl config file to which broker"),
         opt("-c", "--clusterName", type=_text, help="update acl config file to which cluster"),
         opt("-a", "--accessKey", type=_text, required=True, help="set accessKey in acl config file"),
         opt("-s", "--secretKey", type=_text, required=True, help="set secretKey in acl config file"),
         opt("-w", "--whiteRemoteAddress", type=_text, help="set white ip Address for account in acl config file"),
         opt("-i", "--defaultTopicPerm", type=_text, help="set default topicPerm in acl config file"),
         opt("-u", "--defaultGroupPerm", type=_text, help="set default GroupPerm in acl config file"),
         opt("-t", "--topicPerms", type=_text, help="set topicPerms list,eg: topicA=DENY,topicD=SUB"),
         opt("-g", "--groupPerms", type=_text, help="set groupPerms list,eg: groupD=DENY,groupD=SUB"),
         opt("-m", "--admin", type=java_bool, default=False, help="set admin flag in acl config file"))
def update_acl_config(session: Session, args: argparse.Namespace) -> Output:
    # the header Java's createAndUpdatePlainAccessConfig sends (perm lists joined by commas, as given)
    header = CreateAccessConfigRequestHeader(
        access_key=args.accessKey, secret_key=args.secretKey, white_remote_address=args.whiteRemoteAddress,
        admin=args.admin, default_topic_perm=args.defaultTopicPerm, default_group_perm=args.defaultGroupPerm,
        topic_perms=args.topicPerms, group_perms=args.groupPerms)
    addrs = _all_broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output()
    for addr in addrs:
        session.admin.create_and_update_plain_access_config(addr, header)
        out.printf("create or update plain access config to %s success.", addr)
    account = {"accessKey": args.accessKey, "whiteRemoteAddress": args.whiteRemoteAddress, "admin": args.admin,
               "defaultTopicPerm": args.defaultTopicPerm, "defaultGroupPerm": args.defaultGroupPerm,
               "topicPerms": args.topicPerms.split(",") if args.topicPerms else None,
               "groupPerms": args.groupPerms.split(",") if args.groupPerms else None}
    out.printf("%s", java_object_text("PlainAccessConfig", account))  # the secret is never printed
    out.data = {"brokers": addrs, "account": account}
    return out


@command("deleteAclConfig", "Delete Acl Config Account in broker",
         opt("-b", "--brokerAddr", type=_text, help="delete acl config account from which broker"),
         opt("-c", "--clusterName", type=_text, help="delete acl config account from which cluster"),
         opt("-a", "--accessKey", type=_text, required=True,
             help="set accessKey in acl config file for deleting which account"))
def delete_acl_config(session: Session, args: argparse.Namespace) -> Output:
    addrs = _all_broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data={"brokers": addrs, "accessKey": args.accessKey})
    for addr in addrs:
        session.admin.delete_plain_access_config(addr, args.accessKey)
        out.printf("delete plain access config account from %s success.", addr)
    out.printf("account's accesskey is:%s", args.accessKey)
    return out


@command("updateGlobalWhiteAddr", "Update global white address for acl Config File in broker",
         opt("-b", "--brokerAddr", type=_text, help="update global white address to which broker"),
         opt("-c", "--clusterName", type=_text, help="update global white address to which cluster"),
         opt("-g", "--globalWhiteRemoteAddresses", type=_text, required=True,
             help="set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*"),
         opt("-p", "--aclFileFullPath", type=_text,
             help="update global white address of specified acl file,eg: /xxx/plain_test.yml"))
def update_global_white_addr(session: Session, args: argparse.Namespace) -> Output:
    addrs = _all_broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data={"brokers": addrs, "globalWhiteRemoteAddresses": args.globalWhiteRemoteAddresses})
    for addr in addrs:
        session.admin.update_global_white_addrs_config(addr, args.globalWhiteRemoteAddresses, args.aclFileFullPath)
        out.printf("update global white remote addresses to %s success.", addr)
    return out


@command("clusterAclConfigVersion", "List all of acl config version information in cluster",
         opt("-b", "--brokerAddr", type=_text, help="query acl config version for which broker"),
         opt("-c", "--clusterName", type=_text, help="query acl config version for specified cluster"))
def cluster_acl_config_version(session: Session, args: argparse.Namespace) -> Output:
    if bool(args.brokerAddr) == bool(args.clusterName):
        raise CommandError("exactly one of -b brokerAddr or -c clusterName is required")
    addrs = _broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data=[])
    out.printf("%-16s %-22s %-22s %-20s %-22s %-22s", "#Cluster Name", "#Broker Name", "#Broker Addr",
               "#AclFilePath", "#AclConfigVersionNum", "#AclLastUpdateTime")
    for addr in addrs:
        info = session.admin.examine_broker_cluster_acl_version_info(addr)
        for path, version in info.all_acl_config_data_version.items():
            counter, stamp = version.get("counter", 0), int(version.get("timestamp") or 0)
            out.data.append({"cluster": info.cluster_name, "brokerName": info.broker_name,
                             "brokerAddr": info.broker_addr, "aclFilePath": path, "counter": counter,
                             "timestamp": stamp})
            when = datetime.datetime.fromtimestamp(stamp / 1000).strftime("%Y-%m-%d %H:%M:%S")
            out.printf("%-16s  %-22s  %-22s  %-20s  %-22s  %-22s", info.cluster_name, info.broker_name,
                       info.broker_addr, path, counter, when)
    return out
