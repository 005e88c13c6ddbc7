"""
Tests for :mod:`rocketmq_tx.common.msgid`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.msgid import (
    UniqueKeyGenerator,
    create_offset_msg_id,
    decode_offset_msg_id,
    pack_host,
    unique_key_time,
    unpack_host,
)
from rocketmq_tx.common.test.strategies import host_ports, int64s

UTC = UTC


def _at(*args: int) -> float:
    """
    Seconds since the epoch of a UTC wall-clock time.
    """
    return datetime(*args, tzinfo=UTC).timestamp()  # type: ignore[misc]


class FakeClock:
    """
    A settable clock for ``now=``.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self) -> float:
        return self.seconds


class HostPackingTests(SynchronousTestCase):
    """
    :func:`pack_host` and :func:`unpack_host` use Java's address layout.
    """

    def test_ipv4(self) -> None:
        """
        IPv4: 4 address bytes then the port as an ``int32``.
        """
        self.assertEqual(pack_host("192.168.0.10", 10911), b"\xc0\xa8\x00\x0a\x00\x00\x2a\x9f")
        self.assertEqual(unpack_host(b"\xc0\xa8\x00\x0a\x00\x00\x2a\x9f"), ("192.168.0.10", 10911))

    def test_ipv6(self) -> None:
        """
        IPv6: 16 address bytes then the port.
        """
        packed = pack_host("2001:db8::1", 80)
        self.assertEqual(packed, bytes.fromhex("20010db8000000000000000000000001" "00000050"))
        self.assertEqual(unpack_host(packed), ("2001:db8::1", 80))

    def test_not_an_address(self) -> None:
        """
        Host names and junk are refused with :class:`MessageFormatError`.
        """
        self.assertRaises(MessageFormatError, pack_host, "localhost", 1)
        self.assertRaises(MessageFormatError, pack_host, "1.2.3.4", 2**31)
        self.assertRaises(MessageFormatError, unpack_host, b"\x00" * 9)


class OffsetMsgIdTests(SynchronousTestCase):
    """
    offsetMsgId creation and decoding (Java ``createMessageId``/``decodeMessageId``).
    """

    def test_ipv4_vector(self) -> None:
        """
        32 uppercase hex digits: IP, port, offset.
        """
        msg_id = create_offset_msg_id("10.0.0.1", 10911, 0x1_0000_00AB)
        self.assertEqual(msg_id, "0A000001" "00002A9F" "00000001000000AB")
        self.assertEqual(decode_offset_msg_id(msg_id), ("10.0.0.1", 10911, 0x1_0000_00AB))

    def test_ipv6_vector(self) -> None:
        """
        56 hex digits for an IPv6 store host.
        """
        msg_id = create_offset_msg_id("fe80::1", 10911, 5)
        self.assertEqual(len(msg_id), 56)
        self.assertEqual(msg_id, "FE800000000000000000000000000001" "00002A9F" "0000000000000005")
        self.assertEqual(decode_offset_msg_id(msg_id), ("fe80::1", 10911, 5))

    def test_lowercase_accepted(self) -> None:
        """
        Lowercase hex decodes too.
        """
        self.assertEqual(
            decode_offset_msg_id("0a00000100002a9f0000000000000010"), ("10.0.0.1", 10911, 16)
        )

    def test_bad_ids(self) -> None:
        """
        Wrong lengths and non-hex text raise :class:`MessageFormatError`.
        """
        for bad in ["", "0A", "0A00000100002A9F00000000000000", "Z" * 32, "0" * 33, "0" * 55]:
            self.assertRaises(MessageFormatError, decode_offset_msg_id, bad)

    @settings(max_examples=200, deadline=None)
    @given(host_ports, int64s)
    def test_round_trip(self, host_port: tuple[str, int], offset: int) -> None:
        """
        Any address and offset survive a round trip.
        """
        host, port = host_port
        msg_id = create_offset_msg_id(host, port, offset)
        self.assertEqual(len(msg_id), 32 if ":" not in host else 56)
        self.assertEqual(msg_id, msg_id.upper())
        self.assertEqual(decode_offset_msg_id(msg_id), (host, port, offset))


class UniqueKeyGeneratorTests(SynchronousTestCase):
    """
    :class:`UniqueKeyGenerator` builds Java ``MessageClientIDSetter`` keys.
    """

    def _generator(self, clock: FakeClock, **kwargs: object) -> UniqueKeyGenerator:
        options: dict[str, object] = dict(
            ip="10.0.0.1", pid=0x1234, class_loader_hash=0x0BADCAFE, now=clock, tz=UTC
        )
        options.update(kwargs)
        return UniqueKeyGenerator(**options)  # type: ignore[arg-type]

    def test_vector(self) -> None:
        """
        Prefix = IP, int16 pid, int32 hash; suffix = int32 ms since the month start and an
        int16 counter: 32 uppercase hex digits for IPv4.
        """
        clock = FakeClock(_at(2024, 3, 5, 0, 0, 1) + 0.5)  # 4 days 1.5 s into March
        generator = self._generator(clock)
        self.assertEqual(generator.prefix, "0A000001" "1234" "0BADCAFE")
        # 4 * 86400000 + 1500 = 345601500 = 0x149975DC
        self.assertEqual(generator.create_uniq_id(), "0A00000112340BADCAFE" "149975DC" "0000")
        self.assertEqual(generator.create_uniq_id(), "0A00000112340BADCAFE" "149975DC" "0001")

    def test_pid_and_hash_truncated(self) -> None:
        """
        Only the low 16 bits of the pid and 32 bits of the hash are used (Java casts).
        """
        generator = self._generator(FakeClock(0), pid=0x7_FFFE, class_loader_hash=-1)
        self.assertEqual(generator.prefix, "0A000001" "FFFE" "FFFFFFFF")

    def test_raw_ip_bytes(self) -> None:
        """
        The address may be given as raw bytes.
        """
        generator = self._generator(FakeClock(0), ip=b"\x7f\x00\x00\x01")
        self.assertTrue(generator.prefix.startswith("7F000001"))
        self.assertRaises(ValueError, self._generator, FakeClock(0), ip=b"\x01\x02")

    def test_ipv6_length(self) -> None:
        """
        With an IPv6 address the key is 56 hex digits.
        """
        generator = self._generator(FakeClock(_at(2024, 1, 1)), ip="2001:db8::7")
        key = generator.create_uniq_id()
        self.assertEqual(len(key), 56)
        self.assertTrue(key.startswith("20010DB8000000000000000000000007"))

    def test_counter_wraps(self) -> None:
        """
        The counter is an ``int16`` and wraps from FFFF to 0000.
        """
        generator = self._generator(FakeClock(_at(2024, 3, 1)), counter=0xFFFF)
        self.assertTrue(generator.create_uniq_id().endswith("00000000" "FFFF"))
        self.assertTrue(generator.create_uniq_id().endswith("00000000" "0000"))

    def test_month_rollover(self) -> None:
        """
        Crossing into a new month restarts the time part from that month's start.
        """
        clock = FakeClock(_at(2024, 3, 31, 23, 59, 59))
        generator = self._generator(clock)
        generator.create_uniq_id()
        clock.seconds = _at(2024, 4, 1, 0, 0, 2)
        self.assertEqual(generator.create_uniq_id()[20:28], "000007D0")  # 2000 ms

    def test_late_in_month_goes_negative(self) -> None:
        """
        After ~24.8 days the Java ``int`` difference is negative; its 32 bits are written.
        """
        generator = self._generator(FakeClock(_at(2024, 3, 30)))
        self.assertEqual(generator.create_uniq_id()[20:28], "95586C00")  # 29 days

    def test_clock_step_back(self) -> None:
        """
        A clock that steps back less than 1000 s before the month start gives 0 (Java's NTP
        allowance); further back, the negative difference is written as is.
        """
        clock = FakeClock(_at(2024, 3, 2))
        generator = self._generator(clock)
        generator.create_uniq_id()
        clock.seconds = _at(2024, 3, 1) - 0.5
        self.assertEqual(generator.create_uniq_id()[20:28], "00000000")
        clock.seconds = _at(2024, 3, 1) - 2000
        self.assertEqual(generator.create_uniq_id()[20:28], "FFE17B80")  # -2000000

    def test_default_ip(self) -> None:
        """
        Without an injected IP the generator still produces well-formed keys.
        """
        key = UniqueKeyGenerator().create_uniq_id()
        self.assertIn(len(key), (32, 56))
        self.assertEqual(bytes.fromhex(key).hex().upper(), key)


class UniqueKeyTimeTests(SynchronousTestCase):
    """
    :func:`unique_key_time` recovers the creation time (Java ``getNearlyTimeFromID``).
    """

    def _key_at(self, seconds: float, ip: str = "10.0.0.1") -> str:
        generator = UniqueKeyGenerator(
            ip=ip, pid=1, class_loader_hash=2, now=FakeClock(seconds), tz=UTC
        )
        return generator.create_uniq_id()

    def test_same_month(self) -> None:
        """
        A key read later in the same month gives its creation time in ms.
        """
        created = _at(2024, 3, 5, 12, 0, 0) + 0.25
        key = self._key_at(created)
        now = FakeClock(created + 3600)
        self.assertEqual(unique_key_time(key, now=now, tz=UTC), round(created * 1000))

    def test_previous_month(self) -> None:
        """
        If the offset lies after *now* in the current month, the key is from last month.
        """
        created = _at(2024, 2, 20, 8, 30)
        key = self._key_at(created)
        now = FakeClock(_at(2024, 3, 2))
        self.assertEqual(unique_key_time(key, now=now, tz=UTC), round(created * 1000))

    def test_late_in_month(self) -> None:
        """
        Offsets above 2**31 ms are read as unsigned.
        """
        created = _at(2024, 1, 31, 23)
        key = self._key_at(created)
        now = FakeClock(created + 60)
        self.assertEqual(unique_key_time(key, now=now, tz=UTC), round(created * 1000))

    def test_ipv6_key(self) -> None:
        """
        56-digit keys have the time after the 16-byte address.
        """
        created = _at(2024, 7, 4, 1, 2, 3)
        key = self._key_at(created, ip="::1")
        now = FakeClock(created + 1)
        self.assertEqual(unique_key_time(key, now=now, tz=UTC), round(created * 1000))

    def test_lowercase_key(self) -> None:
        """
        Keys with lowercase hex (the Go client's suffix) are accepted.
        """
        created = _at(2024, 3, 5)
        key = self._key_at(created).lower()
        now = FakeClock(created + 1)
        self.assertEqual(unique_key_time(key, now=now, tz=UTC), round(created * 1000))

    def test_local_time_zone(self) -> None:
        """
        By default the month start is local; a key made and read in the same zone round
        trips whatever that zone is.
        """
        created = _at(2024, 5, 15)
        key = UniqueKeyGenerator(ip="10.0.0.1", now=FakeClock(created)).create_uniq_id()
        self.assertEqual(unique_key_time(key, now=FakeClock(created + 5)), round(created * 1000))

    def test_other_zone(self) -> None:
        """
        A fixed-offset zone moves the month start by that offset.
        """
        tz = timezone(timedelta(hours=8))
        created = _at(2024, 3, 1, 1)  # 09:00 on 1 March in UTC+8
        key = UniqueKeyGenerator(ip="10.0.0.1", now=FakeClock(created), tz=tz).create_uniq_id()
        self.assertEqual(key[20:28], f"{9 * 3600 * 1000:08X}")
        self.assertEqual(
            unique_key_time(key, now=FakeClock(created + 5), tz=tz), round(created * 1000)
        )

    def test_bad_keys(self) -> None:
        """
        Non-hex text and wrong lengths raise :class:`MessageFormatError`.
        """
        for bad in ["", "XYZ", "00" * 15, "00" * 17, "00" * 27]:
            self.assertRaises(MessageFormatError, unique_key_time, bad)

    @settings(max_examples=200, deadline=None)
    @given(
        st.integers(_at(2001, 1, 1) * 1000, _at(2099, 1, 1) * 1000),
        st.integers(2, 27 * 86400 * 1000),
    )
    def test_round_trip(self, created_ms: int, age_ms: int) -> None:
        """
        Read from a few ms to four weeks later, a key gives back its creation time. (Read in
        the very same millisecond, Java's ``>=`` places it a month earlier.)
        """
        key = self._key_at(created_ms / 1000)
        now = FakeClock((created_ms + age_ms) / 1000)
        # The generator truncates float seconds to ms, as the clock's float allows.
        self.assertEqual(
            unique_key_time(key, now=now, tz=UTC), int(created_ms / 1000 * 1000)
        )
