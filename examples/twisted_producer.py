"""
Send with the Twisted producer: each send is a Deferred of SendResult; many can be in
flight at once.

    python examples/twisted_producer.py [NAMESRV] [TOPIC]
"""

import sys

from twisted.internet.defer import ensureDeferred, gatherResults
from twisted.internet.task import react

from rocketmq_tx.client import Message, Producer


async def produce(reactor, namesrv="127.0.0.1:9876", topic="ExampleTopic"):
    async with Producer("example-tx-producer", namesrv, reactor) as producer:
        sends = []
        for i in range(10):
            msg = Message(topic, f"async-{i}".encode())
            msg.tags = "TagA"
            sends.append(producer.send(msg))
        for result in await gatherResults(sends):
            print(result.send_status.value, result.message_queue.queue_id, result.queue_offset)
        # Fire and forget, and the callback style:
        await producer.send_oneway(Message(topic, b"oneway"))
        producer.send_callback(Message(topic, b"callback"), lambda r: print("callback", r.msg_id),
                               lambda e: print("failed", e))


def main(reactor, *args):
    return ensureDeferred(produce(reactor, *args))


if __name__ == "__main__":
    react(main, sys.argv[1:])
