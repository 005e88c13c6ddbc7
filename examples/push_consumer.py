"""
Consume with the Twisted push consumer: subscribe, a listener, and the group's queues
shared with every other member (Python or Java) of the group.

    python examples/push_consumer.py [NAMESRV] [TOPIC] [GROUP] [SECONDS]

Stops after the first messages arrive, or after SECONDS (default 20).
"""

import sys

from twisted.internet.defer import Deferred, ensureDeferred
from twisted.internet.task import react

from rocketmq_tx.client import CONSUME_FROM_FIRST_OFFSET, ConsumeStatus, PushConsumer


async def consume(reactor, namesrv="127.0.0.1:9876", topic="ExampleTopic", group="example-push", seconds="20"):
    consumer = PushConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")  # or "TagA || TagB"
    first: Deferred = Deferred()

    def listener(messages):
        for msg in messages:
            print(msg.topic, msg.queue_id, msg.queue_offset, msg.msg_id, msg.body[:40])
        if not first.called:
            reactor.callLater(1.0, first.callback, None)  # let the first pulls finish, then stop
        return ConsumeStatus.CONSUME_SUCCESS  # RECONSUME_LATER: redelivered later via %RETRY%

    consumer.register_listener(listener)
    async with consumer:  # commits its offsets on the way out
        timer = reactor.callLater(float(seconds), lambda: first.called or first.callback(None))
        await first
        if timer.active():
            timer.cancel()


def main(reactor, *args):
    return ensureDeferred(consume(reactor, *args))


if __name__ == "__main__":
    react(main, sys.argv[1:])
