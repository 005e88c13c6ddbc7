"""
rocketmq_tx's Twisted MQAdmin in its own process for the admin interop tests (a reactor
runs once per process; the pytest process stays reactor-free). One JSON line on stdout.

  python txadmin.py NAMESRV TOPIC GROUP KEY
      cluster info, topic list, route, topic stats, consume stats of GROUP on TOPIC, the
      consumer connection of GROUP and a query of TOPIC by KEY, all through MQAdmin (the
      broker requests of each go out together), printed as
      {"clusters", "topics", "route", "stats", "progress", "lag", "clients", "keys"}.
"""

from __future__ import annotations

import json
import sys

from twisted.internet.defer import ensureDeferred
from twisted.internet.task import react

from rocketmq_tx.client import MQAdmin


def queue_key(mq) -> str:  # type: ignore[no-untyped-def]
    return f"{mq.broker_name}/{mq.queue_id}"


async def run(reactor, namesrv: str, topic: str, group: str, key: str) -> None:  # type: ignore[no-untyped-def]
    async with MQAdmin(namesrv, reactor, timeout=10.0) as admin:
        info = await admin.examine_broker_cluster_info()
        topics = await admin.fetch_all_topic_list()
        route = await admin.examine_topic_route_info(topic)
        stats = await admin.examine_topic_stats(topic)
        progress = await admin.examine_consume_stats(group, topic)
        connection = await admin.examine_consumer_connection_info(group)
        found = await admin.query_message(topic, key)
    out = {
        "clusters": {c: {n: {str(i): a for i, a in info.broker_addr_table[n].broker_addrs.items()} for n in names}
                     for c, names in info.cluster_addr_table.items()},
        "topics": sorted(topics.topic_list),
        "route": [[q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm] for q in route.queue_datas],
        "stats": {queue_key(mq): [o.min_offset, o.max_offset] for mq, o in stats.offset_table.items()},
        "progress": {queue_key(mq): [w.broker_offset, w.consumer_offset] for mq, w in progress.offset_table.items()
                     if mq.topic == topic},
        "lag": progress.compute_total_diff(),
        "clients": sorted(c.client_id for c in connection.connection_set),
        "keys": sorted(m.body.decode() for m in found.message_list),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def main(reactor, *args: str):  # type: ignore[no-untyped-def]
    return ensureDeferred(run(reactor, *args))


if __name__ == "__main__":
    react(main, sys.argv[1:])
