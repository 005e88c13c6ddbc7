"""
rocketmq_tx's Twisted TransactionProducer in its own process (a reactor runs once per
process), for test_transaction_client.py. JSON lines on stdout.

  python txtransaction.py NAMESRV TOPIC PREFIX TIMEOUT
      Sends four messages in transactions, bodies PREFIX-commit, PREFIX-rollback,
      PREFIX-check-commit and PREFIX-check-rollback: the local transaction answers
      COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW and UNKNOW; the check listener answers by
      the body's last word. One line per send ({"body", "state", "msg_id", "queue"}), one
      per check ({"checked": body, "transaction_id"}), then {"done": true} once both
      unknown ones were checked or TIMEOUT seconds passed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from twisted.internet.defer import ensureDeferred
from twisted.internet.task import deferLater, react

from rocketmq_tx.client import LocalTransactionState, Message, TransactionProducer
from rocketmq_tx.common.message import MessageExt


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(reactor: Any, namesrv: str, topic: str, prefix: str, timeout: str) -> None:
    checked: list[str] = []

    def check(msg: MessageExt) -> LocalTransactionState:
        body = msg.body.decode()
        checked.append(body)
        out({"checked": body, "transaction_id": msg.transaction_id})
        return (LocalTransactionState.COMMIT_MESSAGE if body.endswith("commit")
                else LocalTransactionState.ROLLBACK_MESSAGE)

    producer = TransactionProducer(f"{prefix}_TXPG", namesrv, reactor, send_timeout=10.0,
                                   local_transaction=lambda msg, arg: arg, check_listener=check)
    producer.start()
    states = [("commit", LocalTransactionState.COMMIT_MESSAGE), ("rollback", LocalTransactionState.ROLLBACK_MESSAGE),
              ("check-commit", LocalTransactionState.UNKNOW), ("check-rollback", LocalTransactionState.UNKNOW)]
    for name, state in states:
        body = f"{prefix}-{name}"
        result = await producer.send_message_in_transaction(Message(topic, body.encode()), state)
        out({"body": body, "state": result.local_transaction_state.value, "msg_id": result.msg_id,
             "queue": result.message_queue.queue_id})
    # The broker checks the producers it knows from heartbeats (every 30 s; now, to be quick).
    await producer.instance.send_heartbeat_to_all_brokers()
    deadline = reactor.seconds() + float(timeout)
    while len(checked) < 2 and reactor.seconds() < deadline:
        await deferLater(reactor, 0.2, lambda: None)
    await deferLater(reactor, 0.5, lambda: None)  # let the oneway answers leave
    await producer.stop()
    out({"done": True})


if __name__ == "__main__":
    react(lambda reactor, *args: ensureDeferred(main(reactor, *args)), sys.argv[1:])
