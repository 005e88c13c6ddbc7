"""
Master-slave replication (Java 4.9's classic HA, ASYNC_MASTER) between our brokers and the
official Java 4.9.7 broker, in the three pairings:

* (a) our master, our slave (haMasterAddress set);
* (b) a Java 4.9.7 master (SYNC_MASTER), our slave (master HA address learned from the name
  server's REGISTER_BROKER answer, haServerAddr): acknowledged sends are in its CommitLog;
* (c) our master, a Java 4.9.7 slave, the master a SYNC_MASTER: acknowledged sends are in the
  slave's CommitLog;
* (d) our SYNC_MASTER with our slave: acknowledged sends are on the slave, SLAVE_NOT_AVAILABLE
  without it, and the restarted slave catches up;
* (f) an empty slave started late (the master's last file only), SIGKILLed, restarted.

In each, 1 MiB CommitLog files (so the log rolls a few times), ``MESSAGES`` sends to the
master over 4 queues, then: the slave's CommitLog max offset reaches the master's; every
CommitLog file the slave holds is byte-identical to the master's up to that offset; a pull of
every queue from the slave returns exactly the bytes the same pull returns from the master
(so its ConsumeQueues serve the same records) and every message sent; the slave refuses a send
with SERVICE_NOT_AVAILABLE (the store's "messages are put to the slave"). In (b) and (c), then,
the official 4.9.8 producer sends ``BULK`` (100,000) more, the CommitLogs are compared again,
and the official pull consumer, fixed on the slave's broker id, reads every message from the
slave. In (a) the official
5.5.0 ``mqadmin haStatus`` reads GET_BROKER_HA_STATUS from our master and our slave, and
``mqadmin clusterList`` lists both (BID 0 and 1). The slave's topic
comes from its master by SlaveSynchronize (GET_ALL_TOPIC_CONFIG), since a slave refuses
topic changes.

Readiness is each process's own log line; waits on replication poll with a deadline.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.common.msgid import decode_offset_msg_id
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

MESSAGES = 3000
#: The official producer's sends in the mixed pairings, as issue 23 asks (100-byte bodies).
BULK = 100_000
QUEUES = 4
FILE = 1 << 20
GROUP = "ha_compat_group"
TX_MASTER = {"mappedFileSizeCommitLog": FILE}
TX_SLAVE = {"mappedFileSizeCommitLog": FILE, "brokerRole": "SLAVE", "brokerId": 1, "slaveReadEnable": "true"}


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory):
    proc, addr = tb.start_tx_namesrv(tmp_path_factory.mktemp("ha-ns"))
    yield addr
    proc.stop()


def _conn(addr: str) -> BlockingConnection:
    return BlockingConnection(addr)


def _runtime(addr: str) -> dict:
    with _conn(addr) as conn:
        r = conn.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 10)
    assert r.code == ResponseCode.SUCCESS, r
    return fastjson.loads(r.body)["table"]


def _max_offset(addr: str) -> int:
    return int(_runtime(addr)["commitLogMaxOffset"])


def _send_all(master: str, slave: str, topic: str) -> list[bytes]:
    """
    One message, replicated, before the rest: an empty slave is sent the master's last file
    only (Java's rule), and a Java slave reports its offset 5 s after connecting, so the bulk
    must not roll the master's log before the transfer has started at offset 0.
    """
    rnd = random.Random(topic)
    sent = []
    with _conn(master) as conn:
        r = tb.create_topic(conn, topic, QUEUES)
        assert r.code == ResponseCode.SUCCESS, r
        for i in range(MESSAGES):
            body = f"{topic}-{i:06d}-".encode() + bytes(rnd.randrange(50, 1200))
            r = tb.send(conn, topic, body, i % QUEUES, keys=f"k{i}")
            assert r.code == ResponseCode.SUCCESS, r
            sent.append(body)
            if i == 0:
                _wait_replicated(master, slave)
    return sent


def _create_topic(addr: str, topic: str) -> None:
    with _conn(addr) as conn:
        r = tb.create_topic(conn, topic, QUEUES)
    assert r.code == ResponseCode.SUCCESS, r


def _wait_replicated(master: str, slave: str, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    want = _max_offset(master)
    while True:
        have = _max_offset(slave)
        if have == want:
            return want
        if time.monotonic() > deadline:
            raise AssertionError(f"slave {slave} at {have}, master {master} at {want} after {timeout}s")
        time.sleep(0.2)  # polling remote state, bounded by the deadline


def _assert_commitlog_identical(master_dir: Path, slave_dir: Path, upto: int, first: int = 0) -> int:
    """Every slave file below *upto* equals the master's over the replicated range; the bytes compared."""
    compared = 0
    names = sorted(n.name for n in slave_dir.iterdir() if n.name.isdigit())
    assert names, slave_dir
    assert int(names[0]) == first, names  # 0: the slave was connected before the first send
    for name in names:
        base = int(name)
        if base >= upto:
            continue  # a file the slave created ahead (Java pre-allocates the next one)
        n = min(FILE, upto - base)
        mine = (slave_dir / name).read_bytes()[:n]
        theirs = (master_dir / name).read_bytes()[:n]
        assert len(mine) == len(theirs) == n, (name, len(mine), len(theirs))
        assert mine == theirs, f"CommitLog file {name} differs within the first {n} bytes"
        compared += n
    assert compared == upto - first, (compared, upto, first)
    return compared


def _pull_all(addr: str, topic: str, deadline: float, start: dict[int, int] | None = None) -> dict[int, list[bytes]]:
    """Raw pull bodies of every queue from offset 0 (or *start*) on (a slave may not know the topic yet: retried)."""
    out: dict[int, list[bytes]] = {}
    with _conn(addr) as conn:
        for qid in range(QUEUES):
            offset = (start or {}).get(qid, 0)
            end = tb.max_offset(conn, topic, qid)
            bodies = []
            while offset < end:
                r = tb.pull(conn, GROUP, topic, qid, offset)
                if r.code in (ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST) \
                        and time.monotonic() < deadline:
                    time.sleep(0.2)  # the slave's SlaveSynchronize has not copied it yet
                    continue
                assert r.code == ResponseCode.SUCCESS, (addr, qid, offset, r.code, r.remark)
                bodies.append(r.body)
                offset = int(r.ext_fields["nextBeginOffset"])
            out[qid] = bodies
    return out


def _check_pair(master: str, master_log: Path, slave: str, slave_log: Path, topic: str, sent: list[bytes]) -> None:
    upto = _wait_replicated(master, slave)
    assert upto > 2 * FILE, upto  # the log rolled: file ends replicated as the master wrote them
    _assert_commitlog_identical(master_log, slave_log, upto)
    deadline = time.monotonic() + 30
    # the slave knows the topic once SlaveSynchronize ran: its max offsets then match the master's
    with _conn(slave) as conn:
        while True:
            r = conn.invoke(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"}))
            if r.code == ResponseCode.SUCCESS and int(r.ext_fields["offset"]) > 0:
                break
            assert time.monotonic() < deadline, (r.code, r.remark)
            time.sleep(0.2)  # polling remote state, bounded by the deadline
    from_master = _pull_all(master, topic, deadline)
    from_slave = _pull_all(slave, topic, deadline)
    assert from_slave == from_master
    got = sorted(m.body for bodies in from_slave.values() for b in bodies for m in decode_messages(b))
    assert got == sorted(sent)
    with _conn(slave) as conn:
        r = tb.send(conn, topic, b"to the slave", 0)
    assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE, (r.code, r.remark)
    assert "messages are put to the slave" in (r.remark or ""), r.remark


def _gets(addr: str) -> int:
    return int(_runtime(addr)["msgGetTotalTodayNow"])


def _official_bulk(cp: str, namesrv: str, master: str, master_log: Path, slave: str, slave_log: Path, topic: str,
                   earlier: int) -> None:
    """
    Issue 23's proof in full: the official 4.9.8 producer sends ``BULK`` messages to the master
    (16 threads, synchronous); the slave's CommitLog is byte-identical to the master's up to the
    replicated offset; the official pull consumer, fixed on broker id 1, reads every message of
    the topic (*earlier* ones too) from the slave: the slave's get count moves by all of them,
    the master's does not.
    """
    out = json.loads(jh.run_java(cp, "HaPeer", ["produce", namesrv, topic, str(BULK), "16", "100"], timeout=300)[-1])
    assert out["ok"] == BULK and out["failed"] == 0, out
    upto = _wait_replicated(master, slave)
    _assert_commitlog_identical(master_log, slave_log, upto)
    master_gets, slave_gets = _gets(master), _gets(slave)
    out = json.loads(jh.run_java(cp, "HaPeer", ["slavepull", namesrv, topic, "1"], timeout=300)[-1])
    assert out["error"] is None, out
    assert (out["unique"], out["max_index"], out["pulled"]) == (BULK, BULK - 1, BULK + earlier), out
    assert _gets(slave) - slave_gets == out["pulled"], (master_gets, slave_gets, out)
    assert _gets(master) == master_gets, (master_gets, slave_gets, out)


def _sync_sends(master: str, slave: str, topic: str) -> None:
    """
    Against a SYNC_MASTER: send until the slave is connected and acks (SLAVE_NOT_AVAILABLE or
    FLUSH_SLAVE_TIMEOUT before), then 100 sends, each answered SUCCESS only once the slave's
    CommitLog holds it (a slave acks what it appended, before its own dispatch).
    """
    with _conn(master) as conn:
        r = tb.create_topic(conn, topic, 1)
        assert r.code == ResponseCode.SUCCESS, r
        deadline = time.monotonic() + 40
        while True:
            r = tb.send(conn, topic, b"first", 0)
            if r.code == ResponseCode.SUCCESS:
                break
            assert r.code in (ResponseCode.SLAVE_NOT_AVAILABLE, ResponseCode.FLUSH_SLAVE_TIMEOUT) \
                and time.monotonic() < deadline, (r.code, r.remark)
            time.sleep(0.2)  # polling remote state, bounded by the deadline
        for i in range(100):
            r = tb.send(conn, topic, b"sync-%d" % i, 0)
            assert r.code == ResponseCode.SUCCESS, (i, r.code, r.remark)
            phys = decode_offset_msg_id(r.ext_fields["msgId"])[2]
            assert _max_offset(slave) > phys, i


def _store_of(home: rj.JavaHome) -> Path:
    return home.root / "store" / "commitlog"


def test_tx_master_tx_slave(namesrv, java_classpath_5, tmp_path):
    """(a), and GET_BROKER_HA_STATUS of both as the official 5.5.0 ``mqadmin haStatus`` prints it."""
    master = tb.start_tx_broker(tmp_path / "m", namesrv, name="ha-a", extra=TX_MASTER, label="ha-a-master")
    try:
        _create_topic(master.addr, "HaTopicA")  # before the slave: its first SlaveSynchronize copies it
        ha_addr = f"127.0.0.1:{master.port + 1}"
        slave = tb.start_tx_broker(tmp_path / "s", namesrv, name="ha-a", label="ha-a-slave",
                                   extra={**TX_SLAVE, "haMasterAddress": ha_addr})
        try:
            sent = _send_all(master.addr, slave.addr, "HaTopicA")
            _check_pair(master.addr, tmp_path / "m" / "commitlog", slave.addr, tmp_path / "s" / "commitlog",
                        "HaTopicA", sent)
            end = _max_offset(master.addr)
            home = rj.JavaHome("ha-mqadmin")
            out = "\n".join(rj.mqadmin(java_classpath_5, ["haStatus", "-n", namesrv, "-b", master.addr], home))
            assert f"#MasterAddr\t{master.addr}" in out, out
            assert f"#MasterCommitLogMaxOffset\t{end}" in out and "#SlaveNum\t1" in out, out
            assert "#InSyncSlaveNum\t1" in out and " OK " in out, out
            out = "\n".join(rj.mqadmin(java_classpath_5, ["haStatus", "-n", namesrv, "-b", slave.addr], home))
            assert f"#MasterAddr\t{ha_addr}" in out and f"#CommitLogMaxOffset\t{end}" in out, out
            # clusterList: the master (BID 0) and the slave (BID 1), each answering its runtime info
            rows = [line.split() for line in rj.mqadmin(java_classpath_5, ["clusterList", "-n", namesrv], home)]
            ids = {(row[2], row[3]) for row in rows if len(row) > 3 and row[1] == "ha-a"}
            assert ids == {("0", master.addr), ("1", slave.addr)}, rows
        finally:
            slave.stop()
    finally:
        master.stop()


def test_java_master_tx_slave(namesrv, java_classpath_4, tmp_path):
    """(b) with the Java master a SYNC_MASTER: our slave's acks release its sends, as a Java slave's do."""
    jmaster, jaddr, jhome = rj.start_broker(java_classpath_4, namesrv, broker_name="ha-b", label="ha-b-master",
                                            commitlog_size=FILE, extra={"brokerRole": "SYNC_MASTER"})
    try:
        _create_topic(jaddr, "HaTopicB")  # before the slave: its first SlaveSynchronize copies it
        # no haMasterAddress: the HA address comes from the name server's REGISTER_BROKER answer
        slave = tb.start_tx_broker(tmp_path / "s", namesrv, name="ha-b", label="ha-b-slave", extra=TX_SLAVE)
        try:
            _sync_sends(jaddr, slave.addr, "HaWarmB")
            sent = _send_all(jaddr, slave.addr, "HaTopicB")
            _check_pair(jaddr, _store_of(jhome), slave.addr, tmp_path / "s" / "commitlog", "HaTopicB", sent)
            _official_bulk(java_classpath_4, namesrv, jaddr, _store_of(jhome), slave.addr,
                           tmp_path / "s" / "commitlog", "HaTopicB", len(sent))
        finally:
            slave.stop()
    finally:
        jmaster.stop(grace=30)


def test_tx_master_java_slave(namesrv, java_classpath_4, tmp_path):
    """
    Run as SYNC_MASTER (the transfer is the same as an ASYNC_MASTER's): once the Java slave reports
    (5 s after it connects), each send is answered SUCCESS only when the slave's CommitLog holds it.
    The slave acks what it appended, before its own dispatch, so its CommitLog max offset is checked.
    """
    master = tb.start_tx_broker(tmp_path / "m", namesrv, name="ha-c", label="ha-c-master",
                                extra={**TX_MASTER, "brokerRole": "SYNC_MASTER"})
    try:
        jslave, jaddr, jhome = rj.start_broker(
            java_classpath_4, namesrv, broker_name="ha-c", label="ha-c-slave", commitlog_size=FILE,
            extra={"brokerRole": "SLAVE", "brokerId": "1", "slaveReadEnable": "true"})
        try:
            _sync_sends(master.addr, jaddr, "HaWarmC")
            sent = _send_all(master.addr, jaddr, "HaTopicC")
            _check_pair(master.addr, tmp_path / "m" / "commitlog", jaddr, _store_of(jhome), "HaTopicC", sent)
            _official_bulk(java_classpath_4, namesrv, master.addr, tmp_path / "m" / "commitlog", jaddr,
                           _store_of(jhome), "HaTopicC", len(sent))
        finally:
            jslave.stop(grace=30)
    finally:
        master.stop()


def test_sync_master_tx_slave(namesrv, tmp_path):
    """
    SYNC_MASTER (and SYNC_FLUSH: the answer waits for both) with our slave: each acknowledged send
    is in the slave's ConsumeQueue when the answer arrives; with the slave stopped, sends are
    answered SLAVE_NOT_AVAILABLE (stored all the same, as Java's), and the slave, restarted,
    catches up with every one of them.
    """
    master = tb.start_tx_broker(tmp_path / "m", namesrv, name="ha-d", label="ha-d-master",
                                extra={**TX_MASTER, "brokerRole": "SYNC_MASTER", "flushDiskType": "SYNC_FLUSH"})
    slave_extra = {**TX_SLAVE, "haMasterAddress": f"127.0.0.1:{master.port + 1}"}
    try:
        slave = tb.start_tx_broker(tmp_path / "s", namesrv, name="ha-d", label="ha-d-slave", extra=slave_extra)
        try:
            with _conn(master.addr) as conn, _conn(slave.addr) as sconn:
                r = tb.create_topic(conn, "HaTopicD", 1)
                assert r.code == ResponseCode.SUCCESS, r
                deadline = time.monotonic() + 30
                while True:  # the slave connects (and reports) within its first second or two
                    r = tb.send(conn, "HaTopicD", b"first", 0)
                    if r.code == ResponseCode.SUCCESS:
                        break
                    assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE and time.monotonic() < deadline, r
                    time.sleep(0.2)  # polling remote state, bounded by the deadline
                deadline = time.monotonic() + 30
                while tb.max_offset(sconn, "HaTopicD", 0) == 0:  # the slave's SlaveSynchronize: the topic
                    assert time.monotonic() < deadline
                    time.sleep(0.2)  # polling remote state, bounded by the deadline
                for i in range(200):
                    r = tb.send(conn, "HaTopicD", b"sync-%d" % i, 0)
                    assert r.code == ResponseCode.SUCCESS, (i, r.code, r.remark)
                    queue_offset = int(r.ext_fields["queueOffset"])
                    assert tb.max_offset(sconn, "HaTopicD", 0) > queue_offset, i
        finally:
            slave.stop()
        with _conn(master.addr) as conn:
            deadline = time.monotonic() + 30
            while True:  # the master sees the HA connection gone
                r = tb.send(conn, "HaTopicD", b"after-stop", 0)
                if r.code == ResponseCode.SLAVE_NOT_AVAILABLE:
                    break
                assert time.monotonic() < deadline, (r.code, r.remark)
                time.sleep(0.05)  # polling remote state, bounded by the deadline
            assert r.ext_fields.get("msgId"), r.ext_fields  # stored, and answered with its id as Java does
            for i in range(20):
                r = tb.send(conn, "HaTopicD", b"unreplicated-%d" % i, 0)
                assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE, (r.code, r.remark)
        slave = tb.restart(slave, label="ha-d-slave-again")
        try:
            upto = _wait_replicated(master.addr, slave.addr)
            _assert_commitlog_identical(tmp_path / "m" / "commitlog", tmp_path / "s" / "commitlog", upto)
        finally:
            slave.stop()
    finally:
        master.stop()



def _send_more(addr: str, topic: str, start: int, count: int, each=None) -> None:
    with _conn(addr) as conn:
        for i in range(start, start + count):
            r = tb.send(conn, topic, f"{topic}-{i:06d}-".encode() + bytes(300 + i % 700), i % QUEUES)
            assert r.code == ResponseCode.SUCCESS, r
            if each is not None:
                each(i)


def test_late_slave_then_killed(namesrv, tmp_path):
    """
    An empty slave started while the master holds three CommitLog files gets the last one only,
    from its start (Java's rule), byte for byte; killed with SIGKILL while the master is being
    written, restarted, it asks for its own recovered offset and catches up to identical files.
    """
    master = tb.start_tx_broker(tmp_path / "m", namesrv, name="ha-f", extra=TX_MASTER, label="ha-f-master")
    try:
        with _conn(master.addr) as conn:
            assert tb.create_topic(conn, "HaTopicF", QUEUES).code == ResponseCode.SUCCESS
        _send_more(master.addr, "HaTopicF", 0, 3000)
        master_log = tmp_path / "m" / "commitlog"
        last = max(int(n.name) for n in master_log.iterdir() if n.name.isdigit())
        assert last >= 2 * FILE, last
        slave = tb.start_tx_broker(tmp_path / "s", namesrv, name="ha-f", label="ha-f-slave",
                                   extra={**TX_SLAVE, "haMasterAddress": f"127.0.0.1:{master.port + 1}"})
        try:
            upto = _wait_replicated(master.addr, slave.addr)
            _assert_commitlog_identical(master_log, tmp_path / "s" / "commitlog", upto, first=last)

            def kill_midway(i: int) -> None:
                if i == 3600:
                    slave.proc.proc.kill()  # SIGKILL: no flush, no clean shutdown
                    slave.proc.proc.wait(10)
            _send_more(master.addr, "HaTopicF", 3000, 1500, kill_midway)
        finally:
            slave.stop()
        mark = len(master.proc.lines)
        slave = tb.restart(slave, label="ha-f-slave-again")
        try:
            m = master.proc.wait_for(r"slave\[[^]]*\] request offset (\d+)", start=mark)
            assert int(m.group(1)) > last, m.group(0)  # its own recovered offset, not a fresh start
            upto = _wait_replicated(master.addr, slave.addr)
            _assert_commitlog_identical(master_log, tmp_path / "s" / "commitlog", upto, first=last)
            with _conn(slave.addr) as conn:
                start = {q: int(conn.invoke(RemotingCommand.request(
                    RequestCode.GET_MIN_OFFSET, {"topic": "HaTopicF", "queueId": str(q)})).ext_fields["offset"])
                    for q in range(QUEUES)}
            assert all(v > 0 for v in start.values()), start  # the queues begin where the slave's log does
            deadline = time.monotonic() + 30
            assert _pull_all(slave.addr, "HaTopicF", deadline, start) == \
                _pull_all(master.addr, "HaTopicF", deadline, start)
        finally:
            slave.stop()
    finally:
        master.stop()
