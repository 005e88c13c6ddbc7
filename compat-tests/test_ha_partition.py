"""
Network partitions between our slave and our master's HA port: the slave's
``haMasterAddress`` is an in-process TCP proxy (``netproxy.PartitionProxy``) that can hold
the connection silent (blackhole), close it (cut) or delay it.

* ASYNC_MASTER: while the slave is cut off, sends go on being answered SUCCESS; both sides'
  housekeeping drops the silent connection; healed (also with 20 ms of delay each way), the
  slave catches up and its CommitLog equals the master's byte for byte up to the replicated
  offset.
* SYNC_MASTER: blackholed, the master still counts the slave, so sends wait ``slaveTimeout``
  and are answered FLUSH_SLAVE_TIMEOUT (Java's GroupTransferService) until housekeeping drops
  the connection, then SLAVE_NOT_AVAILABLE (Java's ``isSlaveOK``: no connection); cut, the
  master sees the connection close and answers SLAVE_NOT_AVAILABLE at once. Healed, sends are
  acknowledged again, each one in the slave's CommitLog when its answer arrives. The same
  with a Java 4.9.7 SYNC_MASTER (our slave through the proxy): Java answers the same way.

Timers are shortened so that a case fits in well under a minute: housekeeping 3 s, heartbeat
1 s, slaveTimeout 1 s. Every wait polls remote state against a deadline.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import rocketmq_java as rj
import txbroker as tb
from netproxy import PartitionProxy
from test_ha_interop import FILE, QUEUES, TX_MASTER, TX_SLAVE, _assert_commitlog_identical, _conn, _max_offset

from rocketmq_tx.common.msgid import decode_offset_msg_id
from rocketmq_tx.remoting import ResponseCode

TIMERS = {"haHousekeepingInterval": 3000, "haSendHeartbeatInterval": 1000, "slaveTimeout": 1000}


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory):
    proc, addr = tb.start_tx_namesrv(tmp_path_factory.mktemp("ha-part-ns"))
    yield addr
    proc.stop()


def _poll(what: str, check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.1)  # polling remote state, bounded by the deadline


def _replicated(master: str, slave: str, timeout: float = 40.0) -> int:
    want = _max_offset(master)
    _poll(f"slave reaches {want}", lambda: _max_offset(slave) == want, timeout)
    return want


def _body(topic: str, i: int) -> bytes:
    return f"{topic}-{i:06d}-".encode() + bytes(200 + i % 900)


def _send_ok(addr: str, topic: str, start: int, count: int) -> None:
    with _conn(addr) as conn:
        for i in range(start, start + count):
            t0 = time.monotonic()
            r = tb.send(conn, topic, _body(topic, i), i % QUEUES)
            assert r.code == ResponseCode.SUCCESS, (i, r.code, r.remark)
            assert time.monotonic() - t0 < 2.0, i  # an ASYNC_MASTER does not wait for its slave


def _pair(tmp_path: Path, namesrv: str, name: str, role: str):
    master = tb.start_tx_broker(tmp_path / "m", namesrv, name=name, label=f"{name}-master",
                                extra={**TX_MASTER, **TIMERS, "brokerRole": role})
    proxy = PartitionProxy(f"127.0.0.1:{master.port + 1}")
    slave = tb.start_tx_broker(tmp_path / "s", namesrv, name=name, label=f"{name}-slave",
                               extra={**TX_SLAVE, **TIMERS, "haMasterAddress": proxy.addr})
    return master, proxy, slave


def test_async_master_partition(namesrv, tmp_path):
    master, proxy, slave = _pair(tmp_path, namesrv, "ha-p1", "ASYNC_MASTER")
    topic = "HaPartA"
    try:
        with _conn(master.addr) as conn:
            assert tb.create_topic(conn, topic, QUEUES).code == ResponseCode.SUCCESS
        _send_ok(master.addr, topic, 0, 1)
        _replicated(master.addr, slave.addr)  # connected and transferring from offset 0
        _send_ok(master.addr, topic, 1, 300)
        _replicated(master.addr, slave.addr)

        # blackhole: the master serves sends; the slave stays where it was
        mark_m, mark_s = len(master.proc.lines), len(slave.proc.lines)
        proxy.blackhole()
        _send_ok(master.addr, topic, 301, 1500)
        assert _max_offset(master.addr) > FILE  # the log rolled into its second file meanwhile
        master.proc.wait_for(r"ha housekeeping, found this connection\[[^]]*\] expired", start=mark_m, timeout=20)
        slave.proc.wait_for(r"HAClient, housekeeping, found this connection\[[^]]*\] expired", start=mark_s,
                            timeout=20)
        # (read only now: a chunk the proxy had taken before the blackhole may still have landed)
        held = _max_offset(slave.addr)
        _send_ok(master.addr, topic, 1801, 200)
        assert _max_offset(slave.addr) == held < _max_offset(master.addr)
        proxy.heal()
        upto = _replicated(master.addr, slave.addr)
        _assert_commitlog_identical(tmp_path / "m" / "commitlog", tmp_path / "s" / "commitlog", upto)

        # cut: the connection closed; sends go on; healed with latency, the slave catches up again
        proxy.cut()
        _send_ok(master.addr, topic, 2001, 800)
        proxy.heal(delay=0.02)
        upto = _replicated(master.addr, slave.addr)
        _assert_commitlog_identical(tmp_path / "m" / "commitlog", tmp_path / "s" / "commitlog", upto)
        assert proxy.accepted >= 3, proxy.accepted  # the slave reconnected after each partition
    finally:
        slave.stop()
        proxy.stop()
        master.stop()


def _sync_send(conn, topic: str, body: bytes):
    t0 = time.monotonic()
    r = tb.send(conn, topic, body, 0)
    return r, time.monotonic() - t0


def _acked_on_slave(master: str, slave: str, topic: str, count: int, tag: str) -> None:
    with _conn(master) as conn:
        for i in range(count):
            r = tb.send(conn, topic, f"{tag}-{i}".encode(), 0)
            assert r.code == ResponseCode.SUCCESS, (tag, i, r.code, r.remark)
            phys = decode_offset_msg_id(r.ext_fields["msgId"])[2]
            assert _max_offset(slave) > phys, (tag, i)


def _sync_partition(master_addr: str, master_log: Path, proxy: PartitionProxy, slave, slack: float) -> None:
    """The SYNC_MASTER case against *master_addr*; *slack*: extra seconds a Java master's
    GroupTransferService may take (it checks in 1 s steps)."""
    topic = "HaPartS"
    with _conn(master_addr) as conn:
        assert tb.create_topic(conn, topic, 1).code == ResponseCode.SUCCESS
        _poll("the slave acks", lambda: tb.send(conn, topic, b"first", 0).code == ResponseCode.SUCCESS)
    _acked_on_slave(master_addr, slave.addr, topic, 50, "before")

    # blackhole: the master keeps its connection until housekeeping (3 s of no report)
    proxy.blackhole()
    codes = []
    with _conn(master_addr) as conn:
        deadline = time.monotonic() + 20
        while True:
            r, took = _sync_send(conn, topic, b"blackholed-%d" % len(codes))
            codes.append(r.code)
            assert r.ext_fields.get("msgId"), r.ext_fields  # stored all the same
            if r.code == ResponseCode.FLUSH_SLAVE_TIMEOUT:
                assert 0.9 < took < 2.5 + slack, took  # waited slaveTimeout (1 s)
            if r.code == ResponseCode.SLAVE_NOT_AVAILABLE:
                assert took < 0.5, took  # no connection: answered at once
                break
            assert r.code == ResponseCode.FLUSH_SLAVE_TIMEOUT and time.monotonic() < deadline, codes
        assert codes[0] == ResponseCode.FLUSH_SLAVE_TIMEOUT, codes
        for i in range(10):  # the slave's reconnections are held by the blackhole: still none
            assert tb.send(conn, topic, b"alone-%d" % i, 0).code == ResponseCode.SLAVE_NOT_AVAILABLE

        # healed: acknowledged again once the slave has reconnected and caught up
        proxy.heal()
        _poll("acked after the blackhole", lambda: tb.send(conn, topic, b"probe", 0).code == ResponseCode.SUCCESS, 30)
    _acked_on_slave(master_addr, slave.addr, topic, 50, "healed")

    # cut: the master sees the connection close and stops waiting at once
    proxy.cut()
    with _conn(master_addr) as conn:
        _poll("SLAVE_NOT_AVAILABLE after the cut",
              lambda: tb.send(conn, topic, b"cut", 0).code == ResponseCode.SLAVE_NOT_AVAILABLE, 5 + slack)
        proxy.heal()
        _poll("acked after the cut", lambda: tb.send(conn, topic, b"probe", 0).code == ResponseCode.SUCCESS, 30)
    _acked_on_slave(master_addr, slave.addr, topic, 50, "after-cut")
    upto = _replicated(master_addr, slave.addr)
    _assert_commitlog_identical(master_log, slave.store / "commitlog", upto)


def test_sync_master_partition(namesrv, tmp_path):
    master, proxy, slave = _pair(tmp_path, namesrv, "ha-p2", "SYNC_MASTER")
    try:
        _sync_partition(master.addr, tmp_path / "m" / "commitlog", proxy, slave, 0.0)
    finally:
        slave.stop()
        proxy.stop()
        master.stop()


def test_java_sync_master_partition(namesrv, java_classpath_4, tmp_path):
    """The same with a Java 4.9.7 SYNC_MASTER (its timers shortened the same way): Java's statuses."""
    jmaster, jaddr, jhome = rj.start_broker(java_classpath_4, namesrv, broker_name="ha-p3", label="ha-p3-master",
                                            commitlog_size=FILE, extra={"brokerRole": "SYNC_MASTER", **TIMERS})
    try:
        proxy = PartitionProxy(f"127.0.0.1:{int(jaddr.rpartition(':')[2]) + 1}")
        slave = tb.start_tx_broker(tmp_path / "s", namesrv, name="ha-p3", label="ha-p3-slave",
                                   extra={**TX_SLAVE, **TIMERS, "haMasterAddress": proxy.addr})
        try:
            _sync_partition(jaddr, jhome.root / "store" / "commitlog", proxy, slave, 1.5)
        finally:
            slave.stop()
            proxy.stop()
    finally:
        jmaster.stop(grace=30)
