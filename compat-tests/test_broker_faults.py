"""
rocketmq_tx's broker under bad input and faults, compared where cheap with what the
official Java 4.9.7 broker (same settings: autoCreateTopicEnable=false,
autoCreateSubscriptionGroup=false, maxMessageSize=64 KiB) answers to the very same raw request:

* a body over maxMessageSize -> MESSAGE_ILLEGAL (13); an illegal topic name -> SYSTEM_ERROR;
  a missing topic -> TOPIC_NOT_EXIST (17); a pull for an unknown group ->
  SUBSCRIPTION_GROUP_NOT_EXIST (26); and a table of other refusals (queue out of range,
  properties too long, forbidden topic, send-back failures, unknown code, ...): same code,
  same remark, and nothing stored (max offsets unchanged);
* bad pull offsets -> PULL_OFFSET_MOVED (21) with Java's status, offsets and OffsetMovedEvent;
* a header missing a required field or with a non-numeric value -> SYSTEM_ERROR, and the
  connection stays usable; ROCKETMQ-serialized requests are answered in kind;
* a malformed frame closes that connection only;
* a client that disconnects during a long poll leaves nothing behind;
* SIGTERM unregisters from the name server at once; kill -9 in the middle of a stream of
  sends + restart recovers every acknowledged message (pull and index);
* the broker logs no traceback through all of it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import threading
import time

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb

from rocketmq_tx.blocking import BlockingConnection
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.remoting import RemotingCommand, RemotingTimeoutError, RequestCode, ResponseCode

pytestmark = pytest.mark.compat

MAX_MESSAGE_SIZE = 64 * 1024
TOPIC = "FaultTopic"
#: A group every broker has built in, so pulls work with autoCreateSubscriptionGroup=false.
GROUP = "CID_ONSAPI_OWNER"
STRICT = {"autoCreateTopicEnable": "false", "autoCreateSubscriptionGroup": "false",
          "maxMessageSize": str(MAX_MESSAGE_SIZE)}


@pytest.fixture(scope="module")
def tx(tmp_path_factory):
    """Our name server and our broker (rocketmq-broker) with the strict settings."""
    tmp = tmp_path_factory.mktemp("faults-tx")
    ns_proc, ns = tb.start_tx_namesrv(tmp / "ns")
    broker = None
    try:
        broker = tb.start_tx_broker(tmp / "store", ns, name="tx-faults", extra=STRICT)
        with BlockingConnection(broker.addr) as conn:
            assert tb.create_topic(conn, TOPIC).code == ResponseCode.SUCCESS
            for i in range(3):
                assert tb.send(conn, TOPIC, f"seed-{i}".encode(), 0).code == ResponseCode.SUCCESS
        yield dict(ns=ns, ns_proc=ns_proc, broker=broker, tmp=tmp)
        problems = tb.broker_log_problems(broker.log_text())
        assert not problems, "broker logged errors:\n" + "\n".join(problems)
    finally:
        if broker is not None:
            broker.stop()
        ns_proc.stop()


@pytest.fixture(scope="module")
def java(java_classpath_4):
    """The official 4.9.7 broker with the same settings, for the remarks."""
    ns, ns_addr, home = rj.start_namesrv(java_classpath_4, label="faults-java-ns")
    broker = None
    try:
        broker, addr, _ = rj.start_broker(java_classpath_4, ns_addr, broker_name="java-faults",
                                          extra={**STRICT, "autoCreateTopicEnable": "false"}, home=home)
        with BlockingConnection(addr) as conn:
            assert tb.create_topic(conn, TOPIC).code == ResponseCode.SUCCESS
            for i in range(3):
                assert tb.send(conn, TOPIC, f"seed-{i}".encode(), 0).code == ResponseCode.SUCCESS
        yield dict(addr=addr)
    finally:
        jh.stop_together(*([broker.discard] if broker is not None else []), ns.discard)


def both(tx, java, fn):
    """Run *fn(conn)* against our broker and the Java one; returns (ours, theirs)."""
    out = []
    for addr in (tx["broker"].addr, java["addr"]):
        with BlockingConnection(addr) as conn:
            out.append(fn(conn))
    return out


def offsets(conn: BlockingConnection, topic: str = TOPIC) -> list[int]:
    return [tb.max_offset(conn, topic, q) for q in range(4)]


def refused_and_nothing_stored(tx, java, request_fn, code: int):
    """Send the request to both brokers; same code and remark, and the queues did not move."""
    def run(conn):
        before = offsets(conn)
        response = request_fn(conn)
        return response, before, offsets(conn)

    (ours, ours_before, ours_after), (theirs, th_before, th_after) = both(tx, java, run)
    assert (ours.code, ours.remark) == (theirs.code, theirs.remark)
    assert ours.code == code, ours
    assert ours_after == ours_before and th_after == th_before
    return ours, theirs


def test_oversized_body(tx, java):
    ours, _ = refused_and_nothing_stored(
        tx, java, lambda conn: tb.send(conn, TOPIC, b"x" * (MAX_MESSAGE_SIZE + 1), 1), ResponseCode.MESSAGE_ILLEGAL)
    # A body at the limit less the record overhead still goes through on both.
    for response in both(tx, java, lambda conn: tb.send(conn, TOPIC, b"y" * (MAX_MESSAGE_SIZE - 1024), 2)):
        assert response.code == ResponseCode.SUCCESS, response


def test_illegal_topic_name(tx, java):
    refused_and_nothing_stored(tx, java, lambda conn: tb.send(conn, "bad topic!", b"x"), ResponseCode.SYSTEM_ERROR)
    ours, theirs = both(tx, java, lambda conn: tb.send(conn, "T" * 128, b"x"))
    assert (ours.code, ours.remark) == (theirs.code, theirs.remark)


def test_missing_topic_not_created(tx, java):
    ours, _ = refused_and_nothing_stored(tx, java, lambda conn: tb.send(conn, "NoSuchTopicHere", b"x"),
                                         ResponseCode.TOPIC_NOT_EXIST)
    assert "NoSuchTopicHere" in ours.remark
    assert tb.route(tx["ns"], "NoSuchTopicHere") is None


def test_pull_unknown_group(tx, java):
    refused_and_nothing_stored(tx, java, lambda conn: tb.pull(conn, "NoSuchGroup", TOPIC, 0, 0),
                               ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)


def test_pull_unknown_topic(tx, java):
    ours, theirs = both(tx, java, lambda conn: tb.pull(conn, GROUP, "NoSuchTopicHere", 0, 0))
    assert (ours.code, ours.remark) == (theirs.code, theirs.remark)
    assert ours.code == ResponseCode.TOPIC_NOT_EXIST


def _moved_then_events(conn, queue_id, offset):
    """A pull expected to be PULL_OFFSET_MOVED; returns (response, events stored, their content)."""
    before = tb.max_offset(conn, "OFFSET_MOVED_EVENT", 0)
    response = tb.pull(conn, GROUP, TOPIC, queue_id, offset)
    deadline = time.monotonic() + 5
    while tb.max_offset(conn, "OFFSET_MOVED_EVENT", 0) == before and time.monotonic() < deadline:
        time.sleep(0.05)  # the event is stored right after the answer; bounded poll
    after = tb.max_offset(conn, "OFFSET_MOVED_EVENT", 0)
    events = decode_messages(tb.pull(conn, GROUP, "OFFSET_MOVED_EVENT", 0, before).body) if after > before else []
    described = []
    for m in events:
        event = fastjson.loads(m.body)
        event["messageQueue"]["brokerName"] = "<broker>"
        described.append((event, m.properties.get("TAGS"), m.properties.get("KEYS")))
    return response, after - before, described


def _compare_moved(tx, java, queue_id: int, offset: int) -> None:
    (ours, ours_n, ours_events), (theirs, theirs_n, theirs_events) = both(
        tx, java, lambda conn: _moved_then_events(conn, queue_id, offset))
    assert ours.code == theirs.code == ResponseCode.PULL_OFFSET_MOVED, (queue_id, ours, theirs)
    assert ours.remark == theirs.remark
    for key in ("nextBeginOffset", "minOffset", "maxOffset"):
        assert ours.ext_fields[key] == theirs.ext_fields[key], (key, queue_id, ours, theirs)
    # Each such pull also stores an OffsetMovedEvent in OFFSET_MOVED_EVENT, as Java's master does.
    assert ours_n == theirs_n == 1, (ours_n, theirs_n)
    assert ours_events == theirs_events, (ours_events, theirs_events)


def test_pull_offset_on_empty_queue(tx, java):
    """A non-zero offset on an empty queue: PULL_OFFSET_MOVED (NO_MESSAGE_IN_QUEUE), next offset 0."""
    _compare_moved(tx, java, 3, 5)


def test_pull_offset_past_the_end(tx, java):
    """Far past the end of a queue with messages: PULL_OFFSET_MOVED (OFFSET_OVERFLOW_BADLY);
    Java 4.9.8's store sets nextBeginOffset to the queue's max offset."""
    _compare_moved(tx, java, 0, 1000)


def test_pull_offset_at_the_end(tx, java):
    """One past the last message is not "moved": PULL_NOT_FOUND (no suspend flag); the
    messages are all there."""
    ours, theirs = both(tx, java, lambda conn: tb.pull(conn, GROUP, TOPIC, 0, 3))
    assert ours.code == theirs.code == ResponseCode.PULL_NOT_FOUND
    assert ours.ext_fields == theirs.ext_fields
    with BlockingConnection(tx["broker"].addr) as conn:
        assert tb.pulled_bodies(tb.pull(conn, GROUP, TOPIC, 0, 0)) == [b"seed-0", b"seed-1", b"seed-2"]


def test_missing_required_header_field(tx, java):
    """A request without a required header field: SYSTEM_ERROR, the same connection keeps working."""
    def run(conn):
        # GET_MAX_OFFSET's header goes through Java's generic decoder, which names the field.
        bad = conn.invoke(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"queueId": "0"}))
        # PULL_MESSAGE without its topic (4.9.7 decodes this header by hand and fails later).
        fields = tb.pull_fields(GROUP, TOPIC, 0, 0)
        del fields["topic"]
        bad_pull = conn.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE, fields))
        # A non-numeric value for an int field.
        fields = tb.pull_fields(GROUP, TOPIC, 0, 0)
        fields["queueId"] = "zero"
        bad_int = conn.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE, fields))
        good = tb.pull(conn, GROUP, TOPIC, 0, 0)
        return bad, bad_pull, bad_int, good, offsets(conn)

    ours, theirs = both(tx, java, run)
    assert ours[0].code == theirs[0].code == ResponseCode.SYSTEM_ERROR
    # Java's remark here is whatever exception the missing value led to (4.9.7 decodes the
    # header without checking and fails on a null map key); ours names the field.
    assert ours[0].remark == "the custom field <topic> is null"
    assert ours[1].code == theirs[1].code == ResponseCode.SYSTEM_ERROR
    assert ours[2].code == theirs[2].code == ResponseCode.SYSTEM_ERROR, (ours[2], theirs[2])
    assert ours[3].code == theirs[3].code == ResponseCode.SUCCESS
    assert tb.pulled_bodies(ours[3]) == tb.pulled_bodies(theirs[3])
    assert ours[4] == theirs[4]


def _closed_by_peer(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


MALFORMED = {
    # header length larger than the frame
    "header-past-end": struct.pack(">II", 8, 1000) + b"\0" * 4,
    # JSON header that is not JSON
    "garbage-json": struct.pack(">II", 4 + 9, 9) + b"not-json!",
    # a frame declaring more than the 16 MiB limit
    "too-long": struct.pack(">I", 64 * 1024 * 1024) + b"\0" * 16,
    # an unknown serialization type byte
    "bad-serialize-type": struct.pack(">II", 4 + 2, (7 << 24) | 2) + b"{}",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_frame_closes_only_that_connection(tx, java, case):
    for addr in (tx["broker"].addr, java["addr"]):
        with BlockingConnection(addr) as other:
            assert tb.max_offset(other, TOPIC, 0) >= 3
            host, port = addr.rsplit(":", 1)
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(MALFORMED[case])
                assert _closed_by_peer(sock), (addr, case)
            # The other client's connection is untouched.
            assert tb.max_offset(other, TOPIC, 0) >= 3
            assert tb.pull(other, GROUP, TOPIC, 0, 0).code == ResponseCode.SUCCESS


def test_disconnect_during_long_poll(tx):
    """A parked pull whose client went away: a later message and pulls are unaffected."""
    broker = tx["broker"]
    with BlockingConnection(broker.addr) as conn:
        end = tb.max_offset(conn, TOPIC, 1)
        host, port = broker.addr.rsplit(":", 1)
        for _ in range(3):
            raw = BlockingConnection(broker.addr)
            request = RemotingCommand.request(RequestCode.PULL_MESSAGE,
                                              tb.pull_fields(GROUP, TOPIC, 1, end, suspend_ms=15000))
            with pytest.raises(RemotingTimeoutError):
                raw.invoke(request, timeout=0.5)  # parked: no answer yet
            raw.close()
        # Another client long-polls the same queue and is woken by a new message.
        waiter = BlockingConnection(broker.addr)
        try:
            sent = tb.send(conn, TOPIC, b"after-disconnect", 1)
            assert sent.code == ResponseCode.SUCCESS, sent
            response = tb.pull(waiter, GROUP, TOPIC, 1, end, suspend_ms=5000)
            assert tb.pulled_bodies(response) == [b"after-disconnect"], response
            # A parked pull is answered when a message arrives (whether it was parked before the
            # send or not, the answer is the new message, well before its suspend time).
            start = time.monotonic()
            result = {}
            t = threading.Thread(target=lambda: result.setdefault(
                "r", tb.pull(waiter, GROUP, TOPIC, 1, end + 1, suspend_ms=10000, timeout=15)))
            t.start()
            assert tb.send(conn, TOPIC, b"wakes-the-poll", 1).code == ResponseCode.SUCCESS
            t.join(15)
            assert tb.pulled_bodies(result["r"]) == [b"wakes-the-poll"], result
            assert time.monotonic() - start < 9
        finally:
            waiter.close()
    assert broker.proc.proc.poll() is None


def test_sigterm_unregisters(tx):
    """A SIGTERMed broker leaves the name server's routes at once (it unregisters)."""
    broker = tb.start_tx_broker(tx["tmp"] / "store-term", tx["ns"], name="tx-term",
                                extra={"registerNameServerPeriod": "30000"})
    try:
        tb.wait_route(tx["ns"], lambda info: "tx-term" in info["brokerAddrTable"])
        os.kill(broker.pid, signal.SIGTERM)
        waited = tb.wait_route(tx["ns"], lambda info: "tx-term" not in info["brokerAddrTable"], timeout=10)
        # twistd re-raises the signal once it has shut down cleanly
        assert broker.proc.proc.wait(20) in (0, -signal.SIGTERM)
    finally:
        broker.stop()
    assert waited < 3, waited
    log = broker.log_text()
    assert "unregister failed" not in log and "store flushed" in log, log[-3000:]


def test_kill9_and_restart_recovers(tx):
    """kill -9 in the middle of a stream of sends (small CommitLog and ConsumeQueue files, so
    several roll over), then a restart on the same store: every acknowledged message is
    readable by pull and by key, and the queues go on from where they were."""
    store = tx["tmp"] / "store-kill"
    broker = tb.start_tx_broker(store, tx["ns"], name="tx-kill",
                                extra={"mappedFileSizeCommitLog": 64 * 1024, "mappedFileSizeConsumeQueue": 20 * 60})
    restarted = None
    topic = "KillTopic"
    acked: list[int] = []
    enough = threading.Event()

    def body(i: int) -> bytes:
        return f"k-{i}-".encode() * 10

    def sender() -> None:
        with BlockingConnection(broker.addr) as conn:
            i = 0
            while True:
                try:
                    r = tb.send(conn, topic, body(i), i % 4, keys=f"key-{i}")
                except Exception:
                    return  # the broker is gone
                if r.code == ResponseCode.SUCCESS:
                    acked.append(i)
                if len(acked) >= 600:
                    enough.set()
                i += 1

    try:
        with BlockingConnection(broker.addr) as conn:
            assert tb.create_topic(conn, topic).code == ResponseCode.SUCCESS
        thread = threading.Thread(target=sender, daemon=True)
        thread.start()
        assert enough.wait(60), len(acked)
        os.kill(broker.pid, signal.SIGKILL)
        broker.proc.proc.wait(10)
        thread.join(10)
        assert len(list((store / "commitlog").iterdir())) >= 2  # the CommitLog rolled over
        restarted = tb.restart(broker)
        with BlockingConnection(restarted.addr) as conn:
            ends = offsets(conn, topic)
            assert sum(ends) >= len(acked), (ends, len(acked))
            bodies = set()
            for q in range(4):
                offset = 0
                while offset < ends[q]:
                    got = tb.pulled_bodies(tb.pull(conn, GROUP, topic, q, offset))
                    assert got, (q, offset, ends)
                    bodies.update(got)
                    offset += len(got)
            missing = [i for i in acked if body(i) not in bodies]
            assert not missing, missing[:10]
            # The index came back too: the last acknowledged message by key.
            last = acked[-1]
            r = conn.invoke(RemotingCommand.request(RequestCode.QUERY_MESSAGE, {
                "topic": topic, "key": f"key-{last}", "maxNum": "32", "beginTimestamp": "0",
                "endTimestamp": str(1 << 62)}), 10)
            assert r.code == ResponseCode.SUCCESS, r
            assert [m.body for m in decode_messages(r.body)] == [body(last)]
            # The store goes on from where it was.
            r = tb.send(conn, topic, b"after-restart", 0)
            assert r.code == ResponseCode.SUCCESS and r.ext_fields["queueOffset"] == str(ends[0]), r
        tb.wait_route(tx["ns"], lambda info: "tx-kill" in info["brokerAddrTable"])
    finally:
        if restarted is not None:
            restarted.stop()
        broker.stop()


def _send_fields(topic: str, queue_id: int = 0, props: str = "TAGS\x01TagA\x02WAIT\x01true\x02") -> dict[str, str]:
    return {"a": "PG_compat", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
            "g": str(int(time.time() * 1000)), "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}


#: name -> (request code, ext fields, body): refusals whose code and remark must match Java's.
REFUSALS = {
    "send-queue-out-of-range": (RequestCode.SEND_MESSAGE_V2, _send_fields(TOPIC, 99), b"x"),
    "send-properties-too-long": (RequestCode.SEND_MESSAGE_V2,
                                 _send_fields(TOPIC, 0, "TAGS\x01TagA\x02big\x01" + "p" * 40000 + "\x02"), b"x"),
    "send-schedule-topic": (RequestCode.SEND_MESSAGE_V2, _send_fields("SCHEDULE_TOPIC_XXXX"), b"x"),
    "send-retry-unknown-group": (RequestCode.SEND_MESSAGE_V2, _send_fields("%RETRY%NoSuchGroup"), b"x"),
    "pull-queue-out-of-range": (RequestCode.PULL_MESSAGE, tb.pull_fields(GROUP, TOPIC, 99, 0), b""),
    "send-back-unknown-group": (RequestCode.CONSUMER_SEND_MSG_BACK,
                                {"offset": "0", "group": "NoSuchGroup", "delayLevel": "0"}, b""),
    "send-back-bad-offset": (RequestCode.CONSUMER_SEND_MSG_BACK,
                             {"offset": str(1 << 40), "group": GROUP, "delayLevel": "0"}, b""),
    "view-bad-offset": (RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(1 << 40)}, b""),
    "unknown-code": (4242, {}, b""),
    "query-offset-unknown-group": (RequestCode.QUERY_CONSUMER_OFFSET,
                                   {"consumerGroup": "NoSuchGroup", "topic": TOPIC, "queueId": "0"}, b""),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_same_refusal_as_java(tx, java, case):
    code, fields, body = REFUSALS[case]

    def run(conn):
        before = offsets(conn)
        response = conn.invoke(RemotingCommand.request(code, fields, body), 10)
        return response, before, offsets(conn)

    (ours, ours_before, ours_after), (theirs, th_before, th_after) = both(tx, java, run)
    assert ours.code == theirs.code, (case, ours, theirs)
    # Remarks may name the client's address; the ports differ.
    ours_remark, theirs_remark = (re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", r.remark or "")
                                  for r in (ours, theirs))
    assert ours_remark == theirs_remark, (case, ours.remark, theirs.remark)
    assert ours_after == ours_before and th_after == th_before, case


def test_rocketmq_serialization_answered_in_kind(tx, java):
    """Requests in ROCKETMQ (binary) header serialization: answered in ROCKETMQ, as 4.9 does,
    for a refusal and for a send."""
    from rocketmq_tx.remoting import SerializeType

    def run(conn):
        refused = conn.invoke(RemotingCommand.request(
            RequestCode.PULL_MESSAGE, tb.pull_fields("NoSuchGroup", TOPIC, 0, 0),
            serialize_type=SerializeType.ROCKETMQ))
        sent = conn.invoke(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, _send_fields(TOPIC, 2),
                                                   b"binary-header", serialize_type=SerializeType.ROCKETMQ))
        return refused, sent

    (ours_refused, ours_sent), (theirs_refused, theirs_sent) = both(tx, java, run)
    assert ours_refused.serialize_type == theirs_refused.serialize_type == SerializeType.ROCKETMQ
    assert (ours_refused.code, ours_refused.remark) == (theirs_refused.code, theirs_refused.remark)
    assert ours_sent.code == theirs_sent.code == ResponseCode.SUCCESS, (ours_sent, theirs_sent)
    assert ours_sent.serialize_type == theirs_sent.serialize_type == SerializeType.ROCKETMQ
    assert set(ours_sent.ext_fields) == set(theirs_sent.ext_fields), (ours_sent.ext_fields, theirs_sent.ext_fields)
