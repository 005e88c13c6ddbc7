"""Remote address patterns, held to what Java 4.9.8's RemoteAddressStrategyFactory answers."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import AclError
from rocketmq_tx.acl.address import expand_ip, is_valid_inet4, is_valid_inet6, remote_address_strategy, remote_host

HOSTS = ["192.168.1.2", "192.168.1.101", "192.168.0.5", "1.7.9.9", "127.0.0.1", "10.0.0.1", "1:2:3:4:5:6:7:8",
         "0:0:0:0:0:0:0:1", "::1", "1::5", "1:2:3:4:5:6:8:1", "2:0:0:0:0:ac5:78:5"]

#: pattern -> Java 4.9.8's match() for each of HOSTS (computed with the 4.9.8 jars)
MATCHES = [
    ("*", "TTTTTTTTTTTT"),
    ("*.*.*.*", "TTTTTTTTTTTT"),
    ("*:*:*:*:*:*:*:*", "TTTTTTTTTTTT"),
    ("", "FFFFFFFFFFFF"),
    (" ", "FFFFFFFFFFFF"),
    (None, "FFFFFFFFFFFF"),
    ("192.168.1.*", "TTFFFFFFFFFF"),
    ("192.168.1.1-100", "TFFFFFFFFFFF"),
    ("192.168.*.*", "TTTFFFFFFFFF"),
    ("1.*.3.4", "FFFTFFFFFFFF"),  # Java compares the range part only
    ("192.168.1.{1,2,3}", "TFFFFFFFFFFF"),
    ("1:2:3:4:5:6:7:*", "FFFFFFTFFFFF"),
    ("1:2:3:4:5:6:7:1-ff", "FFFFFFTFFFFF"),
    ("::1", "FFFFFFFTTFFF"),
    ("0:0:0:0:0:0:0:1", "FFFFFFFTTFFF"),
    ("10.0.0.1,::1", "FFFFFTFTTFFF"),
    ("1::*", "FFFFFFFFFTFF"),
    ("127.0.0.1", "FFFFTFFFFFFF"),
    ("1:2:3:4:5:6:7:{7,8}", "FFFFFFTFFFFF"),
    ("2::ac5:78:1-200:*", "FFFFFFFFFFFF"),
    ("2::ac5:78:*", "FFFFFFFFFFFT"),
]

#: patterns Java refuses, with its message
REFUSED = [
    ("1:2:3:4:5:6:{7,8}", "Netaddress examine Exception netaddress is 1:2:3:4:5:6:7"),
    ("192.168.1.1-100.5", "Netaddress examine scope Exception netaddress is 192.168.1.1-100.5"),
    ("1.2.3.4/24", "Netaddress examine Exception netaddress is 1.2.3.4/24"),
    ("192.168.1.{1, 2}", "Netaddress examine Exception netaddress is 192.168.1. 2"),
    ("192.{1,2}", "MultipleRemoteAddressStrategy has got a/some wrong format IP(s) "),
    ("1.2.*", "Netaddress examine scope Exception netaddress is 1.2.*"),
    ("1.2.3.-5", "RangeRemoteAddressStrategy netaddress examine scope Exception value -5 "),
    ("300.1.1.1", "Netaddress examine Exception netaddress is 300.1.1.1"),
    ("1:*:3", "Netaddress examine scope Exception netaddress is 1:*:3"),
    ("1.2.3.4-300", "RangeRemoteAddressStrategy netaddress examine scope Exception start is 4 , end is 300"),
    ("192.168.1.01", "Netaddress examine Exception netaddress is 192.168.1.01"),
    ("1.2.3.*.5", "Netaddress examine scope Exception netaddress is 1.2.3.*.5"),
    ("192.168.1.5-3", "RangeRemoteAddressStrategy netaddress examine scope Exception start is 5 , end is 3"),
    ("1:2:3:4:5:6:7:8:9", "Netaddress examine Exception netaddress is 1:2:3:4:5:6:7:8:9"),
    ("1::2::3", "Netaddress examine Exception netaddress is 1::2::3"),
    ("a.b.c.d", "Netaddress examine Exception netaddress is a.b.c.d"),
    ("1:2:3:4:5:6:{7,8:9}", "MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress"),
    ("{1,2}", "MultipleRemoteAddressStrategy has got a/some wrong format IP(s) "),
]


class PatternTests(SynchronousTestCase):
    def test_matches_as_java(self) -> None:
        for pattern, expected in MATCHES:
            strategy = remote_address_strategy(pattern)
            got = "".join("T" if strategy.match(h) else "F" for h in HOSTS)
            self.assertEqual(got, expected, pattern)

    def test_refused_as_java(self) -> None:
        for pattern, message in REFUSED:
            with self.assertRaises(AclError, msg=pattern) as cm:
                remote_address_strategy(pattern)
            self.assertEqual(cm.exception.message, message)

    def test_refused_where_java_fails_later(self) -> None:
        """Java accepts a range with no usable part, then fails every request (NPE); or
        fails with a bare NumberFormatException/index error. All are refused here."""
        for pattern in ("1.2.3.0-0", "*.2.3.4", "1-2.2.3.4", "1.2.3.5-", "a.b.c.*"):
            self.assertRaises(AclError, remote_address_strategy, pattern)


class AddressTests(SynchronousTestCase):
    def test_expand(self) -> None:
        self.assertEqual(expand_ip("::1", 8), "0000:0000:0000:0000:0000:0000:0000:0001")
        self.assertEqual(expand_ip("1::", 8), "0001:0000:0000:0000:0000:0000:0000:0000")
        self.assertEqual(expand_ip("fe80::a:b", 8), "FE80:0000:0000:0000:0000:0000:000A:000B")
        self.assertEqual(expand_ip("10.0.0.1", 8), "10.0.0.1")

    def test_validators(self) -> None:
        for good in ("0.0.0.0", "255.255.255.255", "10.1.2.3"):
            self.assertTrue(is_valid_inet4(good), good)
        for bad in ("256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1", "a.1.1.1", "１.1.1.1"):
            self.assertFalse(is_valid_inet4(bad), bad)
        for good in ("::", "::1", "1::", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "fe80::1%eth0", "1::/64"):
            self.assertTrue(is_valid_inet6(good), good)
        for bad in ("1:2:3:4:5:6:7:8:9", "1::2::3", ":1::", "12345::", "g::1", "1:2"):
            self.assertFalse(is_valid_inet6(bad), bad)

    def test_remote_host(self) -> None:
        self.assertEqual(remote_host("127.0.0.1:10911"), "127.0.0.1")
        self.assertEqual(remote_host("::1:10911"), "::1")
        self.assertEqual(remote_host("[::1]:10911"), "::1")
        self.assertEqual(remote_host("::ffff:10.1.2.3:5"), "10.1.2.3")  # Java sees an Inet4Address
        self.assertEqual(remote_host("fe80::1%eth0:5"), "fe80::1")
