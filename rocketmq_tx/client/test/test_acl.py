"""Clients sign with ACL credentials: Twisted and blocking, against a broker with ACL on."""

from __future__ import annotations

import pickle
import socket
import threading
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.acl import AclClientRPCHook, PlainPermissionManager, SessionCredentials
from rocketmq_tx.blocking.admin import BlockingAdmin
from rocketmq_tx.blocking.client import BlockingProducer, BlockingPullClient
from rocketmq_tx.blocking.connection import BlockingRemotingClient
from rocketmq_tx.broker.processors.acl import AclServerHook
from rocketmq_tx.broker.test.test_acl import make_home
from rocketmq_tx.client import Message, MessageQueue, MQBrokerError, Producer
from rocketmq_tx.client.admin import MQAdmin
from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.client.litepull import LitePullConsumer
from rocketmq_tx.client.push import PushConsumer
from rocketmq_tx.client.test.test_admin import CLUSTER, InProcessCluster
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.dispatch import ProcessorTable
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.remoting import FrameDecoder, RemotingCommand, RequestCode, ResponseCode, encode_command
from rocketmq_tx.testing.loopback import connect

NS = "127.0.0.1:9876"
ADMIN = SessionCredentials("adminperm", "12345678")
USER = SessionCredentials("RocketMQ", "12345678")


class Recorder:
    """A processor that keeps every request and answers SUCCESS."""

    def __init__(self) -> None:
        self.requests: list[RemotingCommand] = []

    def process_request(self, ctx: object, request: RemotingCommand) -> RemotingCommand:
        self.requests.append(request)
        return request.make_response()

    def reject_request(self) -> bool:
        return False


class TwistedClientTests(SynchronousTestCase):
    """Producer and admin against an in-memory name server and a broker with aclEnable."""

    def setUp(self) -> None:
        self.cluster = InProcessCluster(self, aclEnable=True, rocketmqHome=make_home(self))

    def instance(self, credentials: SessionCredentials | None) -> MQClientInstance:
        return MQClientInstance(self.cluster.reactor, NS, remoting=self.cluster.client(), credentials=credentials)

    def result(self, d: Deferred) -> Any:
        self.cluster.settle()
        return self.successResultOf(d)

    def failure(self, d: Deferred) -> Any:
        self.cluster.settle()
        return self.failureResultOf(d).value

    def test_admin_and_producer(self) -> None:
        admin = MQAdmin(instance=self.instance(ADMIN))
        for topic in ("topicA", "topicB"):
            self.assertTrue(self.result(admin.create_topic_in_cluster(CLUSTER, TopicConfig(topic, 2, 2))))
        self.cluster.settle()
        producer = Producer("pg", instance=self.instance(USER))
        sent = self.result(producer.send(Message("topicB", b"hello"), queue=MessageQueue("topicB", "broker-a", 0)))
        self.assertEqual(sent.queue_offset, 0)
        error = self.failure(producer.send(Message("topicA", b"x"), queue=MessageQueue("topicA", "broker-a", 0)))
        self.assertIsInstance(error, MQBrokerError)
        self.assertEqual(error.code, ResponseCode.SYSTEM_ERROR)
        self.assertIn("No default permission for topic:topicA", str(error))

    def test_refused_without_or_with_wrong_credentials(self) -> None:
        for creds, reason in ((None, "No accessKey is configured"),
                              (SessionCredentials("adminperm", "wrong-secret"), "Check signature failed"),
                              (USER, "Need admin permission for request code=17")):
            admin = MQAdmin(instance=self.instance(creds))
            error = self.failure(admin.create_topic_in_cluster(CLUSTER, TopicConfig("topicC", 2, 2)))
            self.assertIn(reason, str(error))

    def test_oneway_is_signed(self) -> None:
        recorder = Recorder()
        reactor = MemoryReactorClock()
        server = RemotingProtocol(reactor, ProcessorTable(default=recorder))
        holder: dict[str, RemotingClient] = {}

        def connector(addr: str) -> Deferred:
            proto = holder["client"]._new_protocol()
            self.pump = connect(proto, server)
            return succeed(proto)

        holder["client"] = client = RemotingClient(reactor, connector=connector, rpc_hook=AclClientRPCHook(USER))
        self.successResultOf(client.invoke_oneway(NS, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT,
                                                                              {"clientID": "c"})))
        d = client.invoke(NS, RemotingCommand.request(RequestCode.HEART_BEAT, body=b"{}"))
        self.pump.flush()
        self.successResultOf(d)
        manager = _manager(self)
        for request in recorder.requests:
            self.assertEqual(request.ext_fields["AccessKey"], "RocketMQ")
            manager.validate(request, "127.0.0.1:5")  # the signature checks out

    def test_constructors(self) -> None:
        reactor = MemoryReactorClock()
        clients = [
            Producer("pg", NS, reactor, access_key="RocketMQ", secret_key="12345678"),
            PushConsumer("cg", NS, reactor, credentials=USER),
            LitePullConsumer("cg", NS, reactor, access_key="RocketMQ", secret_key="12345678", security_token="t"),
            MQAdmin(NS, reactor, credentials=ADMIN),
        ]
        for client in clients:
            hook = client.instance.remoting.rpc_hook
            self.assertIsInstance(hook, AclClientRPCHook)
        self.assertEqual(clients[2].instance.credentials.security_token, "t")
        self.assertIsNone(Producer("pg", NS, reactor).instance.remoting.rpc_hook)
        shared = MQClientInstance(reactor, NS, credentials=USER)
        self.assertRaises(ValueError, Producer, "pg", instance=shared, credentials=USER)
        self.assertRaises(ValueError, Producer, "pg", NS, reactor, access_key="RocketMQ")


def _manager(case: SynchronousTestCase) -> PlainPermissionManager:
    manager = PlainPermissionManager(make_home(case), strict=True)
    manager.load()
    return manager


class BlockingClientTests(SynchronousTestCase):
    def serve(self, manager: PlainPermissionManager) -> tuple[socket.socket, Recorder]:
        """A socket whose peer runs an ACL-checking processor table in a thread."""
        ours, theirs = socket.socketpair()
        recorder = Recorder()
        table = ProcessorTable(default=recorder)
        table.before_request = AclServerHook(manager)

        class Ctx:
            peer = "127.0.0.1:40000"

        def run() -> None:
            decoder = FrameDecoder()
            while True:
                data = theirs.recv(65536)
                if not data:
                    return
                for request in decoder.feed(data):
                    response = table.dispatch(Ctx(), request)
                    if response is not None and not request.is_oneway:
                        response.opaque = request.opaque
                        theirs.sendall(encode_command(response))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.addCleanup(theirs.close)
        self.addCleanup(thread.join, 5)  # runs first: the client's close ends the thread
        self.addCleanup(ours.close)
        return ours, recorder

    def test_signed_on_the_wire(self) -> None:
        manager = _manager(self)
        sock, recorder = self.serve(manager)
        client = BlockingRemotingClient(rpc_hook=AclClientRPCHook(USER))
        client._socket_factory = lambda host, port, timeout: sock
        self.addCleanup(client.close)
        response = client.invoke("127.0.0.1:10911", RemotingCommand.request(RequestCode.HEART_BEAT, body=b"{}"))
        self.assertEqual(response.code, ResponseCode.SUCCESS, response.remark)
        client.invoke_oneway("127.0.0.1:10911", RemotingCommand.request(RequestCode.UNREGISTER_CLIENT,
                                                                          {"clientID": "c", "consumerGroup": "groupB"}))
        refused = client.invoke("127.0.0.1:10911", RemotingCommand.request(
            RequestCode.PULL_MESSAGE, {"consumerGroup": "groupA", "topic": "topicB"}))
        self.assertIn("No default permission for group:groupA", refused.remark)
        self.assertEqual([r.code for r in recorder.requests], [RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT])

    def test_unsigned_refused(self) -> None:
        sock, recorder = self.serve(_manager(self))
        client = BlockingRemotingClient()
        client._socket_factory = lambda host, port, timeout: sock
        self.addCleanup(client.close)
        response = client.invoke("127.0.0.1:10911", RemotingCommand.request(RequestCode.HEART_BEAT, body=b"{}"))
        self.assertEqual(response.code, ResponseCode.SYSTEM_ERROR)
        self.assertEqual(recorder.requests, [])

    def test_credentials_travel_with_pickles(self) -> None:
        clients = [
            BlockingProducer("pg", NS, access_key="RocketMQ", secret_key="12345678", security_token="tok"),
            BlockingPullClient("cg", NS, credentials=USER),
            BlockingAdmin(NS, credentials=ADMIN),
        ]
        for client in clients:
            copy = pickle.loads(pickle.dumps(client))
            self.assertEqual(copy.client.credentials, client.client.credentials)
            self.assertIsInstance(copy.client.remoting.rpc_hook, AclClientRPCHook)
            self.assertEqual(copy.client.remoting.rpc_hook.credentials, client.client.credentials)
        self.assertEqual(clients[0].client.credentials.security_token, "tok")
        self.assertIsNone(BlockingProducer("pg", NS).client.remoting.rpc_hook)
        self.assertRaises(ValueError, BlockingProducer, "pg", NS, secret_key="12345678")
