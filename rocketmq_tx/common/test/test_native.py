"""
The C accelerator (:mod:`rocketmq_tx._speedups`) against its pure-Python twins, which are the
reference: every function gets the same generated inputs, valid and broken, and must give the
same answer or the same exception class.
"""

from __future__ import annotations

import os
import struct
import tempfile
import zlib
from unittest import SkipTest

from hypothesis import given, settings, strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common import message, messagecodec, native
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.messagecodec import encode_record, pack_host
from rocketmq_tx.remoting import serialization
from rocketmq_tx.remoting.codes import SerializeType
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import LocalProtocolError, RemoteProtocolError
from rocketmq_tx.store import commitlog, index

speedups = native.speedups


def _require_native(case: SynchronousTestCase) -> None:
    if speedups is not None:
        return
    if os.environ.get("CI"):
        case.fail("rocketmq_tx._speedups is not built: the C accelerator must be there in CI")
    if os.environ.get("ROCKETMQ_TX_PURE"):
        raise SkipTest("ROCKETMQ_TX_PURE is set")
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
        self.assertIs(serialization.decode_rocketmq_header, speedups.decode_rocketmq_header)
        self.assertIs(serialization.encode_rocketmq_header, speedups.encode_rocketmq_header)

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

    @given(st.lists(st.tuples(names, st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=8)),
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
           prepared=int64, crc=st.one_of(st.none(), st.integers(0, 2**31 - 1)))
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

    @given(code=st.integers(-(2**15), 2**15 - 1), language=st.integers(0, 255), version=st.integers(-(2**15), 2**15 - 1),
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
