"""The message store against the official Java broker's files, both ways.

* Java writes, we read: a Java 4.9.7 / 5.5.0 broker stores messages sent by the official
  client (tags, keys, a user property, a batch, a DELAY message) and stops; rocketmq_tx opens
  that store directory and returns the same messages by queue offset, by key and by
  offsetMsgId. Rebuilding the ConsumeQueues and the index from the Java CommitLog gives the
  same bytes as Java's files.
* We write, Java reads: rocketmq_tx writes a store and topics.json; the Java broker started
  on that directory serves every message to the Java consumer with the same ids and offsets.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import javaharness as jh
import pytest
from rocketmq_java import free_port_block as broker_port
from rocketmq_java import java_cluster

from rocketmq_tx.common.message import Message, properties_to_string
from rocketmq_tx.common.messagecodec import decode_message, encode_batch
from rocketmq_tx.common.msgid import UniqueKeyGenerator, decode_offset_msg_id
from rocketmq_tx.store import (
    DefaultMessageStore,
    GetMessageStatus,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageStoreConfig,
)
from rocketmq_tx.store.configfile import ConfigFile

pytestmark = pytest.mark.compat

TOPIC = "StoreCompat"
COMMITLOG_SIZE = 1 << 20


def _events(lines: list[str], event: str) -> list[dict]:
    out = []
    for line in lines:
        if line.startswith("{"):
            obj = json.loads(line)
            if obj.get("event") == event:
                out.append(obj)
    return out


def _open(root: Path) -> DefaultMessageStore:
    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=str(root),
                                                   mapped_file_size_commit_log=COMMITLOG_SIZE))
    assert store.load()
    return store


@pytest.fixture(scope="module")
def java_written(tmp_path_factory, java_peer):
    """A store directory written by the Java broker, and what the Java client saw."""
    version, cp = java_peer
    root = tmp_path_factory.mktemp(f"java-store-{version}")
    with java_cluster(cp, root, commitlog_size=COMMITLOG_SIZE) as cluster:
        sent = _events(jh.run_java(cp, "StoreClient", ["produce", cluster.namesrv_addr, TOPIC, "20"],
                                   timeout=180), "sent")
        consumed = _events(jh.run_java(cp, "StoreClient", ["consume", cluster.namesrv_addr, TOPIC],
                                       timeout=180), "msg")
    assert not (root / "abort").exists(), "the Java broker did not shut down cleanly"
    return version, root, sent, consumed


def test_java_store_read_by_queue_offset(java_written):
    version, root, sent, consumed = java_written
    assert len(sent) == 24 and len(consumed) == 23  # the DELAY message waits in SCHEDULE_TOPIC_XXXX
    store = _open(root)
    try:
        assert store.last_exit_ok
        for m in consumed:
            g = store.get_message("g", TOPIC, m["queueId"], m["queueOffset"], 1)
            assert g.status is GetMessageStatus.FOUND
            msg, _ = decode_message(g.message_buffers[0], check_crc=True)
            assert msg.msg_id == m["msgId"]
            assert msg.offset_msg_id == m["offsetMsgId"]
            assert (msg.commit_log_offset, msg.store_size, msg.body_crc) == \
                (m["commitLogOffset"], m["storeSize"], m["bodyCRC"])
            assert (msg.body.decode(), msg.tags, " ".join(msg.keys)) == (m["body"], m["tags"], m["keys"])
            assert msg.store_timestamp == m["storeTimestamp"]
        for qid in range(4):
            java_count = sum(1 for m in consumed if m["queueId"] == qid)
            assert store.get_max_offset_in_queue(TOPIC, qid) == java_count
        # the batch: consecutive queue offsets in queue 0
        batch = [s for s in sent if s["kind"] == "batch"]
        offsets = [s["queueOffset"] for s in batch]
        assert offsets == list(range(offsets[0], offsets[0] + 3))
    finally:
        store.shutdown()


def test_java_store_by_msg_id_and_key(java_written):
    version, root, sent, consumed = java_written
    store = _open(root)
    try:
        for s in sent:
            _, _, phy = decode_offset_msg_id(s["offsetMsgId"])
            msg = store.look_message_by_offset(phy)
            assert msg is not None and msg.msg_id == s["msgId"] and msg.body.decode() == s["body"]
        end = int(time.time() * 1000) + 60_000
        for s in sent:
            topic = TOPIC
            for key in (s["keys"], s["msgId"]):
                q = store.query_message(topic, key, 32, 0, end)
                found = [decode_message(b)[0] for b in q.message_buffers]
                if s["kind"] == "delay":
                    # Java indexes the record under its stored topic (SCHEDULE_TOPIC_XXXX)
                    q = store.query_message("SCHEDULE_TOPIC_XXXX", key, 32, 0, end)
                    found = [decode_message(b)[0] for b in q.message_buffers]
                assert [m.msg_id for m in found] == [s["msgId"]], (key, s)
    finally:
        store.shutdown()


def test_java_store_delay_message(java_written):
    version, root, sent, consumed = java_written
    [delay] = [s for s in sent if s["kind"] == "delay"]
    store = _open(root)
    try:
        g = store.get_message("g", "SCHEDULE_TOPIC_XXXX", 3, 0, 32)  # level 4 -> queue 3
        assert g.status is GetMessageStatus.FOUND
        msg, _ = decode_message(g.message_buffers[0])
        assert msg.properties["REAL_TOPIC"] == TOPIC and msg.msg_id == delay["msgId"]
        cq = store.find_consume_queue("SCHEDULE_TOPIC_XXXX", 3)
        assert cq.get_entry(0)[2] == msg.store_timestamp + 30_000  # tagsCode = deliver time
    finally:
        store.shutdown()


def test_rebuilt_consume_queues_and_index_are_byte_identical(java_written, tmp_path):
    version, root, sent, consumed = java_written
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    shutil.rmtree(copy / "consumequeue")
    shutil.rmtree(copy / "index")
    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=str(copy),
                                                   mapped_file_size_commit_log=COMMITLOG_SIZE,
                                                   index_tags=version.startswith("5.")))
    assert store.load()
    store.shutdown()
    for qdir in sorted((root / "consumequeue").glob("*/*")):
        rel = qdir.relative_to(root)
        for f in sorted(qdir.iterdir()):
            ours = (copy / rel / f.name).read_bytes()
            theirs = f.read_bytes()
            assert ours == theirs, f"{rel}/{f.name} differs"
    [java_index] = sorted((root / "index").iterdir())
    [our_index] = sorted((copy / "index").iterdir())
    assert our_index.read_bytes() == java_index.read_bytes()


# ---------------------------------------------------------------------------------------------


@pytest.fixture
def python_written(tmp_path):
    """
    A store written by rocketmq_tx: 4 queues, tags, keys, UNIQ_KEY, a batch. The records carry
    the address of the Java broker that will serve them (as a broker's own records do), so
    offsetMsgIds lead the Java client to it.
    """
    root = tmp_path / "py-store"
    port = broker_port()
    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=str(root),
                                                   mapped_file_size_commit_log=COMMITLOG_SIZE,
                                                   store_host=("127.0.0.1", port)))
    assert store.load()
    store.start()
    gen = UniqueKeyGenerator()
    expected = []
    try:
        for i in range(30):
            uniq = gen.create_uniq_id()
            props = {"TAGS": f"Tag{i % 3}", "KEYS": f"pykey-{i}", "UNIQ_KEY": uniq, "idx": str(i)}
            r = store.put_message(MessageExtBrokerInner(
                TOPIC, f"py-body-{i}".encode(), properties_to_string(props).encode(), queue_id=i % 4,
                born_timestamp=int(time.time() * 1000), born_host=("127.0.0.1", 40000)))
            assert r.is_ok()
            expected.append(dict(msgId=uniq, offsetMsgId=r.append_result.msg_id, queueId=i % 4,
                                 queueOffset=r.append_result.logics_offset, body=f"py-body-{i}",
                                 keys=f"pykey-{i}", tags=f"Tag{i % 3}"))
        batch = [Message(TOPIC, f"py-batch-{j}".encode(), 0,
                         {"KEYS": f"pybatch-{j}", "UNIQ_KEY": gen.create_uniq_id(), "TAGS": "TagB"})
                 for j in range(3)]
        r = store.put_messages(MessageExtBatch(TOPIC, encode_batch(batch), b"", queue_id=2,
                                               born_timestamp=int(time.time() * 1000),
                                               born_host=("127.0.0.1", 40001)))
        assert r.is_ok()
        for j, (m, oid) in enumerate(zip(batch, r.append_result.msg_id.split(","))):
            expected.append(dict(msgId=m.properties["UNIQ_KEY"], offsetMsgId=oid, queueId=2,
                                 queueOffset=r.append_result.logics_offset + j, body=f"py-batch-{j}",
                                 keys=f"pybatch-{j}", tags="TagB"))
    finally:
        store.shutdown()
    ConfigFile(str(root / "config" / "topics.json")).persist({
        "dataVersion": {"counter": 1, "timestamp": int(time.time() * 1000)},
        "topicConfigTable": {TOPIC: {"order": False, "perm": 6, "readQueueNums": 4,
                                     "topicFilterType": "SINGLE_TAG", "topicName": TOPIC,
                                     "topicSysFlag": 0, "writeQueueNums": 4}},
    })
    return root, expected, port


def test_python_store_served_by_java_broker(python_written, java_peer):
    version, cp = java_peer
    root, expected, port = python_written
    with java_cluster(cp, root, commitlog_size=COMMITLOG_SIZE, port=port,
                      graceful=False) as cluster:
        lines = jh.run_java(cp, "StoreClient", ["consume", cluster.namesrv_addr, TOPIC], timeout=180)
        consumed = _events(lines, "msg")
        viewed = _events(jh.run_java(cp, "StoreClient", ["view", cluster.namesrv_addr, TOPIC,
                                                         *[e["offsetMsgId"] for e in expected[:5]]],
                                     timeout=180), "view")
        queried = _events(jh.run_java(cp, "StoreClient", ["query", cluster.namesrv_addr, TOPIC,
                                                          "pykey-7", "pybatch-1"], timeout=180), "query")
    key = lambda m: (m["queueId"], m["queueOffset"])  # noqa: E731
    got = sorted(({k: m[k] for k in ("msgId", "offsetMsgId", "queueId", "queueOffset", "body", "keys", "tags")}
                  for m in consumed), key=key)
    assert got == sorted(expected, key=key)
    assert [v["msgId"] for v in viewed] == [e["msgId"] for e in expected[:5]]
    assert sorted(q["body"] for q in queried) == ["py-batch-1", "py-body-7"]
