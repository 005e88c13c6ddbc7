"""What each request code needs (Java 4.9.8's PlainAccessValidator.parse, and strict mode)."""

from __future__ import annotations

import json

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import AclError
from rocketmq_tx.acl.errors import PARSE_FRAME
from rocketmq_tx.acl.permission import PUB, SUB
from rocketmq_tx.acl.resources import (
    ADMIN_CODES,
    STRICT_ADMIN_CODES,
    _java_set_order,
    _subscription_hash,
    needed_resources,
)
from rocketmq_tx.acl.test.validate_cases import heartbeat
from rocketmq_tx.remoting import RemotingCommand
from rocketmq_tx.remoting import RequestCode as C


def needed(code: int, ext: dict | None = None, body: bytes = b"", strict: bool = False) -> dict:
    return needed_resources(RemotingCommand.request(code, ext, body), strict)


class MappingTests(SynchronousTestCase):
    def test_java_498(self) -> None:
        table = [
            (C.SEND_MESSAGE, {"topic": "T", "producerGroup": "P"}, {"T": PUB}),
            (C.SEND_MESSAGE, {"topic": "%RETRY%G"}, {}),  # reads "group", which the header lacks
            (C.SEND_MESSAGE, {"topic": "%RETRY%G", "group": "G"}, {"%RETRY%G": SUB}),
            (C.SEND_MESSAGE_V2, {"a": "P", "b": "T"}, {"T": PUB}),
            (C.SEND_MESSAGE_V2, {"a": "G", "b": "%RETRY%X"}, {"%RETRY%G": SUB}),
            (C.SEND_BATCH_MESSAGE, {"a": "P", "b": "T"}, {}),
            (C.CONSUMER_SEND_MSG_BACK, {"group": "G", "offset": "1"}, {"%RETRY%G": SUB}),
            (C.PULL_MESSAGE, {"topic": "T", "consumerGroup": "G"}, {"T": SUB, "%RETRY%G": SUB}),
            (C.LITE_PULL_MESSAGE, {"topic": "T", "consumerGroup": "G"}, {}),
            (C.QUERY_MESSAGE, {"topic": "T", "key": "k"}, {"T": SUB}),
            (C.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "G"}, {"%RETRY%G": SUB}),
            (C.UNREGISTER_CLIENT, {"clientID": "c", "producerGroup": "P"}, {}),
            (C.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"}, {"%RETRY%G": SUB}),
            (C.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T"}, {"%RETRY%G": SUB, "T": SUB}),
            (C.UPDATE_CONSUMER_OFFSET, {"topic": "T"}, {"T": SUB}),  # a missing field adds nothing
            (C.QUERY_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T"}, {}),
            (C.UPDATE_AND_CREATE_TOPIC, {"topic": "T"}, {}),
            (C.PULL_MESSAGE, {}, {}),
        ]
        for code, ext, expected in table:
            self.assertEqual(needed(code, ext), expected, (code, ext))

    def test_strict(self) -> None:
        self.assertEqual(needed(C.SEND_BATCH_MESSAGE, {"a": "P", "b": "T"}, strict=True), {"T": PUB})
        self.assertEqual(needed(C.SEND_BATCH_MESSAGE, {"a": "G", "b": "%RETRY%G"}, strict=True), {"%RETRY%G": SUB})
        self.assertEqual(needed(C.LITE_PULL_MESSAGE, {"topic": "T", "consumerGroup": "G"}, strict=True),
                         {"T": SUB, "%RETRY%G": SUB})
        self.assertEqual(needed(C.SEND_MESSAGE, {"topic": "%RETRY%G"}, strict=True), {"%RETRY%G": SUB})
        self.assertEqual(STRICT_ADMIN_CODES - ADMIN_CODES, {50, 51, 52, 53})
        self.assertEqual(ADMIN_CODES, {17, 25, 215, 200, 207})

    def test_strict_pop(self) -> None:
        """The POP family needs SUB on the (original) topic and the group's retry topic; 4.9.8 mode nothing."""
        for code in (C.POP_MESSAGE, C.PEEK_MESSAGE, C.NOTIFICATION, C.POLLING_INFO, C.ACK_MESSAGE,
                     C.CHANGE_MESSAGE_INVISIBLETIME):
            self.assertEqual(needed(code, {"topic": "T", "consumerGroup": "G"}, strict=True),
                             {"T": SUB, "%RETRY%G": SUB})
            self.assertEqual(needed(code, {"topic": "T", "consumerGroup": "G"}), {})
        for retry in ("%RETRY%G_T", "%RETRY%G+T"):
            self.assertEqual(needed(C.ACK_MESSAGE, {"topic": retry, "consumerGroup": "G"}, strict=True),
                             {"T": SUB, "%RETRY%G": SUB})
        body = (b'{"acks":[{"b":"AQ==","c":"G","it":1,"pt":1,"q":0,"r":"0","rq":0,"so":0,"t":"T"},'
                b'{"b":"AQ==","c":"H","it":1,"pt":1,"q":0,"r":"1","rq":0,"so":0,"t":"U"}]}')
        self.assertEqual(needed(C.BATCH_ACK_MESSAGE, body=body, strict=True),
                         {"T": SUB, "%RETRY%G": SUB, "U": SUB, "%RETRY%H": SUB})
        with self.assertRaises(AclError):
            needed(C.BATCH_ACK_MESSAGE, body=b"[", strict=True)

    def test_heartbeat(self) -> None:
        body = heartbeat({"G1": ["T1", "%RETRY%G1"], "G2": []})
        self.assertEqual(needed(C.HEART_BEAT, {}, body), {"%RETRY%G1": SUB, "T1": SUB, "%RETRY%G2": SUB})
        self.assertEqual(needed(C.HEART_BEAT, {}, b'{"clientID":"c","producerDataSet":[{"groupName":"P"}]}'), {})
        self.assertEqual(needed(C.HEART_BEAT, {}, b"{clientID:'c'}"), {})  # fastjson's lenient dialect

    def test_heartbeat_subscriptions_in_java_set_order(self) -> None:
        """Java adds a group's subscriptions in the order of its HashSet<SubscriptionData>, which
        decides the refusal reported when two refused topics share a bucket of the check's
        HashMap (Topiceszyc and Topicflntw: a Java 4.9.8 broker reports topic:Topicflntw,
        compat-tests/test_acl_interop.py). Hashes and order printed by 4.9.8's HeartbeatData.decode."""
        subs = [{"topic": "Topiceszyc", "subString": "*"}, {"topic": "Topicflntw", "subString": "*"},
                {"topic": "T", "subString": "TagA || TagB", "tagsSet": ["TagA", "TagB"],
                 "codeSet": [2598919, 2598920], "expressionType": "TAG"},
                {"topic": "S", "classFilterMode": True, "expressionType": "SQL92", "subString": "a > 1"}]
        java = [("Topicflntw", -582950688), ("Topiceszyc", -604753515), ("T", 111334945), ("S", -755329898)]
        self.assertEqual([(s["topic"], _subscription_hash(s)) for s in _java_set_order(subs)], java)
        body = json.dumps({"consumerDataSet": [{"groupName": "G", "subscriptionDataSet": subs}]}).encode()
        self.assertEqual(list(needed(C.HEART_BEAT, {}, body)), ["%RETRY%G", "Topicflntw", "Topiceszyc", "T", "S"])
        # a value fastjson would have to convert: body order, as before
        odd = [{"topic": "Topiceszyc", "subString": 1}, {"topic": "Topicflntw"}]
        self.assertEqual(_java_set_order(odd), odd)

    def test_heartbeat_refused(self) -> None:
        cases = {b"": None, b'{"consumerDataSet":null}': None, b'{"consumerDataSet":[null]}': None,
                 b'{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":null}]}': None,
                 b"not json": "syntax error", b"[1]": "syntax error, expect {"}
        for body, message in cases.items():
            with self.assertRaises(AclError, msg=body) as cm:
                needed(C.HEART_BEAT, {}, body)
            self.assertEqual(cm.exception.frame, PARSE_FRAME)
            if message is None:
                self.assertIsNone(cm.exception.message, body)
            else:
                self.assertIn(message, cm.exception.message)
