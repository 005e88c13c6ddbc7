"""
Consume with the Twisted lite-pull consumer: assign queues, seek, poll, commit.

    python examples/lite_pull_consumer.py [NAMESRV] [TOPIC] [GROUP]
"""

import sys

from twisted.internet.defer import ensureDeferred
from twisted.internet.task import react

from rocketmq_tx.client import CONSUME_FROM_FIRST_OFFSET, LitePullConsumer


async def consume(reactor, namesrv="127.0.0.1:9876", topic="ExampleTopic", group="example-lite"):
    consumer = LitePullConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    async with consumer:  # auto-commit every 5 s, and once more on exit
        queues = await consumer.fetch_queues(topic)
        consumer.assign(queues)
        await consumer.seek_to_begin(queues[0])  # or seek(mq, offset) / seek_to_timestamp(mq, ms)
        while True:
            messages = await consumer.poll(timeout=2.0)
            if not messages:
                break
            for msg in messages:
                print(msg.queue_id, msg.queue_offset, msg.msg_id, msg.body[:40])
        await consumer.commit()


def main(reactor, *args):
    return ensureDeferred(consume(reactor, *args))


if __name__ == "__main__":
    react(main, sys.argv[1:])
