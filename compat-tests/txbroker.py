"""
Helpers for the broker compat tests (test_broker_admin/mixed/faults.py): rocketmq_tx's
broker as a fresh ``twistd`` process (alone or with its in-process name server), and raw
requests to a broker over one blocking connection.

Readiness is the process's own "rocketmq-broker listening on" log line, never a sleep;
waits on remote state (routes) poll with a deadline.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import javaharness as jh
import rocketmq_java as rj
import txharness as txh

from rocketmq_tx.blocking import BlockingConnection, BlockingRemotingClient
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageConst, properties_to_string
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["TxBroker", "start_tx_broker", "start_standalone", "start_tx_namesrv", "send", "pull", "max_offset",
           "route", "wait_route", "create_topic", "broker_log_problems"]


class TxBroker:
    """A running ``rocketmq-broker`` or ``rocketmq-standalone`` process."""

    def __init__(self, proc: txh.TxProcess, addr: str, namesrv: str | None, store: Path, name: str,
                 argv: list[str]) -> None:
        self.proc = proc
        self.addr = addr
        self.namesrv = namesrv
        self.store = store
        self.name = name
        self.argv = argv

    @property
    def pid(self) -> int:
        return self.proc.proc.pid

    @property
    def port(self) -> int:
        return int(self.addr.rsplit(":", 1)[1])

    def stop(self, grace: float = 20.0) -> int | None:
        return self.proc.stop(grace)

    def log_text(self) -> str:
        return "\n".join(self.proc.lines)


def _settings_args(settings: Mapping[str, object]) -> list[str]:
    args: list[str] = []
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    return args


def _spawn(plugin: str, args: Sequence[str], label: str) -> txh.TxProcess:
    txh.WORK.mkdir(exist_ok=True)
    log_path = txh.WORK / f"{label}-{os.getpid()}-{time.monotonic_ns()}.log"
    return txh.TxProcess([*txh.twistd(), "-n", "--pidfile=", plugin, *args], log_path)


def _broker_settings(store: Path, name: str, port: int, cluster: str, extra: Mapping[str, object] | None) -> dict:
    settings: dict[str, object] = {
        "brokerClusterName": cluster, "brokerName": name, "brokerIP1": "127.0.0.1", "bindAddress": "127.0.0.1",
        "listenPort": port, "storePathRootDir": store, "storePathCommitLog": store / "commitlog",
        "mappedFileSizeCommitLog": 4 * 1024 * 1024, "flushDiskType": "ASYNC_FLUSH", "diskMaxUsedSpaceRatio": 99,
        **txh.SMALL_STORE,
    }
    settings.update(extra or {})
    return settings


def _wait_listening(proc: txh.TxProcess, what: str = "rocketmq-broker") -> int:
    try:
        m = proc.wait_for(rf"{re.escape(what)} listening on [^:]+:(\d+)")
    except Exception:
        proc.stop()
        raise
    return int(m.group(1))


def start_tx_broker(store: Path, namesrv: str | None, *, name: str = "tx-broker", cluster: str = "DefaultCluster",
                    extra: Mapping[str, object] | None = None, port: int | None = None,
                    label: str = "tx-broker", conf_file: bool = False) -> TxBroker:
    """``twistd -n rocketmq-broker -n NAMESRV --set ...`` on a free port block (main, fast = -2).

    *conf_file*: write the settings to ``<store>.broker.conf`` in Java's ``key=value`` form,
    with the keys a Java broker.conf typically has (HA, roles, clean-up), and pass ``-c``.
    """
    port = port or rj.free_port_block()
    settings = _broker_settings(Path(store), name, port, cluster, extra)
    if conf_file:
        java_keys = {"brokerId": 0, "deleteWhen": "04", "fileReservedTime": 48, "brokerRole": "ASYNC_MASTER",
                     "haListenPort": port + 1, "waitTimeMillsInSendQueue": 20000, "osPageCacheBusyTimeOutMills": 20000}
        conf = Path(f"{store}.broker.conf")
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text("".join(f"{k}={v}\n" for k, v in {**java_keys, **settings}.items()))
        args = ["-c", str(conf)]
    else:
        args = _settings_args(settings)
    if namesrv:
        args = ["-n", namesrv, *args]
    proc = _spawn("rocketmq-broker", args, label)
    _wait_listening(proc)
    return TxBroker(proc, f"127.0.0.1:{port}", namesrv, Path(store), name, args)


def restart(broker: TxBroker, label: str = "tx-broker-restarted") -> TxBroker:
    """A new process with the same arguments (same store and port)."""
    proc = _spawn("rocketmq-broker", broker.argv, label)
    _wait_listening(proc)
    return TxBroker(proc, broker.addr, broker.namesrv, broker.store, broker.name, broker.argv)


def start_standalone(store: Path, *, name: str = "tx-standalone", cluster: str = "DefaultCluster",
                     extra: Mapping[str, object] | None = None, tls: TlsSettings | None = None) -> TxBroker:
    """``twistd -n rocketmq-standalone``: our name server and broker in one process (*tls*: how
    to reach a name server that enforces TLS while waiting for the registration)."""
    port = rj.free_port_block()
    ns_port = jh.free_port()
    settings = _broker_settings(Path(store), name, port, cluster, extra)
    settings.update(namesrvPort=ns_port, namesrvBindAddress="127.0.0.1")
    proc = _spawn("rocketmq-standalone", _settings_args(settings), "tx-standalone")
    _wait_listening(proc, "rocketmq-namesrv")
    _wait_listening(proc, "rocketmq-broker")
    ns = f"127.0.0.1:{ns_port}"
    broker = TxBroker(proc, f"127.0.0.1:{port}", ns, Path(store), name, [])
    wait_route(ns, lambda info: name in info.get("brokerAddrTable", {}), tls=tls)
    return broker


def start_tx_namesrv(tmp: Path, **settings: object) -> tuple[txh.TxProcess, str]:
    args = _settings_args({"listenPort": 0, "bindAddress": "127.0.0.1", "kvConfigPath": Path(tmp) / "kvConfig.json",
                           "configStorePath": Path(tmp) / "namesrv.properties", **settings})
    proc = txh.start_twistd("rocketmq-namesrv", args)
    return proc, f"127.0.0.1:{proc.port}"


# --------------------------------------------------------------------------- name server state

def cluster_info(namesrv: str, tls: TlsSettings | None = None) -> dict:
    with BlockingRemotingClient(tls=tls) as client:
        for _ in range(10):
            response = client.invoke(namesrv, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
            # The 4.9 Java name server serializes its live route maps outside its lock
            # (RouteInfoManager.getAllClusterInfo), so an answer given while a broker
            # (un)registers can be SYSTEM_ERROR "ConcurrentModificationException": ask again.
            if not (response.code == ResponseCode.SYSTEM_ERROR
                    and "ConcurrentModificationException" in (response.remark or "")):
                break
    assert response.code == ResponseCode.SUCCESS, response
    return fastjson.loads(response.body)


def route(namesrv: str, topic: str) -> dict | None:
    """The topic's route from a name server, or None (TOPIC_NOT_EXIST)."""
    with BlockingRemotingClient() as client:
        response = client.invoke(namesrv, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    assert response.code == ResponseCode.SUCCESS, response
    return fastjson.loads(response.body)


def wait_route(namesrv: str, predicate, timeout: float = 60.0, what: str = "cluster state",
               tls: TlsSettings | None = None) -> float:
    """Poll GET_BROKER_CLUSTER_INFO until *predicate(info)*; returns the seconds waited."""
    start = time.monotonic()
    while True:
        if predicate(cluster_info(namesrv, tls)):
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what} not reached on {namesrv} within {timeout}s: {cluster_info(namesrv)}")
        time.sleep(0.1)  # polling remote state, bounded by the timeout above


def wait_topic_route(namesrv: str, topic: str, brokers: Sequence[str], timeout: float = 60.0) -> dict:
    """Poll until *topic*'s route lists every broker in *brokers*."""
    deadline = time.monotonic() + timeout
    while True:
        r = route(namesrv, topic)
        names = {b["brokerName"] for b in (r or {}).get("brokerDatas", [])}
        if r is not None and set(brokers) <= names:
            return r
        if time.monotonic() > deadline:
            raise AssertionError(f"route of {topic} on {namesrv} never listed {brokers}: {r}")
        time.sleep(0.1)  # polling remote state, bounded by the deadline


# --------------------------------------------------------------------------- raw broker requests

def create_topic(conn: BlockingConnection, topic: str, queues: int = 4, perm: int = 6) -> RemotingCommand:
    fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
              "perm": str(perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
    return conn.invoke(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields), 10)


def send(conn: BlockingConnection, topic: str, body: bytes, queue_id: int = 0, *, keys: str | None = None,
         tags: str = "TagA", group: str = "PG_compat", default_topic: str = "TBW102") -> RemotingCommand:
    """SEND_MESSAGE_V2 as the Java producer sends it."""
    props = {MessageConst.PROPERTY_TAGS: tags, MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true"}
    if keys:
        props[MessageConst.PROPERTY_KEYS] = keys
    fields = {"a": group, "b": topic, "c": default_topic, "d": "4", "e": str(queue_id), "f": "0",
              "g": str(int(time.time() * 1000)), "h": "0", "i": properties_to_string(props), "j": "0", "k": "false",
              "m": "false"}
    return conn.invoke(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body), 10)


def pull_fields(group: str, topic: str, queue_id: int, offset: int, *, suspend_ms: int = 0,
                max_nums: int = 32) -> dict[str, str]:
    sys_flag = 0x4 | (0x2 if suspend_ms else 0)  # SUBSCRIPTION (+ SUSPEND)
    return {"consumerGroup": group, "topic": topic, "queueId": str(queue_id), "queueOffset": str(offset),
            "maxMsgNums": str(max_nums), "sysFlag": str(sys_flag), "commitOffset": "0",
            "suspendTimeoutMillis": str(suspend_ms), "subscription": "*", "subVersion": "0",
            "expressionType": "TAG"}


def pull(conn: BlockingConnection, group: str, topic: str, queue_id: int, offset: int, *, suspend_ms: int = 0,
         timeout: float = 10.0) -> RemotingCommand:
    return conn.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE,
                                               pull_fields(group, topic, queue_id, offset, suspend_ms=suspend_ms)),
                       timeout)


def pulled_bodies(response: RemotingCommand) -> list[bytes]:
    return [m.body for m in decode_messages(response.body)] if response.code == ResponseCode.SUCCESS else []


def max_offset(conn: BlockingConnection, topic: str, queue_id: int) -> int:
    r = conn.invoke(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)}))
    assert r.code == ResponseCode.SUCCESS, r
    return int(r.ext_fields["offset"])


def consumer_offset(conn: BlockingConnection, group: str, topic: str, queue_id: int) -> int:
    """The broker's committed offset of *group* for one queue; -1 when it has none."""
    r = conn.invoke(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET,
                                            {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}))
    return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else -1


def wait_committed(addr: str, group: str, topic: str, queues, timeout: float = 30.0) -> None:
    """
    Until the broker's committed offset of *group* is at the end of each of *queues* (a push
    consumer commits every 5 s). At the end, not merely present: a Java broker answers
    QUERY_CONSUMER_OFFSET with 0 for a group it holds no offset of while the queue still
    starts at 0 in memory, so "an offset exists" cannot be read from it.
    """
    deadline = time.monotonic() + timeout
    with BlockingConnection(addr) as conn:
        while True:
            state = {q: (consumer_offset(conn, group, topic, q), max_offset(conn, topic, q)) for q in queues}
            if all(c == m for c, m in state.values()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"consumer offsets of {group} never caught up: {state}")
            time.sleep(0.2)  # polling remote state, bounded by the deadline

def copy_live_config(src: Path, dst: Path, attempts: int = 10) -> None:
    """
    ``shutil.copytree`` of a running broker's config directory. Both brokers persist a file
    by writing a temporary one and renaming it over the old (Java's ``MixAll.string2File``
    moves the old one to ``.bak`` first), so a file listed may be gone for a moment when it
    is copied: the whole copy is then made again.
    """
    for attempt in range(attempts):
        try:
            shutil.copytree(src, dst)
            return
        except shutil.Error:
            shutil.rmtree(dst, ignore_errors=True)
            if attempt == attempts - 1:
                raise
            time.sleep(0.1)  # a rename in progress: copy again after it


def broker_log_problems(text: str) -> list[str]:
    """Tracebacks and unhandled errors in a twistd log (a broker must log none under these tests)."""
    return [line for line in text.splitlines()
            if "Traceback" in line or "Unhandled" in line or "CRITICAL" in line or "#critical" in line]


def no_problems(broker: TxBroker) -> None:
    """Fails the test when *broker*'s log holds any of :func:`broker_log_problems`."""
    problems = broker_log_problems(broker.log_text())
    assert not problems, "broker logged errors:\n" + "\n".join(problems)
