"""
Hypothesis strategies for the message values of :mod:`rocketmq_tx.common`.
"""

from __future__ import annotations

import socket

from hypothesis import strategies as st

from rocketmq_tx.common.message import MessageExt

__all__ = [
    "int32s",
    "int64s",
    "ipv4_hosts",
    "ipv6_hosts",
    "host_ports",
    "topics",
    "property_maps",
    "message_exts",
]

int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)

# Text as the socket module prints it, so decode(encode(host)) compares equal.
ipv4_hosts = st.ip_addresses(v=4).map(str)
ipv6_hosts = st.ip_addresses(v=6).map(
    lambda a: socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, str(a)))
)
host_ports = st.tuples(st.one_of(ipv4_hosts, ipv6_hosts), st.integers(0, 65535))

# Real topic names are ASCII; also try arbitrary Unicode and names long enough for V2 magic.
_TOPIC_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-%|"
_unicode = st.characters(blacklist_categories=("Cs",))
topics = st.one_of(
    st.text(_TOPIC_CHARS, min_size=1, max_size=200),
    st.text(_unicode, min_size=0, max_size=60),
)

# Names may not contain either separator; values may contain 0x01 (everything after the
# first 0x01 is the value) but not 0x02. Both non-empty, or Java's decoder drops them.
_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"),
    min_size=1,
    max_size=20,
)
_values = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x02"),
    min_size=1,
    max_size=40,
)
property_maps = st.dictionaries(_names, _values, max_size=8)


@st.composite
def message_exts(draw: st.DrawFn, compressed: bool = False) -> MessageExt:
    """
    Any encodable :class:`MessageExt`. ``sys_flag`` is random apart from the IPv6 bits, which
    agree with the hosts (the encoder sets them so).
    """
    born_host = draw(host_ports)
    store_host = draw(host_ports)
    sys_flag = draw(int32s) & ~0x30
    if ":" in born_host[0]:
        sys_flag |= 0x10
    if ":" in store_host[0]:
        sys_flag |= 0x20
    return MessageExt(
        topic=draw(topics),
        body=draw(st.binary(max_size=300)),
        flag=draw(int32s),
        properties=draw(property_maps),
        queue_id=draw(int32s),
        queue_offset=draw(int64s),
        sys_flag=sys_flag,
        born_timestamp=draw(int64s),
        born_host=born_host,
        store_timestamp=draw(int64s),
        store_host=store_host,
        commit_log_offset=draw(int64s),
        reconsume_times=draw(int32s),
        prepared_transaction_offset=draw(int64s),
    )
