"""
Consume in order with the Twisted push consumer: an orderly listener sees each queue's
messages one batch at a time, in queue order, while this member holds the broker's lock
on the queue. Pair it with ordered sends (``send_orderly(msg, sharding_key)``), which put
every message of one key in the same queue.

    python examples/orderly_consumer.py [NAMESRV] [TOPIC] [GROUP] [SECONDS]

Stops after the first messages arrive, or after SECONDS (default 20).
"""

import sys

from twisted.internet.defer import Deferred, ensureDeferred
from twisted.internet.task import react

from rocketmq_tx.client import CONSUME_FROM_FIRST_OFFSET, PushConsumer
from rocketmq_tx.client.push import ConsumeOrderlyStatus


async def consume(reactor, namesrv="127.0.0.1:9876", topic="ExampleTopic", group="example-orderly", seconds="20"):
    consumer = PushConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    first: Deferred = Deferred()

    def in_order(messages):
        for msg in messages:
            print(msg.queue_id, msg.queue_offset, msg.body[:40])
        if not first.called:
            reactor.callLater(1.0, first.callback, None)
        # SUSPEND_CURRENT_QUEUE_A_MOMENT would hand the same batch back in a second, before
        # anything behind it in the queue.
        return ConsumeOrderlyStatus.SUCCESS

    consumer.register_listener(in_order, orderly=True)
    async with consumer:  # unlocks its queues and commits its offsets on the way out
        timer = reactor.callLater(float(seconds), lambda: first.called or first.callback(None))
        await first
        if timer.active():
            timer.cancel()


def main(reactor, *args):
    return ensureDeferred(consume(reactor, *args))


if __name__ == "__main__":
    react(main, sys.argv[1:])
