# -*- test-case-name: rocketmq_tx.client.test.test_instance -*-
"""
:class:`MQClientInstance`: what Java's ``MQClientInstance`` does for every producer and
consumer of one process and client id: name-server fail-over, the topic route cache
refreshed every 30 s, heartbeats to every broker every 30 s, and the table of live
brokers (a broker that left every route is dropped).

It is also the Twisted driver of the plans of :mod:`rocketmq_tx.remoting.sendapi` and
:mod:`rocketmq_tx.remoting.adminapi` (:meth:`MQClientInstance.run`): route lookups,
fail-over and sends are written once there, and the blocking client runs the same plans.
Everything runs on the injected reactor, so tests drive it with a ``MemoryReactorClock``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self, TypeVar, cast

from twisted.internet.defer import Deferred, DeferredList, succeed
from twisted.internet.interfaces import IReactorTCP, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.acl import AclClientRPCHook, SessionCredentials, credentials_from
from rocketmq_tx.common.clientroute import POLL_NAME_SERVER_INTERVAL, NameServerList, RouteTable, make_client_id
from rocketmq_tx.common.message import MessageQueue
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.dispatch import ProcessorTable
from rocketmq_tx.remoting import RemotingCommand, api, sendapi
from rocketmq_tx.remoting.api import ConsumerData, HeartbeatData, MQClientError
from rocketmq_tx.remoting.errors import RemotingError
from rocketmq_tx.remoting.plans import NAMESRV, Call, Plan, Warn
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["MQClientInstance", "InstanceUser", "POLL_NAME_SERVER_INTERVAL", "HEARTBEAT_BROKER_INTERVAL",
           "client_credentials"]

log = Logger()
T = TypeVar("T")

#: Java ``heartbeatBrokerInterval``, seconds.
HEARTBEAT_BROKER_INTERVAL = 30.0


class MQClientInstance:
    """
    :param reactor: TCP and time (``MemoryReactorClock`` in tests).
    :param namesrv_addr: ``"a:9876;b:9876"``.
    :param client_id: defaults to ``ip@pid#nanotime``.
    :param timeout: seconds per request (Java ``mqClientApiTimeout``).
    :param remoting: for tests: a :class:`RemotingClient` with an in-memory connector.
    :param credentials: ACL 1.0: sign every request (name servers included, as Java's
        ``AclClientRPCHook`` does) with these.
    :ivar processors: handlers for broker-to-client requests, shared with the connections.
    """

    def __init__(self, reactor: IReactorTime, namesrv_addr: str, *, client_id: str | None = None,
                 timeout: float = 3.0, remoting: RemotingClient | None = None,
                 poll_name_server_interval: float = POLL_NAME_SERVER_INTERVAL,
                 heartbeat_interval: float = HEARTBEAT_BROKER_INTERVAL, tls: TlsSettings | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        self.reactor = reactor
        self.credentials = credentials
        self.client_id = client_id or make_client_id()
        self.timeout = timeout
        #: routes, brokers and name servers (:mod:`rocketmq_tx.remoting.sendapi` keeps it)
        self.route_table = RouteTable(namesrv_addr, now=reactor.seconds,
                                      interval=poll_name_server_interval)
        self.processors = remoting.processors if remoting is not None else ProcessorTable()
        hook = AclClientRPCHook(credentials) if credentials is not None else None
        self.remoting = remoting or RemotingClient(cast(IReactorTCP, reactor), self.processors, tls=tls, rpc_hook=hook)
        if remoting is not None and hook is not None:
            remoting.rpc_hook = hook
        self.poll_name_server_interval = poll_name_server_interval
        self.heartbeat_interval = heartbeat_interval
        self.producer_groups: set[str] = set()
        #: consumer group -> a callable giving its current ConsumerData
        self.consumers: dict[str, Callable[[], ConsumerData]] = {}
        self._loops: list[LoopingCall] = []
        self._first_heartbeat: Any = None
        self.running = False

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """
        Start the timers: routes now and every 30 s, heartbeats after 1 s (when the first
        routes are in) and every 30 s, as Java schedules them.
        """
        if self.running:
            return
        self.running = True
        routes = LoopingCall(self._guarded, self.update_all_routes)
        heartbeats = LoopingCall(self._guarded, self.send_heartbeat_to_all_brokers)
        routes.clock = heartbeats.clock = self.reactor
        self._loops = [routes, heartbeats]
        routes.start(self.poll_name_server_interval, now=True)
        self._first_heartbeat = self.reactor.callLater(
            1.0, heartbeats.start, self.heartbeat_interval, True)

    def _guarded(self, work: Callable[[], Deferred]) -> Deferred:
        # A failed round is logged and the next one runs on schedule, as in Java.
        return work().addErrback(lambda f: log.failure("periodic client task failed", f))

    def stop(self) -> Deferred[None]:
        """Stop the timers, unregister every group from every broker, close connections."""
        return Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        if not self.running:
            await self.remoting.close()
            return
        self.running = False
        if self._first_heartbeat is not None and self._first_heartbeat.active():
            self._first_heartbeat.cancel()
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []
        calls = []
        for addr in self._master_addresses():
            for group in self.producer_groups:
                calls.append(self._quiet(addr, api.unregister_client_request(self.client_id, producer_group=group)))
            for group in self.consumers:
                calls.append(self._quiet(addr, api.unregister_client_request(self.client_id, consumer_group=group)))
        await DeferredList(calls, consumeErrors=True)
        await self.remoting.close()

    def _quiet(self, addr: str, request: RemotingCommand) -> Deferred:
        return self.remoting.invoke(addr, request, self.timeout).addErrback(lambda f: None)

    # ------------------------------------------------------------ registration
    def register_producer(self, group: str) -> None:
        self.producer_groups.add(group)

    def unregister_producer(self, group: str) -> None:
        self.producer_groups.discard(group)

    def register_consumer(self, group: str, data: Callable[[], ConsumerData]) -> None:
        self.consumers[group] = data

    def unregister_consumer(self, group: str) -> None:
        self.consumers.pop(group, None)

    def watch_topic(self, topic: str) -> None:
        """Keep *topic*'s route fresh from now on."""
        self.route_table.watch(topic)

    # ------------------------------------------------------------ the driver of plans
    def run(self, plan: Plan[T], timeout: float | None = None) -> Deferred[T]:
        """
        Run a plan of :mod:`rocketmq_tx.remoting.sendapi` or :mod:`~rocketmq_tx.remoting.adminapi`;
        a Deferred of its result. The calls of a list step go out together.

        :param timeout: seconds per request unless a call says otherwise (default :attr:`timeout`).
        """
        return Deferred.fromCoroutine(self._run(plan, timeout))

    async def _run(self, plan: Plan[T], timeout: float | None) -> T:
        default = self.timeout if timeout is None else timeout
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(reply)
            except StopIteration as stop:
                return stop.value
            reply, error = None, None
            if isinstance(step, Warn):
                log.warn("{message}", message=step.message)
            elif isinstance(step, list):
                results = await DeferredList([self._invoke(call, default) for call in step], consumeErrors=True)
                reply = [value if ok else _transport_error(value) for ok, value in results]
            else:
                try:
                    reply = await self._invoke(step, default)
                except RemotingError as e:
                    error = e

    def _invoke(self, call: Call, default: float) -> Deferred:
        if call.addr is NAMESRV:
            return self.run(sendapi.namesrv_call(self.namesrvs, call), default)
        if call.oneway:
            return self.remoting.invoke_oneway(call.addr, call.request)
        return self.remoting.invoke(call.addr, call.request, call.seconds(default))

    # ------------------------------------------------------------ name server and routes
    @property
    def namesrvs(self) -> NameServerList:
        return self.route_table.namesrvs

    @property
    def routes(self) -> dict[str, TopicRouteData]:
        """topic -> its last route."""
        return self.route_table.routes

    @property
    def brokers(self) -> dict[str, dict[int, str]]:
        """broker name -> {broker id -> address}, from the current routes."""
        return self.route_table.brokers

    def invoke_namesrv(self, request: RemotingCommand) -> Deferred:
        """Send to the current name server, falling over to the next ones in turn."""
        return self.run(sendapi.namesrv_call(self.namesrvs, Call(NAMESRV, request)))

    def update_route(self, topic: str) -> Deferred:
        """
        Fetch *topic*'s route, cache it and refresh the broker table. If no name server
        answers, the cached route is kept and returned.
        """
        return self.run(sendapi.update_route(self.route_table, topic))

    def route(self, topic: str) -> Deferred:
        """*topic*'s route: the cached one while fresh (30 s), else fetched."""
        return self.run(sendapi.route(self.route_table, topic))

    def update_all_routes(self) -> Deferred:
        """Refresh every watched topic's route (one failure does not stop the others)."""
        calls = [self.update_route(topic).addErrback(self._route_failed, topic)
                 for topic in sorted(self.route_table.watched)]
        return DeferredList(calls).addCallback(lambda _: None)

    def _route_failed(self, failure: Failure, topic: str) -> None:
        log.warn("route of {topic} not refreshed: {error}", topic=topic, error=failure.getErrorMessage())

    # ------------------------------------------------------------ brokers
    def _master_addresses(self) -> list[str]:
        return self.route_table.master_addresses()

    def broker_addr(self, broker_name: str) -> str:
        """
        The master address of *broker_name*.

        :raises MQClientError: the broker is in no cached route.
        """
        addr = self.route_table.master(broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        return addr

    def invoke_broker(self, mq: MessageQueue, request: RemotingCommand, timeout: float | None = None, *,
                      oneway: bool = False) -> Deferred:
        """Send *request* to the master of *mq*'s broker (refreshing the route if it is unknown)."""
        return self.run(sendapi.broker_call(self.route_table, mq, request, timeout, oneway=oneway))

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(self.client_id, sorted(self.producer_groups),
                             [data() for _, data in sorted(self.consumers.items())])

    def send_heartbeat_to_all_brokers(self) -> Deferred:
        """
        HEART_BEAT to every master we know of, and to every slave too when a consumer group is
        registered (Java 4.9: a slave then knows the group's members while its master is
        down); fires when all have answered or failed.
        """
        if not self.producer_groups and not self.consumers:
            return succeed(None)
        data = self.heartbeat_data()
        calls = []
        addrs = self.route_table.all_addresses() if self.consumers else self._master_addresses()
        for addr in addrs:
            d = self.remoting.invoke(addr, api.heartbeat_request(data), self.timeout)
            d.addCallback(api.check_response)
            d.addErrback(self._heartbeat_failed, addr)
            calls.append(d)
        return DeferredList(calls).addCallback(lambda _: None)

    def _heartbeat_failed(self, failure: Failure, addr: str) -> None:
        log.warn("heartbeat to {addr} failed: {error}", addr=addr, error=failure.getErrorMessage())


def client_credentials(instance: MQClientInstance | None, access_key: str | None, secret_key: str | None,
                       security_token: str | None, credentials: SessionCredentials | None) -> SessionCredentials | None:
    """
    The ACL credentials a producer, consumer or admin was given (see
    :func:`rocketmq_tx.acl.credentials_from`).

    :raises ValueError: incomplete, or given beside a shared *instance* (whose connections
        sign with the instance's own credentials).
    """
    creds = credentials_from(access_key, secret_key, security_token, credentials)
    if creds is not None and instance is not None:
        raise ValueError("a shared MQClientInstance signs with its own credentials: give them to it instead")
    return creds


class InstanceUser:
    """
    What every Twisted producer, consumer and admin is built on: a client instance, shared
    (*instance*) or its own, made from the other arguments (the reactor defaults to the
    global one). Its own instance starts and stops with it.
    """

    def __init__(self, namesrv_addr: str = "", reactor: Any = None, *, instance: MQClientInstance | None = None,
                 timeout: float = 3.0, tls: TlsSettings | None = None, access_key: str | None = None,
                 secret_key: str | None = None, security_token: str | None = None,
                 credentials: SessionCredentials | None = None) -> None:
        if reactor is None and instance is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self._own_instance = instance is None
        creds = client_credentials(instance, access_key, secret_key, security_token, credentials)
        self.instance = instance or MQClientInstance(reactor, namesrv_addr, timeout=timeout, tls=tls, credentials=creds)
        self.reactor = self.instance.reactor

    def start(self) -> None:
        if self._own_instance:
            self.instance.start()

    def stop(self) -> Deferred:
        if self._own_instance:
            return self.instance.stop()
        return succeed(None)

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _transport_error(failure: Failure) -> RemotingError:
    # A list step reports transport failures in place; anything else is a bug: raise it.
    if not failure.check(RemotingError):
        failure.raiseException()
    return failure.value
