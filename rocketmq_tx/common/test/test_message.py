"""
Tests for :mod:`rocketmq_tx.common.message`.
"""

from __future__ import annotations

from hypothesis import given, settings
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.message import (
    KEY_SEPARATOR,
    Message,
    MessageConst,
    MessageExt,
    MessageQueue,
    java_parse_boolean,
    properties_to_string,
    string_to_properties,
    wait_store_msg_ok,
)
from rocketmq_tx.common.test.strategies import property_maps


class PropertiesToStringTests(SynchronousTestCase):
    """
    :func:`properties_to_string` writes what Java 4.9.1+ writes.
    """

    def test_separators(self) -> None:
        """
        Name 0x01 value, entries joined by 0x02, no trailing 0x02.
        """
        self.assertEqual(
            properties_to_string({"TAGS": "TagA", "KEYS": "k1 k2"}),
            "TAGS\x01TagA\x02KEYS\x01k1 k2",
        )

    def test_empty(self) -> None:
        """
        No properties give the empty string.
        """
        self.assertEqual(properties_to_string({}), "")

    def test_none_values_skipped(self) -> None:
        """
        Entries whose value is ``None`` are left out, as Java skips null values.
        """
        self.assertEqual(properties_to_string({"A": None, "B": "b", "C": None}), "B\x01b")

    def test_trailing_separator(self) -> None:
        """
        On request the text ends with 0x02, as Java 4.9.0 and 5.5.1 write it; never for an
        empty map.
        """
        self.assertEqual(
            properties_to_string({"A": "a", "B": "b"}, trailing_separator=True), "A\x01a\x02B\x01b\x02"
        )
        self.assertEqual(properties_to_string({}, trailing_separator=True), "")

    def test_empty_value_written(self) -> None:
        """
        An empty (not ``None``) value is written, although readers will drop it.
        """
        self.assertEqual(properties_to_string({"A": ""}), "A\x01")
        self.assertEqual(string_to_properties("A\x01"), {})


class StringToPropertiesTests(SynchronousTestCase):
    """
    :func:`string_to_properties` follows Java 4.9.1+'s tolerant rules.
    """

    def test_simple(self) -> None:
        """
        Well-formed text parses to its entries.
        """
        self.assertEqual(
            string_to_properties("TAGS\x01TagA\x02KEYS\x01k1"), {"TAGS": "TagA", "KEYS": "k1"}
        )

    def test_trailing_separator(self) -> None:
        """
        A trailing 0x02 (4.9.0 and Go writers) is ignored.
        """
        self.assertEqual(string_to_properties("A\x01a\x02B\x01b\x02"), {"A": "a", "B": "b"})

    def test_empty_string(self) -> None:
        """
        The empty string has no properties.
        """
        self.assertEqual(string_to_properties(""), {})

    def test_empty_segments_dropped(self) -> None:
        """
        Empty segments, segments without 0x01, empty names and empty values are dropped.
        """
        text = "\x02\x02A\x01a\x02noseparator\x02\x01novalue\x02nokey\x01\x02\x01\x02B\x01b"
        self.assertEqual(string_to_properties(text), {"A": "a", "B": "b"})

    def test_short_segments(self) -> None:
        """
        The shortest usable segment is 3 characters: one each of name, 0x01 and value.
        """
        self.assertEqual(string_to_properties("a\x01b"), {"a": "b"})
        self.assertEqual(string_to_properties("a\x01"), {})
        self.assertEqual(string_to_properties("\x01b"), {})

    def test_value_keeps_later_name_value_separators(self) -> None:
        """
        The name ends at the first 0x01; later 0x01 characters belong to the value.
        """
        self.assertEqual(string_to_properties("k\x01v\x01w"), {"k": "v\x01w"})

    def test_separator_only_in_next_segment(self) -> None:
        """
        A segment without its own 0x01 is dropped even if a later segment has one.
        """
        self.assertEqual(string_to_properties("abc\x02k\x01v"), {"k": "v"})

    def test_repeated_name_last_wins(self) -> None:
        """
        A repeated name keeps the last value, as ``HashMap.put`` does.
        """
        self.assertEqual(string_to_properties("k\x01one\x02k\x01two"), {"k": "two"})

    @settings(max_examples=200, deadline=None)
    @given(property_maps)
    def test_round_trip(self, properties: dict[str, str]) -> None:
        """
        Any map with non-empty names and values survives a round trip.
        """
        self.assertEqual(string_to_properties(properties_to_string(properties)), properties)

    @settings(max_examples=200, deadline=None)
    @given(property_maps)
    def test_round_trip_trailing_separator(self, properties: dict[str, str]) -> None:
        """
        Text written the 4.9.0 way, with a trailing 0x02, reads the same.
        """
        text = properties_to_string(properties) + "\x02"
        self.assertEqual(string_to_properties(text), properties)


class MessageTests(SynchronousTestCase):
    """
    Convenience accessors of :class:`Message`.
    """

    def test_defaults(self) -> None:
        """
        A new message has no properties (no implicit ``WAIT``) and ``WAIT`` reads as true.
        """
        msg = Message("T")
        self.assertEqual(msg.properties, {})
        self.assertTrue(msg.wait_store_msg_ok)
        self.assertIsNone(msg.tags)
        self.assertEqual(msg.keys, [])
        self.assertEqual(msg.delay_time_level, 0)
        self.assertIsNone(msg.unique_key)
        self.assertIsNone(msg.transaction_id)

    def test_tags(self) -> None:
        """
        ``tags`` reads and writes ``TAGS``; ``None`` removes it.
        """
        msg = Message("T")
        msg.tags = "TagA"
        self.assertEqual(msg.properties, {MessageConst.PROPERTY_TAGS: "TagA"})
        self.assertEqual(msg.tags, "TagA")
        msg.tags = None
        self.assertEqual(msg.properties, {})

    def test_keys_from_list(self) -> None:
        """
        A list of keys is stored space-separated and read back as a list.
        """
        msg = Message("T")
        msg.keys = ["k1", "k2"]
        self.assertEqual(msg.properties["KEYS"], "k1" + KEY_SEPARATOR + "k2")
        self.assertEqual(msg.keys, ["k1", "k2"])

    def test_keys_from_string(self) -> None:
        """
        A string is stored as it is; reading splits it and skips empty pieces.
        """
        msg = Message("T")
        msg.keys = "a  b "
        self.assertEqual(msg.properties["KEYS"], "a  b ")
        self.assertEqual(msg.keys, ["a", "b"])

    def test_delay_time_level(self) -> None:
        """
        ``delay_time_level`` is the integer in ``DELAY``.
        """
        msg = Message("T")
        msg.delay_time_level = 3
        self.assertEqual(msg.properties, {"DELAY": "3"})
        self.assertEqual(msg.delay_time_level, 3)

    def test_timer_properties(self) -> None:
        """
        ``deliver_time_ms``, ``delay_time_sec`` and ``delay_time_ms`` are the 5.x TIMER_* properties.
        """
        msg = Message("T")
        self.assertEqual((msg.deliver_time_ms, msg.delay_time_sec, msg.delay_time_ms), (0, 0, 0))
        msg.deliver_time_ms = 1767268805000
        msg.delay_time_sec = 10
        msg.delay_time_ms = 2500
        self.assertEqual(msg.properties, {"TIMER_DELIVER_MS": "1767268805000", "TIMER_DELAY_SEC": "10",
                                          "TIMER_DELAY_MS": "2500"})
        self.assertEqual((msg.deliver_time_ms, msg.delay_time_sec, msg.delay_time_ms), (1767268805000, 10, 2500))

    def test_wait_store_msg_ok(self) -> None:
        """
        ``wait_store_msg_ok`` writes "true"/"false".
        """
        msg = Message("T")
        msg.wait_store_msg_ok = False
        self.assertEqual(msg.properties, {"WAIT": "false"})
        self.assertFalse(msg.wait_store_msg_ok)

    def test_wait_read_as_java(self) -> None:
        """
        ``WAIT`` reads as Java's ``isWaitStoreMsgOK``: absent is true, else ``Boolean.parseBoolean``.
        """
        for value, expected in ((None, True), ("true", True), ("TRUE", True), ("True", True),
                                ("false", False), ("yes", False), ("1", False), (" true", False), ("", False)):
            properties = {} if value is None else {"WAIT": value}
            self.assertIs(wait_store_msg_ok(properties), expected, value)
            self.assertIs(Message("T", properties=dict(properties)).wait_store_msg_ok, expected, value)
        self.assertFalse(java_parse_boolean(None))

    def test_property_helpers(self) -> None:
        """
        ``put_property``/``get_property``/``clear_property`` edit the dict.
        """
        msg = Message("T")
        msg.put_property("X", "1")
        self.assertEqual(msg.get_property("X"), "1")
        msg.clear_property("X")
        msg.clear_property("X")
        self.assertIsNone(msg.get_property("X"))


class MessageExtTests(SynchronousTestCase):
    """
    Derived ids of :class:`MessageExt`.
    """

    def test_offset_msg_id(self) -> None:
        """
        ``offset_msg_id`` is computed from the store host and the commit log offset.
        """
        msg = MessageExt("T", store_host=("10.0.0.1", 10911), commit_log_offset=0x1234)
        self.assertEqual(msg.offset_msg_id, "0A00000100002A9F0000000000001234")

    def test_msg_id_prefers_unique_key(self) -> None:
        """
        ``msg_id`` is the ``UNIQ_KEY`` when present, otherwise the offset id, as a Java
        consumer reports it.
        """
        msg = MessageExt("T", store_host=("10.0.0.1", 10911), commit_log_offset=1)
        self.assertEqual(msg.msg_id, msg.offset_msg_id)
        msg.unique_key = "AC11000100002A9F0000000000000001"
        self.assertEqual(msg.msg_id, "AC11000100002A9F0000000000000001")

    def test_is_a_message(self) -> None:
        """
        A ``MessageExt`` is a ``Message`` and keeps its accessors.
        """
        msg = MessageExt("T", properties={"TAGS": "x"})
        self.assertIsInstance(msg, Message)
        self.assertEqual(msg.tags, "x")


class MessageQueueTests(SynchronousTestCase):
    """
    :class:`MessageQueue` is a hashable, ordered value.
    """

    def test_hashable_value(self) -> None:
        """
        Equal queues hash equal and work as dict keys.
        """
        a = MessageQueue("T", "broker-a", 0)
        self.assertEqual({a: 1}[MessageQueue("T", "broker-a", 0)], 1)
        self.assertNotEqual(a, MessageQueue("T", "broker-a", 1))

    def test_frozen(self) -> None:
        """
        Fields cannot be reassigned.
        """
        a = MessageQueue("T", "broker-a", 0)
        with self.assertRaises(AttributeError):
            a.queue_id = 2  # type: ignore[misc]

    def test_order(self) -> None:
        """
        Sorting goes by topic, then broker name, then queue id.
        """
        queues = [
            MessageQueue("T", "b", 0),
            MessageQueue("T", "a", 1),
            MessageQueue("S", "z", 9),
            MessageQueue("T", "a", 0),
        ]
        self.assertEqual(
            sorted(queues),
            [
                MessageQueue("S", "z", 9),
                MessageQueue("T", "a", 0),
                MessageQueue("T", "a", 1),
                MessageQueue("T", "b", 0),
            ],
        )
