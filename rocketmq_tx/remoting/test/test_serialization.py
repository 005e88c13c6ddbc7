"""Tests for the JSON and ROCKETMQ header encodings, against annotated byte vectors."""

from __future__ import annotations

from hypothesis import given, settings
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting import LanguageCode, RemoteProtocolError, RemotingCommand, SerializeType
from rocketmq_tx.remoting.formats import RocketMQHeader
from rocketmq_tx.remoting.serialization import (
    decode_json_header,
    decode_rocketmq_header,
    encode_json_header,
    encode_rocketmq_header,
)
from rocketmq_tx.testing.strategies import commands

# A ROCKETMQ header as Java's RocketMQSerializable writes it.
BINARY_HEADER = bytes.fromhex(
    "0136"  # code 310 (SEND_MESSAGE_V2)
    "00"  # language JAVA
    "0199"  # version 409 (V4_9_8)
    "0000002a"  # opaque 42
    "00000000"  # flag: request
    "00000000"  # remarkLength 0: no remark
    "00000013"  # extFieldsLength 19
    "0001" "61" "00000002" "5047"  # "a" -> "PG"
    "0001" "62" "00000003" "546f70"  # "b" -> "Top"
)

# The header a 4.9.8 Java client sends for GET_ROUTEINFO_BY_TOPIC (fastjson, sorted keys).
JAVA_JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA",'
    b'"opaque":7,"serializeTypeCurrentRPC":"JSON","version":409}'
)


class RocketMQHeaderTests(SynchronousTestCase):
    """The ROCKETMQ binary header."""

    def test_decode_vector(self) -> None:
        """Every field of the annotated vector is read."""
        cmd = decode_rocketmq_header(BINARY_HEADER, b"body")
        self.assertEqual(
            cmd,
            RemotingCommand(
                code=310, language=LanguageCode.JAVA, version=409, opaque=42, flag=0, remark=None,
                ext_fields={"a": "PG", "b": "Top"}, body=b"body", serialize_type=SerializeType.ROCKETMQ,
            ),
        )

    def test_encode_vector(self) -> None:
        """Encoding gives the annotated bytes exactly."""
        cmd = RemotingCommand(code=310, language=0, version=409, opaque=42, ext_fields={"a": "PG", "b": "Top"},
                              serialize_type=SerializeType.ROCKETMQ)
        self.assertEqual(encode_rocketmq_header(cmd), BINARY_HEADER)

    def test_minimum_header(self) -> None:
        """An empty command is the 21-byte minimum."""
        header = encode_rocketmq_header(RemotingCommand(code=0, language=0, version=0))
        self.assertEqual(header, bytes(21))

    def test_duplicate_keys_last_wins(self) -> None:
        """A key written twice (Java's fast encoder after makeCustomHeaderToNet) keeps the last value."""
        entries = bytes.fromhex("0001" "61" "00000001" "31" "0001" "61" "00000001" "32")
        header = (bytes.fromhex("000a" "00" "0000" "00000001" "00000000" "00000000")
                  + len(entries).to_bytes(4, "big") + entries)
        self.assertEqual(decode_rocketmq_header(header, b"").ext_fields, {"a": "2"})

    def test_zero_length_strings_absent(self) -> None:
        """Empty remark, keys and values read as absent, as Java reads them as null."""
        cmd = RemotingCommand(code=1, remark="", ext_fields={"k": "", "x": "y"}, serialize_type=SerializeType.ROCKETMQ)
        decoded = decode_rocketmq_header(encode_rocketmq_header(cmd), b"")
        self.assertIsNone(decoded.remark)
        self.assertEqual(decoded.ext_fields, {"x": "y"})

    def test_unknown_language_survives(self) -> None:
        """A language byte we do not know stays a number."""
        header = bytearray(BINARY_HEADER)
        header[2] = 200
        self.assertEqual(decode_rocketmq_header(bytes(header), b"").language, 200)

    def test_non_ascii(self) -> None:
        """Multi-byte UTF-8 in remark, keys and values."""
        cmd = RemotingCommand(code=1, remark="h\u00e9llo", ext_fields={"\u4e16": "\u754c\U0001f600"},
                              serialize_type=SerializeType.ROCKETMQ)
        self.assertEqual(decode_rocketmq_header(encode_rocketmq_header(cmd), b""), cmd)

    def test_code_out_of_range(self) -> None:
        """Codes over 32767 (5.x POP codes) cannot be carried; JSON can."""
        from rocketmq_tx.remoting import LocalProtocolError

        self.assertRaises(LocalProtocolError, encode_rocketmq_header, RemotingCommand(code=200050))

    def test_truncations_rejected(self) -> None:
        """Every truncation of a valid header is a RemoteProtocolError, nothing else."""
        for n in range(len(BINARY_HEADER)):
            with self.subTest(n=n):
                self.assertRaises(RemoteProtocolError, decode_rocketmq_header, BINARY_HEADER[:n], b"")

    def test_lengths_past_header(self) -> None:
        """Remark, map and entry lengths larger than the header are rejected."""
        for pos, value in [(13, 1000), (13, -1), (17, 1000), (17, -5), (21, 0x7FFF), (24, 0x7FFFFFFF)]:
            header = bytearray(BINARY_HEADER)
            size = 2 if pos == 21 else 4
            header[pos : pos + size] = value.to_bytes(size, "big", signed=True)
            with self.subTest(pos=pos, value=value):
                self.assertRaises(RemoteProtocolError, decode_rocketmq_header, bytes(header), b"")

    @settings(max_examples=300, deadline=None)
    @given(commands(SerializeType.ROCKETMQ, max_body=0))
    def test_matches_construct_declaration(self, cmd: RemotingCommand) -> None:
        """The hand codec writes what the construct declaration builds, and reads it back."""
        data = encode_rocketmq_header(cmd)
        built = RocketMQHeader.build(
            dict(code=cmd.code, language=cmd.language, version=cmd.version, opaque=cmd.opaque, flag=cmd.flag,
                 remark=cmd.remark or "", ext_fields=[dict(key=k, value=v) for k, v in cmd.ext_fields.items()])
        )
        self.assertEqual(data, built)
        parsed = RocketMQHeader.parse(data)
        self.assertEqual({e.key: e.value for e in parsed.ext_fields}, cmd.ext_fields)
        self.assertEqual(decode_rocketmq_header(data, b""), cmd)


class JSONHeaderTests(SynchronousTestCase):
    """The JSON header."""

    def test_decode_java_header(self) -> None:
        """A Java client's header."""
        cmd = decode_json_header(JAVA_JSON_HEADER, b"")
        self.assertEqual((cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark),
                         (105, LanguageCode.JAVA, 409, 7, 0, None))
        self.assertEqual(cmd.ext_fields, {"topic": "TopicTest"})
        self.assertEqual(cmd.serialize_type, SerializeType.JSON)

    def test_encode_like_fastjson(self) -> None:
        """Keys sorted, language by name, no remark when there is none."""
        cmd = RemotingCommand(code=105, language=LanguageCode.JAVA, version=409, opaque=7,
                              ext_fields={"topic": "TopicTest"})
        self.assertEqual(encode_json_header(cmd), JAVA_JSON_HEADER)

    def test_language_as_number_and_unknown_keys(self) -> None:
        """Language may be an ordinal; unknown top-level keys are ignored."""
        cmd = decode_json_header(b'{"code":1,"flag":1,"opaque":3,"language":9,"future":{"x":[1]},"remark":""}', b"")
        self.assertEqual((cmd.language, cmd.remark, cmd.flag), (LanguageCode.GO, "", 1))

    def test_unknown_language_name(self) -> None:
        """A language name we do not know becomes OTHER."""
        self.assertEqual(decode_json_header(b'{"code":1,"flag":0,"opaque":1,"language":"COBOL"}', b"").language,
                         LanguageCode.OTHER)

    def test_fastjson_leniency(self) -> None:
        """Unquoted names, single quotes and non-string ext values are accepted."""
        cmd = decode_json_header(b"{code:12,flag:0,opaque:5L,extFields:{'a':1,b:true,c:null}}", b"")
        self.assertEqual((cmd.code, cmd.opaque), (12, 5))
        self.assertEqual(cmd.ext_fields, {"a": "1", "b": "true"})

    def test_object_as_ext_key(self) -> None:
        """fastjson reads an object as a map key; as an ext field name it is its JSON text (found by fuzzing)."""
        cmd = decode_json_header(b'{code:1,flag:0,opaque:2,extFields:{{"k":1}:"v",a:{{"x":1}:2}}}', b"")
        self.assertEqual(cmd.ext_fields, {'{"k":1}': "v", "a": '{{"x":1}:2}'})

    def test_lone_surrogate_escape(self) -> None:
        """
        An escaped lone surrogate, even nested, decodes to encodable text (was a
        UnicodeEncodeError; found by fuzzing).
        """
        cmd = decode_json_header(b"{code:1,flag:0,opaque:2,remark:'\\ud800',extFields:{a:{b:'\\udc00'},c:'\\ud800'}}",
                                 b"")
        self.assertEqual((cmd.remark, cmd.ext_fields), ("?", {"a": '{"b":"?"}', "c": "?"}))

    def test_missing_required(self) -> None:
        """code, flag and opaque are required."""
        for text in [b'{"flag":0,"opaque":1}', b'{"code":1,"opaque":1}', b'{"code":1,"flag":0}',
                     b'{"code":"x","flag":0,"opaque":1}', b'{"code":true,"flag":0,"opaque":1}']:
            with self.subTest(text=text):
                self.assertRaises(RemoteProtocolError, decode_json_header, text, b"")

    def test_garbage(self) -> None:
        """Not JSON, not an object, bad UTF-8: RemoteProtocolError."""
        for text in [b"", b"[1,2]", b"\xff\xfe", b'{"code":1,', b"{" * 5000, b'"str"',
                     b'{"code":1,"flag":0,"opaque":1,"extFields":[1]}']:
            with self.subTest(text=text[:20]):
                self.assertRaises(RemoteProtocolError, decode_json_header, text, b"")

    @settings(max_examples=300, deadline=None)
    @given(commands(SerializeType.JSON, max_body=0))
    def test_round_trip(self, cmd: RemotingCommand) -> None:
        """Whatever we encode we decode unchanged."""
        self.assertEqual(decode_json_header(encode_json_header(cmd), b""), cmd)
