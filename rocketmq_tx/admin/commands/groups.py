# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""Subscription groups and their clients: updateSubGroup, deleteSubGroup, consumerProgress,
setConsumeMode, consumerConnection, consumerStatus, producerConnection."""

from __future__ import annotations

import argparse
import contextlib
import os
import time

from rocketmq_tx.admin.commands.common import (
    each_broker,
    int_arg,
    java_object_text,
    master_addrs,
    text_arg,
)
from rocketmq_tx.admin.output import (
    Output,
    front_at_least,
    human_time,
    java_bool,
    mq_version_desc,
)
from rocketmq_tx.admin.registry import Session, command, opt
from rocketmq_tx.common.subscription import SubscriptionGroupConfig
from rocketmq_tx.remoting.adminbodies import (
    ConsumerRunningInfo,
    analyze_process_queue,
    analyze_subscription,
    message_queue_to_json,
)
from rocketmq_tx.remoting.api import RETRY_GROUP_TOPIC_PREFIX


@command("updateSubGroup", "Update or create subscription group",
         opt("-b", "--brokerAddr", type=text_arg, help="create subscription group to which broker"),
         opt("-c", "--clusterName", type=text_arg, help="create subscription group to which cluster"),
         opt("-g", "--groupName", type=text_arg, required=True, help="consumer group name"),
         opt("-s", "--consumeEnable", type=java_bool, help="consume enable"),
         opt("-m", "--consumeFromMinEnable", type=java_bool, help="from min offset"),
         opt("-d", "--consumeBroadcastEnable", type=java_bool, help="broadcast"),
         opt("-q", "--retryQueueNums", type=int_arg, help="retry queue nums"),
         opt("-r", "--retryMaxTimes", type=int_arg, help="retry max times"),
         opt("-i", "--brokerId", type=int_arg, help="consumer from which broker id"),
         opt("-w", "--whichBrokerWhenConsumeSlowly", type=int_arg, help="which broker id when consume slowly"),
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
    addrs = master_addrs(session, args.brokerAddr, args.clusterName)
    each_broker(out, addrs, lambda addr: session.admin.create_and_update_subscription_group_config(addr, config),
                "create subscription group to %s success.")
    out.printf("%s", java_object_text("SubscriptionGroupConfig", config.to_json()))
    out.data = {"brokers": addrs, "subscriptionGroupConfig": config.to_json()}
    return out


@command("deleteSubGroup", "Delete subscription group from broker.",
         opt("-b", "--brokerAddr", type=text_arg, help="delete subscription group from which broker"),
         opt("-c", "--clusterName", type=text_arg, help="delete subscription group from which cluster"),
         opt("-g", "--groupName", type=text_arg, required=True, help="subscription group name"),
         opt("-r", "--removeOffset", type=java_bool, default=False, help="remove offset"))
def delete_sub_group(session: Session, args: argparse.Namespace) -> Output:
    out = Output()
    addrs = master_addrs(session, args.brokerAddr, args.clusterName)
    each_broker(out, addrs, lambda addr: session.admin.delete_subscription_group(
        addr, args.groupName, args.removeOffset), "delete subscription group [%s] from broker [%s] success.",
        args.groupName)
    out.data = {"group": args.groupName, "brokers": addrs}
    return out


# --------------------------------------------------------------------------- consumers and producers

@command("consumerProgress", "Query consumers's progress, speed",
         opt("-g", "--groupName", type=text_arg, help="consumer group name (without it: every group, one line each)"),
         opt("-t", "--topicName", type=text_arg, help="topic name (5.x)"))
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
         opt("-b", "--brokerAddr", type=text_arg, help="create subscription group to which broker"),
         opt("-c", "--clusterName", type=text_arg, help="create subscription group to which cluster"),
         opt("-t", "--topicName", type=text_arg, required=True, help="topic name"),
         opt("-g", "--groupName", type=text_arg, required=True, help="consumer group name"),
         opt("-m", "--mode", type=text_arg, required=True, choices=("PULL", "POP"), help="consume mode. PULL/POP"),
         opt("-q", "--popShareQueueNum", type=int_arg, default=0, help="num of queue which share in pop mode"))
def set_consume_mode(session: Session, args: argparse.Namespace) -> Output:
    out = Output()
    addrs = master_addrs(session, args.brokerAddr, args.clusterName)
    each_broker(out, addrs, lambda addr: session.admin.set_message_request_mode(
        addr, args.topicName, args.groupName, args.mode, args.popShareQueueNum), "set consume mode to %s success.")
    out.printf("topic[%s] group[%s] consume mode[%s] popShareQueueNum[%d]", args.topicName, args.groupName,
               args.mode, args.popShareQueueNum)
    out.data = {"brokers": addrs, "topic": args.topicName, "group": args.groupName, "mode": args.mode,
                "popShareQueueNum": args.popShareQueueNum}
    return out


@command("consumerConnection", "Query consumer's socket connection, client version and subscription",
         opt("-g", "--consumerGroup", type=text_arg, required=True, help="consumer group name"),
         opt("-b", "--brokerAddr", type=text_arg, help="broker address"))
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


@command("consumerStatus", "Query consumer's internal data structure",
         opt("-g", "--consumerGroup", type=text_arg, required=True, help="consumer group name"),
         opt("-i", "--clientId", type=text_arg, help="The consumer's client id"),
         opt("-b", "--brokerAddr", type=text_arg, help="broker address"),
         opt("-s", "--jstack", action="store_true", help="Run jstack command in the consumer progress"))
def consumer_status(session: Session, args: argparse.Namespace) -> Output:
    """
    As mqadmin: with ``-i`` one client's ``formatString``; without, every connected client's
    running info written to ``<now>/<clientId>`` under the working directory (mqadmin's files),
    listed, then the subscription and process-queue checks.
    """
    admin = session.admin
    group = args.consumerGroup
    out = Output()
    if args.clientId is not None:
        info = admin.get_consumer_running_info(group, args.clientId, args.jstack)
        out.data = {args.clientId: _running_info_data(info)}
        out.lines.extend(info.format_string().rstrip("\n").split("\n"))
        return out
    cc = admin.examine_consumer_connection_info(group, args.brokerAddr)
    now = int(time.time() * 1000)
    table: dict[str, ConsumerRunningInfo] = {}
    errors: dict[str, str] = {}
    out.printf("%-10s %-40s %-20s %s", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
    for conn in cc.connection_set:
        if conn.client_id is None:
            continue
        try:
            info = admin.get_consumer_running_info(group, conn.client_id, args.jstack)
        except Exception as e:  # mqadmin prints the stack trace and goes on with the next client
            errors[conn.client_id] = str(e)
            continue
        table[conn.client_id] = info
        path = f"{now}/{conn.client_id}"
        os.makedirs(str(now), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(info.format_string())
        out.printf("%-10d %-40s %-20s %s", len(table), conn.client_id, mq_version_desc(conn.version), path)
    data: dict = {"clients": {cid: _running_info_data(info) for cid, info in table.items()}, "errors": errors}
    if table:
        same = analyze_subscription(table, now)
        data["sameSubscription"] = same
        if same:
            out.lines.extend(["", "", "Same subscription in the same group of consumer", "", "Rebalance OK"])
            stuck = "".join(analyze_process_queue(cid, table[cid], now) for cid in sorted(table))
            data["processQueueWarnings"] = stuck.splitlines()
            out.lines.extend(stuck.splitlines())
        else:
            out.lines.extend(["", "", "WARN: Different subscription in the same group of consumer!!!"])
    out.data = data
    return out


def _running_info_data(info: ConsumerRunningInfo) -> dict:
    # plain JSON for --json: fastjson's object keys of mqTable become a list of queues
    data = info.to_json()
    data["mqTable"] = [{**message_queue_to_json(mq), "processQueueInfo": pq} for mq, pq in info.mq_table.items()]
    return data


@command("producerConnection", "Query producer's socket connection and client version",
         opt("-g", "--producerGroup", type=text_arg, required=True, help="producer group name"),
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"))
def producer_connection(session: Session, args: argparse.Namespace) -> Output:
    pc = session.admin.examine_producer_connection_info(args.producerGroup, args.topic)
    out = Output(data=pc.to_json())
    for i, conn in enumerate(pc.connection_set, 1):
        out.printf("%04d  %-32s %-22s %-8s %s", i, conn.client_id, conn.client_addr, conn.language, conn.version)
    return out
