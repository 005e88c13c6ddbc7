"""
One simple-consumer scenario with rocketmq_tx's SimpleConsumer, as a separate process (a
reactor runs once per process, so the pytest process stays reactor-free):

    python txsimple.py twisted|blocking|blocking-fifo NAMESRV TOPIC GROUP

Sends m0, m1, m2 to TOPIC (which exists) with the blocking producer, then as GROUP: receives
all three (invisible INVISIBLE_S), acks m0, changes m1's invisible duration to CHANGED_S,
leaves m2; receives until m1 and m2 are back (acking each: the Twisted consumer with
BATCH_ACK_MESSAGE), then for a quiet spell past every
invisible time (nothing more may come). Prints one JSON line: what it saw, broker-neutral.
The Twisted consumer runs on a reactor in a background thread (this is a test driver).

``blocking-fifo``: the FIFO scenario (``fifo=True``, TOPIC with one queue): f0 received alone,
the queue held while it is out, acked; f1 and f2 received, not acked: received again in order
after the invisible duration, reconsume times 1; acked: nothing more.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from rocketmq_tx.blocking import BlockingProducer, BlockingSimpleConsumer
from rocketmq_tx.common.message import Message, MessageConst
from rocketmq_tx.remoting.popapi import ReceivedMessage

INVISIBLE_S = 3.0
CHANGED_S = 8.0
AWAIT_S = 2.0


class TwistedConsumer:
    """The Twisted SimpleConsumer behind blocking calls."""

    def __init__(self, namesrv: str, topic: str, group: str) -> None:
        from twisted.internet import reactor

        from rocketmq_tx.client import SimpleConsumer

        self.reactor: Any = reactor
        threading.Thread(target=reactor.run, kwargs={"installSignalHandlers": False}, daemon=True).start()
        self.consumer = SimpleConsumer(group, namesrv, reactor, subscriptions={topic: "*"}, await_duration=AWAIT_S)
        self._call(lambda: self.consumer.start())

    def _call(self, make: Callable[[], Any]) -> Any:
        from twisted.internet.threads import blockingCallFromThread

        return blockingCallFromThread(self.reactor, make)

    def receive(self, max_messages: int, invisible: float) -> list[ReceivedMessage]:
        return self._call(lambda: self.consumer.receive(max_messages, invisible))

    def ack(self, message: ReceivedMessage) -> None:
        self._call(lambda: self.consumer.ack(message))

    def ack_batch(self, messages: list[ReceivedMessage]) -> None:
        self._call(lambda: self.consumer.ack_batch(messages))

    def change_invisible_duration(self, message: ReceivedMessage, duration: float) -> str:
        return self._call(lambda: self.consumer.change_invisible_duration(message, duration))

    def close(self) -> None:
        self._call(self.consumer.stop)
        self.reactor.callFromThread(self.reactor.stop)


def scenario(consumer: Any, namesrv: str, topic: str, batch: bool) -> dict[str, Any]:
    with BlockingProducer(f"{topic}PG", namesrv) as producer:
        for body in (b"m0", b"m1", b"m2"):
            producer.send(Message(topic, body))
    outcome: dict[str, Any] = {}
    first: dict[bytes, ReceivedMessage] = {}
    deadline = time.monotonic() + 30
    while len(first) < 3 and time.monotonic() < deadline:
        for m in consumer.receive(32, INVISIBLE_S):
            first[m.body] = m
    outcome["first"] = sorted((m.body.decode(), m.reconsume_times, m.topic == topic) for m in first.values())
    consumer.ack(first[b"m0"])
    old = first[b"m1"].receipt_handle
    new = consumer.change_invisible_duration(first[b"m1"], CHANGED_S)
    outcome["new_handle"] = new != old and first[b"m1"].receipt_handle == new
    again: list[tuple[str, int, bool]] = []
    # ms from the (changed) pop to the revival, by the broker's clock: a revived message carries
    # 1ST_POP_TIME = its checkpoint's pop time, and its store time is the revival's
    elapsed: dict[str, int] = {}
    deadline = time.monotonic() + 60
    while len(again) < 2 and time.monotonic() < deadline:
        got = consumer.receive(32, INVISIBLE_S)
        if batch and got:
            consumer.ack_batch(got)
        for m in got:
            if not batch:
                consumer.ack(m)
            body = m.body.decode()
            elapsed[body] = m.message.store_timestamp - int(m.properties[MessageConst.PROPERTY_FIRST_POP_TIME])
            again.append((body, m.reconsume_times, m.topic == topic))
    outcome["again"] = sorted(again)
    late: list[str] = []
    quiet_until = time.monotonic() + CHANGED_S
    while time.monotonic() < quiet_until:
        late += [m.body.decode() for m in consumer.receive(32, INVISIBLE_S)]
    outcome["late"] = late
    outcome["elapsed"] = elapsed
    return outcome


def fifo_scenario(consumer: Any, namesrv: str, topic: str) -> dict[str, Any]:
    with BlockingProducer(f"{topic}PG", namesrv) as producer:
        for body in (b"f0", b"f1", b"f2"):
            producer.send(Message(topic, body))

    def bodies(got: list[ReceivedMessage]) -> list[tuple[str, int]]:
        return [(m.body.decode(), m.reconsume_times) for m in got]

    outcome: dict[str, Any] = {}
    first: list[ReceivedMessage] = []
    deadline = time.monotonic() + 30
    while not first and time.monotonic() < deadline:
        first = consumer.receive(1, INVISIBLE_S)
    outcome["first"] = bodies(first)
    outcome["held"] = bodies(consumer.receive(32, INVISIBLE_S))
    consumer.ack(first[0])
    outcome["next"] = bodies(consumer.receive(32, INVISIBLE_S))
    again: list[ReceivedMessage] = []
    deadline = time.monotonic() + 30
    while not again and time.monotonic() < deadline:
        again = consumer.receive(32, INVISIBLE_S)
    outcome["again"] = bodies(again)
    for m in again:
        consumer.ack(m)
    outcome["after"] = bodies(consumer.receive(32, INVISIBLE_S))
    return outcome


def main(argv: list[str]) -> int:
    kind, namesrv, topic, group = argv
    if kind == "blocking-fifo":
        consumer: Any = BlockingSimpleConsumer(group, namesrv, subscriptions={topic: "*"}, await_duration=AWAIT_S,
                                               fifo=True)
        with consumer:
            print(json.dumps(fifo_scenario(consumer, namesrv, topic)), flush=True)
        return 0
    if kind == "twisted":
        consumer = TwistedConsumer(namesrv, topic, group)
    else:
        consumer = BlockingSimpleConsumer(group, namesrv, subscriptions={topic: "*"}, await_duration=AWAIT_S)
        consumer.start()
    try:
        print(json.dumps(scenario(consumer, namesrv, topic, batch=kind == "twisted")), flush=True)
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
