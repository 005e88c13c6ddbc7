"""
Requests and the answers Java 4.9.8's PlainAccessValidator gave them (parse + validate,
``RemotingHelper.exceptionSimpleDesc`` of the refusal), with these two files under
``$ROCKETMQ_HOME``: ``conf/plain_acl.yml`` (:data:`PLAIN`) and ``conf/acl/sub/more.yaml``
(:data:`MORE`). Computed with the 4.9.8 jars; the signatures are ours, which the
signature vectors hold to Java's.
"""

from __future__ import annotations

import json
from typing import Any

from rocketmq_tx.acl import sign
from rocketmq_tx.remoting import RemotingCommand

PLAIN = """\
globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: RocketMQ
  secretKey: 12345678
  whiteRemoteAddress: 192.168.0.*
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - topicA=DENY
  - topicB=PUB|SUB
  - topicC=SUB
  - topicD=PUB
  groupPerms:
  - groupA=DENY
  - groupB=SUB
  - groupC=PUB
- accessKey: rocketmq2
  secretKey: 12345678
  whiteRemoteAddress: 192.168.1.*
  admin: true
- accessKey: adminperm
  secretKey: 12345678
  admin: true
  topicPerms: [topicX=SUB]
- accessKey: dupkey123
  secretKey: fromplain
"""

MORE = """\
globalWhiteRemoteAddresses: ['2::ac5:78:*']
accounts:
- accessKey: dupkey123
  secretKey: fromaclsub
  defaultTopicPerm: PUB|SUB
  defaultGroupPerm: PUB
"""

SECRETS = {"RocketMQ": "12345678", "rocketmq2": "12345678", "adminperm": "12345678", "dupkey123": "fromaclsub"}


def heartbeat(groups: dict[str, list[str]]) -> bytes:
    consumers = [{"groupName": g, "subscriptionDataSet": [{"topic": t} for t in topics]}
                 for g, topics in groups.items()]
    return json.dumps({"clientID": "c1", "producerDataSet": [], "consumerDataSet": consumers}).encode()


def request_for(case: dict[str, Any]) -> RemotingCommand:
    """The request of *case*, signed as it says."""
    request = RemotingCommand.request(case["code"], dict(case.get("ext", {})), case.get("body", b""),
                                      version=case.get("version", 409))
    ak = case.get("ak", "RocketMQ")
    how = case.get("sign", "good")
    if ak is not None and how != "none":
        sign(request, ak, SECRETS.get(ak, "not-the-secret"))
        if how == "bad":
            request.ext_fields["Signature"] = "AAAA"
    elif ak is not None:
        request.ext_fields["AccessKey"] = ak
    request.ext_fields.update(case.get("unsigned_ext", {}))  # added after signing, as 4.9.0-4.9.3 clients did
    return request


_M = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_E = "org.apache.rocketmq.acl.common.AclException: "
LOCAL = "127.0.0.1:5000"

#: (name, case, Java's answer: "OK" or the remark)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("global white list, no credentials", {"code": 17, "ak": None, "peer": "10.10.103.9:1"}, "OK"),
    ("global white list from conf/acl, IPv6", {"code": 17, "ak": None, "peer": "2::ac5:78:5:1"}, "OK"),
    ("no access key", {"code": 10, "ak": None, "ext": {"topic": "topicB"}, "peer": LOCAL},
     f"{_E}No accessKey is configured, {_M}.validate(PlainPermissionManager.java:664)"),
    ("no ext fields at all", {"code": 11, "ak": None, "peer": LOCAL},
     f"{_E}No accessKey is configured, {_M}.validate(PlainPermissionManager.java:664)"),
    ("unknown access key", {"code": 10, "ak": "nobody00", "ext": {"topic": "topicB"}, "peer": LOCAL},
     f"{_E}No acl config for nobody00, {_M}.validate(PlainPermissionManager.java:668)"),
    ("account white address skips the signature", {"code": 17, "sign": "bad", "peer": "192.168.0.3:1"}, "OK"),
    ("bad signature", {"code": 310, "sign": "bad", "ext": {"a": "g", "b": "topicB"}, "peer": LOCAL},
     f"{_E}Check signature failed for accessKey=RocketMQ, {_M}.validate(PlainPermissionManager.java:684)"),
    ("unsigned", {"code": 310, "sign": "none", "ext": {"a": "g", "b": "topicB"}, "peer": LOCAL},
     f"{_E}Check signature failed for accessKey=RocketMQ, {_M}.validate(PlainPermissionManager.java:684)"),
    ("PUB granted", {"code": 310, "ext": {"a": "g", "b": "topicB"}, "body": b"m", "peer": LOCAL}, "OK"),
    ("topic DENY", {"code": 310, "ext": {"a": "g", "b": "topicA"}, "peer": LOCAL},
     f"{_E}No default permission for topic:topicA, {_M}.checkPerm(PlainPermissionManager.java:611)"),
    ("SUB is not PUB", {"code": 10, "ext": {"topic": "topicC"}, "peer": LOCAL},
     f"{_E}No default permission for topic:topicC, {_M}.checkPerm(PlainPermissionManager.java:611)"),
    ("default topic DENY", {"code": 310, "ext": {"a": "g", "b": "other"}, "peer": LOCAL},
     f"{_E}No default permission for topic:other, {_M}.checkPerm(PlainPermissionManager.java:606)"),
    ("trace topic always", {"code": 310, "ext": {"a": "g", "b": "RMQ_SYS_TRACE_TOPIC"}, "peer": LOCAL}, "OK"),
    ("retry topic V2 needs the group's SUB", {"code": 310, "ext": {"a": "groupA", "b": "%RETRY%groupB"},
                                              "peer": LOCAL},
     f"{_E}No default permission for group:groupA, {_M}.checkPerm(PlainPermissionManager.java:611)"),
    ("pull: topic and group", {"code": 11, "ext": {"consumerGroup": "groupB", "topic": "topicC"}, "peer": LOCAL},
     "OK"),
    ("pull: group PUB only", {"code": 11, "ext": {"consumerGroup": "groupC", "topic": "topicC"}, "peer": LOCAL},
     f"{_E}No default permission for group:groupC, {_M}.checkPerm(PlainPermissionManager.java:611)"),
    ("pull: two refusals, HashMap order", {"code": 11, "ext": {"consumerGroup": "groupA", "topic": "topicA"},
                                           "peer": LOCAL},
     f"{_E}No default permission for topic:topicA, {_M}.checkPerm(PlainPermissionManager.java:611)"),
    ("send back", {"code": 36, "ext": {"group": "zz", "offset": "1"}, "peer": LOCAL}, "OK"),
    ("heartbeat", {"code": 34, "body": heartbeat({"groupB": ["topicB", "topicC"]}), "peer": LOCAL}, "OK"),
    ("heartbeat: a denied topic", {"code": 34, "body": heartbeat({"groupB": ["topicC", "topicD"]}), "peer": LOCAL},
     f"{_E}No default permission for topic:topicD, {_M}.checkPerm(PlainPermissionManager.java:611)"),
    # Java 8 (4.9's runtime) gives the wrapped NullPointerException no message; JDK 14+
    # would print a "helpful" NPE text instead.
    ("heartbeat without a body", {"code": 34, "peer": LOCAL},
     "org.apache.rocketmq.acl.common.AclException, "
     "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"),
    ("update offset", {"code": 15, "ext": {"consumerGroup": "groupB", "topic": "topicB"}, "peer": LOCAL}, "OK"),
    ("admin code, not admin", {"code": 17, "ext": {"topic": "t"}, "peer": LOCAL},
     f"{_E}Need admin permission for request code=17, but accessKey=RocketMQ is not, "
     f"{_M}.checkPerm(PlainPermissionManager.java:581)"),
    ("admin without perm maps passes all", {"code": 11, "ak": "rocketmq2", "ext": {"consumerGroup": "g",
                                                                                  "topic": "t"}, "peer": LOCAL},
     "OK"),
    ("admin with perm maps is checked", {"code": 11, "ak": "adminperm", "ext": {"consumerGroup": "g", "topic": "t"},
                                         "peer": LOCAL},
     f"{_E}No default permission for topic:t, {_M}.checkPerm(PlainPermissionManager.java:606)"),
    ("admin code, admin", {"code": 17, "ak": "adminperm", "ext": {"topic": "t"}, "peer": LOCAL}, "OK"),
    ("conf/acl wins a repeated key", {"code": 310, "ak": "dupkey123", "ext": {"a": "g", "b": "t"}, "peer": LOCAL},
     "OK"),
    ("4.9.8: batch sends unchecked", {"code": 320, "ext": {"a": "g", "b": "topicA"}, "peer": LOCAL}, "OK"),
    ("4.9.8: ACL admin codes open", {"code": 50, "ext": {"accessKey": "x"}, "peer": LOCAL}, "OK"),
    ("4.9.8: SEND_MESSAGE to a retry topic", {"code": 10, "ext": {"topic": "%RETRY%groupA"}, "peer": LOCAL}, "OK"),
    ("other codes: authenticated only", {"code": 14, "ext": {"topic": "topicA"}, "peer": LOCAL}, "OK"),
    ("old client: _UNIQUE_KEY_QUERY not signed", {"code": 12, "version": 399, "ext": {"topic": "topicB"},
                                                  "unsigned_ext": {"_UNIQUE_KEY_QUERY": "true"}, "peer": LOCAL},
     "OK"),
    ("update offset: two refusals, HashMap order", {"code": 15, "ext": {"consumerGroup": "groupA", "topic": "topicA"},
                                                    "peer": LOCAL},
     f"{_E}No default permission for topic:topicA, {_M}.checkPerm(PlainPermissionManager.java:611)"),
    ("heartbeat: many refusals, HashMap order", {"code": 34, "body": heartbeat({"groupA": ["topicA", "t1", "t2", "t3"],
                                                                                "zz": ["topicD", "topicC"]}),
                                                 "peer": LOCAL},
     f"{_E}No default permission for topic:topicA, {_M}.checkPerm(PlainPermissionManager.java:611)"),
]
