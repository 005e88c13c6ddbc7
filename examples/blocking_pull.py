"""
Read a topic by queue and offset with the blocking pull client, and keep the group's
position on the broker (what a Spark source does).

    python examples/blocking_pull.py [NAMESRV] [TOPIC] [GROUP]
"""

import sys

from rocketmq_tx.blocking import BlockingPullClient
from rocketmq_tx.remoting.api import PullStatus


def main(namesrv: str = "127.0.0.1:9876", topic: str = "ExampleTopic", group: str = "example-pull") -> None:
    with BlockingPullClient(group, namesrv) as client:
        # Announce the group first: a 5.x broker refuses offsets of a group it does not know
        # (SUBSCRIPTION_GROUP_NOT_EXIST), and a heartbeat creates it (autoCreateSubscriptionGroup).
        client.send_heartbeat([topic])
        for mq in client.fetch_queues(topic):
            offset = client.committed_offset(mq)
            if offset is None:
                offset = client.min_offset(mq)
            end = client.max_offset(mq)
            while offset < end:
                result = client.pull(mq, offset, max_nums=32, sub_expression="*")
                for msg in result.msg_found_list:
                    print(mq.broker_name, mq.queue_id, msg.queue_offset, msg.tags, msg.body[:40])
                if result.pull_status is not PullStatus.FOUND and result.next_begin_offset == offset:
                    break
                offset = result.next_begin_offset
            client.commit_offset(mq, offset)
            print(f"{mq}: committed {offset}")


if __name__ == "__main__":
    main(*sys.argv[1:])
