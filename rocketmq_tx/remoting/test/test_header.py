"""Tests for typed custom headers and their ext-field codec."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.remoting import RemotingCommandError
from rocketmq_tx.remoting.headers import (
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)

REQUIRED_V2 = {"a": "PG", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000123", "h": "0"}


class SendHeaderTests(SynchronousTestCase):
    """SEND_MESSAGE_V2's single-letter keys."""

    def test_required_only(self) -> None:
        """a..h alone decode; i..n stay None."""
        header = SendMessageRequestHeaderV2.from_ext_fields(REQUIRED_V2)
        self.assertEqual((header.producer_group, header.topic, header.queue_id, header.born_timestamp),
                         ("PG", "TopicTest", 1, 1700000000123))
        self.assertEqual((header.properties, header.reconsume_times, header.unit_mode, header.max_reconsume_times,
                          header.batch, header.broker_name), (None,) * 6)
        self.assertEqual(header.to_ext_fields(), REQUIRED_V2)

    def test_all_keys(self) -> None:
        """i..n decode with their types; booleans travel as true/false."""
        ext = dict(REQUIRED_V2, i="TAGS\x01A", j="3", k="false", l="16", m="TRUE", n="broker-a")
        header = SendMessageRequestHeaderV2.from_ext_fields(ext)
        self.assertEqual((header.properties, header.reconsume_times, header.unit_mode, header.max_reconsume_times,
                          header.batch, header.broker_name), ("TAGS\x01A", 3, False, 16, True, "broker-a"))
        self.assertEqual(header.to_ext_fields()["m"], "true")

    def test_each_required_missing(self) -> None:
        """Each of a..h missing fails with Java's message."""
        for key in REQUIRED_V2:
            ext = {k: v for k, v in REQUIRED_V2.items() if k != key}
            with self.subTest(key=key):
                e = self.assertRaises(RemotingCommandError, SendMessageRequestHeaderV2.from_ext_fields, ext)
                self.assertEqual(str(e), f"the custom field <{key}> is null")

    def test_bad_number(self) -> None:
        """A non-numeric integer field is a clear error."""
        e = self.assertRaises(RemotingCommandError, SendMessageRequestHeaderV2.from_ext_fields,
                              dict(REQUIRED_V2, e="one"))
        self.assertIn("<e>", str(e))

    def test_numbers_past_a_long(self) -> None:
        """Long.parseLong's range: a 100-digit queue id or offset is refused, the extremes are not."""
        for value in (str(2 ** 63), str(-2 ** 63 - 1), "9" * 100):
            e = self.assertRaises(RemotingCommandError, SendMessageRequestHeaderV2.from_ext_fields,
                                  dict(REQUIRED_V2, g=value))
            self.assertIn("<g>", str(e))
        for value in (2 ** 63 - 1, -2 ** 63):
            header = SendMessageRequestHeaderV2.from_ext_fields(dict(REQUIRED_V2, g=str(value)))
            self.assertEqual(header.born_timestamp, value)

    def test_unknown_keys_ignored(self) -> None:
        """Extra keys (5.x clients add some) do not matter."""
        SendMessageRequestHeaderV2.from_ext_fields(dict(REQUIRED_V2, bname="b", ns="x", oway="false"))

    def test_v1_v2_conversion(self) -> None:
        """V1 and V2 carry the same fields under different keys."""
        v2 = SendMessageRequestHeaderV2.from_ext_fields(dict(REQUIRED_V2, i="p", j="0", l="3", n="bk"))
        v1 = v2.to_v1()
        self.assertEqual(v1.to_ext_fields()["producerGroup"], "PG")
        self.assertEqual(v1.to_ext_fields()["bname"], "bk")
        self.assertEqual(v1.to_v2(), v2)
        self.assertEqual(SendMessageRequestHeader.from_ext_fields(v1.to_ext_fields()), v1)

    @settings(max_examples=200, deadline=None)
    @given(st.builds(SendMessageResponseHeader, msg_id=st.text(min_size=1), queue_id=st.integers(0, 1 << 20),
                     queue_offset=st.integers(0, 1 << 62), transaction_id=st.none() | st.text(min_size=1)))
    def test_round_trip(self, header: SendMessageResponseHeader) -> None:
        """Any header survives ext fields and back."""
        self.assertEqual(SendMessageResponseHeader.from_ext_fields(header.to_ext_fields()), header)

    def test_pull_header(self) -> None:
        """PullMessageRequestHeader keys are Java's field names."""
        header = PullMessageRequestHeader("g", "t", 0, 5, 32, 2, 0, 15000, None, 0)
        self.assertEqual(header.to_ext_fields()["suspendTimeoutMillis"], "15000")
        self.assertEqual(PullMessageRequestHeader.from_ext_fields(header.to_ext_fields()), header)


class GeneratedCodecTests(SynchronousTestCase):
    """The generated codec keeps declared defaults and refuses undeclared fields."""

    def test_defaults_for_absent_optional_fields(self) -> None:
        """An absent optional field takes its declared default, not None."""
        from rocketmq_tx.remoting.headers.namesrv import RegisterBrokerRequestHeader

        header = RegisterBrokerRequestHeader.from_ext_fields({
            "brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "haServerAddr": "h:1", "brokerId": "0"})
        self.assertEqual((header.compressed, header.body_crc32, header.enable_acting_master), (False, 0, None))

    def test_plain_fields_refused(self) -> None:
        """Every field must say its wire key."""
        from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header

        class Bad(CommandCustomHeader):
            topic: str = "x"

        self.assertRaises(TypeError, custom_header, Bad)
