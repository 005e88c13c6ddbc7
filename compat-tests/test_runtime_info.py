"""
GET_BROKER_RUNTIME_INFO as the official ``mqadmin brokerStatus`` (tools 4.9.8) prints it: against
our broker (``twistd rocketmq-standalone``) under load from a background sender, and against the
official Java 4.9.7 broker for the key set.

Under load our figures are measured, not constants: a put rate over the last 10 s above 0,
a slowest put above 0 ms, queue figures that parse. Once the first minute has rolled over,
putMessageDistributeTime (Java's text: the last whole minute's latency ranges) sums to the puts
the store made, which equal the sends acknowledged (the load runs only in that first minute).
The key sets of the two brokers differ only by the keys docs/compatibility.md lists.

Timing follows the broker's own clock (its bootTimestamp), polled with deadlines: Java's rate
windows need 11 one-second samples, its distribution rolls over 60 s after the store starts.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

pytestmark = pytest.mark.compat

TOPIC = "RuntimeInfoTopic"
#: ours beyond Java 4.9's: 5.x's spelling of the transfer rate (read by 5.x tools), 5.x's timer keys
OURS_ONLY = {"getTransferredTps", "timerReadBehind", "timerOffsetBehind", "timerCongestNum", "timerEnqueueTps",
             "timerDequeueTps"}


def broker_status(classpath: str, home: rj.JavaHome, namesrv: str, addr: str) -> dict[str, str]:
    """mqadmin brokerStatus, parsed: ``key<padding>: value`` per line."""
    lines = rj.mqadmin(classpath, ["brokerStatus", "-n", namesrv, "-b", addr], home)
    table = {}
    for line in lines:
        m = re.match(r"^(\S+)\s*: (.*)$", line)
        if m:
            table[m.group(1)] = m.group(2)
    assert "brokerVersionDesc" in table, lines
    return table


def runtime_info(addr: str) -> dict[str, str]:
    with BlockingConnection(addr) as conn:
        r = conn.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 10)
    assert r.code == ResponseCode.SUCCESS, r
    return fastjson.loads(r.body)["table"]  # type: ignore[no-any-return]


def uptime_ms(info: dict[str, str]) -> int:
    return int(time.time() * 1000) - int(info["bootTimestamp"])


def wait_uptime(addr: str, ms: int, timeout: float = 120.0) -> dict[str, str]:
    """Poll the broker's runtime info until its store has run *ms*."""
    deadline = time.monotonic() + timeout
    while True:
        info = runtime_info(addr)
        if uptime_ms(info) >= ms:
            return info
        assert time.monotonic() < deadline, info
        time.sleep(0.2)  # polling remote state, bounded by the deadline


def distribution(text: str) -> dict[str, int]:
    return {label: int(n) for label, n in re.findall(r"(\[[^\]]+\]):(\d+)", text)}


class Sender(threading.Thread):
    """SEND_MESSAGE_V2 in a loop over one connection until stopped; counts the acknowledged."""

    def __init__(self, addr: str) -> None:
        super().__init__(daemon=True)
        self.addr = addr
        self.stop_event = threading.Event()
        self.ok = 0
        self.other: list[int] = []

    def run(self) -> None:
        with BlockingConnection(self.addr) as conn:
            i = 0
            while not self.stop_event.is_set():
                r = tb.send(conn, TOPIC, b"x" * 256, queue_id=i % 4)
                if r.code == ResponseCode.SUCCESS:
                    self.ok += 1
                else:
                    self.other.append(r.code)
                i += 1

    def stop(self) -> None:
        self.stop_event.set()
        self.join(30)
        assert not self.is_alive()


@pytest.fixture(scope="module")
def java_broker(java_classpath_4):
    namesrv, ns_addr, home = rj.start_namesrv(java_classpath_4, label="rtinfo-namesrv")
    broker = None
    try:
        broker, addr, _ = rj.start_broker(java_classpath_4, ns_addr, broker_name="rtinfo-java", home=home)
        yield ns_addr, addr, home
    finally:
        if broker is not None:
            broker.stop(grace=30)
        namesrv.stop()


def test_broker_status_under_load(java_classpath_4, java_broker, tmp_path):
    home = rj.JavaHome("rtinfo-tools")
    server = tb.start_standalone(tmp_path / "store", name="tx-rtinfo", cluster="RtInfoCluster")
    sender = None
    try:
        with BlockingConnection(server.addr) as conn:
            assert tb.create_topic(conn, TOPIC).code == ResponseCode.SUCCESS
        sender = Sender(server.addr)
        sender.start()
        wait_uptime(server.addr, 13_000)
        loaded = broker_status(java_classpath_4, home, server.namesrv, server.addr)
        sender.stop()
        stopped_at = uptime_ms(runtime_info(server.addr))
        assert sender.ok > 0 and not sender.other, (sender.ok, sender.other[:10])
        # the load ran in the first minute only, so the first rolled-over minute holds all of it
        assert stopped_at < 55_000, stopped_at

        put_tps = loaded["putTps"].split(" ")
        assert float(put_tps[0]) > 0, loaded["putTps"]
        assert int(loaded["putMessageEntireTimeMax"]) > 0, loaded
        assert int(loaded["putMessageTimesTotal"]) > 0 and float(loaded["putMessageAverageSize"]) > 256, loaded
        for key in ("sendThreadPoolQueueSize", "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueSize",
                    "pullThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueSize",
                    "queryThreadPoolQueueHeadWaitTimeMills", "EndTransactionQueueSize", "pageCacheLockTimeMills",
                    "dispatchBehindBytes", "getMessageEntireTimeMax", "putMessageFailedTimes"):
            assert int(loaded[key]) >= 0, (key, loaded[key])
        assert loaded["putMessageDistributeTime"] == "null", loaded  # Java's text before the first minute
        assert re.fullmatch(r"\d+(\.\d)? [KMGTPE]?i?B", loaded["remainHowManyDataToFlush"]), loaded
        assert re.fullmatch(r"Total : .+, Free : .+\.", loaded["commitLogDirCapacity"]), loaded

        wait_uptime(server.addr, 62_000)
        rolled = broker_status(java_classpath_4, home, server.namesrv, server.addr)
        counts = distribution(rolled["putMessageDistributeTime"])
        assert len(counts) == 13, rolled["putMessageDistributeTime"]
        assert sum(counts.values()) == int(rolled["putMessageTimesTotal"]) == sender.ok, (rolled, sender.ok)
        assert float(rolled["putTps"].split(" ")[1]) > 0, rolled["putTps"]  # the 60 s window covers the load
        assert float(rolled["putLatency99"]) >= 0 and int(rolled["putMessageFailedTimes"]) == 0, rolled

        figures = ("putTps", "putMessageEntireTimeMax", "putMessageTimesTotal", "putMessageDistributeTime",
                   "putLatency99", "pageCacheLockTimeMills", "sendThreadPoolQueueSize", "remainHowManyDataToFlush")
        print(f"\nsent {sender.ok}; loaded: {[(k, loaded[k]) for k in figures]}\n"
              f"rolled: {[(k, rolled[k]) for k in figures]}")

        java_ns, java_addr, java_home = java_broker
        java = broker_status(java_classpath_4, java_home, java_ns, java_addr)

        def keys(table: dict[str, str]) -> set[str]:
            # named after the broker's own path or a delay level in use: compared by their pattern
            return {re.sub(r"^(commitLogDiskRatio_).+$", r"\1<path>", re.sub(r"^(scheduleMessageOffset_)\d+$",
                                                                              r"\1<level>", k)) for k in table}
        ours, theirs = keys(rolled), keys(java)
        table = f"only ours: {sorted(ours - theirs)}\nonly Java 4.9.7's: {sorted(theirs - ours)}"
        assert theirs - ours <= {"scheduleMessageOffset_<level>"}, table
        assert ours - theirs == OURS_ONLY, table
        print(table)
        assert rolled["brokerVersionDesc"] == "V4_9_8", rolled
        problems = tb.broker_log_problems(server.log_text())
        assert not problems, "broker logged errors:\n" + "\n".join(problems)
    finally:
        if sender is not None and sender.is_alive():
            sender.stop_event.set()
        server.stop()


def test_queue_figures_with_sync_flush(tmp_path):
    """SYNC_FLUSH: sends wait for their group commit, so under load from 8 senders the send queue's
    figures (the sends whose answer waits) are seen above 0, and fall back to 0 once the load stops."""
    server = tb.start_standalone(tmp_path / "store", name="tx-rtinfo-sync", cluster="RtInfoCluster",
                                 extra={"flushDiskType": "SYNC_FLUSH"})
    senders: list[Sender] = []
    try:
        with BlockingConnection(server.addr) as conn:
            assert tb.create_topic(conn, TOPIC).code == ResponseCode.SUCCESS
        senders = [Sender(server.addr) for _ in range(8)]
        for s in senders:
            s.start()
        seen: list[tuple[int, int]] = []
        deadline = time.monotonic() + 30
        with BlockingConnection(server.addr) as conn:
            while time.monotonic() < deadline and not any(size for size, _ in seen):
                r = conn.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 10)
                table = fastjson.loads(r.body)["table"]
                seen.append((int(table["sendThreadPoolQueueSize"]), int(table["sendThreadPoolQueueHeadWaitTimeMills"])))
                assert int(table["pageCacheLockTimeMills"]) >= 0
        for s in senders:
            s.stop()
        assert any(size for size, _ in seen), seen[-20:]
        assert max(size for size, _ in seen) <= 8, seen  # one send in flight per sender at most
        assert sum(s.ok for s in senders) > 0 and not any(s.other for s in senders)
        idle = runtime_info(server.addr)
        assert (idle["sendThreadPoolQueueSize"], idle["sendThreadPoolQueueHeadWaitTimeMills"]) == ("0", "0"), idle
        print(f"\nSYNC_FLUSH send queue (size, head wait ms) seen: {seen[-5:]} after {len(seen)} reads")
    finally:
        for s in senders:
            s.stop_event.set()
        server.stop()
