"""
``rocketmq-tx-admin`` against the official ``mqadmin`` (tools 4.9.8), in the same run, on
the Java 4.9.7 and 5.5.0 name server + broker and on our ``rocketmq-standalone``:

* our CLI sets the scene (updateTopic, updateSubGroup, sendMessage, updateBrokerConfig,
  updateKvConfig, wipeWritePerm / addWritePerm) and the official mqadmin sees its effects;
* the read commands of both (clusterList, topicList, topicRoute, topicStatus,
  consumerProgress with and without -g, consumerConnection, queryMsgByKey, queryMsgById, queryMsgByUniqueKey,
  queryMsgByOffset, printMsg, brokerStatus, getBrokerConfig, getNamesrvConfig) give the same facts: each output is
  parsed, mqadmin's and ours by the same parser where the layout is a table, and the facts
  compared (never the strings: times and figures move);
* a failing command exits 1 with one line on stderr.

The mqadmin commands run in one JVM (AdminBatch); ours in this process through ``main``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import rocketmq_java as rj
import txbroker as tb
import txharness as txh

from rocketmq_tx.admin import cli
from rocketmq_tx.blocking import BlockingPullClient
from rocketmq_tx.blocking.connection import BlockingRemotingClient
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode

pytestmark = pytest.mark.compat

HERE = Path(__file__).resolve().parent
TOPIC = "AdminCliTopic"
GROUP = "AdminCliGroup"
COUNT = 8


def ours(ns: str, *args: str) -> str:
    """Our command's stdout (it must succeed)."""
    return txh.admin_cli(ns, *args)


def ours_json(ns: str, *args: str):  # type: ignore[no-untyped-def]
    return json.loads(ours(ns, *args, "--json"))


@pytest.fixture(scope="module", params=["4.9.7", "5.5.0", "tx"])
def cluster(request, tmp_path_factory):
    """A name server and broker (Java 4.9.7, Java 5.5.0, or our standalone); mqadmin is 4.9.8's for all three."""
    kind = request.param
    tools = request.getfixturevalue("java_classpath_4")
    tmp = tmp_path_factory.mktemp(f"admincli-{kind}")
    if kind == "5.5.0":
        with rj.java_cluster(request.getfixturevalue("java_classpath_5"), tmp / "store") as java:
            yield dict(kind=kind, tools=tools, namesrv=java.namesrv_addr, broker_addr=f"127.0.0.1:{java.port}",
                       broker="compat-broker", cluster="CompatCluster", home=java.home)
    elif kind == "tx":
        server = tb.start_standalone(tmp / "store", name="tx-admincli", cluster="TxCliCluster")
        try:
            yield dict(kind=kind, tools=tools, namesrv=server.namesrv, broker_addr=server.addr, broker="tx-admincli",
                       cluster="TxCliCluster", home=rj.JavaHome("admincli"))
        finally:
            server.stop()
    else:
        with rj.java_cluster(tools, tmp / "store") as java:
            yield dict(kind=kind, tools=tools, namesrv=java.namesrv_addr, broker_addr=f"127.0.0.1:{java.port}",
                       broker="compat-broker", cluster="CompatCluster", home=java.home)


@pytest.fixture(scope="module")
def env(cluster):
    """The scene, set by our CLI: a topic, a subscription group, messages, a config change, an online group."""
    ns = cluster["namesrv"]
    created = ours(ns, "updateTopic", "-c", cluster["cluster"], "-t", TOPIC, "-r", "4", "-w", "4")
    assert f"create topic to {cluster['broker_addr']} success." in created
    ours(ns, "updateSubGroup", "-c", cluster["cluster"], "-g", GROUP, "-r", "5")
    sends = [ours_json(ns, "sendMessage", "-t", TOPIC, "-p", f"cli-{i}", "-k", f"ck-{i}", "-c", "TagC",
                       "-b", cluster["broker"], "-i", str(i % 4)) for i in range(COUNT)]
    assert {s["sendStatus"] for s in sends} == {"SEND_OK"}
    ours(ns, "updateBrokerConfig", "-b", cluster["broker_addr"], "-k", "maxMessageSize", "-v", "4194305")
    wiped = ours_json(ns, "wipeWritePerm", "-b", cluster["broker"])
    added = ours_json(ns, "addWritePerm", "-b", cluster["broker"])
    assert wiped == added and wiped[ns] > 0, (wiped, added)
    puller = BlockingPullClient(GROUP, ns, timeout=10.0)
    per_queue = {q: sum(1 for s in sends if s["queueId"] == q) for q in range(4)}
    puller.send_heartbeat([TOPIC])
    committed = {q: max(n - 1, 0) if q == 1 else n for q, n in per_queue.items()}  # lag 1 on queue 1
    for q, offset in committed.items():
        puller.commit_offset(MessageQueue(TOPIC, cluster["broker"], q), offset)
    try:
        yield dict(cluster, sends=sends, per_queue=per_queue, committed=committed, puller=puller)
    finally:
        puller.close()


@pytest.fixture(scope="module")
def mqadmin(env):
    """The official mqadmin's read commands, in one JVM: name -> stdout."""
    sent = env["sends"][3]
    commands = {
        "clusterList": ("clusterList",), "topicList": ("topicList",), "topicRoute": ("topicRoute", "-t", TOPIC),
        "topicStatus": ("topicStatus", "-t", TOPIC), "consumerProgress": ("consumerProgress", "-g", GROUP),
        "everyGroup": ("consumerProgress",),
        "consumerConnection": ("consumerConnection", "-g", GROUP),
        "queryMsgByKey": ("queryMsgByKey", "-t", TOPIC, "-k", "ck-3"),
        "queryMsgById": ("queryMsgById", "-i", sent["offsetMsgId"]),
        "queryMsgByUniqueKey": ("queryMsgByUniqueKey", "-t", TOPIC, "-i", sent["msgId"]),
        "brokerStatus": ("brokerStatus", "-b", env["broker_addr"]),
        "getBrokerConfig": ("getBrokerConfig", "-b", env["broker_addr"]),
        "getNamesrvConfig": ("getNamesrvConfig",),
        "queryMsgByOffset": ("queryMsgByOffset", "-t", TOPIC, "-b", env["broker"], "-i", str(sent["queueId"]), "-o",
                             str(sent["queueOffset"])),
        "printMsg": ("printMsg", "-t", TOPIC, "-s", "TagC"),
        "consumerConnectionAt": ("consumerConnection", "-g", GROUP, "-b", env["broker_addr"]),
        "clusterMoreStats": ("clusterList", "-m"),  # last: the pulls above count in its figures
    }
    env["puller"].send_heartbeat([TOPIC])
    results = rj.mqadmin_batch_results(env["tools"], [(c[0], "-n", env["namesrv"], *c[1:]) for c in commands.values()],
                                       env["home"])
    return {name: result["out"] for name, result in zip(commands, results)}


# --------------------------------------------------------------------------- parsers (one for both outputs)

def table_rows(text: str, first: str) -> list[list[str]]:
    """The rows of a whitespace-aligned table whose first cell is *first*."""
    return [line.split() for line in text.splitlines() if line.split()[:1] == [first]]


def labelled(text: str) -> dict[str, str]:
    """``Label:   value`` lines (printMsg's block)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Z][A-Za-z ]+):\s+(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def config_lines(text: str) -> dict[str, str]:
    """``key   =  value`` lines of getBrokerConfig / getNamesrvConfig."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\s*=  (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def java_map(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.strip("{}").split(", ") if "=" in item)


# --------------------------------------------------------------------------- the facts, compared

def test_cluster_list(env, mqadmin):
    mine = ours(env["namesrv"], "clusterList")
    expect = [[env["cluster"], env["broker"], "0", env["broker_addr"]]]
    assert [r[:4] for r in table_rows(mqadmin["clusterList"], env["cluster"])] == expect, mqadmin["clusterList"]
    assert [r[:4] for r in table_rows(mine, env["cluster"])] == expect, mine
    # the version column: the broker's brokerVersionDesc, as mqadmin brokerStatus reads it (mqadmin's own
    # clusterList leaves the column empty when its runtime-info call times out on a loaded machine)
    version = re.search(r"^brokerVersionDesc\s*: (\S+)$", mqadmin["brokerStatus"], re.M)
    assert version and table_rows(mine, env["cluster"])[0][4] == version.group(1), (mine, mqadmin["brokerStatus"])


def test_cluster_list_more_stats(env, mqadmin):
    # messages in, yesterday and today: our sends (the "out" figures move with every pull, so are left out)
    mine = ours(env["namesrv"], "clusterList", "-m")
    theirs = table_rows(mqadmin["clusterMoreStats"], env["cluster"])
    assert [r[:3] + r[4:5] for r in table_rows(mine, env["cluster"])] == [r[:3] + r[4:5] for r in theirs], mine
    assert theirs[0][1] == env["broker"] and int(theirs[0][4]) >= COUNT, mqadmin["clusterMoreStats"]


def test_topic_list(env, mqadmin):
    theirs = {line.strip() for line in mqadmin["topicList"].splitlines()
              if re.fullmatch(r"[%|A-Za-z0-9_-]+", line.strip())}
    mine = set(ours_json(env["namesrv"], "topicList"))
    assert TOPIC in mine and mine == theirs
    assert set(ours(env["namesrv"], "topicList").split()) == theirs


def test_topic_route(env, mqadmin):
    out = mqadmin["topicRoute"]
    theirs = TopicRouteData.from_json(fastjson.loads(out[out.index("{"):]))
    mine = TopicRouteData.from_json(ours_json(env["namesrv"], "topicRoute", "-t", TOPIC))
    assert mine.queue_datas == theirs.queue_datas
    assert [(b.broker_name, b.broker_addrs) for b in mine.broker_datas] == [
        (b.broker_name, b.broker_addrs) for b in theirs.broker_datas]
    text = ours(env["namesrv"], "topicRoute", "-t", TOPIC)
    assert TopicRouteData.from_json(json.loads(text)).queue_datas == theirs.queue_datas


def test_topic_status(env, mqadmin):
    expect = {q: (0, n) for q, n in env["per_queue"].items()}
    for text in (mqadmin["topicStatus"], ours(env["namesrv"], "topicStatus", "-t", TOPIC)):
        rows = table_rows(text, env["broker"])
        assert {int(r[1]): (int(r[2]), int(r[3])) for r in rows} == expect, text
    mine = ours_json(env["namesrv"], "topicStatus", "-t", TOPIC)
    assert {r["queueId"]: (r["minOffset"], r["maxOffset"]) for r in mine} == expect


def test_consumer_progress(env, mqadmin):
    expect = {q: (env["per_queue"][q], c) for q, c in env["committed"].items()}
    for text in (mqadmin["consumerProgress"], ours(env["namesrv"], "consumerProgress", "-g", GROUP)):
        rows = table_rows(text, TOPIC)
        assert {int(r[2]): (int(r[3]), int(r[4])) for r in rows} == expect, text
        assert re.search(r"^Diff Total: 1$", text, re.M), text
    assert ours_json(env["namesrv"], "consumerProgress", "-g", GROUP)["diffTotal"] == 1


def test_consumer_progress_of_every_group(env, mqadmin):
    env["puller"].send_heartbeat([TOPIC])
    mine = ours(env["namesrv"], "consumerProgress")
    theirs = mqadmin["everyGroup"]
    # group, client count, lowest client version, PULL (no model for a pull client), TPS, total lag
    row = table_rows(theirs, GROUP)
    assert len(row) == 1 and row[0][1:4] == ["1", row[0][2], "PULL"] and row[0][-1] == "1", theirs
    assert [r[:4] + r[-1:] for r in table_rows(mine, GROUP)] == [row[0][:4] + row[0][-1:]], mine
    groups = {r[0] for r in (line.split() for line in theirs.splitlines()[1:]) if r}
    assert {r[0] for r in (line.split() for line in mine.splitlines()[1:]) if r} == groups


def test_consumer_connection(env, mqadmin):
    env["puller"].send_heartbeat([TOPIC])
    mine = ours(env["namesrv"], "consumerConnection", "-g", GROUP)
    at = ours(env["namesrv"], "consumerConnection", "-g", GROUP, "-b", env["broker_addr"])
    for text in (mqadmin["consumerConnection"], mine, mqadmin["consumerConnectionAt"], at):
        clients = {r[0] for r in table_rows(text, env["puller"].client.client_id)}
        assert clients == {env["puller"].client.client_id}, text
        assert {r[0] for r in table_rows(text, TOPIC)} == {TOPIC}, text
        assert labelled(text)["MessageModel"] == "CLUSTERING", text


def test_query_msg_by_key(env, mqadmin):
    sent = env["sends"][3]
    for text in (mqadmin["queryMsgByKey"], ours(env["namesrv"], "queryMsgByKey", "-t", TOPIC, "-k", "ck-3")):
        rows = table_rows(text, sent["msgId"])
        assert [(int(r[1]), int(r[2])) for r in rows] == [(sent["queueId"], sent["queueOffset"])], text


@pytest.mark.parametrize("name", ["queryMsgById", "queryMsgByUniqueKey", "queryMsgByOffset"])
def test_query_msg(env, mqadmin, name):
    sent = env["sends"][3]
    args = {"queryMsgById": ("-i", sent["offsetMsgId"]), "queryMsgByUniqueKey": ("-t", TOPIC, "-i", sent["msgId"]),
            "queryMsgByOffset": ("-t", TOPIC, "-b", env["broker"], "-i", str(sent["queueId"]), "-o",
                                 str(sent["queueOffset"]))}[name]
    theirs, mine = labelled(mqadmin[name]), labelled(ours(env["namesrv"], name, *args))
    facts = ("Topic", "Tags", "Keys", "Queue ID", "Queue Offset", "CommitLog Offset", "Reconsume Times",
             "Born Timestamp", "Store Timestamp", "Born Host", "Store Host", "System Flag")
    assert {k: mine.get(k) for k in facts} == {k: theirs.get(k) for k in facts}, (mine, theirs)
    assert theirs["Keys"] == "[ck-3]" and theirs["Queue Offset"] == str(sent["queueOffset"])
    assert java_map(mine["Properties"]) == java_map(theirs["Properties"])
    # 4.9.8's printMsg names the offsetMsgId "OffsetID" in queryMsgById; the body file holds the body
    assert Path(mine["Message Body Path"]).read_bytes() == b"cli-3"


def test_print_msg(env, mqadmin):
    def messages(text: str) -> set[tuple[str, str]]:
        return {(m.group(1), m.group(2)) for m in re.finditer(r"^MSGID: (\S+) .* BODY: (.*)$", text, re.M)}
    def ranges(text: str) -> list[tuple[str, str]]:
        return re.findall(r"^minOffset=(\d+), maxOffset=(\d+), ", text, re.M)
    expect = {(s["msgId"], f"cli-{i}") for i, s in enumerate(env["sends"])}
    mine = ours(env["namesrv"], "printMsg", "-t", TOPIC, "-s", "TagC")
    assert messages(mqadmin["printMsg"]) == expect, mqadmin["printMsg"]
    assert messages(mine) == expect, mine
    # Java walks a HashSet of queues; compare the ranges as a multiset
    assert sorted(ranges(mine)) == sorted(ranges(mqadmin["printMsg"]))


def test_broker_status(env, mqadmin):
    def table(text: str) -> dict[str, str]:
        return {k.strip(): v.strip() for k, _, v in (line.partition(": ") for line in text.splitlines()) if v}
    theirs = table(mqadmin["brokerStatus"])
    mine = table(ours(env["namesrv"], "brokerStatus", "-b", env["broker_addr"]))
    assert mine.keys() == theirs.keys()
    assert mine["brokerVersionDesc"] == theirs["brokerVersionDesc"]
    assert ours_json(env["namesrv"], "brokerStatus", "-b", env["broker_addr"])[env["broker_addr"]].keys() == \
        theirs.keys()


def test_broker_config(env, mqadmin):
    theirs = config_lines(mqadmin["getBrokerConfig"])
    mine = config_lines(ours(env["namesrv"], "getBrokerConfig", "-b", env["broker_addr"]))
    assert theirs["maxMessageSize"] == "4194305"  # our updateBrokerConfig, as mqadmin reads it back
    assert mine == theirs
    assert ours_json(env["namesrv"], "getBrokerConfig", "-b", env["broker_addr"])[env["broker_addr"]] == theirs


def test_namesrv_config(env, mqadmin):
    theirs = config_lines(mqadmin["getNamesrvConfig"])
    assert theirs
    assert config_lines(ours(env["namesrv"], "getNamesrvConfig")) == theirs
    assert ours_json(env["namesrv"], "getNamesrvConfig")[env["namesrv"]] == theirs


def test_consume_and_reset(env):
    """consumeMessage reads what was sent; resetOffsetByTime to 0 answers every queue's offset 0."""
    got = ours_json(env["namesrv"], "consumeMessage", "-t", TOPIC, "-c", "100")
    assert sorted(m["body"] for m in got) == sorted(f"cli-{i}" for i in range(COUNT))
    reset = ours_json(env["namesrv"], "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0")
    # the group is online: the broker hands the new offsets to its clients (4.x does not commit them itself)
    assert {r["queueId"]: r["offset"] for r in reset} == {q: 0 for q in range(4)}


def test_set_consume_mode(env):
    """5.x's setConsumeMode: our broker and the Java 5.5.0 one keep the mode (GET_ALL_MESSAGE_REQUEST_MODE reads
    it back); the Java 4.9.7 broker does not know the request (mqadmin 4.9.8 has no such command)."""
    args = ["setConsumeMode", "-n", env["namesrv"], "-b", env["broker_addr"], "-t", TOPIC, "-g", GROUP, "-m", "POP",
            "-q", "2"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(args)
    if env["kind"] != "4.9.7":
        assert status == 0, err.getvalue()
        with BlockingRemotingClient() as client:
            response = client.invoke(env["broker_addr"], RemotingCommand.request(
                RequestCode.GET_ALL_MESSAGE_REQUEST_MODE))
        modes = json.loads(response.body)["messageRequestModeMap"]
        assert modes[TOPIC][GROUP]["mode"] == "POP" and modes[TOPIC][GROUP]["popShareQueueNum"] == 2, modes
    else:
        assert status == 1 and f"{int(ResponseCode.REQUEST_CODE_NOT_SUPPORTED)}" in err.getvalue(), err.getvalue()


def test_kv_config(env):
    ns = env["namesrv"]
    ours(ns, "updateKvConfig", "-s", "ADMIN_CLI", "-k", "k", "-v", "v")
    ours(ns, "deleteKvConfig", "-s", "ADMIN_CLI", "-k", "k")


def test_failure_is_one_line_and_status_1(env):
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(HERE.parent), os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, "-m", "rocketmq_tx.admin.cli", "topicRoute", "-n", env["namesrv"], "-t",
                          "NoSuchTopicOfAdminCli"], capture_output=True, text=True, timeout=60, env=child_env)
    assert out.returncode == 1 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 1 and "17" in out.stderr, out.stderr
    usage = subprocess.run([sys.executable, "-m", "rocketmq_tx.admin.cli", "topicRoute", "-n", env["namesrv"]],
                           capture_output=True, text=True, timeout=60, env=child_env)
    assert usage.returncode == 2 and "-t" in usage.stderr


def test_delete_sub_group_and_topic(env):
    ns = env["namesrv"]
    ours(ns, "deleteSubGroup", "-c", env["cluster"], "-g", GROUP)
    ours(ns, "deleteTopic", "-c", env["cluster"], "-t", TOPIC)
    assert TOPIC not in ours_json(ns, "topicList")


# --------------------------------------------------------------------------- ACL 1.0 accounts

ACL_ADMIN = ("cliAdmin01", "cliAdminSecret1")
ACL_USER = ("cliUser001", "cliUserSecret1")
ACL_YML = f"""\
accounts:
- accessKey: {ACL_ADMIN[0]}
  secretKey: {ACL_ADMIN[1]}
  admin: true
- accessKey: {ACL_USER[0]}
  secretKey: {ACL_USER[1]}
  admin: false
"""


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory, java_classpath_4):
    """Our standalone with ACL 1.0 on, and a JavaHome whose tools.yml holds the admin account (for mqadmin)."""
    tmp = tmp_path_factory.mktemp("admincli-acl")
    (tmp / "home" / "conf").mkdir(parents=True)
    (tmp / "home" / "conf" / "plain_acl.yml").write_text(ACL_YML)
    server = tb.start_standalone(tmp / "store", name="tx-admincli-acl", cluster="TxCliAcl",
                                 extra={"aclEnable": "true", "rocketmqHome": tmp / "home"})
    home = rj.JavaHome("admincli-acl")
    (home.root / "conf" / "tools.yml").write_text(f"accessKey: {ACL_ADMIN[0]}\nsecretKey: {ACL_ADMIN[1]}\n")
    try:
        yield dict(server=server, home=home, tools=java_classpath_4)
    finally:
        server.stop()


def test_acl_commands_against_our_acl_broker(acl_broker, monkeypatch):
    server, home = acl_broker["server"], acl_broker["home"]
    ns, addr = server.namesrv, server.addr
    admin = ("--access-key", ACL_ADMIN[0], "--secret-key", ACL_ADMIN[1])
    # not signed, or signed by a non-admin account: refused by the broker, exit 1 with one line
    for creds in ((), ("--access-key", ACL_USER[0], "--secret-key", ACL_USER[1])):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(["updateAclConfig", "-n", ns, "-b", addr, "-a", "cliNew0001", "-s", "cliNewSecret1",
                               *creds])
        assert status == 1 and len(err.getvalue().splitlines()) == 1, err.getvalue()
    before = ours_json(ns, "clusterAclConfigVersion", "-b", addr, *admin)
    ours(ns, "updateAclConfig", "-b", addr, "-a", "cliNew0001", "-s", "cliNewSecret1", "-t", "TopicA=PUB", *admin)
    # the credentials from $ROCKETMQ_HOME/conf/tools.yml, as mqadmin takes them
    monkeypatch.setenv("ROCKETMQ_HOME", str(home.root))
    after = ours_json(ns, "clusterAclConfigVersion", "-b", addr)
    assert [r["aclFilePath"] for r in after] == [r["aclFilePath"] for r in before]
    assert [r["counter"] for r in after] == [r["counter"] + 1 for r in before]
    theirs = rj.mqadmin(acl_broker["tools"], ["clusterAclConfigVersion", "-n", ns, "-b", addr], home)
    rows = [line.split() for line in theirs if line.startswith("TxCliAcl ")]
    assert [(r[3], int(r[4])) for r in rows] == [(r["aclFilePath"], r["counter"]) for r in after], theirs
    path = Path(after[0]["aclFilePath"])
    assert "cliNew0001" in path.read_text() and "TopicA=PUB" in path.read_text()
    ours(ns, "deleteAclConfig", "-b", addr, "-a", "cliNew0001")
    assert "cliNew0001" not in path.read_text()
    ours(ns, "updateGlobalWhiteAddr", "-b", addr, "-g", "10.20.30.*")
    assert "10.20.30.*" in path.read_text()
