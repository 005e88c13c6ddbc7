"""
Tests for the record codec of :mod:`rocketmq_tx.common.messagecodec`: hand-made byte vectors
and edge cases. Batches and compression have their own modules; generated-value tests against
the ``construct`` declarations are in ``test_formats``.
"""

from __future__ import annotations

import struct

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.messagecodec import (
    BORN_HOST_POSITION,
    PHY_POS_POSITION,
    QUEUE_OFFSET_POSITION,
    SYSFLAG_POSITION,
    calc_record_size,
    decode_message,
    decode_messages,
    encode_message,
    encode_record,
    java_string_hash,
    pack_host,
    patch_record,
    peek_record,
    store_timestamp_position,
    tags_code,
)
from rocketmq_tx.common.sysflag import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MessageSysFlag,
)

# A record as a 4.9 broker stores it: IPv4 hosts, V1 magic.
RECORD = bytes.fromhex(
    "0000007a"  #  0 TOTALSIZE 122 = 91 + 5 (body) + 9 (topic) + 17 (properties)
    "daa320a7"  #  4 MAGICCODE V1
    "77d18982"  #  8 BODYCRC crc32(b"Hello") & 0x7fffffff
    "00000001"  # 12 QUEUEID 1
    "00000007"  # 16 FLAG 7
    "0000000000000002"  # 20 QUEUEOFFSET 2
    "0000000000000100"  # 28 PHYSICALOFFSET 256
    "00000000"  # 36 SYSFLAG 0
    "0000018bcfe56800"  # 40 BORNTIMESTAMP 1700000000000
    "c0a8000a" "0000d431"  # 48 BORNHOST 192.168.0.10:54321
    "0000018bcfe5687b"  # 56 STORETIMESTAMP 1700000000123
    "0a000001" "00002a9f"  # 64 STOREHOSTADDRESS 10.0.0.1:10911
    "00000003"  # 72 RECONSUMETIMES 3
    "0000000000000000"  # 76 PREPARED TRANSACTION OFFSET 0
    "00000005"  # 84 BODYLENGTH 5
    "48656c6c6f"  # 88 BODY "Hello"
    "09"  # 93 TOPICLENGTH 9
    "546f70696354657374"  # 94 TOPIC "TopicTest"
    "0011"  # 103 PROPERTIESLENGTH 17
    "544147530154616741" "02" "4b455953016b31"  # 105 "TAGS\x01TagA" 0x02 "KEYS\x01k1"
)

RECORD_MESSAGE = MessageExt(
    topic="TopicTest",
    body=b"Hello",
    flag=7,
    properties={"TAGS": "TagA", "KEYS": "k1"},
    queue_id=1,
    store_size=122,
    queue_offset=2,
    sys_flag=0,
    born_timestamp=1700000000000,
    born_host=("192.168.0.10", 54321),
    store_timestamp=1700000000123,
    store_host=("10.0.0.1", 10911),
    commit_log_offset=256,
    body_crc=0x77D18982,
    reconsume_times=3,
    prepared_transaction_offset=0,
)


def _ipv6_message() -> MessageExt:
    return MessageExt(
        topic="T",
        body=b"",
        properties={},
        queue_offset=9,
        born_timestamp=1,
        born_host=("2001:db8::1", 1),
        store_timestamp=2,
        store_host=("fe80::2", 2),
        commit_log_offset=3,
    )


class RecordVectorTests(SynchronousTestCase):
    """
    The annotated IPv4 record.
    """

    def test_encode(self) -> None:
        """
        Encoding the message gives the annotated bytes.
        """
        self.assertEqual(encode_message(RECORD_MESSAGE), RECORD)

    def test_decode(self) -> None:
        """
        Decoding the bytes gives every field back, and the offset after the record.
        """
        msg, end = decode_message(RECORD)
        self.assertEqual(msg, RECORD_MESSAGE)
        self.assertEqual(end, 122)
        self.assertEqual(msg.offset_msg_id, "0A00000100002A9F0000000000000100")
        self.assertEqual(msg.msg_id, msg.offset_msg_id)

    def test_decode_at_offset(self) -> None:
        """
        A record inside a larger buffer decodes from its offset.
        """
        msg, end = decode_message(b"junk" + RECORD + b"more", 4)
        self.assertEqual(msg, RECORD_MESSAGE)
        self.assertEqual(end, 126)

    def test_buffer_types(self) -> None:
        """
        bytearray and memoryview work like bytes, and the body comes back as bytes.
        """
        for buf in (bytearray(RECORD), memoryview(RECORD)):
            msg, _ = decode_message(buf)
            self.assertEqual(msg, RECORD_MESSAGE)
            self.assertIs(type(msg.body), bytes)

    def test_size(self) -> None:
        """
        :func:`calc_record_size` agrees with the encoder: 91 + body + topic + properties.
        """
        self.assertEqual(calc_record_size(5, 9, 17), len(RECORD))
        self.assertEqual(calc_record_size(0, 1, 0, MessageSysFlag.BORNHOST_V6_FLAG), 104)
        self.assertEqual(calc_record_size(0, 200, 0, 0x30), 91 + 24 + 1 + 200)

    def test_skip_body(self) -> None:
        """
        ``read_body=False`` leaves the body empty but reads everything else.
        """
        msg, end = decode_message(RECORD, read_body=False)
        self.assertEqual(msg.body, b"")
        self.assertEqual(msg.properties, RECORD_MESSAGE.properties)
        self.assertEqual(end, 122)

    def test_crc(self) -> None:
        """
        ``check_crc`` accepts the record and rejects one with a changed body byte.
        """
        decode_message(RECORD, check_crc=True)
        corrupt = bytearray(RECORD)
        corrupt[88] ^= 0xFF
        decode_message(corrupt)  # unchecked: decodes
        self.assertRaises(MessageFormatError, decode_message, corrupt, check_crc=True)
        self.assertRaises(
            MessageFormatError, decode_message, corrupt, check_crc=True, read_body=False
        )

    def test_unique_key_is_msg_id(self) -> None:
        """
        With a ``UNIQ_KEY`` property, ``msg_id`` is that key.
        """
        msg = MessageExt(**{**_fields(RECORD_MESSAGE), "properties": {"UNIQ_KEY": "ABC"}})
        decoded, _ = decode_message(encode_message(msg))
        self.assertEqual(decoded.msg_id, "ABC")


def _fields(msg: MessageExt) -> dict[str, object]:
    return {name: getattr(msg, name) for name in msg.__dataclass_fields__}


class LayoutVariantTests(SynchronousTestCase):
    """
    IPv6 hosts and the V2 magic.
    """

    def test_ipv6_hosts(self) -> None:
        """
        IPv6 hosts take 20 bytes each and the encoder sets both IPv6 bits.
        """
        msg = _ipv6_message()
        data = encode_message(msg)
        self.assertEqual(len(data), 91 + 24 + 1)
        self.assertEqual(struct.unpack_from(">i", data, SYSFLAG_POSITION)[0], 0x30)
        self.assertEqual(
            data[BORN_HOST_POSITION : BORN_HOST_POSITION + 20],
            bytes.fromhex("20010db8000000000000000000000001" "00000001"),
        )
        self.assertEqual(struct.unpack_from(">q", data, store_timestamp_position(0x30))[0], 2)
        store_host_at = store_timestamp_position(0x30) + 8
        self.assertEqual(
            data[store_host_at : store_host_at + 20],
            bytes.fromhex("fe800000000000000000000000000002" "00000002"),
        )
        decoded, _ = decode_message(data)
        self.assertEqual(decoded.born_host, ("2001:db8::1", 1))
        self.assertEqual(decoded.store_host, ("fe80::2", 2))
        self.assertEqual(decoded.sys_flag, 0x30)
        self.assertEqual(decoded.queue_offset, 9)
        self.assertEqual(decoded.commit_log_offset, 3)
        self.assertEqual(len(decoded.offset_msg_id), 56)

    def test_mixed_hosts(self) -> None:
        """
        Only the store host IPv6: only its bit is set; a stale bit for the other is cleared.
        """
        msg = MessageExt(
            topic="T", sys_flag=0x10, born_host=("1.2.3.4", 5), store_host=("::1", 6)
        )
        data = encode_message(msg)
        self.assertEqual(struct.unpack_from(">i", data, SYSFLAG_POSITION)[0], 0x20)
        self.assertEqual(store_timestamp_position(0x20), 56)
        decoded, _ = decode_message(data)
        self.assertEqual((decoded.born_host, decoded.store_host), (("1.2.3.4", 5), ("::1", 6)))

    def test_v2_magic_long_topic(self) -> None:
        """
        A 200-character topic needs the V2 magic and a 2-byte topic length.
        """
        topic = "T" * 200
        msg = MessageExt(topic=topic, body=b"b", born_host=("1.1.1.1", 1), store_host=("2.2.2.2", 2))
        data = encode_message(msg)
        self.assertEqual(struct.unpack_from(">i", data, 4)[0], MESSAGE_MAGIC_CODE_V2)
        self.assertEqual(len(data), 91 + 1 + 1 + 200)
        self.assertEqual(data[89:91], b"\x00\xc8")  # after BODY at 88: int16 200
        decoded, _ = decode_message(data)
        self.assertEqual(decoded.topic, topic)

    def test_v1_up_to_127(self) -> None:
        """
        127 bytes still fit the V1 layout; the limit counts UTF-8 bytes.
        """
        data = encode_message(MessageExt(topic="t" * 127))
        self.assertEqual(struct.unpack_from(">i", data, 4)[0], MESSAGE_MAGIC_CODE)
        data = encode_message(MessageExt(topic="é" * 64))  # 128 bytes
        self.assertEqual(struct.unpack_from(">i", data, 4)[0], MESSAGE_MAGIC_CODE_V2)
        self.assertEqual(decode_message(data)[0].topic, "é" * 64)


class EncodeLimitTests(SynchronousTestCase):
    """
    Values that do not fit are refused.
    """

    def test_properties_too_long(self) -> None:
        """
        Properties over 32767 bytes are refused (Java: PROPERTIES_SIZE_EXCEEDED).
        """
        msg = MessageExt(topic="T", properties={"k": "v" * 32765})  # 32767 bytes: fits
        encode_message(msg)
        msg.properties["k"] += "v"
        self.assertRaises(MessageFormatError, encode_message, msg)

    def test_out_of_range(self) -> None:
        """
        A number too large for its Java type raises :class:`MessageFormatError`.
        """
        self.assertRaises(MessageFormatError, encode_message, MessageExt(topic="T", queue_id=2**31))
        self.assertRaises(MessageFormatError, encode_message, MessageExt(topic="T", flag=-(2**31) - 1))

    def test_host_name(self) -> None:
        """
        Hosts must be IP literals.
        """
        msg = MessageExt(topic="T", store_host=("broker.example", 10911))
        self.assertRaises(MessageFormatError, encode_message, msg)

    def test_bad_packed_host(self) -> None:
        """
        :func:`encode_record` checks the packed host lengths.
        """
        self.assertRaises(
            MessageFormatError, encode_record, topic=b"T", body=b"", properties=b"", queue_id=0,
            flag=0, queue_offset=0, commit_log_offset=0, sys_flag=0, born_timestamp=0,
            born_host=b"\x00" * 7, store_timestamp=0, store_host=pack_host("1.2.3.4", 1),
        )


class LowLevelTests(SynchronousTestCase):
    """
    :func:`encode_record`, :func:`patch_record` and :func:`peek_record` for the store.
    """

    def test_encode_record_pieces(self) -> None:
        """
        Encoding from pre-encoded pieces gives the same record; a given CRC is used as is.
        """
        data = encode_record(
            topic=b"TopicTest", body=b"Hello", properties=b"TAGS\x01TagA\x02KEYS\x01k1",
            queue_id=1, flag=7, queue_offset=2, commit_log_offset=256, sys_flag=0,
            born_timestamp=1700000000000, born_host=pack_host("192.168.0.10", 54321),
            store_timestamp=1700000000123, store_host=pack_host("10.0.0.1", 10911),
            reconsume_times=3,
        )
        self.assertEqual(data, RECORD)
        data = encode_record(
            topic=b"T", body=b"x", properties=b"", queue_id=0, flag=0, queue_offset=0,
            commit_log_offset=0, sys_flag=0, born_timestamp=0, born_host=pack_host("1.2.3.4", 1),
            store_timestamp=0, store_host=pack_host("1.2.3.4", 1), body_crc=12345,
        )
        self.assertEqual(decode_message(data)[0].body_crc, 12345)

    def test_patch(self) -> None:
        """
        Queue offset, physical offset and store timestamp can be rewritten in place, for
        IPv4 and IPv6 born hosts.
        """
        for msg in (RECORD_MESSAGE, _ipv6_message()):
            buf = bytearray(b"\xee" * 10 + encode_message(msg))
            patch_record(buf, 10, queue_offset=-5, commit_log_offset=1 << 40, store_timestamp=77)
            decoded, _ = decode_message(buf, 10)
            self.assertEqual(
                (decoded.queue_offset, decoded.commit_log_offset, decoded.store_timestamp),
                (-5, 1 << 40, 77),
            )
            self.assertEqual(decoded.born_timestamp, msg.born_timestamp)
            self.assertEqual(decoded.store_host, msg.store_host)

    def test_patch_positions(self) -> None:
        """
        The exported positions are where Java's ``MessageDecoder`` says.
        """
        self.assertEqual((QUEUE_OFFSET_POSITION, PHY_POS_POSITION, SYSFLAG_POSITION), (20, 28, 36))
        self.assertEqual(store_timestamp_position(0), 56)
        self.assertEqual(store_timestamp_position(MessageSysFlag.BORNHOST_V6_FLAG), 68)

    def test_patch_out_of_bounds(self) -> None:
        """
        Patching past the buffer raises :class:`MessageFormatError`.
        """
        self.assertRaises(MessageFormatError, patch_record, bytearray(20), 0, queue_offset=1)
        self.assertRaises(MessageFormatError, patch_record, bytearray(RECORD), 0, queue_offset=2**63)

    def test_peek(self) -> None:
        """
        :func:`peek_record` returns TOTALSIZE and the magic, including BLANK's.
        """
        self.assertEqual(peek_record(RECORD), (122, MESSAGE_MAGIC_CODE))
        blank = struct.pack(">ii", 4096, BLANK_MAGIC_CODE) + bytes(100)
        self.assertEqual(peek_record(blank), (4096, BLANK_MAGIC_CODE))
        self.assertRaises(MessageFormatError, peek_record, blank[:7])


class DecodeErrorTests(SynchronousTestCase):
    """
    Malformed input raises :class:`MessageFormatError` and nothing else.
    """

    def assertMalformed(self, data: bytes, offset: int = 0) -> MessageFormatError:
        return self.assertRaises(MessageFormatError, decode_message, data, offset)

    def test_truncated(self) -> None:
        """
        Every strict prefix of a record is refused.
        """
        for size in range(len(RECORD)):
            self.assertMalformed(RECORD[:size])

    def test_offset_out_of_range(self) -> None:
        """
        Negative offsets and offsets at or past the end are refused.
        """
        self.assertMalformed(RECORD, -1)
        self.assertMalformed(RECORD, len(RECORD))
        self.assertMalformed(RECORD, len(RECORD) + 5)

    def test_blank(self) -> None:
        """
        A BLANK filler is not a message.
        """
        error = self.assertMalformed(struct.pack(">ii", 200, BLANK_MAGIC_CODE) + bytes(192))
        self.assertIn("BLANK", str(error))

    def test_bad_magic(self) -> None:
        """
        An unknown magic is refused.
        """
        data = bytearray(RECORD)
        data[7] ^= 1
        self.assertIn("magic", str(self.assertMalformed(bytes(data))))

    def _with(self, position: int, fmt: str, value: int) -> bytes:
        data = bytearray(RECORD)
        struct.pack_into(fmt, data, position, value)
        return bytes(data)

    def test_total_size_disagrees(self) -> None:
        """
        TOTALSIZE larger or smaller than the fields is refused, even with bytes to spare.
        """
        self.assertMalformed(self._with(0, ">i", 123) + b"\x00")
        self.assertMalformed(self._with(0, ">i", 121))
        self.assertMalformed(self._with(0, ">i", -1))
        self.assertMalformed(self._with(0, ">i", 10))

    def test_bad_lengths(self) -> None:
        """
        Negative or oversized BODYLENGTH, TOPICLENGTH and PROPERTIESLENGTH are refused.
        """
        self.assertMalformed(self._with(84, ">i", -1))
        self.assertMalformed(self._with(84, ">i", 6))
        self.assertMalformed(self._with(84, ">i", 2**31 - 1))
        self.assertMalformed(self._with(93, ">B", 0x80))  # a Java byte: -128
        self.assertMalformed(self._with(93, ">B", 10))
        self.assertMalformed(self._with(103, ">h", -1))
        self.assertMalformed(self._with(103, ">h", 16))

    def test_ipv6_flag_on_ipv4_record(self) -> None:
        """
        Setting an IPv6 bit shifts every later field, which the length checks catch.
        """
        self.assertMalformed(self._with(36, ">i", 0x10))
        self.assertMalformed(self._with(36, ">i", 0x20))

    def test_invalid_utf8(self) -> None:
        """
        Bad UTF-8 in topic or properties decodes with replacement characters, as Java does.
        """
        data = bytearray(RECORD)
        data[94] = 0xFF
        self.assertEqual(decode_message(bytes(data))[0].topic, "\ufffdopicTest")

    def test_trailing_garbage_in_stream(self) -> None:
        """
        :func:`decode_messages` refuses a partial record after complete ones (Java drops it).
        """
        self.assertRaises(MessageFormatError, decode_messages, RECORD + RECORD[:50])
        self.assertRaises(MessageFormatError, decode_messages, RECORD + b"\x00")


class DecodeMessagesTests(SynchronousTestCase):
    """
    :func:`decode_messages` reads pull/query/view bodies.
    """

    def test_several(self) -> None:
        """
        Records laid end to end decode in order.
        """
        other = _ipv6_message()
        messages = decode_messages(RECORD + encode_message(other) + RECORD)
        self.assertEqual(len(messages), 3)
        self.assertEqual(messages[0], RECORD_MESSAGE)
        self.assertEqual(messages[1].born_host, other.born_host)
        self.assertEqual(messages[2], RECORD_MESSAGE)

    def test_empty(self) -> None:
        """
        An empty body has no messages.
        """
        self.assertEqual(decode_messages(b""), [])

    def test_options(self) -> None:
        """
        Decode options apply to every record.
        """
        messages = decode_messages(RECORD * 2, read_body=False)
        self.assertEqual([m.body for m in messages], [b"", b""])


class JavaStringHashTests(SynchronousTestCase):
    """
    :func:`java_string_hash` equals Java ``String.hashCode()``.
    """

    def test_known_values(self) -> None:
        """
        Values computed by Java.
        """
        self.assertEqual(java_string_hash(""), 0)
        self.assertEqual(java_string_hash("TagA"), 2598919)
        self.assertEqual(java_string_hash("hello"), 99162322)
        self.assertEqual(java_string_hash("Aa"), java_string_hash("BB"))
        self.assertEqual(java_string_hash("Aa"), 2112)
        # The classic string whose hash is Integer.MIN_VALUE.
        self.assertEqual(java_string_hash("polygenelubricants"), -(2**31))

    def test_non_bmp(self) -> None:
        """
        A character outside the BMP counts as its two UTF-16 surrogates:
        U+1F600 is D83D DE00, so the hash is 0xD83D * 31 + 0xDE00.
        """
        self.assertEqual(java_string_hash("\U0001F600"), 55357 * 31 + 56832)
        self.assertEqual(java_string_hash("\U0001F600"), 1772899)
        self.assertEqual(java_string_hash("a\U0001F600"), (97 * 31 + 55357) * 31 + 56832)

    def test_bmp_non_ascii(self) -> None:
        """
        BMP characters are one unit each: "é" is 233, "中" is 20013.
        """
        self.assertEqual(java_string_hash("é"), 233)
        self.assertEqual(java_string_hash("中文"), 20013 * 31 + 25991)

    def test_tags_code(self) -> None:
        """
        No tag gives 0; otherwise the hash.
        """
        self.assertEqual(tags_code(None), 0)
        self.assertEqual(tags_code(""), 0)
        self.assertEqual(tags_code("TagA"), 2598919)
