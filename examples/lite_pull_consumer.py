"""
Consume with the Twisted lite-pull consumer: assign queues, seek, poll, commit; or, with
``--subscribe``, join the group and poll the queues a rebalance gives this member.

    python examples/lite_pull_consumer.py [NAMESRV] [TOPIC] [GROUP] [--subscribe]
"""

import sys

from twisted.internet.defer import ensureDeferred
from twisted.internet.task import react

from rocketmq_tx.client import CONSUME_FROM_FIRST_OFFSET, LitePullConsumer


async def consume(reactor, namesrv="127.0.0.1:9876", topic="ExampleTopic", group="example-lite", subscribe=False):
    consumer = LitePullConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    if subscribe:
        consumer.subscribe(topic, "*")  # the group's members share the topic's queues
    async with consumer:  # auto-commit every 5 s, and once more on exit
        if not subscribe:
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
    positional = [a for a in args if a != "--subscribe"]
    return ensureDeferred(consume(reactor, *positional, subscribe="--subscribe" in args))


if __name__ == "__main__":
    react(main, sys.argv[1:])
