"""
ACL 1.0 against the official Java peers, in one run:

* the official 4.9.8 and 5.5.0 clients with ``AclClientRPCHook`` (``AclPeer``: producer,
  push consumer, lite pull consumer, pull consumer, DefaultMQAdminExt) against our broker
  (``rocketmq-standalone``, ``aclEnable=true``): the allowed account sends and consumes;
  a wrong secret, a DENY topic or group, a non-admin on UPDATE_AND_CREATE_TOPIC, an unknown
  access key and an unsigned client are refused with SYSTEM_ERROR (1) and 4.9.8's remark;
  an account whose ``whiteRemoteAddress`` matches needs no valid signature;
* mqadmin (4.9.8 and 5.5.0 tools, credentials from ``$ROCKETMQ_HOME/conf/tools.yml`` as
  ``MQAdminStartup`` reads them): updateTopic allowed for the admin account and refused
  for the normal one; 4.9.8's updateAclConfig, updateGlobalWhiteAddr, deleteAclConfig and
  clusterAclConfigVersion against our broker; then a Java 4.9.7 broker (acl 4.9.8) started
  on the plain_acl.yml our broker wrote accepts the account mqadmin created, refuses the
  deleted one and honours the new global white list; and the same updateAclConfig run on
  both brokers leaves the two files equal but for the data version's timestamp;
* our clients with credentials (BlockingProducer, BlockingPullClient, and the Twisted
  Producer and LitePullConsumer through txclient.py) against the Java 4.9.7 broker with
  ACL on: allowed and refused;
* raw requests signed by rocketmq_tx.acl, each sent to our broker (aclStrict=true, the
  default), our broker with aclStrict=false and the Java 4.9.7 broker, all three on the
  same plain_acl.yml: response code and remark compared (the remark's Java stack frame
  included) case by case, with the documented differences asserted as documented (CASES:
  every refusal reason, the check's resource per request code, Java's choice among several
  refused resources, security tokens, non-ASCII ext fields, ROCKETMQ headers, white lists
  and address patterns from other loopback addresses, the fast port, aclStrict's gaps);
* the name servers (ours and Java's) answer route queries without credentials while the
  brokers check ACL (as Java 4.9: the name server checks nothing);
* a file dropped into (and removed from) conf/acl/ is picked up by both brokers' watchers.

The Java broker is 4.9.7 because rocketmq-broker 4.9.8 was never published; its ACL
checks come from rocketmq-acl 4.9.8 (compat-tests/README.md), so the remarks carry 4.9.8's
frames. A Java 5.x broker has no ACL 1.0 check at all (5.x replaced it with ACL 2.0:
``aclEnable`` is read and ignored), so the 5.5.0 peers here are the clients and tools only;
likewise 5.5.0's mqadmin has no ACL 1.0 commands (its createAcl/updateAcl speak ACL 2.0).
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import javaharness as jh
import pytest
import rocketmq_java as rj
import txbroker as tb
import txharness as txh
import yaml

from rocketmq_tx.acl import sign
from rocketmq_tx.acl.signing import UNIQUE_MSG_QUERY_FLAG, calc_signature, content_to_sign
from rocketmq_tx.blocking import BlockingConnection, BlockingProducer, BlockingPullClient
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import Message
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketmq_tx.remoting.errors import MQBrokerError

pytestmark = pytest.mark.compat

VERSIONS = ["4.9.8", "5.5.0"]

ADMIN = ("aclAdmin01", "adminSecret01")
USER = ("aclUser001", "userSecret01")
WHITE = ("aclWhite01", "whiteSecret1")
#: A second loopback address: the global white list names it, so a connection bound to it
#: needs no credentials; everything else connects from 127.0.0.1.
WHITE_HOST = "127.0.0.2"

ACL_YML = f"""\
globalWhiteRemoteAddresses:
- {WHITE_HOST}
accounts:
- accessKey: {ADMIN[0]}
  secretKey: {ADMIN[1]}
  admin: true
- accessKey: {USER[0]}
  secretKey: {USER[1]}
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - AclTopic=PUB|SUB
  - AclTopic4=PUB|SUB
  - AclTopic5=PUB|SUB
  - AclDenied=DENY
  groupPerms:
  - AclGroup=PUB|SUB
  - AclDeniedGroup=DENY
- accessKey: {WHITE[0]}
  secretKey: {WHITE[1]}
  whiteRemoteAddress: 127.0.0.1
- accessKey: aclRange01
  secretKey: rangeSecret1
  whiteRemoteAddress: 127.0.0.3-9
- accessKey: aclMulti01
  secretKey: multiSecret1
  whiteRemoteAddress: 127.0.0.{{3,4}}
- accessKey: aclStar001
  secretKey: starSecret01
  whiteRemoteAddress: 127.0.*.*
"""
#: Topics every broker gets (created by the admin account): the user's own, one it may
#: not use (its entry says DENY), one only its default (DENY) covers, and one per Java
#: client version so that each version's consumers see exactly its own messages.
TOPICS = ("AclTopic", "AclDenied", "OtherTopic", "AclTopic4", "AclTopic5")

# --------------------------------------------------------------------------- 4.9.8's remarks

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"


def java_remark(message: str, frame: str) -> str:
    """``RemotingHelper.exceptionSimpleDesc`` of the AclException a 4.9.8 broker throws."""
    return f"{ACL_EXCEPTION}: {message}, {_MANAGER}.{frame}"


def signature_failed(ak: str) -> str:
    return java_remark(f"Check signature failed for accessKey={ak}", "validate(PlainPermissionManager.java:684)")


def no_acl_config(ak: str) -> str:
    return java_remark(f"No acl config for {ak}", "validate(PlainPermissionManager.java:668)")


NO_ACCESS_KEY = java_remark("No accessKey is configured", "validate(PlainPermissionManager.java:664)")


def need_admin(code: int, ak: str) -> str:
    return java_remark(f"Need admin permission for request code={code}, but accessKey={ak} is not",
                       "checkPerm(PlainPermissionManager.java:581)")


def denied(resource: str) -> str:
    """Refused by the account's own topicPerms/groupPerms entry."""
    return java_remark(f"No default permission for {resource}", "checkPerm(PlainPermissionManager.java:611)")


def default_denied(resource: str) -> str:
    """Refused by the account's defaultTopicPerm/defaultGroupPerm."""
    return java_remark(f"No default permission for {resource}", "checkPerm(PlainPermissionManager.java:606)")


def refused_by_acl(code: int, remark: str | None) -> bool:
    return code == ResponseCode.SYSTEM_ERROR and (remark or "").startswith(ACL_EXCEPTION)


# --------------------------------------------------------------------------- brokers

def signer(account: tuple[str, str] | None):
    """A BlockingConnection rpc_hook that signs with *account* (None: no hook)."""
    if account is None:
        return None
    ak, sk = account
    return lambda addr, request: sign(request, ak, sk)


def acl_home(root: Path, text: str = ACL_YML) -> Path:
    (root / "conf").mkdir(parents=True, exist_ok=True)
    (root / "conf" / "plain_acl.yml").write_text(text)
    return root


def create_topics(addr: str) -> None:
    with BlockingConnection(addr, rpc_hook=signer(ADMIN)) as conn:
        for topic in TOPICS:
            r = tb.create_topic(conn, topic)
            assert r.code == ResponseCode.SUCCESS, r


def start_tx(tmp: Path, name: str, cluster: str, **extra: object) -> tuple[tb.TxBroker, Path]:
    home = acl_home(tmp / "home")
    broker = tb.start_standalone(tmp / "store", name=name, cluster=cluster,
                                 extra={"aclEnable": "true", "rocketmqHome": home, **extra})
    try:
        create_topics(broker.addr)
        tb.wait_topic_route(broker.namesrv, TOPICS[-1], [name])
    except BaseException:
        broker.stop()
        raise
    return broker, home


@pytest.fixture(scope="module")
def tx(tmp_path_factory):
    """Our name server + broker with ACL on (aclStrict=true, the default); ``.home`` is its rocketmqHome."""
    broker, home = start_tx(tmp_path_factory.mktemp("acl-tx"), "tx-acl", "AclCluster")
    broker.home = home
    try:
        yield broker
        tb.no_problems(broker)
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def tx_lax(tmp_path_factory):
    """The same with aclStrict=false: 4.9.8's checks exactly."""
    broker, _ = start_tx(tmp_path_factory.mktemp("acl-tx-lax"), "tx-acl-lax", "AclLaxCluster", aclStrict="false")
    try:
        yield broker
        tb.no_problems(broker)
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def java(java_classpath_4):
    """The Java 4.9.7 broker (rocketmq-acl 4.9.8) with aclEnable=true on the same plain_acl.yml."""
    ns, ns_addr, home = rj.start_namesrv(java_classpath_4, label="acl-java")
    acl_home(home.root)
    broker = None
    try:
        broker, addr, _ = rj.start_broker(java_classpath_4, ns_addr, broker_name="java-acl", cluster="JavaAclCluster",
                                          extra={"aclEnable": "true"}, home=home)
        create_topics(addr)
        rj.wait_for_registration(ns_addr)
        tb.wait_topic_route(ns_addr, TOPICS[-1], ["java-acl"])
        yield dict(addr=addr, namesrv=ns_addr, ns=ns, home=home, cp=java_classpath_4)
    finally:
        jh.stop_together(*([broker.discard] if broker is not None else []), ns.discard)


# --------------------------------------------------------------------------- the official clients (AclPeer)

def acl_peer(classpath: str, commands: list[list[str]], timeout: float = 180.0) -> list[dict]:
    """Run AclPeer with *commands* (one per line); its JSON answers, one per command."""
    return jh.run_peer_batch(classpath, "AclPeer", commands, timeout)


def peer_commands(version: str, ns: str, broker_addr: str) -> dict[str, list[str]]:
    v = version[0]
    topic = f"AclTopic{v}"
    user, admin = list(USER), list(ADMIN)
    return {
        "produce": ["produce", ns, *user, topic, "4", f"j{v}"],
        # a group per version: the two versions' consumers run at once, on different topics
        "push": ["push", ns, *user, topic, f"AclPush{v}", "4", "60"],
        "litepull": ["litepull", ns, *user, topic, f"AclLite{v}", "4", "60"],
        "wrong_secret": ["produce", ns, USER[0], "notTheSecret", topic, "1", "x"],
        "deny_topic": ["produce", ns, *user, "AclDenied", "1", "x"],
        "unknown_key": ["produce", ns, "nobody0001", USER[1], topic, "1", "x"],
        "unsigned": ["produce", ns, "-", "-", topic, "1", "x"],
        "deny_group": ["pull", ns, *user, topic, "AclDeniedGroup"],
        "user_create_topic": ["createTopic", ns, *user, broker_addr, f"UserMade{v}"],
        "admin_create_topic": ["createTopic", ns, *admin, broker_addr, f"AdminMade{v}"],
        # An account whose whiteRemoteAddress matches skips the signature and the permissions.
        "white_account": ["produce", ns, WHITE[0], "notTheSecret", "AclDenied", "1", "w"],
    }


@pytest.fixture(scope="module")
def peers(tx, java_classpath_4, java_classpath_5):
    """Every AclPeer operation of both versions against our broker (the two JVMs at once)."""
    cps = {"4.9.8": java_classpath_4, "5.5.0": java_classpath_5}

    def one(version):
        cmds = peer_commands(version, tx.namesrv, tx.addr)
        return version, dict(zip(cmds, acl_peer(cps[version], list(cmds.values()))))

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, VERSIONS))


@pytest.fixture(params=VERSIONS)
def peer(request, peers):
    return request.param, peers[request.param]


def test_java_client_allowed_account_sends_and_consumes(peer):
    version, got = peer
    v = version[0]
    want = [f"j{v}-{i}" for i in range(4)]
    assert got["produce"]["error"] is None and got["produce"]["sent"] == 4, got["produce"]
    assert got["push"]["bodies"] == want, got["push"]
    assert got["litepull"]["bodies"] == want, got["litepull"]
    assert got["admin_create_topic"]["error"] is None, got["admin_create_topic"]


@pytest.mark.parametrize("case,remark", [
    ("wrong_secret", signature_failed(USER[0])),
    ("deny_topic", denied("topic:AclDenied")),
    ("unknown_key", no_acl_config("nobody0001")),
    ("unsigned", NO_ACCESS_KEY),
    ("deny_group", denied("group:AclDeniedGroup")),
    ("user_create_topic", need_admin(RequestCode.UPDATE_AND_CREATE_TOPIC, USER[0])),
])
def test_java_client_refused(peer, case, remark):
    version, got = peer
    assert got[case]["error"] == {"code": ResponseCode.SYSTEM_ERROR, "remark": remark,
                                  "class": got[case]["error"]["class"]}, got[case]
    if case in ("wrong_secret", "deny_topic", "unknown_key", "unsigned"):
        assert got[case]["sent"] == 0


def test_java_client_white_listed_address_needs_no_signature(peer, tx):
    version, got = peer
    assert got["white_account"]["error"] is None and got["white_account"]["sent"] == 1, got["white_account"]


# --------------------------------------------------------------------------- raw requests, three brokers

def _from(source: str):
    """A BlockingConnection socket factory connecting from *source* (a loopback address)."""
    def connect(host: str, port: int, timeout: float) -> socket.socket:
        sock = socket.socket()
        sock.settimeout(timeout)
        sock.bind((source, 0))
        sock.connect((host, port))
        return sock
    return connect


_from_white_host = _from(WHITE_HOST)


def _heartbeat(groups: list[tuple[str, list[str]]]) -> bytes:
    consumers = [{"groupName": g, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                  "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
                  "subscriptionDataSet": [{"topic": t, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 1,
                                           "expressionType": "TAG", "classFilterMode": False} for t in topics]}
                 for g, topics in groups]
    return fastjson.dumps({"clientID": "127.0.0.1@acl", "producerDataSet": [], "consumerDataSet": consumers})


def _request(code: int, fields: dict | None = None, body: bytes = b"", version: int | None = None,
             serialize_type: SerializeType = SerializeType.JSON):
    def make(conn: BlockingConnection) -> RemotingCommand:
        request = RemotingCommand.request(code, fields or {}, body, serialize_type=serialize_type)
        if version is not None:
            request.version = version
        return conn.invoke(request, 10)
    return make


def _send_v2(topic: str, group: str = "AclPG", body: bytes = b"v2", extra: dict | None = None,
             serialize_type: SerializeType = SerializeType.JSON):
    """SEND_MESSAGE_V2; *extra*: more ext fields (a Java broker keeps and signs unknown ones)."""
    props = "TAGS\x01TagA\x02WAIT\x01true\x02"
    fields = {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
              "g": str(int(time.time() * 1000)), "h": "0", "i": props, "j": "0", "k": "false", "m": "false",
              **(extra or {})}
    return _request(RequestCode.SEND_MESSAGE_V2, fields, body, serialize_type=serialize_type)


def _send_v1(topic: str, group: str = "AclPG"):
    fields = {"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
              "queueId": "0", "sysFlag": "0", "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
              "properties": "", "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}
    return _request(RequestCode.SEND_MESSAGE, fields, b"v1")


def _query(unique: bool | None):
    """QUERY_MESSAGE's fields; *unique* None: without ``_UNIQUE_KEY_QUERY`` (which 4.9.8 leaves
    out of the signed content whatever its value)."""
    fields = {"topic": "AclTopic", "key": "k", "maxNum": "32", "beginTimestamp": "0",
              "endTimestamp": str(int(time.time() * 1000))}
    if unique is not None:
        fields[UNIQUE_MSG_QUERY_FLAG] = "true" if unique else "false"
    return fields


def _old_client_signer(addr: str, request: RemotingCommand) -> None:
    """A 4.9.3 client's hook: it did not sign ``_UNIQUE_KEY_QUERY``."""
    ext = request.ext_fields
    ext["AccessKey"] = USER[0]
    ext["Signature"] = calc_signature(content_to_sign(ext, request.body, (UNIQUE_MSG_QUERY_FLAG,)), USER[1])


def _bad_heartbeat_from_white_host(conn: BlockingConnection) -> RemotingCommand:
    with BlockingConnection(conn.addr, socket_factory=_from_white_host) as white:
        return white.invoke(RemotingCommand.request(RequestCode.HEART_BEAT, {"x": "y"}, b"nonsense"), 10)


def _sign_keeping_null(addr: str, request: RemotingCommand) -> None:
    """A hand-made signature over a None field as Java's server reads it ("null"), the None kept."""
    ext = request.ext_fields
    ext["AccessKey"] = USER[0]
    ext["Signature"] = calc_signature(content_to_sign(ext, request.body), USER[1])


_HEARTBEAT_GROUPS = [("AclDeniedGroup", ["AclDenied", "OtherTopic", "Zeta", "Alpha", "AclTopic"]), ("G2", ["Beta"])]
#: 15 resources: Java's HashMap (and the HashSet of subscriptions) have grown to 32 buckets,
#: and the first refused bucket holds three topics, whose order is the HashSet's
#: (Manyomxc first), not the body's. One group only: Java iterates groups in the order of
#: their identity hashes (ConsumerData has no hashCode), so which of two groups' refused
#: resources sharing a bucket it reports varies from run to run.
_HEARTBEAT_MANY = [("AclGroup", ["Manydmzw", "Manyygpf", "Manynzuk", "Manyczxm", "Manyomxc", "Manyxffe", "Manyaeso",
                                 "Manyzuet", "Manytpvl", "Manyerre", "Manyaazx", "Manyudqx", "Manyengg", "Manyaigj"])]
#: Ext fields whose Java order (UTF-16 code units) is not their code-point order, non-ASCII values.
_UNICODE_FIELDS = {"\ue000key": "private-use", "\U0001F600key": "emoji \U0001F600", "zé": "ünïcödé", "Z": "大"}

#: (case, rpc hook, request, expectation, expected remark on our strict broker)
#:   ok:       all three accept it (SUCCESS)
#:   same:     all three brokers give the same code and remark (and, if given, this remark);
#:             without a given remark, the same ACL refusal
#:   frame:    same code, exception class and Java frame; the message is the parser's (see below)
#:   passes:   no broker refuses it in the ACL check (what follows is the processors' business)
#:   strict:   refused by aclStrict=true as given; passed by aclStrict=false and by Java 4.9.8
#:   unique:   Java 4.9.8 refuses it (signature), both of ours accept (docs/security.md)
#:   java_only: Java 4.9.8 accepts it, both of ours refuse it (signature; docs/security.md)
CASES = [
    ("send_wrong_secret", signer((USER[0], "notTheSecret")), lambda c: tb.send(c, "AclTopic", b"x"), "same",
     signature_failed(USER[0])),
    ("send_unknown_key", signer(("nobody0001", USER[1])), lambda c: tb.send(c, "AclTopic", b"x"), "same",
     no_acl_config("nobody0001")),
    ("send_unsigned", None, lambda c: tb.send(c, "AclTopic", b"x"), "same", NO_ACCESS_KEY),
    ("send_deny_entry", signer(USER), lambda c: tb.send(c, "AclDenied", b"x"), "same", denied("topic:AclDenied")),
    ("send_deny_default", signer(USER), lambda c: tb.send(c, "OtherTopic", b"x"), "same",
     default_denied("topic:OtherTopic")),
    ("send_allowed", signer(USER), lambda c: tb.send(c, "AclTopic", b"x"), "ok", None),
    ("send_security_token", lambda addr, r: sign(r, USER[0], USER[1], "aToken0001"), _send_v2("AclTopic"), "ok",
     None),
    ("send_token_wrong_secret", lambda addr, r: sign(r, USER[0], "notTheSecret", "aToken0001"), _send_v2("AclTopic"),
     "same", signature_failed(USER[0])),
    ("send_unicode_fields", signer(USER), _send_v2("AclTopic", body="bödy \U0001F600".encode(),
                                                   extra=_UNICODE_FIELDS), "ok", None),
    ("send_rocketmq_header", signer(USER), _send_v2("AclTopic", serialize_type=SerializeType.ROCKETMQ), "ok",
     None),
    ("send_rocketmq_header_deny", signer(USER), _send_v2("AclDenied", serialize_type=SerializeType.ROCKETMQ),
     "same", denied("topic:AclDenied")),
    ("send_rocketmq_header_wrong_secret", signer((USER[0], "notTheSecret")),
     _send_v2("AclTopic", serialize_type=SerializeType.ROCKETMQ), "same", signature_failed(USER[0])),
    # SEND_MESSAGE_V2 to a retry topic: 4.9.8 checks the retry topic of the *producer group* field.
    ("send_v2_retry_deny", signer(USER), _send_v2("%RETRY%AclDeniedGroup", group="AclDeniedGroup"), "same",
     denied("group:AclDeniedGroup")),
    ("send_v2_retry_other_group", signer(USER), _send_v2("%RETRY%AclDeniedGroup", group="AclGroup"), "passes",
     None),
    ("send_v1_deny", signer(USER), _send_v1("AclDenied"), "same", denied("topic:AclDenied")),
    ("create_topic_user", signer(USER), lambda c: tb.create_topic(c, "UserTopic"), "same",
     need_admin(RequestCode.UPDATE_AND_CREATE_TOPIC, USER[0])),
    ("update_broker_config_user", signer(USER), _request(RequestCode.UPDATE_BROKER_CONFIG), "same",
     need_admin(RequestCode.UPDATE_BROKER_CONFIG, USER[0])),
    ("delete_group_user", signer(USER), _request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "G"}), "same",
     need_admin(RequestCode.DELETE_SUBSCRIPTIONGROUP, USER[0])),
    ("pull_deny_group", signer(USER), lambda c: tb.pull(c, "AclDeniedGroup", "AclTopic", 0, 0), "same",
     denied("group:AclDeniedGroup")),
    ("pull_deny_topic", signer(USER), lambda c: tb.pull(c, "AclGroup", "AclDenied", 0, 0), "same",
     denied("topic:AclDenied")),
    ("pull_allowed", signer(USER), lambda c: tb.pull(c, "AclGroup", "AclTopic", 0, 0), "passes", None),
    # Several refused resources: Java reports the first in its HashMap's order.
    ("heartbeat_many_refused", signer(USER), _request(RequestCode.HEART_BEAT, body=_heartbeat(_HEARTBEAT_GROUPS)),
     "same", default_denied("topic:Zeta")),
    ("heartbeat_many_resources", signer(USER), _request(RequestCode.HEART_BEAT, body=_heartbeat(_HEARTBEAT_MANY)),
     "same", default_denied("topic:Manyomxc")),
    # Two refused topics in one bucket: Java reports the first of its HashSet<SubscriptionData>.
    ("heartbeat_subscription_order", signer(USER),
     _request(RequestCode.HEART_BEAT, body=_heartbeat([("AclGroup", ["Topiceszyc", "Topicflntw"])])), "same",
     default_denied("topic:Topicflntw")),
    ("heartbeat_allowed", signer(USER),
     _request(RequestCode.HEART_BEAT, body=_heartbeat([("AclGroup", ["AclTopic", "%RETRY%AclGroup"])])), "ok", None),
    ("consumer_list_deny", signer(USER),
     _request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "AclDeniedGroup"}), "same",
     denied("group:AclDeniedGroup")),
    ("update_offset_deny", signer(USER),
     _request(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "AclGroup", "topic": "AclDenied", "queueId": "0",
                                                   "commitOffset": "1"}), "same", denied("topic:AclDenied")),
    ("unregister_deny", signer(USER),
     _request(RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "AclDeniedGroup"}), "same",
     denied("group:AclDeniedGroup")),
    ("send_back_deny", signer(USER),
     _request(RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": "0", "group": "AclDeniedGroup", "delayLevel": "0"}),
     "same", denied("group:AclDeniedGroup")),
    ("query_deny", signer(USER), _request(RequestCode.QUERY_MESSAGE, {**_query(None), "topic": "AclDenied"}), "same",
     denied("topic:AclDenied")),
    # Headers missing a field the check reads: Java's header decoding only logs it, so the
    # check passes and the processors answer (differently: Java's throw NullPointerExceptions).
    ("consumer_list_no_group", signer(USER), _request(RequestCode.GET_CONSUMER_LIST_BY_GROUP), "passes", None),
    ("update_offset_bad_queue", signer(USER),
     _request(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "AclGroup", "topic": "AclTopic", "queueId": "x",
                                                   "commitOffset": "1"}), "passes", None),
    # PUB on the trace topic is always allowed.
    ("trace_topic", signer(USER), lambda c: tb.send(c, "RMQ_SYS_TRACE_TOPIC", b"trace"), "passes", None),
    # whiteRemoteAddress of the account: neither the signature nor the permissions are checked.
    ("white_account", signer((WHITE[0], "notTheSecret")), lambda c: tb.send(c, "AclDenied", b"w"), "ok", None),
    ("white_account_star", signer(("aclStar001", "notTheSecret")), lambda c: tb.send(c, "AclDenied", b"w"), "ok",
     None),
    # from 127.0.0.1, outside these accounts' patterns: the signature is checked
    ("white_range_elsewhere", signer(("aclRange01", "notTheSecret")), lambda c: tb.send(c, "AclTopic", b"w"), "same",
     signature_failed("aclRange01")),
    ("white_multi_elsewhere", signer(("aclMulti01", "notTheSecret")), lambda c: tb.send(c, "AclTopic", b"w"), "same",
     signature_failed("aclMulti01")),
    # A HEART_BEAT body that does not decode: the same class and frame (PlainAccessValidator.parse),
    # but the message is the JSON parser's own (fastjson 1.2.69's "syntax error, expect {, actual
    # int, pos 20, ..." against ours), and for a missing body the JVM's: Java 14+ explain a
    # NullPointerException ('Cannot read the array length because "bytes" is null'), Java 8,
    # 4.9.8's own platform, gives none, which is what we send.
    ("heartbeat_bad_json", signer(USER), _request(RequestCode.HEART_BEAT, body=b'{"consumerDataSet":[1'), "frame",
     None),
    ("heartbeat_no_body", signer(USER), _request(RequestCode.HEART_BEAT), "frame", None),
    # Java reads the request before any white list: a bad body fails from a white-listed host too.
    ("heartbeat_bad_body_white_host", None, _bad_heartbeat_from_white_host, "frame", None),
    # No ext fields at all: Java does not read the body, and there is no AccessKey.
    ("heartbeat_no_fields", None, _request(RequestCode.HEART_BEAT, None, b"nonsense"), "same", NO_ACCESS_KEY),
    ("send_empty_access_key", lambda addr, r: r.ext_fields.update(AccessKey=""), _send_v2("AclTopic"), "same",
     no_acl_config("")),
    ("send_no_signature", lambda addr, r: r.ext_fields.update(AccessKey=USER[0]), _send_v2("AclTopic"), "same",
     signature_failed(USER[0])),
    # A None ext field: our hook leaves it out (rocketmq_tx.acl.signing.sign), so both accept.
    ("send_null_field", signer(USER), _send_v2("AclTopic", extra={"nullish": None}), "ok", None),
    # Signed with it as "null" and sent as JSON null: Java keeps the null and signs "null";
    # ours drops null ext fields when decoding (docs/security.md). No Java client sends one.
    ("send_null_field_hand_made", _sign_keeping_null, _send_v2("AclTopic", extra={"nullish": None}), "java_only",
     None),
    # aclStrict=true closes 4.9.8's gaps (docs/security.md); aclStrict=false and Java let them through.
    ("batch_deny", signer(USER),
     _request(RequestCode.SEND_BATCH_MESSAGE, {"a": "AclPG", "b": "AclDenied", "c": "TBW102", "d": "4", "e": "0",
                                               "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false",
                                               "m": "true"}), "strict", denied("topic:AclDenied")),
    ("lite_pull_deny_group", signer(USER),
     _request(RequestCode.LITE_PULL_MESSAGE, tb.pull_fields("AclDeniedGroup", "AclTopic", 0, 0)), "strict",
     denied("group:AclDeniedGroup")),
    ("retry_send_v1", signer(USER), _send_v1("%RETRY%AclDeniedGroup"), "strict", denied("group:AclDeniedGroup")),
    ("acl_versions_user", signer(USER), _request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO), "strict",
     need_admin(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, USER[0])),
    ("acl_delete_user", signer(USER), _request(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "noSuchKey01"}), "strict",
     need_admin(RequestCode.DELETE_ACL_CONFIG, USER[0])),
    # A 4.9.4+ client (409 here) signs _UNIQUE_KEY_QUERY, which 4.9.8 leaves out of the
    # signed content; ours follows 5.x and leaves it out only for clients up to 4.9.3 (399).
    ("query_unique_new_client", signer(USER), _request(RequestCode.QUERY_MESSAGE, _query(True)), "unique", None),
    ("query_unique_old_client", _old_client_signer, _request(RequestCode.QUERY_MESSAGE, _query(True), version=399),
     "passes", None),
]


@pytest.mark.parametrize("case,hook,request_fn,expect,remark", CASES, ids=[c[0] for c in CASES])
def test_same_answers_as_java(tx, tx_lax, java, case, hook, request_fn, expect, remark):
    answers, serialization = {}, {}
    for name, addr in (("tx", tx.addr), ("tx_lax", tx_lax.addr), ("java", java["addr"])):
        with BlockingConnection(addr, rpc_hook=hook) as conn:
            response = request_fn(conn)
        answers[name] = (int(response.code), response.remark)
        serialization[name] = response.serialize_type
    ours, lax, theirs = answers["tx"], answers["tx_lax"], answers["java"]
    if expect == "ok":
        assert ours == lax == theirs and ours[0] == ResponseCode.SUCCESS, answers
    elif expect == "same":
        assert ours == lax == theirs and refused_by_acl(*ours), answers
        if refused_by_acl(*ours):  # Java writes refusals in JSON whatever the request's serialization
            assert set(serialization.values()) == {SerializeType.JSON}, serialization
        if remark is not None:
            assert ours == (ResponseCode.SYSTEM_ERROR, remark), answers
    elif expect == "frame":
        for code, text in answers.values():
            assert code == ResponseCode.SYSTEM_ERROR and text.startswith(ACL_EXCEPTION), answers
        frames = {text.rsplit(", ", 1)[-1] for _, text in answers.values()}
        assert frames == {"org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"}, \
            answers
    elif expect == "passes":
        assert not any(refused_by_acl(*a) for a in answers.values()), answers
    elif expect == "strict":
        assert ours == (ResponseCode.SYSTEM_ERROR, remark), answers
        assert not refused_by_acl(*lax) and not refused_by_acl(*theirs), answers
    elif expect == "java_only":
        assert theirs[0] == ResponseCode.SUCCESS, answers
        assert ours == lax == (ResponseCode.SYSTEM_ERROR, signature_failed(USER[0])), answers
    else:
        assert expect == "unique"
        assert theirs == (ResponseCode.SYSTEM_ERROR, signature_failed(USER[0])), answers
        assert not refused_by_acl(*ours) and not refused_by_acl(*lax), answers


def test_global_white_address_needs_no_credentials(tx, tx_lax, java):
    """An unsigned send from the globally white-listed address to a topic the accounts may not
    use: accepted by all three; the same request from 127.0.0.1 is refused by all three."""
    for addr in (tx.addr, tx_lax.addr, java["addr"]):
        with BlockingConnection(addr, socket_factory=_from_white_host) as conn:
            r = tb.send(conn, "AclDenied", b"from-white-host")
        assert r.code == ResponseCode.SUCCESS, (addr, r)
        with BlockingConnection(addr) as conn:
            r = tb.send(conn, "AclDenied", b"from-loopback")
        assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, NO_ACCESS_KEY), (addr, r)


@pytest.mark.parametrize("source,account,allowed", [
    ("127.0.0.3", ("aclRange01", "notTheSecret"), True),   # 127.0.0.3-9
    ("127.0.0.3", ("aclMulti01", "notTheSecret"), True),   # 127.0.0.{3,4}
    ("127.0.0.2", ("aclMulti01", "notTheSecret"), True),   # not its own, but the global white list
    ("127.0.0.3", (USER[0], "notTheSecret"), False),
])
def test_account_white_address_patterns(tx, java, source, account, allowed):
    """An account's whiteRemoteAddress pattern, from another loopback address: the signature
    (and the permissions) are skipped when it matches; same answers from both brokers."""
    answers = []
    for addr in (tx.addr, java["addr"]):
        with BlockingConnection(addr, rpc_hook=signer(account), socket_factory=_from(source)) as conn:
            r = tb.send(conn, "AclTopic", b"pattern")
        answers.append((int(r.code), r.remark))
    assert answers[0] == answers[1], answers
    assert answers[0] == ((ResponseCode.SUCCESS, None) if allowed else
                          (ResponseCode.SYSTEM_ERROR, signature_failed(account[0]))), answers


def test_fast_port_is_checked_too(tx, java):
    """The VIP channel (listenPort - 2) runs the same check."""
    for addr in (tx.addr, java["addr"]):
        host, port = addr.rsplit(":", 1)
        with BlockingConnection(f"{host}:{int(port) - 2}", rpc_hook=signer((USER[0], "notTheSecret"))) as conn:
            r = tb.send(conn, "AclTopic", b"vip")
        assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, signature_failed(USER[0])), (addr, r)


def test_oneway_refusal_gets_no_answer(tx):
    """A refused oneway request is dropped (Java sends nothing back either); the connection stays usable."""
    with BlockingConnection(tx.addr, rpc_hook=signer(USER)) as conn:
        before = tb.max_offset(conn, "AclDenied", 0)
        conn.invoke_oneway(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {
            "a": "AclPG", "b": "AclDenied", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
            "i": "", "j": "0", "k": "false", "m": "false"}, b"oneway"))
        assert tb.max_offset(conn, "AclDenied", 0) == before


# --------------------------------------------------------------------------- name servers

def test_name_servers_check_nothing(tx, java):
    """Route and cluster queries without any credentials, from 127.0.0.1 (not white-listed),
    while the brokers behind them refuse unsigned requests."""
    for namesrv, broker_name in ((tx.namesrv, "tx-acl"), (java["namesrv"], "java-acl")):
        route = tb.route(namesrv, "AclTopic")
        assert route is not None and [b["brokerName"] for b in route["brokerDatas"]] == [broker_name], route
        assert broker_name in tb.cluster_info(namesrv)["brokerAddrTable"]


# --------------------------------------------------------------------------- our clients, Java broker

def test_blocking_clients_against_java_broker(java):
    ns = java["namesrv"]
    with BlockingProducer("AclPyPG", ns, access_key=USER[0], secret_key=USER[1], send_timeout=10) as producer:
        sent = [producer.send(Message(topic="AclTopic", body=f"py-{i}".encode())) for i in range(3)]
        assert all(r.send_status.value == "SEND_OK" for r in sent), sent
    with BlockingProducer("AclPyPG", ns, access_key=USER[0], secret_key="notTheSecret",
                          retry_times_when_send_failed=0, send_timeout=10) as producer:
        with pytest.raises(MQBrokerError) as refused:
            # to one queue: the broker's answer itself, not the retry loop's summary of it
            producer.send(Message(topic="AclTopic", body=b"no"), queue=producer.fetch_publish_queues("AclTopic")[0])
        assert (refused.value.code, refused.value.remark) == (ResponseCode.SYSTEM_ERROR, signature_failed(USER[0]))
    with BlockingProducer("AclPyPG", ns, access_key=USER[0], secret_key=USER[1], retry_times_when_send_failed=0,
                          send_timeout=10) as producer:
        with pytest.raises(MQBrokerError) as refused:
            # to one queue: the broker's answer itself, not the retry loop's summary of it
            producer.send(Message(topic="AclDenied", body=b"no"), queue=producer.fetch_publish_queues("AclDenied")[0])
        assert (refused.value.code, refused.value.remark) == (ResponseCode.SYSTEM_ERROR, denied("topic:AclDenied"))

    with BlockingPullClient("AclGroup", ns, access_key=USER[0], secret_key=USER[1], timeout=10) as client:
        bodies = []
        for mq in client.fetch_queues("AclTopic"):
            bodies += [m.body for m in client.pull(mq, 0, 32).msg_found_list]
            client.commit_offset(mq, client.max_offset(mq))
        assert {f"py-{i}".encode() for i in range(3)} <= set(bodies), bodies
    with BlockingPullClient("AclDeniedGroup", ns, access_key=USER[0], secret_key=USER[1], timeout=10) as client:
        mq = client.fetch_queues("AclTopic")[0]
        with pytest.raises(MQBrokerError) as refused:
            client.pull(mq, 0, 32)
        assert (refused.value.code, refused.value.remark) == (ResponseCode.SYSTEM_ERROR,
                                                              denied("group:AclDeniedGroup"))


def txclient(args: list[str], account: tuple[str, str], timeout: float = 120.0) -> subprocess.CompletedProcess:
    env = txh.child_env(TXCLIENT_ACCESS_KEY=account[0], TXCLIENT_SECRET_KEY=account[1])
    return txh.run_script("txclient.py", *args, timeout=timeout, env=env)


def test_twisted_clients_against_java_broker(java):
    ns = java["namesrv"]
    out = txclient(["produce", ns, "AclTopic5", "3"], USER)
    assert out.returncode == 0, out.stderr[-3000:]
    sent = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{"i"')]
    assert [s["status"] for s in sent] == ["SEND_OK"] * 3, out.stdout
    out = txclient(["litepull", ns, "AclGroup", "AclTopic5", "3", "60"], USER)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert sorted(line["body"] for line in lines if "body" in line) == ["tx-0", "tx-1", "tx-2"], out.stdout
    assert lines[-1]["done"] and lines[-1]["received"] == 3, lines[-1]
    out = txclient(["produce", ns, "AclTopic5", "1"], (USER[0], "notTheSecret"))
    assert out.returncode != 0, out.stdout
    assert signature_failed(USER[0]) in out.stderr, out.stderr[-3000:]


# --------------------------------------------------------------------------- mqadmin

#: every Tools home of this module, removed at its end
_TOOLS_HOMES: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _remove_tools_homes():
    yield
    for root in _TOOLS_HOMES:
        shutil.rmtree(root, ignore_errors=True)
    _TOOLS_HOMES.clear()


class Tools:
    """mqadmin commands of one tools version in one JVM (AdminBatch), signed with the account
    written to that JVM's ``$ROCKETMQ_HOME/conf/tools.yml``."""

    def __init__(self, version: str, classpath: str, account: tuple[str, str]) -> None:
        self.version = version
        self.classpath = classpath
        self.home = rj.JavaHome(f"acl-tools-{version}-{account[0]}")
        _TOOLS_HOMES.append(self.home.root)
        (self.home.root / "conf" / "tools.yml").write_text(f"accessKey: {account[0]}\nsecretKey: {account[1]}\n")

    def run(self, ns: str, *commands: tuple[str, ...]) -> list[tuple[str, str]]:
        """(stdout, description) per command."""
        results = rj.mqadmin_batch_results(self.classpath, [(c[0], "-n", ns, *c[1:]) for c in commands], self.home)
        return [(r["out"], f"mqadmin {self.version} {' '.join(c)}\n--- stdout ---\n{r['out'][-2000:]}\n--- stderr ---\n"
                 + "\n".join(line for line in r["err"].splitlines() if not line.lstrip().startswith("at "))[-2500:])
                for c, r in zip(commands, results)]


@pytest.fixture(scope="module")
def tx_admin(tmp_path_factory):
    """A broker of its own for the commands that rewrite plain_acl.yml."""
    broker, home = start_tx(tmp_path_factory.mktemp("acl-tx-admin"), "tx-acl-admin", "AclAdminCluster")
    try:
        yield broker, home
        tb.no_problems(broker)
    finally:
        broker.stop()


@pytest.fixture(params=VERSIONS)
def tools_version(request, java_classpath_4, java_classpath_5):
    return request.param, {"4.9.8": java_classpath_4, "5.5.0": java_classpath_5}[request.param]


def test_mqadmin_update_topic(tx_admin, tools_version):
    broker, _ = tx_admin
    version, cp = tools_version
    v = version[0]
    (allowed, about), = Tools(version, cp, ADMIN).run(
        broker.namesrv, ("updateTopic", "-c", "AclAdminCluster", "-t", f"ByAdmin{v}"))
    assert f"create topic to {broker.addr} success." in allowed, about
    (refused, about), = Tools(version, cp, USER).run(
        broker.namesrv, ("updateTopic", "-c", "AclAdminCluster", "-t", f"ByUser{v}"))
    assert "success" not in refused, about
    assert f"CODE: 1  DESC: {need_admin(RequestCode.UPDATE_AND_CREATE_TOPIC, USER[0])}" in about, about
    tb.wait_topic_route(broker.namesrv, f"ByAdmin{v}", ["tx-acl-admin"], timeout=10)
    assert tb.route(broker.namesrv, f"ByUser{v}") is None


def _versions(out: str) -> dict[str, int]:
    """clusterAclConfigVersion's rows: file -> counter."""
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[3].endswith(".yml"):
            found[parts[3]] = int(parts[4])
    return found


def _without_timestamp(text: str) -> dict:
    doc = yaml.safe_load(text)
    for version in doc.get("dataVersion") or []:
        version.pop("timestamp", None)
    return doc


def test_mqadmin_acl_commands_and_java_reads_the_file(tx_admin, java, java_classpath_4):
    """4.9.8's ACL commands against our broker, then a Java broker started on the file we wrote."""
    broker, home = tx_admin
    plain = home / "conf" / "plain_acl.yml"
    tools = Tools("4.9.8", java_classpath_4, ADMIN)
    answers = tools.run(
        broker.namesrv,
        ("clusterAclConfigVersion", "-c", "AclAdminCluster"),
        ("updateAclConfig", "-b", broker.addr, "-a", "madeByTools1", "-s", "toolsSecret1", "-i", "DENY", "-u", "SUB",
         "-t", "AclTopic=PUB|SUB,AclDenied=DENY", "-g", "AclGroup=SUB"),
        ("updateAclConfig", "-c", "AclAdminCluster", "-a", "shortLived1", "-s", "shortSecret1", "-m", "true"),
        ("deleteAclConfig", "-c", "AclAdminCluster", "-a", "shortLived1"),
        ("updateGlobalWhiteAddr", "-b", broker.addr, "-g", f"{WHITE_HOST},127.0.0.3"),
        ("clusterAclConfigVersion", "-b", broker.addr),
    )
    (v0, about0), (created, about1), (made, about2), (deleted, about3), (white, about4), (v1, about5) = answers
    assert _versions(v0) == {str(plain): 0}, about0
    assert f"create or update plain access config to {broker.addr} success." in created, about1
    assert f"create or update plain access config to {broker.addr} success." in made, about2
    assert f"delete plain access config account from {broker.addr} success." in deleted, about3
    assert f"update global white remote addresses to {broker.addr} success." in white, about4
    assert _versions(v1) == {str(plain): 4}, about5  # one per change, as Java counts
    doc = yaml.safe_load(plain.read_text())
    assert doc["globalWhiteRemoteAddresses"] == [WHITE_HOST, "127.0.0.3"]
    assert [a["accessKey"] for a in doc["accounts"]] == [
        a["accessKey"] for a in yaml.safe_load(ACL_YML)["accounts"]] + ["madeByTools1"]

    # A normal account may not run them on our broker (aclStrict; 4.9.8 lets any account).
    (refused, about), = Tools("4.9.8", java_classpath_4, USER).run(
        broker.namesrv, ("updateAclConfig", "-b", broker.addr, "-a", "sneakyUser1", "-s", "sneakySecret", "-m", "true"))
    assert "success" not in refused and need_admin(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, USER[0]) in about, about

    # The new rules are in force on our broker at once.
    with BlockingConnection(broker.addr, rpc_hook=signer(("madeByTools1", "toolsSecret1"))) as conn:
        assert tb.send(conn, "AclTopic", b"by-tools").code == ResponseCode.SUCCESS
        r = tb.send(conn, "OtherTopic", b"no")
        assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, default_denied("topic:OtherTopic")), r
    with BlockingConnection(broker.addr, rpc_hook=signer(("shortLived1", "shortSecret1"))) as conn:
        r = tb.send(conn, "AclTopic", b"no")
        assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, no_acl_config("shortLived1")), r
    with BlockingConnection(broker.addr, socket_factory=_from_white_host) as conn:
        assert tb.send(conn, "AclDenied", b"white").code == ResponseCode.SUCCESS

    # A Java broker started on the file we wrote reads the same rules.
    reader_home = rj.JavaHome("acl-java-reader")
    (reader_home.root / "conf" / "plain_acl.yml").write_text(plain.read_text())
    reader, reader_addr, _ = rj.start_broker(java_classpath_4, java["namesrv"], broker_name="java-acl-reader",
                                             cluster="JavaAclReader", extra={"aclEnable": "true"}, home=reader_home)
    try:
        with BlockingConnection(reader_addr, rpc_hook=signer(ADMIN)) as conn:
            assert tb.create_topic(conn, "AclTopic").code == ResponseCode.SUCCESS
        with BlockingConnection(reader_addr, rpc_hook=signer(("madeByTools1", "toolsSecret1"))) as conn:
            assert tb.send(conn, "AclTopic", b"by-tools").code == ResponseCode.SUCCESS
            r = tb.send(conn, "AclDenied", b"no")
            assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, denied("topic:AclDenied")), r
        with BlockingConnection(reader_addr, rpc_hook=signer(("shortLived1", "shortSecret1"))) as conn:
            r = tb.send(conn, "AclTopic", b"no")
            assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, no_acl_config("shortLived1")), r
        with BlockingConnection(reader_addr, socket_factory=_from_white_host) as conn:
            assert tb.send(conn, "AclTopic", b"white").code == ResponseCode.SUCCESS

        # The same update through both brokers: the same file, but for the timestamp.
        update = ("-a", "bothBrokers1", "-s", "bothSecret1", "-w", "10.0.0.*", "-t", "AclTopic=SUB", "-m", "false")
        (j_out, j_about), (j_version, jv_about) = tools.run(
            java["namesrv"], ("updateAclConfig", "-b", reader_addr, *update),
            ("clusterAclConfigVersion", "-b", reader_addr))
        (t_out, t_about), (t_version, tv_about) = tools.run(
            broker.namesrv, ("updateAclConfig", "-b", broker.addr, *update),
            ("clusterAclConfigVersion", "-b", broker.addr))
        assert "success." in j_out and "success." in t_out, (j_about, t_about)
        # Java went on from the version in our file, as we did
        assert list(_versions(j_version).values()) == list(_versions(t_version).values()) == [5], (jv_about, tv_about)
        java_file = reader_home.root / "conf" / "plain_acl.yml"
        assert _without_timestamp(plain.read_text()) == _without_timestamp(java_file.read_text()), \
            (plain.read_text(), java_file.read_text())
    finally:
        reader.discard()  # its home and store are removed next
        shutil.rmtree(reader_home.root, ignore_errors=True)


# --------------------------------------------------------------------------- reloading

def _wait_both(addrs: list[str], account: tuple[str, str], want, timeout: float = 30.0) -> None:
    """Until a send by *account* to OtherTopic gets *want* (code, remark) from every broker."""
    deadline = time.monotonic() + timeout
    while True:
        got = {}
        for addr in addrs:
            with BlockingConnection(addr, rpc_hook=signer(account)) as conn:
                r = tb.send(conn, "OtherTopic", b"reload")
            got[addr] = (int(r.code), None if r.code == ResponseCode.SUCCESS else r.remark)
        if all(g == want for g in got.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not {want} within {timeout}s: {got}")
        time.sleep(0.25)  # both brokers look at their files every 5 s; bounded by the deadline


def test_acl_directory_files_reloaded(tx, java):
    """A file dropped into conf/acl/ (4.9.3+) is read by both brokers' watchers (every 5 s),
    and its account goes away with the file."""
    account = ("dirAccount1", "dirSecret01")
    text = f"accounts:\n- accessKey: {account[0]}\n  secretKey: {account[1]}\n  defaultTopicPerm: PUB\n"
    files = [root / "conf" / "acl" / "extra.yml" for root in (tx.home, java["home"].root)]
    addrs = [tx.addr, java["addr"]]
    try:
        for path in files:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
        _wait_both(addrs, account, (ResponseCode.SUCCESS, None))
    finally:
        for path in files:
            path.unlink(missing_ok=True)
    _wait_both(addrs, account, (ResponseCode.SYSTEM_ERROR, no_acl_config(account[0])))
