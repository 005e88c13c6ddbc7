"""Tests for the broadcasting consumer's local offset file."""

from __future__ import annotations

from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.client.offsetstore import LocalOffsetStore
from rocketmq_tx.common.message import MessageQueue

# What Java's LocalFileOffsetStore writes: fastjson, pretty-printed with tabs, MessageQueue objects as keys.
JAVA_FILE = (
    '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n\t\t\t"topic":"T"\n\t\t}:12,'
    '{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":1,\n\t\t\t"topic":"T"\n\t\t}:7\n\t}\n}'
)


class LocalOffsetStoreTests(SynchronousTestCase):
    def test_reads_java_file_and_round_trips(self) -> None:
        root = Path(self.mktemp())
        path = root / "1.2.3.4@5#6" / "G" / "offsets.json"
        path.parent.mkdir(parents=True)
        path.write_text(JAVA_FILE)
        store = LocalOffsetStore(root, "1.2.3.4@5#6", "G")
        mq0, mq1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
        self.assertEqual((store.read(mq0), store.read(mq1), store.read(MessageQueue("T", "x", 0))), (12, 7, None))
        store.update(mq0, 20)
        store.persist()
        self.assertEqual(LocalOffsetStore(root, "1.2.3.4@5#6", "G").offsets, {mq0: 20, mq1: 7})

    def test_missing_file(self) -> None:
        self.assertEqual(LocalOffsetStore(self.mktemp(), "c", "g").offsets, {})
