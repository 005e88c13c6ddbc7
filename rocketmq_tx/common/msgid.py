# -*- test-case-name: rocketmq_tx.common.test.test_msgid -*-
"""
Message ids and host addresses in their binary form.

Two ids exist (protocol notes §5.5):

* the **offsetMsgId** that a broker derives from where it stored a record: hex of the store
  host's IP bytes, its port and the CommitLog offset;
* the client's **unique key** (property ``UNIQ_KEY``) that Java's ``MessageClientIDSetter``
  generates: a fixed per-process prefix (IP, pid, a class-loader hash) followed by the time
  since the start of the current month and a wrapping counter.

Both are uppercase hex; readers accept lowercase as well because the Go client writes the
suffix of its unique keys in lowercase.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from datetime import datetime, tzinfo
from functools import lru_cache

from rocketmq_tx.common.errors import MessageFormatError

__all__ = [
    "HostPort",
    "pack_host",
    "unpack_host",
    "create_offset_msg_id",
    "decode_offset_msg_id",
    "UniqueKeyGenerator",
    "unique_key_time",
]

#: A socket address as the codec reports it: literal IP text and port.
HostPort = tuple[str, int]

_PORT = struct.Struct(">i")
_PORT_OFFSET = struct.Struct(">iq")
_PID_HASH = struct.Struct(">HI")
_COUNTER_MASK = 0xFFFF


@lru_cache(maxsize=1024)
def pack_host(host: str, port: int) -> bytes:
    """
    Encode a socket address the way Java's ``socketAddress2ByteBuffer`` does: the IP bytes
    (4 for IPv4, 16 for IPv6) followed by the port as an ``int32``.

    Cached, because a broker sees the same few addresses over and over.

    :param host: a literal IPv4 or IPv6 address (no host names: Java writes resolved addresses).
    :param port: the port.
    :return: 8 or 20 bytes.
    :raises MessageFormatError: if *host* is not a literal address or *port* does not fit.
    """
    try:
        if ":" in host:
            ip = socket.inet_pton(socket.AF_INET6, host)
        else:
            ip = socket.inet_pton(socket.AF_INET, host)
        return ip + _PORT.pack(port)
    except (OSError, struct.error, TypeError) as e:
        raise MessageFormatError(f"cannot encode host address {host!r}:{port!r}: {e}") from None


def unpack_host(data: bytes) -> HostPort:
    """
    Reverse :func:`pack_host`.

    :param data: 8 bytes (IPv4) or 20 bytes (IPv6).
    :raises MessageFormatError: for any other length.
    """
    if len(data) == 8:
        return socket.inet_ntoa(data[:4]), _PORT.unpack_from(data, 4)[0]
    if len(data) == 20:
        return socket.inet_ntop(socket.AF_INET6, data[:16]), _PORT.unpack_from(data, 16)[0]
    raise MessageFormatError(f"a packed host address has 8 or 20 bytes, not {len(data)}")


def create_offset_msg_id(host: str, port: int, commit_log_offset: int) -> str:
    """
    Build the offsetMsgId of a record (Java ``MessageDecoder.createMessageId``).

    :param host: the store host's IP.
    :param port: the store host's port.
    :param commit_log_offset: the record's physical offset.
    :return: 32 (IPv4) or 56 (IPv6) uppercase hex characters.
    :raises MessageFormatError: if the address or offset cannot be encoded.
    """
    packed = _packed_host(host, port)
    try:
        return (packed + struct.pack(">q", commit_log_offset)).hex().upper()
    except struct.error as e:
        raise MessageFormatError(f"bad commit log offset {commit_log_offset!r}: {e}") from None


@lru_cache(maxsize=256)
def _packed_host(host: str, port: int) -> bytes:
    # One store host for all of a broker's records.
    return pack_host(host, port)


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """
    Reverse :func:`create_offset_msg_id` (Java ``MessageDecoder.decodeMessageId``).

    :return: ``(host, port, commit_log_offset)``.
    :raises MessageFormatError: if *msg_id* is not 32 or 56 hex characters.
    """
    if len(msg_id) == 32:
        ip_length = 4
    elif len(msg_id) == 56:
        ip_length = 16
    else:
        raise MessageFormatError(f"an offset message id has 32 or 56 hex digits: {msg_id!r}")
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise MessageFormatError(f"offset message id is not hex: {msg_id!r}") from None
    family = socket.AF_INET if ip_length == 4 else socket.AF_INET6
    port, offset = _PORT_OFFSET.unpack_from(raw, ip_length)
    return socket.inet_ntop(family, raw[:ip_length]), port, offset


def _to_ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def _month_bounds(epoch_ms: int, tz: tzinfo | None) -> tuple[int, int]:
    """
    :return: the start of the month containing *epoch_ms* and the start of the next one, both
        in ms since the epoch, in *tz* (``None``: local time, as Java's ``Calendar`` uses).
    """
    start = datetime.fromtimestamp(epoch_ms / 1000, tz).replace(
        day=1, hour=0, minute=0, second=0, microsecond=0
    )
    if start.month == 12:
        following = start.replace(year=start.year + 1, month=1)
    else:
        following = start.replace(month=start.month + 1)
    return _to_ms(start), _to_ms(following)


def _default_ip(now: Callable[[], float]) -> bytes:
    """
    Find this host's address the cheap way: the source address the kernel would pick for an
    outside destination (a UDP ``connect`` sends no packet). Java walks every interface and
    prefers a public IPv4; the primary outbound address is what it finds on ordinary hosts.
    Without one, fall back, as Java does, to a "fake IP" made of the clock's low 4 bytes.
    """
    for family, target in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect((target, 9))
                address = probe.getsockname()[0]
        except OSError:
            continue
        packed = socket.inet_pton(family, address)
        if family == socket.AF_INET and packed[0] != 127:
            return packed
        if family == socket.AF_INET6 and packed != bytes(15) + b"\x01":
            return packed
    return struct.pack(">q", int(now() * 1000))[4:]


class UniqueKeyGenerator:
    """
    Generates ``UNIQ_KEY`` values in Java ``MessageClientIDSetter`` format.

    A key is the hex of ``IP (4 or 16 bytes) + int16 pid + int32 class-loader hash`` (the
    prefix, fixed per generator) followed by the hex of ``int32`` ms since the start of the
    current month and an ``int16`` counter that wraps. With an IPv4 address that is 32 hex
    characters. Python has no class loader; a random ``int32`` stands in for its hash so
    several generators in one process still differ.

    Thread-safe.

    :param ip: the address to embed: literal text or 4/16 raw bytes. ``None`` detects one.
    :param pid: process id (only the low 16 bits are used); ``None`` means :func:`os.getpid`.
    :param class_loader_hash: the ``int32`` after the pid; ``None`` means random.
    :param now: clock returning seconds since the epoch.
    :param tz: time zone of the month boundaries; ``None`` means local time, like Java.
    :param counter: first counter value.
    :ivar prefix: the fixed leading hex characters.
    """

    def __init__(
        self,
        *,
        ip: str | bytes | None = None,
        pid: int | None = None,
        class_loader_hash: int | None = None,
        now: Callable[[], float] = time.time,
        tz: tzinfo | None = None,
        counter: int = 0,
    ) -> None:
        if ip is None:
            ip_bytes = _default_ip(now)
        elif isinstance(ip, bytes):
            ip_bytes = ip
        else:
            ip_bytes = pack_host(ip, 0)[:-4]
        if len(ip_bytes) not in (4, 16):
            raise ValueError(f"an IP address has 4 or 16 bytes, not {len(ip_bytes)}")
        if pid is None:
            pid = os.getpid()
        if class_loader_hash is None:
            class_loader_hash = int.from_bytes(os.urandom(4), "big")
        self.prefix: str = (
            ip_bytes + _PID_HASH.pack(pid & 0xFFFF, class_loader_hash & 0xFFFFFFFF)
        ).hex().upper()
        self._now = now
        self._tz = tz
        self._counter = counter & _COUNTER_MASK
        self._lock = threading.Lock()
        self._start_ms = 0
        self._next_start_ms = 0

    def create_uniq_id(self) -> str:
        """
        :return: a new unique key (Java ``createUniqID``).
        """
        current = int(self._now() * 1000)
        with self._lock:
            if current >= self._next_start_ms:
                self._start_ms, self._next_start_ms = _month_bounds(current, self._tz)
            counter = self._counter
            self._counter = (counter + 1) & _COUNTER_MASK
            start = self._start_ms
        # Java narrows the difference to an int; past ~24.8 days it shows as negative, which
        # is fine because readers take the 32 bits as unsigned. A clock that stepped back
        # just before the month start gives 0, as in Java.
        diff = (current - start) & 0xFFFFFFFF
        if diff > 0x100000000 - 1_000_000:
            diff = 0
        return f"{self.prefix}{diff:08X}{counter:04X}"


def unique_key_time(
    key: str, *, now: Callable[[], float] = time.time, tz: tzinfo | None = None
) -> int:
    """
    Approximate creation time of a unique key (Java ``getNearlyTimeFromID``).

    The key holds only the offset from a month start, so the month is guessed: the current
    one, or the previous one if the offset would put the key at or after *now*.

    :param key: a key from :meth:`UniqueKeyGenerator.create_uniq_id` (32 or 56 hex digits).
    :param now: clock returning seconds since the epoch.
    :param tz: time zone of the month boundaries; ``None`` means local time.
    :return: ms since the epoch.
    :raises MessageFormatError: if *key* is not hex of 16 or 28 bytes.
    """
    try:
        raw = bytes.fromhex(key)
    except ValueError:
        raise MessageFormatError(f"unique key is not hex: {key!r}") from None
    if len(raw) == 28:
        ip_length = 16
    elif len(raw) == 16:
        ip_length = 4
    else:
        raise MessageFormatError(f"a unique key has 32 or 56 hex digits: {key!r}")
    span = int.from_bytes(raw[ip_length + 6 : ip_length + 10], "big")
    current = int(now() * 1000)
    month_start, _ = _month_bounds(current, tz)
    if month_start + span >= current:
        month_start, _ = _month_bounds(month_start - 1, tz)
    return month_start + span
