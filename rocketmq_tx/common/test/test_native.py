"""
The C accelerator (:mod:`rocketmq_tx._speedups`) against its pure-Python twins, which are the
reference: every function gets the same generated inputs, valid and broken, and must give the
same answer or the same exception class.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
import textwrap
import zlib
from collections import OrderedDict
from unittest import SkipTest

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import message, messagecodec, native
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import properties_to_string
from rocketmq_tx.common.messagecodec import encode_record, pack_host
from rocketmq_tx.remoting import serialization
from rocketmq_tx.remoting.codes import SerializeType
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import LocalProtocolError, RemoteProtocolError
from rocketmq_tx.store import commitlog, index, reader
from rocketmq_tx.testing import in_ci

speedups = native.speedups


def _require_native(case: SynchronousTestCase) -> None:
    if speedups is not None:
        return
    if os.environ.get("ROCKETMQ_TX_PURE"):
        # The pure-Python run (CI runs the unit suite this way too): the twins on purpose.
        raise SkipTest("ROCKETMQ_TX_PURE is set")
    if in_ci():
        case.fail("rocketmq_tx._speedups is not built: the C accelerator must be there in CI")
    raise SkipTest("rocketmq_tx._speedups is not built (no C compiler at install time?)")


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except (MessageFormatError, RemoteProtocolError, LocalProtocolError, ValueError, IndexError) as e:
        return ("error", type(e))


names = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=8)
texts = st.text(max_size=40)  # lone surrogates included: both hash them as UTF-16 units
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
near_int32 = st.one_of(int32, st.integers(-(2**32), 2**32))
hosts = st.one_of(st.binary(min_size=8, max_size=8), st.binary(min_size=20, max_size=20),
                  st.binary(max_size=24))


class NativeTests(SynchronousTestCase):
    def setUp(self) -> None:
        _require_native(self)

    def test_in_use(self) -> None:
        """The modules picked the C versions."""
        self.assertTrue(native.ACCELERATED)
        self.assertIs(messagecodec.java_string_hash, speedups.java_string_hash)
        self.assertIs(commitlog.get_property, speedups.get_property)
        self.assertIs(message.string_to_properties, speedups.string_to_properties)
        self.assertIs(reader.record_properties, speedups.record_properties)
        self.assertIs(serialization.decode_rocketmq_header, speedups.decode_rocketmq_header)
        self.assertIs(serialization.encode_rocketmq_header, speedups.encode_rocketmq_header)
        self.assertIs(serialization._json_command, speedups.json_command)
        from rocketmq_tx.remoting import extrainfo

        self.assertIs(extrainfo._fast_parse, speedups.parse_extra_info)

    def test_java_hash_vectors(self) -> None:
        # Values from Java's String.hashCode.
        self.assertEqual(speedups.java_string_hash(""), 0)
        self.assertEqual(speedups.java_string_hash("TagA"), 2598919)
        self.assertEqual(speedups.java_string_hash("polygenelubricants"), -2147483648)
        self.assertEqual(speedups.java_string_hash("\U0001F600"), 0xD83D * 31 + 0xDE00)

    @given(texts)
    def test_java_string_hash(self, text: str) -> None:
        self.assertEqual(speedups.java_string_hash(text), messagecodec._java_string_hash(text))

    @given(texts, texts)
    def test_topic_key_hash(self, topic: str, key: str) -> None:
        self.assertEqual(speedups.topic_key_hash(topic, key), index._topic_key_hash(topic, key))
        self.assertEqual(speedups.topic_key_hash(topic, key), index.index_key_hash(f"{topic}#{key}"))

    @given(st.lists(st.tuples(names, st.text(st.characters(blacklist_characters="\x01\x02",
                                                           blacklist_categories=("Cs",)), max_size=8)),
                    max_size=6), names)
    def test_get_property(self, pairs: list[tuple[str, str]], name: str) -> None:
        raw = "\x02".join(f"{k}\x01{v}" for k, v in pairs).encode()
        key = name.encode() + b"\x01"
        self.assertEqual(speedups.get_property(raw, key), commitlog._get_property(raw, key))

    @given(st.binary(max_size=60), st.sampled_from([b"KEYS\x01", b"A\x01", b"\x01", b"\xff\x01"]))
    def test_get_property_any_bytes(self, raw: bytes, key: bytes) -> None:
        self.assertEqual(speedups.get_property(raw, key), commitlog._get_property(raw, key))

    @given(topic=st.binary(min_size=0, max_size=140), body=st.binary(max_size=64), props=st.binary(max_size=40),
           queue_id=near_int32, flag=int32, queue_offset=int64, phys=int64, sys_flag=near_int32,
           born_ts=int64, born_host=hosts, store_ts=int64, store_host=hosts, reconsume=int32,
           prepared=int64, crc=st.one_of(st.none(), st.integers(0, 2**31 - 1), near_int32, int64))
    def test_encode_record(self, topic, body, props, queue_id, flag, queue_offset, phys, sys_flag, born_ts,
                           born_host, store_ts, store_host, reconsume, prepared, crc) -> None:
        args = (topic, body, props, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_host, store_ts,
                store_host, reconsume, prepared, crc)
        python = _outcome(lambda: encode_record(
            topic=topic, body=body, properties=props, queue_id=queue_id, flag=flag, queue_offset=queue_offset,
            commit_log_offset=phys, sys_flag=sys_flag, born_timestamp=born_ts, born_host=born_host,
            store_timestamp=store_ts, store_host=store_host, reconsume_times=reconsume,
            prepared_transaction_offset=prepared, body_crc=crc))
        self.assertEqual(_outcome(speedups.encode_record, *args), python)

    def test_encode_record_long_properties(self) -> None:
        args = [b"T", b"", b"x" * 32768, 0, 0, 0, 0, 0, 0, b"\0" * 8, 0, b"\0" * 8, 0, 0, None]
        self.assertRaises(MessageFormatError, speedups.encode_record, *args)

    @given(st.data())
    def test_validate_record(self, data: st.DataObject) -> None:
        topic = data.draw(st.binary(min_size=1, max_size=140))
        body = data.draw(st.binary(max_size=64))
        props = data.draw(st.binary(max_size=40))
        born = data.draw(st.sampled_from([pack_host("10.0.0.1", 1), pack_host("::1", 2)]))
        record = encode_record(topic=topic, body=body, properties=props, queue_id=3, flag=0, queue_offset=7,
                               commit_log_offset=100, sys_flag=0, born_timestamp=1, born_host=born,
                               store_timestamp=2, store_host=pack_host("10.0.0.2", 3))
        buf = bytearray(data.draw(st.binary(max_size=8)) + record + data.draw(st.binary(max_size=8)))
        offset = data.draw(st.integers(0, 8))
        # damage: flip bytes, or cut the buffer
        for _ in range(data.draw(st.integers(0, 3))):
            i = data.draw(st.integers(0, len(buf) - 1))
            buf[i] = data.draw(st.integers(0, 255))
        buf = bytes(buf[: data.draw(st.integers(0, len(buf)))])
        check = data.draw(st.booleans())
        self.assertEqual(speedups.validate_record(buf, offset, check, {}),
                         commitlog._validate_record(buf, offset, check, {}))

    @given(st.data())
    def test_record_properties(self, data: st.DataObject) -> None:
        topic = data.draw(st.binary(min_size=1, max_size=300))
        body = data.draw(st.binary(max_size=64))
        props = properties_to_string(data.draw(st.dictionaries(st.text(max_size=5), st.text(max_size=8),
                                                                max_size=4))).encode()
        props = data.draw(st.sampled_from([props, props + data.draw(st.binary(max_size=6))]))
        host = data.draw(st.sampled_from([pack_host("10.0.0.1", 1), pack_host("::1", 2)]))
        record = encode_record(topic=topic, body=body, properties=props[:32767], queue_id=3, flag=0,
                               queue_offset=7, commit_log_offset=100, sys_flag=0, born_timestamp=1,
                               born_host=host, store_timestamp=2, store_host=host)
        buf = bytearray(record)
        for _ in range(data.draw(st.integers(0, 3))):  # damage: flip bytes, or cut the record
            i = data.draw(st.integers(0, len(buf) - 1))
            buf[i] = data.draw(st.integers(0, 255))
        cut = bytes(buf[: data.draw(st.integers(0, len(buf)))])
        self.assertEqual(speedups.record_properties(cut), reader._record_properties(cut))

    def test_record_properties_any_bytes(self) -> None:
        for raw in (b"", b"\0" * 39, b"\xff" * 200, bytes(range(256)) * 2):
            self.assertEqual(speedups.record_properties(raw), reader._record_properties(raw))
        self.assertRaises(TypeError, speedups.record_properties, bytearray(100))

    def test_validate_record_blank_and_crc(self) -> None:
        blank = struct.pack(">ii", 100, -875286124) + bytes(92)
        self.assertEqual(speedups.validate_record(blank, 0, True, {}), (0, None, 0, 0, 0))
        self.assertEqual(speedups.validate_record(blank[:8], 0, True, {}), (0, None, 0, 0, 0))
        record = bytearray(encode_record(topic=b"T", body=b"abc", properties=b"A\x01b", queue_id=1, flag=0,
                                         queue_offset=0, commit_log_offset=0, sys_flag=0, born_timestamp=0,
                                         born_host=bytes(8), store_timestamp=0, store_host=bytes(8)))
        topics: dict[bytes, str] = {}
        self.assertEqual(speedups.validate_record(bytes(record), 0, True, topics), (len(record), "T", 1, 0, 0))
        self.assertEqual(topics, {b"T": "T"})
        record[88] ^= 1  # the body: only the CRC notices
        self.assertEqual(speedups.validate_record(bytes(record), 0, False, topics)[0], len(record))
        self.assertEqual(speedups.validate_record(bytes(record), 0, True, topics)[0], -1)
        self.assertEqual(zlib.crc32(b"abc") & 0x7FFFFFFF, struct.unpack_from(">i", record, 8)[0])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.one_of(st.none(), names), st.one_of(st.none(), st.text(" ab\U0001F600", max_size=8)),
                              st.one_of(st.none(), names), st.integers(0, 5000)), max_size=12),
           st.integers(1, 7), st.integers(1, 9))
    def test_index_put_keys(self, messages, slots: int, entries: int) -> None:
        """Two index files written with the same keys, one per implementation, end up equal."""
        with tempfile.TemporaryDirectory() as d:
            files = [index.IndexFile(os.path.join(d, name), slots, entries) for name in ("1", "2")]
            phy = 0
            for uniq, keys, tags, step in messages:
                phy += 1
                ts = 1_700_000_000_000 + step * 997
                results = [index.IndexFile._put_keys_native(files[0], "Topic", uniq, keys, tags, phy, ts),
                           index.IndexFile._put_keys(files[1], "Topic", uniq, keys, tags, phy, ts)]
                self.assertEqual(results[0], results[1])
            state = [(f.begin_timestamp, f.end_timestamp, f.begin_phy_offset, f.end_phy_offset, f.hash_slot_count,
                      f.index_count) for f in files]
            self.assertEqual(state[0], state[1])
            for f in files:  # a fresh file's header is written with its first entry
                f._write_header()
            self.assertEqual(bytes(files[0].mm), bytes(files[1].mm))
            for f in files:
                f.mapped_file.close()

    @given(st.binary(max_size=80), st.binary(max_size=4))
    def test_decode_rocketmq_header_any_bytes(self, data: bytes, body: bytes) -> None:
        self._same_header(data, body)

    @given(code=st.integers(-(2**15), 2**15 - 1), language=st.integers(0, 255),
           version=st.integers(-(2**15), 2**15 - 1),
           opaque=int32, flag=int32, remark=st.one_of(st.none(), st.text(max_size=10)),
           ext=st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=5),
           cut=st.integers(0, 8), raw_tail=st.binary(max_size=3))
    def test_decode_rocketmq_header(self, code, language, version, opaque, flag, remark, ext, cut, raw_tail) -> None:
        rb = remark.encode() if remark else b""
        entries = b"".join(struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(v.encode()))
                           + v.encode() for k, v in ext.items()) + raw_tail
        data = struct.pack(">hBhiii", code, language, version, opaque, flag, len(rb)) + rb
        data += struct.pack(">i", len(entries)) + entries
        self._same_header(data[: len(data) - cut] if cut % 3 else data, b"body")

    def _same_header(self, data: bytes, body: bytes) -> None:
        def fields(cmd):
            return (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields, cmd.body,
                    cmd.serialize_type)

        c = _outcome(lambda: fields(speedups.decode_rocketmq_header(data, body)))
        py = _outcome(lambda: fields(serialization._decode_rocketmq_header(data, body)))
        self.assertEqual(c, py)

    @given(code=st.integers(-(2**15) - 2, 2**15 + 1), language=st.integers(0, 300),
           version=st.integers(-(2**15), 2**15 - 1), opaque=int32, flag=int32,
           remark=st.one_of(st.none(), st.text(max_size=10)),
           ext=st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=5))
    def test_encode_rocketmq_header(self, code, language, version, opaque, flag, remark, ext) -> None:
        cmd = RemotingCommand(code, language, version, opaque, flag, remark, ext, b"", SerializeType.ROCKETMQ)
        self.assertEqual(_outcome(speedups.encode_rocketmq_header, cmd),
                         _outcome(serialization._encode_rocketmq_header, cmd))

    @given(st.dictionaries(
        st.sampled_from(["code", "opaque", "flag", "version", "language", "remark", "extFields", "other"]),
        st.one_of(st.none(), st.booleans(), int64, st.floats(allow_nan=False), st.text(max_size=6),
                  st.sampled_from(["JAVA", "GO", "PYTHON", "CPP", "NOPE"]),
                  st.dictionaries(st.text(max_size=4), st.one_of(st.text(max_size=4), st.integers(), st.none()),
                                  max_size=3),
                  st.lists(st.integers(), max_size=2)),
        max_size=8), st.binary(max_size=3))
    def test_json_command(self, header: dict, body: bytes) -> None:
        """The plain-shape fast path builds what the general path builds, or declines (None)."""
        self._same_json_command(header, body)

    @given(code=int64, opaque=int32, flag=int32, version=st.one_of(st.none(), st.integers(0, 500)),
           language=st.one_of(st.none(), st.sampled_from(["JAVA", "GO", "OTHER", "x"]), st.integers(0, 20)),
           remark=st.one_of(st.none(), st.text(max_size=6)),
           ext=st.one_of(st.none(), st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=5)))
    def test_json_command_plain(self, code, opaque, flag, version, language, remark, ext) -> None:
        """Every header of the shape Java writes takes the fast path."""
        header = {"code": code, "opaque": opaque, "flag": flag, "serializeTypeCurrentRPC": "JSON"}
        for key, value in (("version", version), ("language", language), ("remark", remark), ("extFields", ext)):
            if value is not None:
                header[key] = value
        self.assertIsNotNone(speedups.json_command(header, b"b"))
        self._same_json_command(header, b"b")

    def _same_json_command(self, header: dict, body: bytes) -> None:
        def fields(cmd):
            return (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields, cmd.body,
                    cmd.serialize_type)

        c = speedups.json_command(header, body)
        if c is None:
            return
        python = serialization._json_header_command(header, False, body)
        self.assertEqual(fields(c), fields(python))
        self.assertIs(type(c.language), type(python.language))

    @given(st.lists(st.one_of(st.integers(-(10**19), 10**19).map(str), st.sampled_from(["+7", "-0", "007", "", "x"]),
                              st.text(max_size=4)), min_size=0, max_size=10).map(" ".join))
    def test_parse_extra_info(self, text: str) -> None:
        """The C shape gives what the Python paths give, or declines (None)."""
        from rocketmq_tx.remoting import extrainfo as ei

        c = speedups.parse_extra_info(text)
        python = _outcome(ei._parse_extra_info, text)
        if c is not None:
            self.assertEqual(("ok", c), python)
        if ei._EXTRA_INFO.fullmatch(text) is not None:  # the regex's shape is always taken in C
            self.assertIsNotNone(c)

    def test_parse_extra_info_vectors(self) -> None:
        from rocketmq_tx.remoting import extrainfo as ei

        self.assertEqual(speedups.parse_extra_info("1 2 3 4 0 broker-a 5 6"),
                         ei.ExtraInfo(1, 2, 3, 4, "0", "broker-a", 5, 6))
        self.assertEqual(speedups.parse_extra_info("-1 +2 3 999999999 1 b\u00e9 0"),
                         ei.ExtraInfo(-1, 2, 3, 999999999, "1", "b\u00e9", 0, None))
        for declined in ("1 2 3 4 0 b 5 6 7", "1 2 3 4 0 b", "1 2 3 1234567890 0 b 5", "1  2 3 4 0 b 5",
                         "1 2 3 4 0 b 5 ", "1 2 3 4 0 b \ud800", "1 2 3 4 0 \ud800 5", "1 2 3 4 0 b 5_0"):
            self.assertIsNone(speedups.parse_extra_info(declined), declined)

    def test_encode_rocketmq_header_long_key(self) -> None:
        cmd = RemotingCommand(1, 0, 0, 1, 0, None, {"k" * 40000: "v"}, b"", SerializeType.ROCKETMQ)
        self.assertRaises(LocalProtocolError, speedups.encode_rocketmq_header, cmd)

    @given(st.text(st.sampled_from("ab\x01\x02\u00e9\U0001F600"), max_size=20))
    def test_string_to_properties(self, text: str) -> None:
        self.assertEqual(list(speedups.string_to_properties(text).items()),
                         list(message._string_to_properties(text).items()))

    @given(st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.text(max_size=5), st.integers()), max_size=5))
    def test_properties_to_string(self, props: dict) -> None:
        python = "\x02".join(f"{k}\x01{v}" for k, v in props.items() if v is not None)
        self.assertEqual(speedups.properties_to_string(props), python)
        self.assertEqual(message.properties_to_string(props), python)
        self.assertEqual(message.string_to_properties(speedups.properties_to_string(props)),
                         message._string_to_properties(python))

    def test_setup_names(self) -> None:
        self.assertRaises(KeyError, speedups._setup, "Nonsense", object)


_TYPE_KEYS = ("TRAN_MSG", "__SHARDINGKEY", "__STARTDELIVERTIME", "DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC",
              "TIMER_DELAY_MS", "TAGS", "KEYS", "tran_msg")
_TYPE_VALUES = st.one_of(st.sampled_from(["true", "TRUE", "True", "tRuE", "true ", "tru", "truee", "false", "",
                                          "\uff34RUE", "\u0130rue", "1"]), st.text(max_size=5))


class MetricsCountingTests(SynchronousTestCase):
    """The metrics' per-message counting (issue #24's cost): C and twin on the same rows."""

    def setUp(self) -> None:
        _require_native(self)

    def test_in_use(self) -> None:
        from rocketmq_tx.broker import metrics as broker_metrics
        from rocketmq_tx.metrics import rpc

        self.assertIs(broker_metrics.message_type, speedups.message_type)
        self.assertIs(broker_metrics.count_message_in, speedups.count_message_in)
        self.assertIs(rpc.rpc_count, speedups.rpc_count)
        # the rows counted on every request are the compact ones the C call adds to in place
        latency = rpc.RpcLatency(10)
        self.assertTrue(latency.table.compact)
        self.assertEqual(latency._row(10, 0, False, 0).typecode, "q")

    @given(st.dictionaries(st.sampled_from(_TYPE_KEYS), _TYPE_VALUES, max_size=6))
    def test_message_type(self, props: dict) -> None:
        from rocketmq_tx.broker.metrics import _message_type

        self.assertEqual(speedups.message_type(props), _message_type(props))

    @given(st.lists(st.tuples(st.sampled_from(["T1", "T2", "T3"]),
                              st.dictionaries(st.sampled_from(_TYPE_KEYS), _TYPE_VALUES, max_size=4),
                              st.integers(0, 300), st.integers(0, 10 ** 7)), max_size=30))
    def test_count_message_in(self, sends: list) -> None:
        from rocketmq_tx.broker.metrics import _count_message_in
        from rocketmq_tx.metrics.core import MESSAGE_SIZE_BUCKETS

        tables = []
        for count in (speedups.count_message_in, _count_message_in):
            cache: dict = {}
            missed: list = []

            def fallback(topic, msg_type, msg_num, wrote, cache=cache, missed=missed):
                missed.append((topic, msg_type, msg_num, wrote))
                cache.setdefault(topic, {})[msg_type] = ([0, 0], [0] * (len(MESSAGE_SIZE_BUCKETS) + 2))

            for topic, props, msg_num, wrote in sends:
                count((cache, fallback, MESSAGE_SIZE_BUCKETS), topic, props, msg_num, wrote)
            tables.append((cache, missed))
        self.assertEqual(tables[0], tables[1])

    @given(st.lists(st.tuples(st.sampled_from(["T1", "T2"]),
                              st.dictionaries(st.sampled_from(_TYPE_KEYS), _TYPE_VALUES, max_size=4),
                              st.integers(1, 300), st.integers(0, 10 ** 7)), max_size=30))
    def test_count_message_in_compact_rows(self, sends: list) -> None:
        """The hot tables' rows (array('q'), added to in place by the C call) end with the
        numbers that list rows counted by the twin end with."""
        from array import array

        from rocketmq_tx.broker.metrics import _count_message_in
        from rocketmq_tx.metrics.core import MESSAGE_SIZE_BUCKETS

        width = len(MESSAGE_SIZE_BUCKETS) + 2
        tables = []
        for count, make in ((speedups.count_message_in, lambda n: array("q", bytes(8 * n))),
                            (_count_message_in, lambda n: array("q", bytes(8 * n))),
                            (_count_message_in, lambda n: [0] * n)):
            cache: dict = {}

            def fallback(topic, msg_type, msg_num, wrote, cache=cache, make=make):
                cache.setdefault(topic, {})[msg_type] = (make(2), make(width))

            for topic, props, msg_num, wrote in sends:
                count((cache, fallback, MESSAGE_SIZE_BUCKETS), topic, props, msg_num, wrote)
            tables.append({t: {k: (list(a), list(b)) for k, (a, b) in types.items()} for t, types in cache.items()})
        self.assertEqual(tables[0], tables[2])
        self.assertEqual(tables[1], tables[2])

    def test_compact_row_refusals(self) -> None:
        """A compact row must be an int64 array wide enough; a sum past 2**63 is an
        OverflowError and leaves the row as it was."""
        from array import array

        from rocketmq_tx.metrics.core import MESSAGE_SIZE_BUCKETS

        width = len(MESSAGE_SIZE_BUCKETS) + 2
        for row in (array("d", [0.0, 0.0]), array("q", [0]), array("q", [0, 0, 0]), array("i", [0, 0]),
                    bytearray(16)):
            cache = {"T": {"normal": (row, array("q", bytes(8 * width)))}}
            self.assertRaises(TypeError, speedups.count_message_in, (cache, None, MESSAGE_SIZE_BUCKETS), "T", {}, 1, 5)
        full = array("q", [2 ** 63 - 1, 0])
        size_row = array("q", bytes(8 * width))
        cache = {"T": {"normal": (full, size_row)}}
        self.assertRaises(OverflowError, speedups.count_message_in, (cache, None, MESSAGE_SIZE_BUCKETS), "T", {}, 1, 5)
        self.assertEqual(list(full), [2 ** 63 - 1, 0])
        self.assertEqual(list(size_row), [0] * width)

    def test_count_message_in_refusals(self) -> None:
        from rocketmq_tx.metrics.core import MESSAGE_SIZE_BUCKETS

        cache = {"T": {"normal": ([0, 0], [0, 0])}}  # a size row of the wrong length
        self.assertRaises(TypeError, speedups.count_message_in, (cache, None, MESSAGE_SIZE_BUCKETS), "T", {}, 1, 5)
        self.assertRaises(TypeError, speedups.count_message_in, ({"T": []}, None, MESSAGE_SIZE_BUCKETS), "T", {}, 1, 5)
        self.assertRaises(TypeError, speedups.count_message_in, ({}, None, [1.0]), "T", {}, 1, 5)
        self.assertRaises(TypeError, speedups.count_message_in, ({}, None, MESSAGE_SIZE_BUCKETS), "T", {}, "1", 5)
        self.assertRaises(TypeError, speedups.count_message_in, ({}, None, MESSAGE_SIZE_BUCKETS), "T", "normal", 1, 5)
        # the state is one tuple of three, as the partial binds it
        self.assertRaises(TypeError, speedups.count_message_in, {}, None, MESSAGE_SIZE_BUCKETS, "T", {}, 1, 5)
        self.assertRaises(TypeError, speedups.count_message_in, ({}, None), "T", {}, 1, 5)

    def test_rpc_count(self) -> None:
        import time
        from array import array

        from rocketmq_tx.metrics.core import RPC_LATENCY_BUCKETS
        from rocketmq_tx.metrics.rpc import _rpc_count, row_key
        from rocketmq_tx.remoting.command import RPC_ONEWAY

        lp = frozenset({11, 200050})
        cases = []
        for code, rcode, flag, later in ((10, 0, 0, False), (11, 0, 0, True), (11, 19, 0, False), (200050, 0, 0, True),
                                         (37, 0, RPC_ONEWAY, False), (310, 1, RPC_ONEWAY | 1, True)):
            request = RemotingCommand.request(code)
            request.flag = flag
            cases.append((request, request.make_response(rcode), later))
        # ages far from a bucket edge (1, 3, 5, 7, 10, 100, 1000, ... ms), so the two calls agree
        ages = (0.0, 0.0019, 0.0041, 0.0062, 0.0085, 0.05, 0.5, 1.5, 4.0)
        results = []
        for count in (speedups.rpc_count, _rpc_count):
            rows: dict = {}
            missed: list = []

            def fallback(request, response, started, later, rows=rows, missed=missed):
                long_polling = bool(later and request.code in lp)
                missed.append((request.code, response.code, long_polling, request.flag & RPC_ONEWAY))
                # the compact rows RpcLatency makes (list rows: test_count_message_in)
                rows.setdefault(request.code, {})[row_key(response.code, request.flag, long_polling)] = \
                    array("q", bytes(8 * (len(RPC_LATENCY_BUCKETS) + 2)))

            for request, response, later in cases:
                for age in ages:
                    count((rows, fallback, lp, RPC_LATENCY_BUCKETS), request, response, time.monotonic() - age, later)
                count((rows, fallback, lp, RPC_LATENCY_BUCKETS), request, None, time.monotonic(), later)
            results.append((rows, missed))
        (c_rows, c_missed), (py_rows, py_missed) = results
        self.assertEqual(c_missed, py_missed)
        self.assertEqual(len(c_missed), len(cases))
        c_flat = {(code, k): row for code, inner in c_rows.items() for k, row in inner.items()}
        py_flat = {(code, k): row for code, inner in py_rows.items() for k, row in inner.items()}
        self.assertEqual({k: v[:-1] for k, v in c_flat.items()}, {k: v[:-1] for k, v in py_flat.items()})
        for key, row in c_flat.items():  # the sums of whole ms: a call may fall a ms later than its twin
            self.assertLessEqual(abs(row[-1] - py_flat[key][-1]), len(ages))
            self.assertGreaterEqual(row[-1], sum(int(a * 1000) for a in ages[1:]))

    def test_rpc_count_huge_response_code(self) -> None:
        """A response code past the packed key's range is the fallback's every time (it counts
        it in Python), never an OverflowError."""
        import time

        from rocketmq_tx.metrics.core import RPC_LATENCY_BUCKETS
        from rocketmq_tx.metrics.rpc import row_key

        request = RemotingCommand.request(10)
        for rcode in (2 ** 62, -(2 ** 62), 2 ** 80):
            response = request.make_response(0)
            response.code = rcode
            rows = {10: {row_key(rcode, 0, False): [0] * (len(RPC_LATENCY_BUCKETS) + 2)}}
            missed: list = []
            for _ in range(3):
                speedups.rpc_count((rows, lambda *a, missed=missed: missed.append(a[1].code), frozenset(),
                                    RPC_LATENCY_BUCKETS), request, response, time.monotonic(), False)
            self.assertEqual(missed, [rcode] * 3)

    def test_rpc_count_refusals(self) -> None:
        request = RemotingCommand.request(10)
        response = request.make_response(0)
        self.assertRaises(TypeError, speedups.rpc_count, ({}, None, {11}, (1.0,)), request, response, 1, False)
        self.assertRaises(TypeError, speedups.rpc_count, ({}, None, frozenset(), [1.0]), request, response, 1.0, False)
        self.assertRaises(AttributeError, speedups.rpc_count, ({}, None, frozenset(), (1.0,)), object(), response, 1.0,
                          False)
        # the state is one tuple of four, as the partial binds it
        self.assertRaises(TypeError, speedups.rpc_count, {}, None, frozenset(), (1.0,), request, response, 1.0, False)
        self.assertRaises(TypeError, speedups.rpc_count, ({}, None, frozenset()), request, response, 1.0, False)


def _result(fn, *args):
    """The answer or the exception's class, whatever it is: hostile inputs may raise anything."""
    try:
        return ("ok", fn(*args))
    except Exception as e:
        return ("error", type(e))


class HostileStr(str):
    """A str whose own methods raise: the C versions read its characters only, as do the twins."""

    def __hash__(self) -> int:
        raise ValueError("__hash__")

    def __eq__(self, other: object) -> bool:
        raise ValueError("__eq__")

    def __str__(self) -> str:  # also what f"{x}" and format(x) call for a str subclass
        raise ValueError("__str__")


class LyingStr(str):
    """Equal to everything, with one hash for all, and another text when str() is taken."""

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return True

    def __str__(self) -> str:
        return "lie"


class HostileBytes(bytes):
    def __hash__(self) -> int:
        raise ValueError("__hash__")

    def __eq__(self, other: object) -> bool:
        raise ValueError("__eq__")


class SameHashBytes(bytes):
    """A dict key colliding with b"T" whose __eq__ runs code: raises, or empties its dict."""

    def __new__(cls, value: bytes, on_eq):
        self = super().__new__(cls, value)
        self.on_eq = on_eq
        return self

    def __hash__(self) -> int:
        return hash(b"T")

    def __eq__(self, other: object) -> bool:
        return self.on_eq()


class ItemsDict(dict):
    """A dict whose items() is not its contents, as the twins see it."""

    def __init__(self, items) -> None:
        super().__init__(a="b")
        self._items = items

    def items(self):
        return self._items() if callable(self._items) else self._items


def _raising_items():
    yield ("a", "b")
    raise KeyError("items")


# Neither str nor bytes (nor None where None means "absent"): the C versions and the twins
# must raise the same class for each.
NON_TEXT = [None, 0, 7, -1, 2**64, 1.5, b"ab", bytearray(b"ab"), memoryview(b"ab"), ["a"]]


class HostileInputTests(SynchronousTestCase):
    """
    Inputs the callers never pass (other types, str subclasses with hostile methods, dicts
    changed while they are read, absurd lengths): the C versions must not crash and must give
    the twins' answer or raise the twins' exception class.
    """

    def setUp(self) -> None:
        _require_native(self)

    def same(self, c_fn, py_fn, *args) -> None:
        self.assertEqual(_result(c_fn, *args), _result(py_fn, *args), repr(args)[:200])

    def test_string_functions(self) -> None:
        texts = ["ab", "\U0001F600x", "", "a\x01b\x02c\x01", HostileStr("ab"), HostileStr("a\x01b"),
                 LyingStr("cd"), LyingStr("ef"), *NON_TEXT]
        for text in texts:
            self.same(speedups.java_string_hash, messagecodec._java_string_hash, text)
            self.same(speedups.string_to_properties, message._string_to_properties, text)
            for other in texts:
                self.same(speedups.topic_key_hash, index._topic_key_hash, text, other)

    def test_topic_key_hash_cache_sees_characters_only(self) -> None:
        """Two str subclasses that claim to be equal (same hash) get their own topic's hash."""
        for topic in ("A", "B", LyingStr("C"), LyingStr("D"), LyingStr("\u00e9")):
            self.same(speedups.topic_key_hash, index._topic_key_hash, topic, "key")

    def test_get_property(self) -> None:
        values = [b"A\x01x\x02KEYS\x01k", HostileBytes(b"KEYS\x01v"), b"", "KEYS\x01k", *NON_TEXT]
        # (not b"": the twin's rfind loop never ends on an empty name; callers pass constants)
        names = [b"KEYS\x01", HostileBytes(b"KEYS\x01"), "KEYS\x01", *NON_TEXT]
        for raw in values:
            for name in names:
                self.same(speedups.get_property, commitlog._get_property, raw, name)

    def twin_properties_to_string(self, props) -> str:
        """message.properties_to_string's own Python path (it hands exact dicts to the C one)."""
        self.patch(message, "_native_to_string", None)
        try:
            return message.properties_to_string(props)
        finally:
            self.patch(message, "_native_to_string", speedups.properties_to_string)

    def same_properties_to_string(self, make) -> None:
        """*make* builds the input afresh for each, as some inputs change while read."""
        self.assertEqual(_result(speedups.properties_to_string, make()),
                         _result(self.twin_properties_to_string, make()))

    def test_properties_to_string_other_types(self) -> None:
        values = [*NON_TEXT[:-1], "v", HostileStr("v"), LyingStr("v")]
        for value in values:
            self.same_properties_to_string(lambda value=value: {"k": value})
            if value.__class__ not in (bytearray, memoryview, HostileStr):  # unhashable
                self.same_properties_to_string(lambda value=value: {value: "v", "b": "c"})
        self.same_properties_to_string(lambda: {LyingStr("a"): "1", "b": LyingStr("2")})
        for props in (None, 5, "text", [("a", "b")], (("a", "b"),)):
            self.same_properties_to_string(lambda props=props: props)

    def test_properties_to_string_dict_subclasses(self) -> None:
        for items in ([("x", "y"), ("z", None), (1, b"2")], [("a", "b", "c")], [("a",)], ["ab"], [5], 5, None,
                      lambda: iter([("i", "j")]), _raising_items, lambda: {"p": "q"}.items()):
            self.same_properties_to_string(lambda items=items: ItemsDict(items))
        self.same_properties_to_string(lambda: OrderedDict([("b", "1"), ("a", "2")]))
        self.same_properties_to_string(lambda: type("Plain", (dict,), {})(a="1", b=None))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(names, st.one_of(st.none(), st.text(max_size=4))), min_size=1, max_size=6),
           st.integers(0, 5), st.booleans(),
           st.sampled_from(["clear", "pop_other", "pop_self", "add", "add_many", "replace", "replace_all"]))
    def test_properties_to_string_dict_changed_while_read(self, pairs, at, in_key, change) -> None:
        """
        A key's or value's __format__ (or __str__) changes the dict it is read from: the same
        RuntimeError or answer as Python, where the C loop once read the pairs it had freed.
        """
        def make():
            props: dict = {}

            class Changing(str):
                def __str__(self) -> str:
                    keys = list(props)
                    if change == "clear":
                        props.clear()
                    elif change == "pop_other":
                        props.pop(keys[-1] if keys[-1] is not self else keys[0], None)
                    elif change == "pop_self":
                        props.pop(self, None)
                    elif change == "add":
                        props["added"] = "x"
                    elif change == "add_many":
                        props.update((f"n{i}", "y" * 50) for i in range(50))
                    elif change == "replace":  # same size: Python iterates on
                        props[keys[0]] = "replaced"
                    else:
                        for k in keys:
                            props[k] = "r"
                    return "changed"

            for i, (k, v) in enumerate(pairs):
                if i == at % len(pairs):
                    k, v = (Changing(k), v) if in_key else (k, Changing(v or "v"))
                props[k] = v
            return props

        self.same_properties_to_string(make)

    def test_properties_to_string_freed_pair_in_a_child(self) -> None:
        """
        The C loop once held borrowed references across str(): a key whose __str__ empties the
        dict freed the value it then formatted. A child process runs it, so a crash fails the
        test instead of killing the run.
        """
        script = textwrap.dedent("""
            from rocketmq_tx.common.native import speedups
            props, junk = {}, []

            class Key(str):
                def __str__(self):
                    props.clear()  # frees the value
                    junk.extend(bytes(range(256)) * 4 for _ in range(1000))  # reuses its memory
                    return "k"

            class Value:
                pass

            props[Key("k")] = Value()
            try:
                speedups.properties_to_string(props)
            except RuntimeError as e:
                print("RuntimeError:", e)
        """)
        root = os.path.dirname(os.path.dirname(os.path.dirname(native.__file__)))
        env = {k: v for k, v in os.environ.items() if k != "ROCKETMQ_TX_PURE"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual((child.returncode, child.stdout),
                         (0, "RuntimeError: dictionary changed size during iteration\n"), child.stderr[-2000:])

    def test_encode_rocketmq_header(self) -> None:
        def command(remark, ext):
            return RemotingCommand(1, 0, 0, 1, 0, remark, ext, b"", SerializeType.ROCKETMQ)

        texts = ["v", "", HostileStr("h"), LyingStr("l"), "\udc80", *NON_TEXT]
        for text in texts:
            self.same(speedups.encode_rocketmq_header, serialization._encode_rocketmq_header, command(text, {}))
            self.same(speedups.encode_rocketmq_header, serialization._encode_rocketmq_header,
                      command(None, {"k": text, "k2": "v2"}))
            if text.__class__ not in (HostileStr, bytearray, memoryview, list):  # unhashable
                self.same(speedups.encode_rocketmq_header, serialization._encode_rocketmq_header,
                          command(None, {text: "v"}))
        for ext in (None, [("a", "b")], "ab", ItemsDict([("x", "y"), ("z", "w")]), ItemsDict([("x", 1)]),
                    ItemsDict([("x", "y", "z")]), ItemsDict(5), ItemsDict(_raising_items),
                    OrderedDict([("b", "1"), ("a", "2")])):
            self.same(speedups.encode_rocketmq_header, serialization._encode_rocketmq_header, command("r", ext))

    def test_decode_rocketmq_header_other_types(self) -> None:
        header = struct.pack(">hBhiii", 1, 0, 0, 1, 0, 0) + struct.pack(">i", 0)
        for data in (None, 21, header.decode("latin-1"), bytearray(header), memoryview(header),
                     HostileBytes(header), header):
            self.same(lambda d: vars(speedups.decode_rocketmq_header(d, b"")),
                      lambda d: vars(serialization._decode_rocketmq_header(d, b"")), data)

    def test_decode_rocketmq_header_extreme_lengths(self) -> None:
        """Lengths near and past int32's ends, compared with the bytes left, never added up."""
        lengths = [-(2**31), -(2**31) + 1, -1, 0, 1, 2, 7, 2**31 - 22, 2**31 - 21, 2**31 - 5, 2**31 - 1]
        for remark_len in lengths:
            self._same(struct.pack(">hBhiii", 1, 0, 0, 1, 0, remark_len) + b"ab" + struct.pack(">i", 0))
        for ext_len in lengths:
            for klen in (-(2**15), -1, 0, 1, 2**15 - 1):
                for vlen in (-(2**31), -1, 0, 1, 2**31 - 1):
                    entry = struct.pack(">h", klen) + b"k" + struct.pack(">i", vlen) + b"v"
                    self._same(struct.pack(">hBhiii", 1, 0, 0, 1, 0, 0) + struct.pack(">i", ext_len) + entry)

    def _same(self, data: bytes) -> None:
        self.same(lambda: vars(speedups.decode_rocketmq_header(data, b"")),
                  lambda: vars(serialization._decode_rocketmq_header(data, b"")))

    def test_validate_record_offsets(self) -> None:
        record = encode_record(topic=b"T", body=b"abc", properties=b"A\x01b", queue_id=1, flag=0, queue_offset=0,
                               commit_log_offset=0, sys_flag=0, born_timestamp=0, born_host=bytes(8),
                               store_timestamp=0, store_host=bytes(8))
        blank = struct.pack(">ii", 100, -875286124) + bytes(12)
        n = len(record)
        for raw in (record, blank, record + blank):
            for buf in (raw, bytearray(raw), memoryview(raw)):
                for offset in (0, 8, n, n - 8, n - 7, len(raw), len(raw) + 1, -1, -8, -n, -(2**31), -(2**63),
                               -(2**63) - 1, -(2**64), 2**31, 2**63 - 1, 2**63, 2**64, None):
                    for check in (True, False):
                        self.same(speedups.validate_record, commitlog._validate_record, buf, offset, check, {})

    def test_validate_record_extreme_lengths(self) -> None:
        """TOTALSIZE, BODYLENGTH, TOPICLENGTH and PROPERTIESLENGTH at the ends of their types."""
        for topic in (b"T", b"t" * 200):
            record = encode_record(topic=topic, body=b"abc", properties=b"A\x01b", queue_id=1, flag=0,
                                   queue_offset=0, commit_log_offset=0, sys_flag=0, born_timestamp=0,
                                   born_host=bytes(8), store_timestamp=0, store_host=bytes(8))
            width = 1 if len(topic) <= 127 else 2
            body_at, topic_at = 84, 88 + 3
            props_at = topic_at + width + len(topic)
            fields = [(0, ">i", [-(2**31), -1, 0, 39, 40, 2**31 - 1, len(record) + 1]),
                      (body_at, ">i", [-(2**31), -1, 0, 4, 2**31 - 1, len(record)]),
                      (props_at, ">h", [-(2**15), -1, 0, 2**15 - 1])]
            fields.append((topic_at, ">B", [0, 127, 128, 255]) if width == 1 else
                          (topic_at, ">h", [-(2**15), -1, 0, 2**15 - 1]))
            for at, fmt, values in fields:
                for value in values:
                    buf = bytearray(record)
                    struct.pack_into(fmt, buf, at, value)
                    for tail in (b"", b"\x01" * 8):
                        data = bytes(buf) + tail
                        self.same(speedups.validate_record, commitlog._validate_record, data, 0, True, {})

    def test_validate_record_topic_cache(self) -> None:
        """The topic cache's keys run code on a lookup (dict internals for both): same outcome."""
        record = encode_record(topic=b"T", body=b"", properties=b"", queue_id=1, flag=0, queue_offset=0,
                               commit_log_offset=0, sys_flag=0, born_timestamp=0, born_host=bytes(8),
                               store_timestamp=0, store_host=bytes(8))

        def raising():
            raise ValueError("__eq__")

        def caches() -> list:  # afresh for each: a lookup may empty one
            emptied: dict = {}
            emptied[SameHashBytes(b"X", lambda: emptied.clear() or False)] = "x"
            return [{SameHashBytes(b"X", raising): "x"}, {SameHashBytes(b"X", lambda: False): "x"},
                    {SameHashBytes(b"X", lambda: True): "cached"}, type("Plain", (dict,), {})({b"T": "cached"}),
                    emptied]

        for c_topics, py_topics in zip(caches(), caches()):
            self.assertEqual(_result(speedups.validate_record, record, 0, True, c_topics),
                             _result(commitlog._validate_record, record, 0, True, py_topics))
            self.assertEqual(len(c_topics), len(py_topics))

    def test_encode_record_body_crc_out_of_range(self) -> None:
        """A given BODYCRC that is no int32 is MessageFormatError, as every other field (it was OverflowError)."""
        for crc in (2**31, -(2**31) - 1, 2**63, -(2**64), 2**100, 1.5, b"ab"):
            args = (b"T", b"", b"", 0, 0, 0, 0, 0, 0, bytes(8), 0, bytes(8), 0, 0, crc)
            self.same(speedups.encode_record, lambda *a: encode_record(
                topic=a[0], body=a[1], properties=a[2], queue_id=a[3], flag=a[4], queue_offset=a[5],
                commit_log_offset=a[6], sys_flag=a[7], born_timestamp=a[8], born_host=a[9], store_timestamp=a[10],
                store_host=a[11], reconsume_times=a[12], prepared_transaction_offset=a[13], body_crc=a[14]), *args)
            self.assertRaises(MessageFormatError, speedups.encode_record, *args)

    def test_index_put_keys_other_types(self) -> None:
        values = ["k1 k2", "", None, HostileStr("h1 h2"), LyingStr("l"), 0, 7, b"b1 b2", bytearray(b"x")]
        with tempfile.TemporaryDirectory() as d:
            for n, (field, value) in enumerate((f, v) for f in range(4) for v in values):
                args = ["Topic", "U1", "k1 k2", "tags"]
                args[field] = value
                files = [index.IndexFile(os.path.join(d, str(2 * n + i)), 3, 9) for i in range(2)]
                try:
                    self.assertEqual(
                        _result(index.IndexFile._put_keys_native, files[0], *args, 7, 1_700_000_000_000),
                        _result(index.IndexFile._put_keys, files[1], *args, 7, 1_700_000_000_000), (field, value))
                    self.assertEqual(bytes(files[0].mm), bytes(files[1].mm))
                finally:
                    for f in files:
                        f.mapped_file.close()

    def test_index_put_keys_geometry(self) -> None:
        """Positions and counts from the caller at the ends of their types: IndexError, no write."""
        buf = bytearray(40 + 4 * 4 + 20 * 4)
        for hash_slot_num, base, count, slot_count in ((4, 56, 0, 0), (4, 2**62, 0, 0), (4, -(2**62), 0, 0),
                                                       (4, 56, 2**31 - 1, 0), (4, 56, 4, 2**31 - 1),
                                                       (2**62, 56, 0, 0), (4, 2**63 - 1, 1, 0)):
            before = bytes(buf)
            r = _result(speedups.index_put_keys, buf, hash_slot_num, 2**40, base, 1, 1, 0, 0, slot_count, count,
                        "T", "U", "a b", None, 0, 5, 1_700_000_000_000)
            if r[0] == "error":
                self.assertEqual((r, bytes(buf)), (("error", IndexError), before))
