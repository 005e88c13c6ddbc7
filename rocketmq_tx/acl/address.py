# -*- test-case-name: rocketmq_tx.acl.test.test_address -*-
"""
Remote address patterns of ``plain_acl.yml`` (``globalWhiteRemoteAddresses`` and an
account's ``whiteRemoteAddress``), as Java 4.9.8's ``RemoteAddressStrategyFactory``
reads and matches them:

=========================  ==============================================================
``""`` / blank / missing   matches nothing
``*``, ``*.*.*.*``,        matches everything
``*:*:*:*:*:*:*:*``
``192.168.1.{1,2,3}``      one of a list (the part before ``{`` is a prefix); IPv6 too
``192.168.1.1,10.0.0.1``   one of a list of whole addresses (IPv4 or IPv6)
``192.168.1.*``,           a range in the first ``*`` or ``a-b`` part (decimal; hex for
``192.168.1.1-100``,       IPv6); what follows that part is not compared, as in Java
``1:2:3:4:5:6:7:*``
``192.168.1.1``, ``::1``   one address (IPv6 compared in expanded form)
=========================  ==============================================================

A pattern Java would refuse when loading is refused here with Java's message; where Java
fails with a bare ``NumberFormatException`` or index error the message is ours. Unlike
Java, a range pattern with no usable range part (``1.2.3.0-0``) is refused too: Java
accepts it and then fails every later request with a NullPointerException.

The remote address is the peer's host as Java prints it (:func:`remote_host`).
"""

from __future__ import annotations

import functools
import ipaddress
import re

from rocketmq_tx.acl.errors import AclError
from rocketmq_tx.acl.permission import java_tokens, java_trim

__all__ = ["RemoteAddressStrategy", "remote_address_strategy", "remote_host", "expand_ip",
           "is_valid_inet4", "is_valid_inet6", "MATCH_ALL", "MATCH_NONE"]

_IPV4 = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\Z")
_ZONE = re.compile(r"[^\s/%]+\Z")


# Every request's peer host is checked against the white lists; the hosts are few, so the
# answers are kept (bounded: a flood of new peers only evicts older entries).
@functools.lru_cache(maxsize=4096)
def is_valid_inet4(text: str) -> bool:
    """commons-validator 1.7 ``isValidInet4Address``: four decimal parts <= 255, no leading zeros."""
    m = _IPV4.match(text)
    if m is None:
        return False
    return all(int(part) <= 255 and not (len(part) > 1 and part[0] == "0") for part in m.groups())


@functools.lru_cache(maxsize=4096)
def is_valid_inet6(text: str) -> bool:
    """commons-validator 1.7 ``isValidInet6Address`` (prefix length and zone id allowed)."""
    parts = text.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2 and not (re.fullmatch(r"[0-9]{1,3}", parts[1]) and int(parts[1]) <= 128):
        return False
    parts = parts[0].split("%")
    if len(parts) > 2 or (len(parts) == 2 and not _ZONE.match(parts[1])):
        return False
    addr = parts[0]
    compressed = "::" in addr
    if compressed and addr.find("::") != addr.rfind("::"):
        return False
    if (addr.startswith(":") and not addr.startswith("::")) or (addr.endswith(":") and not addr.endswith("::")):
        return False
    octets = addr.split(":")
    while octets and octets[-1] == "":  # Java's String.split drops trailing empty parts
        octets.pop()
    if compressed:
        if addr.endswith("::"):
            octets.append("")
        elif addr.startswith("::") and octets:
            octets.pop(0)
    if len(octets) > 8:
        return False
    valid = empty = 0
    for index, octet in enumerate(octets):
        if not octet:
            empty += 1
            if empty > 1:
                return False
        else:
            empty = 0
            if index == len(octets) - 1 and "." in octet:
                if not is_valid_inet4(octet):
                    return False
                valid += 2
                continue
            if len(octet) > 4:
                return False
            try:
                if not 0 <= _java_int(octet, 16) <= 0xFFFF:
                    return False
            except ValueError:
                return False
        valid += 1
    return not (valid > 8 or (valid < 8 and not compressed))


def expand_ip(address: str, parts: int) -> str:
    """
    Java ``AclUtils.expandIP``: upper-case, widen ``::`` to reach *parts* groups, pad each
    group to four digits. Applied to IPv4 text it returns the text unchanged (upper-cased).
    """
    address = address.upper()
    if not address:
        return ""
    pad = parts - address.count(":")
    if pad > 0:
        address = address.replace("::", ":" * (pad + 1))
    return ":".join(g.rjust(4, "0") for g in address.split(":"))


def _java_int(text: str, base: int = 10) -> int:
    """Java ``Integer.parseInt``: an optional sign and digits of *base*, nothing else.

    :raises ValueError: anything else (Python's ``int`` would take ``1_0`` or `` 1``).
    """
    digits = "0-9" if base == 10 else "0-9a-fA-F"
    if not re.fullmatch(f"[+-]?[{digits}]+", text):
        raise ValueError(text)
    return int(text, base)


@functools.lru_cache(maxsize=4096)  # every request asks; a connection's peer text never changes
def remote_host(peer: str) -> str:
    """
    The host part of ``host:port`` as Java's ``parseChannelRemoteAddr`` gives it: an
    IPv4-mapped IPv6 peer is its IPv4 address (Java reports an ``Inet4Address``); other
    IPv6 hosts lose their zone id and brackets.
    """
    host = peer.rpartition(":")[0] if ":" in peer else peer
    host = host.strip("[]")
    if ":" in host:
        host = host.partition("%")[0]
        try:
            mapped = ipaddress.IPv6Address(host).ipv4_mapped
        except ValueError:
            return host
        if mapped is not None:
            return str(mapped)
    return host


class RemoteAddressStrategy:
    """A compiled pattern: :meth:`match` takes the remote host (:func:`remote_host`)."""

    __slots__ = ("pattern",)

    def __init__(self, pattern: str | None) -> None:
        self.pattern = pattern

    def match(self, host: str) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.pattern!r}>"


class _All(RemoteAddressStrategy):
    __slots__ = ()

    def match(self, host: str) -> bool:
        return True


class _Nothing(RemoteAddressStrategy):
    __slots__ = ()

    def match(self, host: str) -> bool:
        return False


MATCH_ALL = _All("*")
MATCH_NONE = _Nothing("")


class _Multiple(RemoteAddressStrategy):
    __slots__ = ("_set",)

    def __init__(self, pattern: str, addresses: list[str]) -> None:
        super().__init__(pattern)
        self._set = set()
        for addr in addresses:
            if is_valid_inet4(addr):
                self._set.add(addr)
            elif is_valid_inet6(addr):
                self._set.add(expand_ip(addr, 8))
            else:
                raise AclError(f"Netaddress examine Exception netaddress is {addr}")

    def match(self, host: str) -> bool:
        if is_valid_inet6(host):
            host = expand_ip(host, 8)
        return host in self._set


class _One(RemoteAddressStrategy):
    __slots__ = ("_expanded",)

    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        if not (is_valid_inet4(pattern) or is_valid_inet6(pattern)):
            raise AclError(f"Netaddress examine Exception netaddress is {pattern}")
        self._expanded = expand_ip(pattern, 8)

    def match(self, host: str) -> bool:
        return expand_ip(host, 8) == self._expanded


def _is_scope(pattern: str, count: int) -> bool:
    """Java ``AclUtils.isScope(netaddress, index)``: the first *count* parts are in range."""
    if ":" in pattern:
        groups = java_tokens(expand_ip(pattern, 8), ":")
        for group in groups[:count]:
            try:
                if not 0 <= _java_int(group, 16) <= 0xFFFF:
                    return False
            except ValueError:
                return False
        return len(groups) >= count
    parts = java_tokens(pattern, ".")
    if len(parts) != 4:
        return False
    for part in parts[:count]:
        try:
            value = _java_int(java_trim(part))
        except ValueError:
            raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}: "
                           f"{java_trim(part)!r} is not a number") from None
        if not 0 <= value <= 255:
            return False
    return True


def _v6_head(pattern: str) -> str:
    """Java ``AclUtils.v6ipProcess``: the expanded groups before the range part."""
    star, minus = "*" in pattern, "-" in pattern
    if star and minus:
        last = pattern.rfind(":")
        return expand_ip(pattern[:pattern[:last].rfind(":")], 6)
    if not star and not minus:
        return expand_ip(pattern, 8)
    return expand_ip(pattern[:pattern.rfind(":")], 7)


class _Range(RemoteAddressStrategy):
    """A range in one part (Java's ``RangeRemoteAddressStrategy``)."""

    __slots__ = ("_head", "_start", "_end", "_index", "_v6")

    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        self._head: str | None = None
        self._start = self._end = self._index = 0
        self._v6 = ":" in pattern
        if self._v6:
            self._check_v6(pattern)
            parts = java_tokens(pattern, ":")
            for i in range(1, len(parts)):
                if self._analyse(parts, i, 16, 0xFFFF):
                    if not _is_scope(pattern, self._index - 1):
                        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
                    head = _v6_head(pattern)
                    self._index = len(java_tokens(head, ":"))
                    self._head = head
                    break
        else:
            parts = java_tokens(pattern, ".")
            for i in (1, 2, 3):
                if i >= len(parts):
                    raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
                if self._analyse(parts, i, 10, 255):
                    if not _is_scope(pattern, self._index - 1):
                        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
                    self._head = "".join(java_trim(p) + "." for p in parts[:self._index])
                    break
        if self._head is None:
            raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}: no range part")

    @staticmethod
    def _check_v6(pattern: str) -> None:
        """Java ``AclUtils.IPv6AddressCheck``: ``*`` only last, a range only in the last part
        (or the one before a trailing ``*``)."""
        star, minus = pattern.find("*"), pattern.find("-")
        if star > -1 and star != len(pattern) - 1:
            raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
        if minus > -1:
            last = pattern.rfind(":")
            bound = last if star == -1 else pattern.rfind(":", 0, last)
            if minus <= bound:
                raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")

    def _analyse(self, parts: list[str], index: int, base: int, top: int) -> bool:
        value = java_trim(parts[index])
        self._index = index
        if value == "*":
            self._start, self._end = 0, top
        elif "-" in value:
            if value.startswith("-"):
                raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} ")
            bounds = java_tokens(value, "-")
            try:
                start, end = _java_int(bounds[0], base), _java_int(bounds[1], base)
            except (ValueError, IndexError):
                raise AclError(
                    f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} ") from None
            if not (0 <= start <= top and 0 <= end <= top and start <= end):
                raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception "
                               f"start is {start} , end is {end}")
            self._start, self._end = start, end
        return self._end > 0

    def match(self, host: str) -> bool:
        head = self._head
        assert head is not None
        if is_valid_inet4(host):
            if not host.startswith(head):
                return False
            if self._index == 3:
                value = host[len(head):]
            elif self._index == 2:
                value = host[len(head):host.rfind(".")]
            else:
                value = host[len(head):host.rfind(".", 0, host.rfind("."))]
            try:
                number = _java_int(value)
            except ValueError:
                return False
            return self._start <= number <= self._end
        if is_valid_inet6(host):
            expanded = expand_ip(host, 8).upper()
            if not expanded.startswith(head):
                return False
            try:
                number = _java_int(expanded[5 * self._index:5 * self._index + 4], 16)
            except ValueError:
                return False
            return self._start <= number <= self._end
        return False


def remote_address_strategy(pattern: str | None) -> RemoteAddressStrategy:
    """
    Compile one pattern (Java ``RemoteAddressStrategyFactory.getRemoteAddressStrategy``).

    :raises AclError: Java refuses the pattern (or, see the module, would fail later).
    """
    if pattern is None or not pattern.strip():
        return MATCH_NONE
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return MATCH_ALL
    if pattern.endswith("}"):
        if ":" in pattern:
            last = java_tokens(pattern, ":")[-1]
            if not last.startswith("{"):
                raise AclError("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress")
        else:
            parts = java_tokens(pattern, ".")
            if len(parts) < 4:
                raise AclError("MultipleRemoteAddressStrategy has got a/some wrong format IP(s) ")
            last = parts[-1]
            if not last.startswith("{"):
                raise AclError("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress")
        prefix = pattern[:pattern.find("{")]
        return _Multiple(pattern, [prefix + item for item in java_tokens(last[1:-1], ",")])
    if "," in pattern:
        return _Multiple(pattern, java_tokens(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return _Range(pattern)
    return _One(pattern)
