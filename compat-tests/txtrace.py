"""
rocketmq_tx's Twisted Producer and PushConsumer with message trace on, in their own
process (a reactor runs once per process), for test_trace_client.py. JSON lines on stdout.

  python txtrace.py NAMESRV TOPIC COUNT TIMEOUT [TRACE_TOPIC]
      A Producer (group TX_TRACE_PG, enable_msg_trace) sends COUNT messages (body
      "trace-i", key "trk-i"): one line per send ({"msgId", "offsetMsgId"}). A PushConsumer
      (group TX_TRACE_CG, enable_msg_trace, from the first offset) consumes them: one line
      per message ({"consumed": msgId}). Both stop (sending the trace records that wait)
      once all were consumed or TIMEOUT seconds passed; {"done": true} last.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from twisted.internet.defer import ensureDeferred
from twisted.internet.task import deferLater, react

from rocketmq_tx.client import CONSUME_FROM_FIRST_OFFSET, ConsumeStatus, Message, Producer, PushConsumer


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(reactor: Any, namesrv: str, topic: str, count: str, timeout: str,
               trace_topic: str | None = None) -> None:
    producer = Producer("TX_TRACE_PG", namesrv, reactor, enable_msg_trace=True, trace_topic=trace_topic)
    producer.start()
    for i in range(int(count)):
        msg = Message(topic, f"trace-{i}".encode())
        msg.tags, msg.keys = "TagA", [f"trk-{i}"]
        r = await producer.send(msg, timeout=10.0)
        out({"msgId": r.msg_id, "offsetMsgId": r.offset_msg_id})
    consumed: list[str] = []
    consumer = PushConsumer("TX_TRACE_CG", namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                            enable_msg_trace=True, trace_topic=trace_topic)
    consumer.subscribe(topic, "*")

    def listener(msgs: list) -> ConsumeStatus:
        for m in msgs:
            consumed.append(m.msg_id)
            out({"consumed": m.msg_id})
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_listener(listener)
    consumer.start()
    deadline = reactor.seconds() + float(timeout)
    while len(consumed) < int(count) and reactor.seconds() < deadline:
        await deferLater(reactor, 0.2, lambda: None)
    await consumer.stop()
    await producer.stop()
    out({"done": True})


if __name__ == "__main__":
    react(lambda reactor, *args: ensureDeferred(main(reactor, *args)), sys.argv[1:])
