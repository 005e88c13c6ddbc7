"""
The struct codec of :mod:`rocketmq_tx.common.messagecodec` against the ``construct``
declarations of :mod:`rocketmq_tx.common.formats`, plus fuzzing of the decoders.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib
from typing import Any

from construct import ConstructError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.formats import (
    BatchMessageBody,
    BatchMessageEntry,
    BlankRecord,
    MessageRecord,
    MessageRecords,
)
from rocketmq_tx.common.message import Message, MessageExt, properties_to_string
from rocketmq_tx.common.messagecodec import (
    decode_batch,
    decode_message,
    decode_messages,
    encode_batch,
    encode_message,
)
from rocketmq_tx.common.sysflag import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
)
from rocketmq_tx.common.test.strategies import int32s, message_exts, property_maps

MessageRecordCompiled = MessageRecord.compile()
BatchMessageEntryCompiled = BatchMessageEntry.compile()

EXAMPLES = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def record_fields(msg: MessageExt) -> dict[str, Any]:
    """
    The ``construct`` build arguments of *msg*, with the magic and CRC chosen by the rules of
    the specification (not by the codec under test).
    """
    topic_length = len(msg.topic.encode())
    return dict(
        magic_code=MESSAGE_MAGIC_CODE if topic_length <= 127 else MESSAGE_MAGIC_CODE_V2,
        body_crc=zlib.crc32(msg.body) & 0x7FFFFFFF,
        queue_id=msg.queue_id,
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=dict(host=msg.born_host[0], port=msg.born_host[1]),
        store_timestamp=msg.store_timestamp,
        store_host=dict(host=msg.store_host[0], port=msg.store_host[1]),
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        body=msg.body,
        topic=msg.topic,
        properties=properties_to_string(msg.properties),
    )


class OracleTests(SynchronousTestCase):
    """
    For generated messages, the hand-written codec and ``construct`` agree byte for byte.
    """

    def assertParsedAgrees(self, parsed: Any, decoded: MessageExt, data: bytes) -> None:
        self.assertEqual(decoded.store_size, len(data))
        for name in (
            "body_crc", "queue_id", "flag", "queue_offset", "commit_log_offset", "sys_flag",
            "born_timestamp", "store_timestamp", "reconsume_times",
            "prepared_transaction_offset", "body", "topic",
        ):
            self.assertEqual(parsed[name], getattr(decoded, name), name)
        self.assertEqual((parsed.born_host.host, parsed.born_host.port), decoded.born_host)
        self.assertEqual((parsed.store_host.host, parsed.store_host.port), decoded.store_host)
        self.assertEqual(parsed.properties, properties_to_string(decoded.properties))

    @EXAMPLES
    @given(message_exts())
    def test_encode_matches_construct_build(self, msg: MessageExt) -> None:
        """
        ``encode_message`` produces what ``MessageRecord.build`` (interpreted and compiled)
        produces.
        """
        data = encode_message(msg)
        fields = record_fields(msg)
        self.assertEqual(data, MessageRecord.build(fields))
        self.assertEqual(data, MessageRecordCompiled.build(fields))

    @EXAMPLES
    @given(message_exts())
    def test_decode_matches_construct_parse(self, msg: MessageExt) -> None:
        """
        ``decode_message`` reads what ``MessageRecord.parse`` reads, and gives the message
        back.
        """
        data = encode_message(msg)
        decoded, end = decode_message(data, decompress_body=False)
        self.assertEqual(end, len(data))
        self.assertParsedAgrees(MessageRecord.parse(data), decoded, data)
        self.assertParsedAgrees(MessageRecordCompiled.parse(data), decoded, data)
        self.assertEqual(decoded.body_crc, zlib.crc32(msg.body) & 0x7FFFFFFF)
        # Everything the caller set comes back unchanged.
        msg.store_size = decoded.store_size
        msg.body_crc = decoded.body_crc
        self.assertEqual(decoded, msg)

    @settings(max_examples=50, deadline=None)
    @given(st.lists(message_exts(), max_size=5))
    def test_records_stream(self, messages: list[MessageExt]) -> None:
        """
        Concatenated records: ``decode_messages`` and ``MessageRecords`` agree.
        """
        data = b"".join(encode_message(m) for m in messages)
        decoded = decode_messages(data, decompress_body=False)
        parsed = MessageRecords.parse(data).records
        self.assertEqual(len(decoded), len(messages))
        self.assertEqual(len(parsed), len(messages))
        for p, d in zip(parsed, decoded):
            self.assertEqual(p.topic, d.topic)
            self.assertEqual(p.body, d.body)

    @EXAMPLES
    @given(st.lists(st.tuples(int32s, st.binary(max_size=100), property_maps), max_size=5))
    def test_batch_matches_construct(self, entries: list[tuple[int, bytes, dict[str, str]]]) -> None:
        """
        ``encode_batch``/``decode_batch`` agree with ``BatchMessageBody`` both ways.
        """
        messages = [Message("T", body, flag, props) for flag, body, props in entries]
        data = encode_batch(messages)
        built = BatchMessageBody.build(
            dict(
                messages=[
                    dict(flag=m.flag, body=m.body, properties=properties_to_string(m.properties))
                    for m in messages
                ]
            )
        )
        self.assertEqual(data, built)
        self.assertEqual(decode_batch(data, "T"), messages)
        parsed = BatchMessageBody.parse(data).messages
        self.assertEqual([(p.flag, p.body) for p in parsed], [(m.flag, m.body) for m in messages])
        for m in messages:
            self.assertEqual(
                BatchMessageEntryCompiled.parse(encode_batch([m])).properties,
                properties_to_string(m.properties),
            )

    def test_construct_rejects_trailing_and_blank(self) -> None:
        """
        The declarations refuse bytes beyond TOTALSIZE's fields, and describe BLANK.
        """
        data = encode_message(MessageExt(topic="T", body=b"x"))
        longer = struct.pack(">i", len(data) + 1) + data[4:] + b"\x00"
        self.assertRaises(ConstructError, MessageRecord.parse, longer)
        self.assertRaises(ConstructError, MessageRecords.parse, data + b"\x00")
        blank = BlankRecord.parse(struct.pack(">ii", 64, BLANK_MAGIC_CODE))
        self.assertEqual(blank.total_size, 64)
        self.assertRaises(ConstructError, MessageRecord.parse, struct.pack(">ii", 8, BLANK_MAGIC_CODE))


def _force_header(data: bytes, magic: int) -> bytes:
    """
    Random bytes dressed as a record: plausible TOTALSIZE and magic, so fuzzing reaches the
    deeper checks.
    """
    if len(data) < 8:
        return data
    return struct.pack(">ii", len(data), magic) + data[8:]


class FuzzTests(SynchronousTestCase):
    """
    Arbitrary, truncated and corrupted input never raises anything but
    :class:`MessageFormatError`.
    """

    def assertOnlyFormatErrors(self, data: bytes) -> None:
        for call in (
            lambda: decode_message(data),
            lambda: decode_message(data, check_crc=True, read_body=False),
            lambda: decode_messages(data),
            lambda: decode_batch(data),
        ):
            try:
                call()
            except MessageFormatError:
                pass

    @EXAMPLES
    @given(st.binary(max_size=400))
    def test_random_bytes(self, data: bytes) -> None:
        """
        Random bytes.
        """
        self.assertOnlyFormatErrors(data)

    @EXAMPLES
    @given(
        st.binary(min_size=8, max_size=400),
        st.sampled_from([MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, BLANK_MAGIC_CODE]),
    )
    def test_random_bytes_with_header(self, data: bytes, magic: int) -> None:
        """
        Random bytes behind a consistent TOTALSIZE and a known magic.
        """
        self.assertOnlyFormatErrors(_force_header(data, magic))

    @EXAMPLES
    @given(message_exts(), st.data())
    def test_truncated_records(self, msg: MessageExt, data: st.DataObject) -> None:
        """
        Every strict prefix of a valid record is refused with :class:`MessageFormatError`.
        """
        record = encode_message(msg)
        size = data.draw(st.integers(0, len(record) - 1))
        self.assertRaises(MessageFormatError, decode_message, record[:size])
        self.assertRaises(MessageFormatError, decode_messages, record + record[:size] if size else b"\x00")

    @EXAMPLES
    @given(message_exts(), st.data())
    def test_corrupted_records(self, msg: MessageExt, data: st.DataObject) -> None:
        """
        Overwriting bytes of a valid record either still decodes or raises
        :class:`MessageFormatError`.
        """
        record = bytearray(encode_message(msg))
        for _ in range(data.draw(st.integers(1, 4))):
            position = data.draw(st.integers(0, len(record) - 1))
            record[position] = data.draw(st.integers(0, 255))
        self.assertOnlyFormatErrors(bytes(record))

    @EXAMPLES
    @given(st.lists(st.tuples(int32s, st.binary(max_size=50), property_maps), min_size=1, max_size=3),
           st.data())
    def test_truncated_batches(
        self, entries: list[tuple[int, bytes, dict[str, str]]], data: st.DataObject
    ) -> None:
        """
        Cutting a batch body inside an entry is refused.
        """
        body = encode_batch([Message("T", b, f, p) for f, b, p in entries])
        last = encode_batch([Message("T", entries[-1][1], entries[-1][0], entries[-1][2])])
        start_of_last = len(body) - len(last)
        size = data.draw(st.integers(start_of_last + 1, len(body) - 1))
        self.assertRaises(MessageFormatError, decode_batch, body[:size])


class LayeringTests(SynchronousTestCase):
    """
    ``rocketmq_tx.common`` stays free of Twisted and the networking layers.
    """

    def test_no_twisted(self) -> None:
        """
        Importing every module of the package in a fresh interpreter loads neither Twisted
        nor ``rocketmq_tx.net``/``rocketmq_tx.remoting``.
        """
        code = (
            "import sys\n"
            "import rocketmq_tx.common, rocketmq_tx.common.formats, rocketmq_tx.common.messagecodec\n"
            "import rocketmq_tx.common.msgid, rocketmq_tx.common.sysflag, rocketmq_tx.common.errors\n"
            "bad = [m for m in sys.modules if m.split('.')[0] == 'twisted'\n"
            "       or m.startswith(('rocketmq_tx.net', 'rocketmq_tx.remoting'))]\n"
            "print(','.join(bad))\n"
        )
        import rocketmq_tx

        root = os.path.dirname(os.path.dirname(os.path.abspath(rocketmq_tx.__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
        output = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()
        self.assertEqual(output, "")
