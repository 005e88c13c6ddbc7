"""
rocketmq-tx-admin: argument parsing, output layout, credentials, and every command against
the scripted fake cluster (two brokers, real TCP), with the requests it sent checked.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import time

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.admin import cli
from rocketmq_tx.admin.commands import parse_timestamp
from rocketmq_tx.admin.output import Output, Progress, java_bool, java_map_text, mq_version_desc
from rocketmq_tx.admin.registry import COMMANDS, Session
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminapi import ORDER_TOPIC_CONFIG
from rocketmq_tx.testing.fakebroker import ThreadedFakeServer

#: mqadmin 4.9.8's commands this CLI has, by their Java names
BUILT = {"clusterList", "brokerStatus", "getBrokerConfig", "updateBrokerConfig", "topicList", "topicRoute",
         "topicStatus", "updateTopic", "deleteTopic", "updateSubGroup", "deleteSubGroup", "consumerProgress",
         "consumerConnection", "producerConnection", "queryMsgById", "queryMsgByKey", "queryMsgByUniqueKey",
         "sendMessage", "consumeMessage", "queryMsgByOffset", "printMsg",
         "resetOffsetByTime", "getNamesrvConfig", "updateNamesrvConfig",
         "updateKvConfig", "deleteKvConfig", "wipeWritePerm", "addWritePerm",
         "updateAclConfig", "deleteAclConfig", "updateGlobalWhiteAddr", "clusterAclConfigVersion", "setConsumeMode",
         "consumerStatus"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(argv))
        except SystemExit as e:  # argparse's usage errors
            status = int(e.code or 0)
    return status, out.getvalue(), err.getvalue()


class ParsingTests(SynchronousTestCase):
    def test_the_commands_and_their_flags(self) -> None:
        self.assertEqual(set(COMMANDS), BUILT)
        parser = cli.build_parser()
        args = parser.parse_args(["updateTopic", "-n", "a:1;b:2", "-c", "C", "-t", " T ", "-r", "3", "-o", "TRUE"])
        self.assertEqual((args.namesrvAddr, args.clusterName, args.topic, args.readQueueNums, args.writeQueueNums,
                          args.perm, args.order), ("a:1;b:2", "C", "T", 3, 8, 6, True))

    def test_usage_errors_exit_2(self) -> None:
        for argv in (["topicRoute", "-n", "x:1"], ["topicStatus", "-n", "x:1", "-t"], ["noSuchCommand"],
                     ["updateTopic", "-n", "x:1", "-t", "T", "-r", "eight"],
                     ["resetOffsetByTime", "-n", "x:1", "-g", "G", "-t", "T", "-s", "yesterday"]):
            status, out, err = run(*argv)
            self.assertEqual((status, out), (2, ""), argv)
            self.assertIn("usage:", err)

    def test_name_server_from_the_environment(self) -> None:
        old = os.environ.pop("NAMESRV_ADDR", None)
        self.addCleanup(lambda: os.environ.__setitem__("NAMESRV_ADDR", old) if old is not None else None)
        status, _, err = run("topicList")
        self.assertEqual(status, 2)
        self.assertIn("NAMESRV_ADDR", err)

    def test_java_boolean_and_time(self) -> None:
        self.assertEqual([java_bool(t) for t in ("true", " True ", "yes", "1", "false")],
                         [True, True, False, False, False])
        self.assertEqual(parse_timestamp("1700000000123"), 1700000000123)
        self.assertEqual(parse_timestamp("2024-01-02#03:04:05:678") % 1000, 678)
        self.assertLess(abs(parse_timestamp("now") / 1000 - time.time()), 5)

    def test_version_names(self) -> None:
        # Java MQVersion.Version ordinals (4.9.8 and 5.3.3 list the same 613 names)
        self.assertEqual([mq_version_desc(v) for v in (0, 62, 63, 85, 86, 409, 479, 612, 9999)],
                         ["V3_0_0_SNAPSHOT", "V3_1_8_SNAPSHOT", "V3_1_8", "V3_2_9", "V3_3_1_SNAPSHOT", "V4_9_8",
                          "V5_3_3", "HIGHER_VERSION", "HIGHER_VERSION"])

    def test_layout_is_javas_printf(self) -> None:
        out = Output()
        out.printf("%-32s  %-4d  %-20d  %-20d    %s", "broker-a", 3, 0, 12, "")
        self.assertEqual(out.lines, ["broker-a" + " " * 24 + "  3     0" + " " * 19 + "  12" + " " * 18 + "    "])
        self.assertEqual(java_map_text({"a": "1", "b": "2"}), "{a=1, b=2}")
        self.assertEqual(Output({"x": [1]}, ["t"]).render(True), '{"x":[1]}\n')

    def test_progress_only_on_a_terminal(self) -> None:
        now = [0.0]
        tty = Tty()
        progress = Progress(tty, "printMsg", interval=1.0, clock=lambda: now[0])
        progress.update("1 messages")
        progress.update("2 messages")  # within the interval: not redrawn
        now[0] = 1.5
        progress.update("3 messages")
        progress.finish()
        self.assertEqual(tty.getvalue(), "\rprintMsg: 1 messages\x1b[K\rprintMsg: 3 messages\x1b[K\r\x1b[K")
        piped = io.StringIO()
        progress = Progress(piped, "printMsg", interval=0)
        progress.update("1 messages")
        progress.finish()
        self.assertEqual(piped.getvalue(), "")

    def test_tools_yml_credentials(self) -> None:
        home = tempfile.mkdtemp()
        self.assertIsNone(cli.tools_credentials(home))
        os.makedirs(os.path.join(home, "conf"))
        with open(os.path.join(home, "conf", "tools.yml"), "w") as f:
            f.write("accessKey: RocketMQ\nsecretKey: 12345678\n")
        credentials = cli.tools_credentials(home)
        assert credentials is not None
        self.assertEqual((credentials.access_key, credentials.secret_key), ("RocketMQ", "12345678"))
        with open(os.path.join(home, "conf", "tools.yml"), "w") as f:
            f.write("accessKey: RocketMQ\nsecretKey: ''\n")
        self.assertIsNone(cli.tools_credentials(home))
        status, _, err = run("topicList", "-n", "x:1", "--access-key", "a")
        self.assertEqual(status, 2)

    def test_tls_options(self) -> None:
        parser = cli.build_parser()
        self.assertIsNone(cli._session(parser.parse_args(["topicList", "-n", "x:1"]), parser).tls)
        config = os.path.join(tempfile.mkdtemp(), "tls.properties")
        with open(config, "w") as f:
            f.write("tls.client.authServer=true\ntls.client.trustCertPath=/ca.pem\n")
        session = cli._session(parser.parse_args(["topicList", "-n", "x:1", "--tls-config", config]), parser)
        assert session.tls is not None
        self.assertEqual((session.tls["tls.enable"], session.tls["tls.client.authServer"],
                          session.tls["tls.client.trustCertPath"]), (True, True, "/ca.pem"))
        self.assertIsNotNone(cli._session(parser.parse_args(["topicList", "-n", "x:1", "--tls"]), parser).tls)
        with open(config, "w") as f:
            f.write("tls.client.authServer=maybe\n")
        status, _, err = run("topicList", "-n", "x:1", "--tls-config", config)
        self.assertEqual(status, 1)
        self.assertEqual(len(err.splitlines()), 1)
        self.assertIn("authServer", err)


class CommandTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.server = ThreadedFakeServer(("broker-a", "broker-b"))
        self.addCleanup(self.server.close)
        self.cluster = self.server.cluster
        self.cluster.add_topic("T", 2)
        self.ns = self.server.namesrv_addr
        self.addr_a, self.addr_b = self.cluster.brokers["broker-a"], self.cluster.brokers["broker-b"]

    def ok(self, *argv: str) -> str:
        status, out, err = run(*argv, "-n", self.ns)
        self.assertEqual((status, err), (0, ""), argv)
        return out

    def json(self, *argv: str):  # type: ignore[no-untyped-def]
        return json.loads(self.ok(*argv, "--json"))

    def reply(self, code: int, body: bytes = b"", times: int = 1, **ext: str) -> None:
        def answer(addr: str, request: RemotingCommand) -> RemotingCommand:
            response = request.make_response(ResponseCode.SUCCESS, None, body=body)
            response.ext_fields.update(ext)
            return response
        self.cluster.script(code, *[answer] * times)

    def test_cluster_list(self) -> None:
        self.reply(RequestCode.GET_BROKER_RUNTIME_INFO,
                   fastjson.dumps({"table": {"brokerVersionDesc": "V4_9_7", "putTps": "12.5 1 1"}}), 4)
        rows = self.json("clusterList")
        self.assertEqual([(r["cluster"], r["brokerName"], r["brokerId"], r["addr"], r["version"], r["inTps"])
                          for r in rows],
                         [("DefaultCluster", "broker-a", 0, self.addr_a, "V4_9_7", 12.5),
                          ("DefaultCluster", "broker-b", 0, self.addr_b, "V4_9_7", 12.5)])
        text = self.ok("clusterList").splitlines()
        self.assertTrue(text[0].startswith("#Cluster Name" + " " * 5 + "#Broker Name" + " " * 12 + "#BID  #Addr"), text)
        self.assertEqual(text[1].split()[:4], ["DefaultCluster", "broker-a", "0", self.addr_a])
        self.reply(RequestCode.GET_BROKER_RUNTIME_INFO, fastjson.dumps({"table": {
            "msgPutTotalYesterdayMorning": "10", "msgPutTotalTodayMorning": "15", "msgPutTotalTodayNow": "22",
            "msgGetTotalYesterdayMorning": "1", "msgGetTotalTodayMorning": "3", "msgGetTotalTodayNow": "4"}}))
        more = self.json("clusterList", "-m")
        self.assertEqual([(r["brokerName"], r["inTotalYest"], r["outTotalYest"], r["inTotalToday"],
                           r["outTotalToday"]) for r in more], [("broker-a", 5, 2, 7, 1), ("broker-b", 0, 0, 0, 0)])

    def test_topics(self) -> None:
        self.assertEqual(self.json("topicList"), ["T"])
        self.assertEqual(self.ok("topicList"), "T\n")
        route = self.json("topicRoute", "-t", "T")
        self.assertEqual([b["brokerName"] for b in route["brokerDatas"]], ["broker-a", "broker-b"])
        self.assertEqual(json.loads(self.ok("topicRoute", "-t", "T")), route)
        listed = self.ok("topicRoute", "-t", "T", "-l").splitlines()
        self.assertEqual(listed[1].split()[:2], ["DefaultCluster", "broker-a"])
        with Producer(self.ns) as producer:
            producer.send(Message("T", b"x"), queue=MessageQueue("T", "broker-b", 1))
        stats = self.json("topicStatus", "-t", "T")
        self.assertEqual([(r["brokerName"], r["queueId"], r["minOffset"], r["maxOffset"]) for r in stats],
                         [("broker-a", 0, 0, 0), ("broker-a", 1, 0, 0), ("broker-b", 0, 0, 0), ("broker-b", 1, 0, 1)])
        self.assertEqual(self.ok("topicStatus", "-t", "T").splitlines()[4].split()[:4], ["broker-b", "1", "0", "1"])

    def test_update_topic_by_broker_with_order(self) -> None:
        out = self.ok("updateTopic", "-b", self.addr_b, "-t", "New", "-w", "3", "-r", "3", "-o", "true", "-u", "true")
        self.assertIn(f"create topic to {self.addr_b} success.", out)
        ((addr, request),) = self.cluster.requests(RequestCode.UPDATE_AND_CREATE_TOPIC)
        self.assertEqual((addr, request.ext_fields["writeQueueNums"], request.ext_fields["order"],
                          request.ext_fields["topicSysFlag"]), (self.addr_b, "3", "true", "1"))
        self.assertEqual(self.cluster.kv[(ORDER_TOPIC_CONFIG, "New")], "broker-b:3")

    def test_update_topic_needs_one_target(self) -> None:
        status, out, err = run("updateTopic", "-n", self.ns, "-t", "New")
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(len(err.splitlines()), 1)
        self.assertEqual(run("updateTopic", "-n", self.ns, "-t", "New", "-b", self.addr_a, "-c", "C")[0], 1)

    def test_update_topic_in_cluster_and_delete(self) -> None:
        self.assertEqual(self.json("updateTopic", "-c", "DefaultCluster", "-t", "New")["brokers"],
                         [self.addr_a, self.addr_b])
        self.ok("deleteTopic", "-c", "DefaultCluster", "-t", "New")
        self.assertEqual(sorted(a for a, _ in self.cluster.requests(RequestCode.DELETE_TOPIC_IN_BROKER)),
                         sorted([self.addr_a, self.addr_b]))
        self.assertEqual(len(self.cluster.requests(RequestCode.DELETE_TOPIC_IN_NAMESRV)), 1)

    def test_failure_is_one_line(self) -> None:
        status, out, err = run("topicRoute", "-n", self.ns, "-t", "Nope")
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(len(err.splitlines()), 1)
        self.assertIn("topicRoute failed", err)
        self.assertIn(str(ResponseCode.TOPIC_NOT_EXIST), err)

    def test_broker_config(self) -> None:
        self.reply(RequestCode.GET_BROKER_CONFIG, b"brokerName=broker-a\nlistenPort=10911\n", version="{}")
        self.assertEqual(self.json("getBrokerConfig", "-b", self.addr_a),
                         {self.addr_a: {"brokerName": "broker-a", "listenPort": "10911"}})
        self.reply(RequestCode.GET_BROKER_CONFIG, b"a=1\n", version="{}")
        lines = self.ok("getBrokerConfig", "-b", self.addr_a).splitlines()
        self.assertEqual(lines[:2], [f"============{self.addr_a}============", "a" + " " * 49 + "=  1"])
        self.reply(RequestCode.UPDATE_BROKER_CONFIG, times=2)
        self.ok("updateBrokerConfig", "-c", "DefaultCluster", "-k", "maxMessageSize", "-v", "1024")
        sent = self.cluster.requests(RequestCode.UPDATE_BROKER_CONFIG)
        self.assertEqual(sorted(a for a, _ in sent), sorted([self.addr_a, self.addr_b]))
        self.assertEqual(sent[0][1].body, b"maxMessageSize=1024\n")
        status, _, err = run("updateBrokerConfig", "-n", self.ns, "-b", self.addr_a, "-k", "a", "-v", "x\ny")
        self.assertEqual(status, 1)

    def test_broker_status(self) -> None:
        self.reply(RequestCode.GET_BROKER_RUNTIME_INFO, fastjson.dumps({"table": {"runtime": "[ 0 days ]",
                                                                                 "putTps": "1.0"}}))
        self.assertEqual(self.ok("brokerStatus", "-b", self.addr_a).splitlines(),
                         ["putTps" + " " * 26 + ": 1.0", "runtime" + " " * 25 + ": [ 0 days ]"])
        self.reply(RequestCode.GET_BROKER_RUNTIME_INFO, fastjson.dumps({"table": {"putTps": "2.0"}}), 2)
        self.assertEqual(self.json("brokerStatus", "-c", "DefaultCluster"),
                         {self.addr_a: {"putTps": "2.0"}, self.addr_b: {"putTps": "2.0"}})

    def test_name_server_config_and_kv(self) -> None:
        self.reply(RequestCode.GET_NAMESRV_CONFIG, b"listenPort=9876\n")
        self.assertEqual(self.json("getNamesrvConfig"), {self.ns: {"listenPort": "9876"}})
        self.reply(RequestCode.UPDATE_NAMESRV_CONFIG)
        self.ok("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true")
        ((_, request),) = self.cluster.requests(RequestCode.UPDATE_NAMESRV_CONFIG)
        self.assertEqual(request.body, b"orderMessageEnable=true\n")
        self.ok("updateKvConfig", "-s", "NS", "-k", "k", "-v", "v")
        self.assertEqual(self.cluster.kv[("NS", "k")], "v")
        self.ok("deleteKvConfig", "-s", "NS", "-k", "k")
        self.assertNotIn(("NS", "k"), self.cluster.kv)

    def test_write_perm(self) -> None:
        self.reply(RequestCode.WIPE_WRITE_PERM_OF_BROKER, wipeTopicCount="4")
        self.assertEqual(self.ok("wipeWritePerm", "-b", "broker-a"),
                         f"wipe write perm of broker[broker-a] in name server[{self.ns}] OK, 4\n")
        ((_, request),) = self.cluster.requests(RequestCode.WIPE_WRITE_PERM_OF_BROKER)
        self.assertEqual(request.ext_fields["brokerName"], "broker-a")
        self.reply(RequestCode.ADD_WRITE_PERM_OF_BROKER, addTopicCount="4")
        self.assertEqual(self.json("addWritePerm", "-b", "broker-a"), {self.ns: 4})
        # every name server failing is a failure of the command
        self.cluster.script(RequestCode.ADD_WRITE_PERM_OF_BROKER, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(run("addWritePerm", "-n", self.ns, "-b", "broker-a")[0], 1)

    def test_subscription_groups(self) -> None:
        self.reply(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        self.ok("updateSubGroup", "-b", self.addr_a, "-g", "G", "-r", "3", "-s", "false")
        ((addr, request),) = self.cluster.requests(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        body = json.loads(request.body)
        self.assertEqual((addr, body["groupName"], body["retryMaxTimes"], body["consumeEnable"],
                          body["consumeBroadcastEnable"], body["consumeFromMinEnable"], body["retryQueueNums"]),
                         (self.addr_a, "G", 3, False, False, False, 1))
        self.reply(RequestCode.DELETE_SUBSCRIPTIONGROUP, times=2)
        self.ok("deleteSubGroup", "-c", "DefaultCluster", "-g", "G", "-r", "true")
        sent = self.cluster.requests(RequestCode.DELETE_SUBSCRIPTIONGROUP)
        self.assertEqual(sorted(a for a, _ in sent), sorted([self.addr_a, self.addr_b]))
        self.assertEqual({k: sent[0][1].ext_fields[k] for k in ("groupName", "removeOffset", "cleanOffset")},
                         {"groupName": "G", "removeOffset": "true", "cleanOffset": "true"})
        self.assertEqual(run("deleteSubGroup", "-n", self.ns, "-g", "G")[0], 1)

    def test_set_consume_mode(self) -> None:
        self.reply(RequestCode.SET_MESSAGE_REQUEST_MODE, times=2)
        out = self.ok("setConsumeMode", "-c", "DefaultCluster", "-t", "T", "-g", "G", "-m", "POP", "-q", "2")
        self.assertEqual(out.splitlines()[-1], "topic[T] group[G] consume mode[POP] popShareQueueNum[2]")
        sent = self.cluster.requests(RequestCode.SET_MESSAGE_REQUEST_MODE)
        self.assertEqual(sorted(a for a, _ in sent), sorted([self.addr_a, self.addr_b]))
        self.assertEqual(json.loads(sent[0][1].body),
                         {"consumerGroup": "G", "mode": "POP", "popShareQueueNum": 2, "topic": "T"})
        self.assertEqual(run("setConsumeMode", "-n", self.ns, "-b", self.addr_a, "-t", "T", "-g", "G", "-m",
                             "PUSH")[0], 2)

    def test_producer_connection(self) -> None:
        body = fastjson.dumps({"connectionSet": [{"clientId": "c1", "clientAddr": "1.2.3.4:5", "language": "JAVA",
                                                  "version": 395}]})
        self.reply(RequestCode.GET_PRODUCER_CONNECTION_LIST, body, 2)
        # every broker of the topic is asked, and the answers listed one after another (as Java's set keeps them)
        lines = self.ok("producerConnection", "-g", "PG", "-t", "T").splitlines()
        self.assertEqual([line.split() for line in lines], [["0001", "c1", "1.2.3.4:5", "JAVA", "395"],
                                                            ["0002", "c1", "1.2.3.4:5", "JAVA", "395"]])

    def test_messages(self) -> None:
        with Producer(self.ns) as producer:
            msg = Message("T", b"hello")
            msg.keys, msg.tags = ["k1"], "TagA"
            sent = producer.send(msg, queue=MessageQueue("T", "broker-a", 1))
        by_key = self.json("queryMsgByKey", "-t", "T", "-k", "k1")
        self.assertEqual(by_key, [{"msgId": sent.msg_id, "queueId": 1, "queueOffset": 0}])
        for argv in (("queryMsgById", "-i", sent.offset_msg_id), ("queryMsgByUniqueKey", "-t", "T", "-i", sent.msg_id)):
            text = self.ok(*argv)
            facts = dict(line.split(":", 1) for line in text.splitlines())
            self.assertEqual((facts["Topic"].strip(), facts["Tags"].strip(), facts["Keys"].strip(),
                              facts["Queue ID"].strip()), ("T", "[TagA]", "[k1]", "1"))
            with open(facts["Message Body Path"].strip(), "rb") as f:
                self.assertEqual(f.read(), b"hello")
        self.assertEqual(self.json("queryMsgById", "-i", sent.offset_msg_id)[0]["body"], "hello")

    def test_send_and_consume(self) -> None:
        result = self.json("sendMessage", "-t", "T", "-p", "hi", "-k", "k", "-c", "TagB", "-b", "broker-b", "-i", "1")
        self.assertEqual((result["brokerName"], result["queueId"], result["sendStatus"]), ("broker-b", 1, "SEND_OK"))
        self.assertEqual(run("sendMessage", "-n", self.ns, "-t", "T", "-p", "x", "-i", "1")[0], 1)
        for i in range(3):
            self.ok("sendMessage", "-t", "T", "-p", f"m{i}")
        got = self.json("consumeMessage", "-t", "T")
        self.assertEqual(sorted(m["body"] for m in got), ["hi", "m0", "m1", "m2"])
        self.assertEqual(len(self.json("consumeMessage", "-t", "T", "-c", "2")), 2)
        only = self.json("consumeMessage", "-t", "T", "-b", "broker-b", "-i", "1")
        self.assertEqual(only[0]["body"], "hi")
        self.assertEqual(run("consumeMessage", "-n", self.ns, "-t", "T", "-c", "0")[0], 1)

    def test_query_by_offset_and_print(self) -> None:
        for i in range(3):
            self.ok("sendMessage", "-t", "T", "-p", f"p{i}", "-c", "TagA" if i else "TagB", "-b", "broker-a", "-i", "0")
        facts = self.json("queryMsgByOffset", "-t", "T", "-b", "broker-a", "-i", "0", "-o", "1")
        self.assertEqual((facts["body"], facts["queueOffset"], facts["tags"]), ("p1", 1, "TagA"))
        self.assertEqual(self.ok("queryMsgByOffset", "-t", "T", "-b", "broker-a", "-i", "0", "-o", "9"), "")
        printed = self.json("printMsg", "-t", "T", "-s", "TagA")
        self.assertEqual([m["body"] for m in printed], ["p1", "p2"])
        text = self.ok("printMsg", "-t", "T", "-d", "false").splitlines()
        self.assertEqual(text[0], "minOffset=0, maxOffset=3, MessageQueue [topic=T, brokerName=broker-a, queueId=0]")
        self.assertEqual([line.rsplit("BODY: ", 1)[1] for line in text if line.startswith("MSGID: ")],
                         ["NOT PRINT BODY"] * 3)
        self.assertEqual(text.count("-" * 56), 4)
        self.assertEqual(run("printMsg", "-n", self.ns, "-t", "T", "-c", "NoSuchCharset")[0], 1)

    def test_long_commands_draw_progress_on_a_terminal(self) -> None:
        self.ok("sendMessage", "-t", "T", "-p", "x")
        tty = Tty()
        session = Session(self.ns, progress_stream=tty)
        self.addCleanup(session.close)
        parser = cli.build_parser()
        for argv in (["printMsg", "-t", "T"], ["consumeMessage", "-t", "T"]):
            tty.seek(0)
            tty.truncate()
            output = COMMANDS[argv[0]].run(session, parser.parse_args([*argv, "-n", self.ns]))
            self.assertEqual(len(output.data), 1)
            self.assertIn(f"\r{argv[0]}: ", tty.getvalue())
            self.assertTrue(tty.getvalue().endswith("\r\x1b[K"))

    def test_acl_accounts(self) -> None:
        self.reply(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, times=2)
        out = self.ok("updateAclConfig", "-c", "DefaultCluster", "-a", "RocketMQ2", "-s", "secret99", "-t",
                      "topicA=PUB,topicB=SUB", "-i", "DENY", "-m", "true")
        self.assertNotIn("secret99", out)
        sent = self.cluster.requests(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG)
        self.assertEqual(sorted(a for a, _ in sent), sorted([self.addr_a, self.addr_b]))
        self.assertEqual({k: sent[0][1].ext_fields.get(k) for k in ("accessKey", "secretKey", "admin", "topicPerms",
                                                                     "defaultTopicPerm", "groupPerms")},
                         {"accessKey": "RocketMQ2", "secretKey": "secret99", "admin": "true",
                          "topicPerms": "topicA=PUB,topicB=SUB", "defaultTopicPerm": "DENY", "groupPerms": None})
        self.reply(RequestCode.DELETE_ACL_CONFIG)
        self.ok("deleteAclConfig", "-b", self.addr_a, "-a", "RocketMQ2")
        self.assertEqual(self.cluster.requests(RequestCode.DELETE_ACL_CONFIG)[0][1].ext_fields["accessKey"],
                         "RocketMQ2")
        self.reply(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG)
        self.ok("updateGlobalWhiteAddr", "-b", self.addr_b, "-g", "10.10.*", "-p", "/acl/plain_acl.yml")
        ((addr, request),) = self.cluster.requests(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG)
        self.assertEqual((addr, request.ext_fields["globalWhiteAddrs"], request.ext_fields["aclFileFullPath"]),
                         (self.addr_b, "10.10.*", "/acl/plain_acl.yml"))
        versions = fastjson.dumps({"/acl/plain_acl.yml": {"counter": 3, "timestamp": 1700000000000}}).decode()
        self.reply(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, times=2, clusterName="DefaultCluster",
                   brokerName="broker-a", brokerAddr=self.addr_a, version="{}", allAclFileVersion=versions)
        rows = self.json("clusterAclConfigVersion", "-c", "DefaultCluster")
        self.assertEqual([(r["brokerName"], r["aclFilePath"], r["counter"]) for r in rows],
                         [("broker-a", "/acl/plain_acl.yml", 3)] * 2)
        self.reply(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, allAclFileVersion="[1]")
        self.assertEqual(run("clusterAclConfigVersion", "-n", self.ns, "-b", self.addr_a)[0], 1)
        self.cluster.script(RequestCode.DELETE_ACL_CONFIG, ResponseCode.DELETE_ACL_CONFIG_FAILED)
        status, _, err = run("deleteAclConfig", "-n", self.ns, "-b", self.addr_a, "-a", "Nope")
        self.assertEqual(status, 1)
        self.assertIn(str(int(ResponseCode.DELETE_ACL_CONFIG_FAILED)), err)

    def test_acl_keys_sign_every_request(self) -> None:
        self.ok("topicList", "--access-key", "RocketMQ", "--secret-key", "12345678")
        ((_, request),) = self.cluster.requests(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        self.assertEqual(request.ext_fields["AccessKey"], "RocketMQ")
        self.assertTrue(request.ext_fields["Signature"])
        home = tempfile.mkdtemp()
        os.makedirs(os.path.join(home, "conf"))
        with open(os.path.join(home, "conf", "tools.yml"), "w") as f:
            f.write("accessKey: FromToolsYml\nsecretKey: 12345678\n")
        old = os.environ.get("ROCKETMQ_HOME")
        os.environ["ROCKETMQ_HOME"] = home
        self.addCleanup(lambda: os.environ.__setitem__("ROCKETMQ_HOME", old) if old is not None
                        else os.environ.pop("ROCKETMQ_HOME", None))
        self.ok("topicList")
        self.assertEqual(self.cluster.requests(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)[1][1]
                         .ext_fields["AccessKey"], "FromToolsYml")

    def test_consumer_progress_and_reset(self) -> None:
        with Producer(self.ns) as producer:
            for q in (0, 1):
                producer.send(Message("T", b"x"), queue=MessageQueue("T", "broker-a", q))
        self.cluster.add_topic("%RETRY%CG", 1)
        with Puller(self.ns) as puller:
            puller.commit_offset(MessageQueue("T", "broker-a", 0), 1)
            progress = self.json("consumerProgress", "-g", "CG")
            self.assertEqual(progress["diffTotal"], 0)
            text = self.ok("consumerProgress", "-g", "CG")
            self.assertIn("Diff Total: 0", text)
            self.assertEqual(text.splitlines()[1].split()[:5], ["T", "broker-a", "0", "1", "1"])
            puller.send_heartbeat(["T"])
            every = self.json("consumerProgress")
            self.assertEqual([(g["group"], g["count"], g["type"], g["diffTotal"]) for g in every],
                             [("CG", 1, "PULL", 0)])
            self.assertEqual(every[0]["version"], "V4_9_8")  # the fake cluster reports version 409
            at_b = self.json("consumerConnection", "-g", "CG", "-b", self.addr_b)
            self.assertEqual(len(at_b["connectionSet"]), 1)
            self.assertEqual(self.cluster.requests(RequestCode.GET_CONSUMER_CONNECTION_LIST)[-1][0], self.addr_b)
            lines = self.ok("consumerProgress").splitlines()
            self.assertEqual(lines[0].split(), ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS",
                                                "#Diff", "Total"])
            self.assertEqual(lines[1].split()[:2], ["CG", "1"])
            reset = self.json("resetOffsetByTime", "-g", "CG", "-t", "T", "-s", "0")
            self.assertTrue(reset)
            self.assertEqual({r["offset"] for r in reset}, {0})

    def test_consumer_status(self) -> None:
        """consumerStatus: GET_CONSUMER_RUNNING_INFO relayed by a broker of the retry topic; with -i
        Java's formatString, without it one file per client and the subscription check."""
        self.cluster.add_topic("%RETRY%CG", 1)
        started = int(time.time() * 1000) - 600_000
        mq_key = '{"brokerName":"broker-a","queueId":1,"topic":"T"}'
        pq = ('{"cachedMsgCount":3,"cachedMsgMaxOffset":9,"cachedMsgMinOffset":7,"cachedMsgSizeInMiB":0,'
              '"commitOffset":7,"droped":false,"lastConsumeTimestamp":%d,"lastLockTimestamp":0,'
              '"lastPullTimestamp":%d,"locked":false,"tryUnlockTimes":0,"transactionMsgCount":0,'
              '"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0}').replace("%d", str(started))
        body = ('{"mqTable":{MQ:PQ},"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY",'
                '"PROP_CONSUMER_START_TIMESTAMP":"STARTED","PROP_CONSUMEORDERLY":"false"},'
                '"statusTable":{"T":{"consumeFailedMsgs":2,"consumeFailedTPS":0.0,"consumeOKTPS":1.5,'
                '"consumeRT":0.0,"pullRT":0.0,"pullTPS":0.0}},'
                '"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG",'
                '"subString":"*","subVersion":1,"tagsSet":[],"topic":"T"}]}')
        body = body.replace("MQ", mq_key).replace("PQ", pq).replace("STARTED", str(started)).encode()
        self.reply(RequestCode.GET_CONSUMER_RUNNING_INFO, body, times=3)
        lines = self.ok("consumerStatus", "-g", "CG", "-i", "client-1").splitlines()
        ((addr, request),) = self.cluster.requests(RequestCode.GET_CONSUMER_RUNNING_INFO)
        self.assertEqual(addr, self.addr_a)
        self.assertEqual((request.ext_fields["consumerGroup"], request.ext_fields["clientId"],
                          request.ext_fields["jstackEnable"]), ("CG", "client-1", "false"))
        self.assertEqual(lines[0], "#Consumer Properties#")
        self.assertEqual(lines[1], f"{'PROP_CONSUMEORDERLY':<40}: false")
        self.assertIn(f"001 Topic: {'T':<40} ClassFilter: false    SubExpression: *", lines)
        self.assertIn(f"{'T':<32}  {'broker-a':<32}  1     7                   ", lines)
        detail = [line for line in lines if "ProcessQueueInfo [" in line]
        self.assertEqual(len(detail), 1)
        self.assertIn("commitOffset=7, cachedMsgMinOffset=7, cachedMsgMaxOffset=9, cachedMsgCount=3", detail[0])
        self.assertIn(f"{'T':<32}  {0.0:14.2f} {0.0:14.2f} {0.0:14.2f} {1.5:14.2f} {0.0:18.2f} {2:25d}", lines)
        # no -i: each connected client, its file, and the checks (this one is stuck: cached and idle 10 min)
        with Puller(self.ns) as puller:
            puller.send_heartbeat(["T"])
            cwd = os.getcwd()
            work = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, work, True)
            os.chdir(work)
            self.addCleanup(os.chdir, cwd)
            text = self.ok("consumerStatus", "-g", "CG")
            data = self.json("consumerStatus", "-g", "CG")
        row = text.splitlines()[1].split()
        self.assertEqual(row[0], "1")
        with open(os.path.join(work, row[3]), encoding="utf-8") as f:
            self.assertTrue(f.read().startswith("#Consumer Properties#\n"))
        self.assertIn("Same subscription in the same group of consumer", text)
        self.assertIn("Rebalance OK", text)
        self.assertIn("MessageQueue [topic=T, brokerName=broker-a, queueId=1] can't consume for a while, "
                      "maybe blocked", text)
        self.assertEqual(data["sameSubscription"], True)
        self.assertEqual(len(data["clients"]), 1)
        self.assertEqual(len(data["processQueueWarnings"]), 1)


def Producer(ns: str):  # type: ignore[no-untyped-def]
    from rocketmq_tx.blocking import BlockingProducer

    return BlockingProducer("PG", ns)


def Puller(ns: str):  # type: ignore[no-untyped-def]
    from rocketmq_tx.blocking import BlockingPullClient

    return BlockingPullClient("CG", ns)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True
