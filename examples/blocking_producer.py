"""
Send messages with the blocking producer: plain, tagged and keyed, a delay level, an
ordered send and a batch.

    python examples/blocking_producer.py [NAMESRV] [TOPIC]
"""

import sys

from rocketmq_tx.blocking import BlockingProducer
from rocketmq_tx.common.message import Message


def main(namesrv: str = "127.0.0.1:9876", topic: str = "ExampleTopic") -> None:
    with BlockingProducer("example-producer", namesrv) as producer:
        msg = Message(topic, b"hello")
        msg.tags = "TagA"
        msg.keys = ["order-1001"]
        msg.put_property("source", "example")
        result = producer.send(msg)
        print(result.send_status.value, result.msg_id, result.message_queue, result.queue_offset)

        delayed = Message(topic, b"in ten seconds")
        delayed.delay_time_level = 3  # 1s 5s 10s ...: level 3 is 10 s
        print(producer.send(delayed).send_status.value)

        # Equal sharding keys go to one queue, so their order is kept.
        for step in ("created", "paid", "shipped"):
            r = producer.send_orderly(Message(topic, f"order-1001 {step}".encode()), "order-1001")
            print("ordered", step, r.message_queue.queue_id, r.queue_offset)

        batch = [Message(topic, f"batch-{i}".encode()) for i in range(3)]
        print("batch", producer.send_batch(batch).msg_id)


if __name__ == "__main__":
    main(*sys.argv[1:])
