"""
Topic and group attributes (Java 5.5.0 ``AttributeParser``, ``AttributeUtil``,
``TopicAttributes``): parsing and applying modifications, with Java's messages (checked
against the 5.5.0 classes; the universes in the order the JVM prints them).
"""

from __future__ import annotations

from twisted.trial.unittest import TestCase

from rocketmq_tx.common.attribute import (
    SUBSCRIPTION_GROUP_ATTRIBUTES,
    TOPIC_ATTRIBUTES,
    AttributeAlterError,
    alter_current_attributes,
    parse_to_map,
    parse_to_string,
)


class ParseTests(TestCase):
    def test_parse(self) -> None:
        """``+k=v`` pairs and ``-k`` deletions keep their signs; empty input is no change."""
        self.assertEqual(parse_to_map("+message.type=FIFO,-reserve.time"),
                         {"+message.type": "FIFO", "-reserve.time": ""})
        self.assertEqual(parse_to_map(""), {})
        self.assertEqual(parse_to_map(None), {})
        # Java's split: a trailing comma is dropped, a second '=' ends the value.
        self.assertEqual(parse_to_map("+a=b=c,"), {"+a": "b"})

    def test_parse_refusals(self) -> None:
        """Java's messages for a pair it cannot read."""
        cases = {
            "a=b": ("add/alter attribute format is wrong: a", "java.lang.RuntimeException"),
            "+a": ("delete attribute format is wrong: +a", "java.lang.RuntimeException"),
            "+a=1,+a=2": ("key duplication: +a", "java.lang.RuntimeException"),
            "+a=": ("Index 1 out of bounds for length 1", "java.lang.ArrayIndexOutOfBoundsException"),
            "+a,,-b": ("delete attribute format is wrong: +a", "java.lang.RuntimeException"),
        }
        for text, (message, java_class) in cases.items():
            with self.assertRaises(AttributeAlterError) as caught:
                parse_to_map(text)
            self.assertEqual((str(caught.exception), caught.exception.java_class), (message, java_class), text)

    def test_parse_to_string(self) -> None:
        """The inverse: ``k=v`` and a bare key for an empty value."""
        self.assertEqual(parse_to_string({"+a": "1", "-b": ""}), "+a=1,-b")
        self.assertEqual(parse_to_string(None), "")


class AlterTests(TestCase):
    def alter(self, create: bool, current: dict[str, str], text: str) -> dict[str, str]:
        return alter_current_attributes(create, TOPIC_ATTRIBUTES, current, parse_to_map(text))

    def refused(self, create: bool, current: dict[str, str], text: str) -> str:
        with self.assertRaises(AttributeAlterError) as caught:
            self.alter(create, current, text)
        return str(caught.exception)

    def test_create(self) -> None:
        """On creation every ``+`` key is set, unchangeable ones included."""
        self.assertEqual(self.alter(True, {}, "+message.type=FIFO,+queue.type=BatchCQ"),
                         {"message.type": "FIFO", "queue.type": "BatchCQ"})

    def test_update(self) -> None:
        """Afterwards ``+`` adds or replaces, ``-`` removes, the rest stays."""
        current = {"message.type": "FIFO", "reserve.time": "10"}
        self.assertEqual(self.alter(False, current, "+message.type=DELAY,-reserve.time"), {"message.type": "DELAY"})
        self.assertEqual(self.alter(False, current, ""), current)

    def test_refusals(self) -> None:
        """Java's messages, word for word."""
        self.assertEqual(self.refused(True, {}, "-message.type"),
                         "only add attribute is supported while creating topic. key: message.type")
        self.assertEqual(self.refused(True, {}, "+unknown.key=1"), "unsupported key: unknown.key")
        self.assertEqual(self.refused(True, {}, "+message.type=BAD"),
                         "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, PRIORITY, FIFO, DELAY, LITE, NORMAL]")
        self.assertEqual(self.refused(False, {"queue.type": "SimpleCQ"}, "+queue.type=BatchCQ"),
                         "attempt to update an unchangeable attribute. key: queue.type")
        self.assertEqual(self.refused(False, {}, "-message.type"),
                         "attempt to delete a nonexistent key: message.type")
        self.assertEqual(self.refused(True, {}, "+reserve.time=-2"),
                         "value is not in range(-1, 9223372036854775807)")
        self.assertEqual(self.refused(True, {}, "+reserve.time=x"), 'For input string: "x"')
        self.assertEqual(self.refused(True, {}, "+reserve.time=99999999999999999999"),
                         'For input string: "99999999999999999999"')
        self.assertEqual(self.refused(True, {}, "+a-b=1"), "kv string format wrong.")
        self.assertEqual(self.refused(False, {"message.type": "FIFO"}, "+message.type=FIFO,-message.type"),
                         "alter duplication key. key: message.type")

    def test_group_attributes(self) -> None:
        """5.5.0's group attributes: ranges, booleans, enums and free strings."""
        ok = alter_current_attributes(True, SUBSCRIPTION_GROUP_ATTRIBUTES, {}, {
            "+priority.factor": "5", "+lite.sub.model": "Exclusive", "+lite.bind.topic": "x",
            "+lite.sub.reset.offset.exclusive": "TRUE"})
        self.assertEqual(ok["priority.factor"], "5")
        with self.assertRaises(AttributeAlterError) as caught:
            alter_current_attributes(True, SUBSCRIPTION_GROUP_ATTRIBUTES, {},
                                     {"+lite.sub.reset.offset.exclusive": "yes"})
        self.assertEqual(str(caught.exception), "boolean attribute format is wrong.")
