# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""topicList, topicRoute, topicStatus, updateTopic, deleteTopic."""

from __future__ import annotations

import argparse
from typing import Any

from rocketmq_tx.admin.commands.common import (
    int_arg,
    java_object_text,
    one_target,
    text_arg,
)
from rocketmq_tx.admin.output import (
    Output,
    front_at_least,
    human_time,
    java_bool,
)
from rocketmq_tx.admin.registry import CommandError, Session, command, opt
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import adminapi

#: ``TopicSysFlag``: unit topic and unit subscription bits
_FLAG_UNIT, _FLAG_UNIT_SUB = 0x1, 0x2


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
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"),
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
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"))
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
         opt("-b", "--brokerAddr", type=text_arg, help="create topic to which broker"),
         opt("-c", "--clusterName", type=text_arg, help="create topic to which cluster"),
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"),
         opt("-r", "--readQueueNums", type=int_arg, default=8, help="set read queue nums"),
         opt("-w", "--writeQueueNums", type=int_arg, default=8, help="set write queue nums"),
         opt("-p", "--perm", type=int_arg, default=6, help="set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"),
         opt("-o", "--order", type=java_bool, default=False, help="set topic's order(true|false)"),
         opt("-u", "--unit", type=java_bool, default=False, help="is unit topic (true|false)"),
         opt("-s", "--hasUnitSub", type=java_bool, default=False, help="has unit sub (true|false)"))
def update_topic(session: Session, args: argparse.Namespace) -> Output:
    one_target(args.brokerAddr, args.clusterName)
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
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"),
         opt("-c", "--clusterName", type=text_arg, required=True, help="delete topic from which cluster"))
def delete_topic(session: Session, args: argparse.Namespace) -> Output:
    session.admin.delete_topic(args.topic, args.clusterName)
    out = Output(data={"topic": args.topic, "cluster": args.clusterName})
    out.printf("delete topic [%s] from cluster [%s] success.", args.topic, args.clusterName)
    out.printf("delete topic [%s] from NameServer success.", args.topic)
    return out
