"""
Look at a cluster with the blocking admin API: the brokers of each cluster, the topics, one
topic's queues and one consumer group's progress and lag (what mqadmin clusterList,
topicList, topicStatus and consumerProgress print).

    python examples/admin.py [NAMESRV] [TOPIC] [GROUP]

The same methods exist on the Twisted ``rocketmq_tx.client.MQAdmin``, returning Deferreds.
"""

import sys
from datetime import datetime

from rocketmq_tx.blocking import BlockingAdmin


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="seconds") if ms > 0 else "-"


def main(namesrv: str = "127.0.0.1:9876", topic: str = "ExampleTopic", group: str = "example-pull") -> None:
    with BlockingAdmin(namesrv) as admin:
        info = admin.examine_broker_cluster_info()
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in names:
                addrs = info.broker_addr_table[name].broker_addrs
                print(f"cluster {cluster}  broker {name}  " + "  ".join(f"#{i} {a}" for i, a in sorted(addrs.items())))

        topics = admin.fetch_all_topic_list().topic_list
        print(f"{len(topics)} topics; {topic} {'is' if topic in topics else 'is not'} one of them")

        stats = admin.examine_topic_stats(topic)
        for mq, offsets in stats.offset_table.items():
            print(f"{mq.broker_name:<20} queue {mq.queue_id:<3} min {offsets.min_offset:<8} "
                  f"max {offsets.max_offset:<8} last write {when(offsets.last_update_timestamp)}")

        progress = admin.examine_consume_stats(group, topic)
        for mq, w in progress.offset_table.items():
            print(f"{group} {mq.topic} {mq.broker_name} queue {mq.queue_id}: broker {w.broker_offset} "
                  f"consumer {w.consumer_offset} lag {w.broker_offset - w.consumer_offset} "
                  f"last consumed {when(w.last_timestamp)}")
        print(f"{group}: total lag {progress.compute_total_diff()}, {progress.consume_tps:.1f} msg/s")


if __name__ == "__main__":
    main(*sys.argv[1:])
