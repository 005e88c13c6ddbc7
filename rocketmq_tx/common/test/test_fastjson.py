"""Tests for reading fastjson's dialect and writing standard JSON."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.fastjson import ObjectKey


class LoadsTests(SynchronousTestCase):
    """What Java writes, we read."""

    def test_numeric_keys(self) -> None:
        """BrokerData.brokerAddrs in the legacy route form: unquoted numeric keys read as strings."""
        self.assertEqual(fastjson.loads(b'{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}}'),
                         {"brokerAddrs": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"}})

    def test_quoted_and_unquoted_agree(self) -> None:
        """The standard form gives the same result."""
        self.assertEqual(fastjson.loads('{0:"a",-1:"b"}'), fastjson.loads('{"0":"a","-1":"b"}'))

    def test_object_keys(self) -> None:
        """ConsumeStats.offsetTable: MessageQueue beans as keys."""
        text = '{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":5}}}'
        table = fastjson.loads(text)["offsetTable"]
        key = ObjectKey({"topic": "t", "brokerName": "b", "queueId": 0})
        self.assertEqual(table[key], {"brokerOffset": 5})

    def test_object_keys_inside_object_keys(self) -> None:
        """An object key holding both kinds of key (found by fuzzing: was a TypeError from sorting)."""
        table = fastjson.loads('{{"a":1,{"b":1}:2}:1, {"x":{{"y":1}:1,"z":2}}:2}')
        self.assertEqual(sorted(table.values()), [1, 2])
        key = ObjectKey({"a": 1, ObjectKey({"b": 1}): 2})
        self.assertEqual(table[key], 1)
        self.assertEqual(fastjson.dumps({key: 1}), b'{{"a":1,{"b":1}:2}:1}')

    def test_long_suffix_quotes_and_commas(self) -> None:
        """Trailing L on longs, single quotes, unquoted names, stray commas."""
        self.assertEqual(fastjson.loads("{a:12L,'b':'x\\'y',,c:[1,,2,],}"), {"a": 12, "b": "x'y", "c": [1, 2]})

    def test_escapes_and_unicode(self) -> None:
        """String escapes in the lenient path."""
        self.assertEqual(fastjson.loads("{k:'\\u4e16\\n\\t\\\\'}"), {"k": "\u4e16\n\t\\"})

    def test_surrogate_escapes(self) -> None:
        """
        A \\u pair is one character; a lone surrogate is '?' as Java writes it, never an
        unencodable str (found by fuzzing).
        """
        self.assertEqual(fastjson.loads("{a:'\\ud83d\\ude00'}"), {"a": "\U0001F600"})
        self.assertEqual(fastjson.loads("{a:'x\\ud800\\ud800y\\udc00'}"), {"a": "x??y?"})
        self.assertEqual(fastjson.loads("{a:'\\udc00\\ud83d\\ude00z'}"), {"a": "?\U0001F600z"})

    def test_errors(self) -> None:
        """Broken input raises JSONDecodeError (a ValueError), never anything else."""
        for text in ["", "{", "{a", "{a:}", "[1", "{'a", "{a:tru}", "{a:'\\u12'}", "{" * 1000, "1 2"]:
            with self.subTest(text=text[:10]):
                self.assertRaises(ValueError, fastjson.loads, text)


class DumpsTests(SynchronousTestCase):
    """What we write, Java reads."""

    def test_standard_json(self) -> None:
        """Compact, keys quoted (numbers too), UTF-8 kept raw as fastjson writes it."""
        self.assertEqual(fastjson.dumps({"a": {0: "x"}, "u": "\u4e16"}), '{"a":{"0":"x"},"u":"\u4e16"}'.encode())

    def test_object_keys_round_trip(self) -> None:
        """Object keys are written as objects, which fastjson reads back into a bean."""
        key = ObjectKey({"brokerName": "b", "queueId": 0, "topic": "t"})
        data = fastjson.dumps({"offsetTable": {key: 5}})
        self.assertEqual(data, b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5}}')
        self.assertEqual(fastjson.loads(data), {"offsetTable": {key: 5}})
