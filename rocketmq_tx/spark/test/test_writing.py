"""Rows to messages for the ``rocketmq`` sink, and sending them, against the threaded fake cluster."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.spark.options import OptionError, WriteOptions
from rocketmq_tx.spark.writing import check_columns, row_to_message, send_rows
from rocketmq_tx.testing.fakebroker import ThreadedFakeServer

OPTIONS = WriteOptions("127.0.0.1:1", topic="Default")


class RowTests(SynchronousTestCase):
    def test_row_to_message(self) -> None:
        msg = row_to_message(OPTIONS, {"body": bytearray(b"b"), "keys": ["k1", "k2"], "tags": "T1",
                                       "properties": {"color": "red", "none": None}})
        self.assertEqual((msg.topic, msg.body, msg.keys, msg.tags, msg.properties["color"]),
                         ("Default", b"b", ["k1", "k2"], "T1", "red"))
        self.assertNotIn("none", msg.properties)
        other = row_to_message(OPTIONS, {"body": "text", "topic": "Other", "keys": "single"})
        self.assertEqual((other.topic, other.body, other.keys), ("Other", b"text", ["single"]))

    def test_bad_rows(self) -> None:
        with self.assertRaisesRegex(ValueError, "null body"):
            row_to_message(OPTIONS, {"body": None})
        with self.assertRaisesRegex(ValueError, "no topic"):
            row_to_message(WriteOptions("h:1"), {"body": b"x"})

    def test_check_columns(self) -> None:
        check_columns(OPTIONS, ["body"])
        check_columns(WriteOptions("h:1"), ["body", "topic"])
        with self.assertRaisesRegex(OptionError, "needs a 'body' column"):
            check_columns(OPTIONS, ["value"])
        with self.assertRaisesRegex(OptionError, "no topic"):
            check_columns(WriteOptions("h:1"), ["body"])


class SendTests(SynchronousTestCase):
    def test_send_rows(self) -> None:
        server = ThreadedFakeServer(("broker-a",))
        self.addCleanup(server.close)
        server.cluster.add_topic("W", 2)
        options = WriteOptions(server.namesrv_addr, topic="W")
        rows = [{"body": f"m{i}".encode(), "tags": "x", "ignored": 1} for i in range(6)]
        self.assertEqual(send_rows(options, ["body", "tags", "ignored"], iter(rows)), 6)
        stored = [m for q in (0, 1) for m in server.cluster.messages[("broker-a", "W", q)]]
        self.assertEqual(sorted(m.body for m in stored), [f"m{i}".encode() for i in range(6)])
        self.assertEqual({m.tags for m in stored}, {"x"})
