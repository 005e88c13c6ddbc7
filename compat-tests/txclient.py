"""
rocketmq_tx's Twisted client as a separate process for interop tests (a reactor runs once
per process, so the pytest process stays reactor-free). JSON lines on stdout.

  python txclient.py produce NAMESRV TOPIC COUNT
      Producer.send of COUNT messages (body "tx-i", tag TagA/TagB, key "tk-i", property
      idx=i): one line per SendResult, then {"done": true}.
  python txclient.py litepull NAMESRV GROUP TOPIC COUNT TIMEOUT
      LitePullConsumer assigned every queue of TOPIC from the first offset; polls until
      COUNT messages arrived or TIMEOUT seconds passed, commits synchronously, prints one
      line per message and then {"done": true, "received": n, "committed": {queue: offset}}.
  python txclient.py push NAMESRV GROUP TOPIC TIMEOUT [MAX_RECONSUME_TIMES]
      PushConsumer (from the first offset) of TOPIC: {"ready": true} once started, one line
      per message (with "queues": the queues owned then), for TIMEOUT seconds, and
      {"assigned": [...]} whenever the queues it owns change. With MAX_RECONSUME_TIMES the
      listener answers RECONSUME_LATER to everything. TXCLIENT_POLL_NAMESRV_INTERVAL (seconds)
      in the environment sets how often routes are re-read (Java's pollNameServerInterval).
  python txclient.py broadcast NAMESRV GROUP TOPIC TIMEOUT OFFSET_DIR
      Like push, with message_model=BROADCASTING and offsets under OFFSET_DIR.
  python txclient.py litesubscribe NAMESRV GROUP TOPIC TIMEOUT
      LitePullConsumer.subscribe(TOPIC) (from the first offset, auto-commit): {"ready": true}
      once started, then one line per polled message with the queues owned at the time, and
      {"assigned": [...]} whenever they change.
  python txclient.py orderly NAMESRV GROUP TOPIC TIMEOUT
      PushConsumer with an orderly listener, from the first offset: like push, but the
      first delivery of every message whose body ends in ":0" is suspended (redelivered
      after 1 s); each line has "attempt" (the local delivery count).

ACL 1.0: with TXCLIENT_ACCESS_KEY and TXCLIENT_SECRET_KEY in the environment, produce,
litepull and push sign their requests with those credentials (test_acl_interop.py).
"""

from __future__ import annotations

import json
import os
import sys

from twisted.internet.defer import ensureDeferred
from twisted.internet.task import LoopingCall, deferLater, react
from twisted.logger import globalLogBeginner, textFileLogObserver

from rocketmq_tx.client import (
    CONSUME_FROM_FIRST_OFFSET,
    ConsumeStatus,
    LitePullConsumer,
    Message,
    Producer,
    PushConsumer,
)
from rocketmq_tx.client.push import BROADCASTING, ConsumeOrderlyStatus


def credentials() -> dict[str, str]:
    """The clients' ACL keyword arguments, from TXCLIENT_ACCESS_KEY / TXCLIENT_SECRET_KEY."""
    ak, sk = os.environ.get("TXCLIENT_ACCESS_KEY"), os.environ.get("TXCLIENT_SECRET_KEY")
    return {"access_key": ak, "secret_key": sk} if ak and sk else {}


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def report_assignment(reactor, owned) -> LoopingCall:  # type: ignore[no-untyped-def]
    """Print {"assigned": [...]} each time owned() (sorted "broker/queue" names) changes."""
    last: list = [None]

    def check() -> None:
        now = owned()
        if now != last[0]:
            last[0] = now
            out({"assigned": now})

    call = LoopingCall(check)
    call.clock = reactor
    call.start(0.05)
    return call


async def run_push(reactor, consumer: PushConsumer, timeout: str, owned=None) -> None:  # type: ignore[no-untyped-def]
    """Start *consumer*, print {"ready": ...}, consume for *timeout* seconds (printing the
    assignment whenever owned(), if given, changes), then stop it."""
    async with consumer:
        out({"ready": True, "clientId": consumer.instance.client_id})
        reporting = report_assignment(reactor, owned) if owned is not None else None
        await deferLater(reactor, float(timeout), lambda: None)
        if reporting is not None:
            reporting.stop()


async def produce(reactor, namesrv: str, topic: str, count: str) -> None:  # type: ignore[no-untyped-def]
    async with Producer("TX_PG", namesrv, reactor, **credentials()) as producer:
        for i in range(int(count)):
            msg = Message(topic, f"tx-{i}".encode())
            msg.tags, msg.keys = ("TagA" if i % 2 == 0 else "TagB"), [f"tk-{i}"]
            msg.put_property("idx", str(i))
            r = await producer.send(msg, timeout=10.0)
            out({"i": i, "status": r.send_status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id,
                 "broker": r.message_queue.broker_name, "queueId": r.message_queue.queue_id,
                 "queueOffset": r.queue_offset})
    out({"done": True})


async def litepull(reactor, namesrv: str, group: str, topic: str, count: str, timeout: str) -> None:  # type: ignore[no-untyped-def]
    consumer = LitePullConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                                auto_commit=False, **credentials())
    async with consumer:
        queues = await consumer.fetch_queues(topic)
        consumer.assign(queues)
        await consumer.instance.send_heartbeat_to_all_brokers()
        received = 0
        deadline = reactor.seconds() + float(timeout)
        while received < int(count) and reactor.seconds() < deadline:
            for m in await consumer.poll(1.0):
                received += 1
                out({"topic": m.topic, "body": m.body.decode(), "tags": m.tags, "keys": " ".join(m.keys),
                     "props": m.properties, "msgId": m.msg_id, "queueId": m.queue_id,
                     "queueOffset": m.queue_offset})
        await consumer.commit()
        committed = {f"{mq.broker_name}/{mq.queue_id}": off for mq, off in sorted(consumer.consumed.items())}
        out({"done": True, "received": received, "committed": committed})


async def push(reactor, namesrv: str, group: str, topic: str, timeout: str,  # type: ignore[no-untyped-def]
               max_reconsume_times: str | None = None) -> None:
    consumer = PushConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                            max_reconsume_times=-1 if max_reconsume_times is None else int(max_reconsume_times),
                            **credentials())
    status = ConsumeStatus.CONSUME_SUCCESS if max_reconsume_times is None else ConsumeStatus.RECONSUME_LATER
    poll = os.environ.get("TXCLIENT_POLL_NAMESRV_INTERVAL")
    if poll:  # as the Java peer's setPollNameServerInterval(1000): routes re-read that often
        consumer.instance.poll_name_server_interval = consumer.instance.route_table.interval = float(poll)
    consumer.subscribe(topic, "*")

    def owned() -> list[str]:
        return sorted(f"{q.broker_name}/{q.queue_id}" for q in consumer.queues if q.topic == topic)

    def listener(msgs):  # type: ignore[no-untyped-def]
        queues = owned()
        for m in msgs:
            out({"body": m.body.decode(), "msgId": m.msg_id, "queueId": m.queue_id, "queueOffset": m.queue_offset,
                 "tags": m.tags, "keys": " ".join(m.keys), "props": m.properties, "queues": queues,
                 "topic": m.topic, "reconsumeTimes": m.reconsume_times})
        return status

    consumer.register_listener(listener)
    await run_push(reactor, consumer, timeout, owned)


async def broadcast(reactor, namesrv: str, group: str, topic: str, timeout: str,  # type: ignore[no-untyped-def]
                    offset_dir: str) -> None:
    consumer = PushConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET,
                            message_model=BROADCASTING, offset_store_dir=offset_dir)
    consumer.subscribe(topic, "*")

    def listener(msgs):  # type: ignore[no-untyped-def]
        for m in msgs:
            out({"body": m.body.decode(), "queueId": m.queue_id, "queueOffset": m.queue_offset, "topic": m.topic})
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_listener(listener)
    await run_push(reactor, consumer, timeout)


async def litesubscribe(reactor, namesrv: str, group: str, topic: str, timeout: str) -> None:  # type: ignore[no-untyped-def]
    consumer = LitePullConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)

    def owned() -> list[str]:
        return sorted(f"{q.broker_name}/{q.queue_id}" for q in consumer.assigned)

    async with consumer:
        out({"ready": True, "clientId": consumer.instance.client_id})
        reporting = report_assignment(reactor, owned)
        deadline = reactor.seconds() + float(timeout)
        while reactor.seconds() < deadline:
            for m in await consumer.poll(1.0):
                out({"body": m.body.decode(), "queueId": m.queue_id, "queueOffset": m.queue_offset, "queues": owned(),
                     "topic": m.topic})
        reporting.stop()


async def orderly(reactor, namesrv: str, group: str, topic: str, timeout: str) -> None:  # type: ignore[no-untyped-def]
    consumer = PushConsumer(group, namesrv, reactor, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    seen: dict[str, int] = {}

    def listener(msgs):  # type: ignore[no-untyped-def]
        suspend = False
        for m in msgs:
            body = m.body.decode()
            seen[body] = seen.get(body, 0) + 1
            out({"body": body, "queueId": m.queue_id, "queueOffset": m.queue_offset, "attempt": seen[body],
                 "topic": m.topic})
            suspend = suspend or (body.endswith(":0") and seen[body] == 1)
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT if suspend else ConsumeOrderlyStatus.SUCCESS

    consumer.register_listener(listener, orderly=True)
    await run_push(reactor, consumer, timeout)


def main(reactor, mode: str, *args: str):  # type: ignore[no-untyped-def]
    modes = {"produce": produce, "litepull": litepull, "push": push, "orderly": orderly,
             "litesubscribe": litesubscribe, "broadcast": broadcast}
    return ensureDeferred(modes[mode](reactor, *args))


if __name__ == "__main__":
    # The client's warnings (failed commits, rebalances) go to stderr, which the tests
    # show when an assertion fails.
    globalLogBeginner.beginLoggingTo([textFileLogObserver(sys.stderr)], redirectStandardIO=False)
    react(main, sys.argv[1:])
