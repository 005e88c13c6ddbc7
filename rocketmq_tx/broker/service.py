# -*- test-case-name: rocketmq_tx.broker.test.test_service -*-
"""
The broker as a Twisted service tree: the listening ports (main and fast), registration
with the name servers (:mod:`.registration`), the periodic work (offset persistence through
the controller's :mod:`.persister`, delay-level delivery, idle client scan, file clean-up)
and the store's flush threads.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from twisted.application import internet, service
from twisted.internet import defer
from twisted.logger import Logger

from rocketmq_tx.acl import WATCH_INTERVAL as ACL_WATCH_INTERVAL
from rocketmq_tx.broker.config import BrokerSettings
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.ha.slavesync import SYNC_INTERVAL, SlaveSynchronize
from rocketmq_tx.broker.outerapi import BrokerOuterAPI, namesrv_addresses
from rocketmq_tx.broker.processors import processor_table
from rocketmq_tx.broker.registration import BrokerRegistrar
from rocketmq_tx.metrics.http import ReactorLagMonitor, metrics_service, metrics_site
from rocketmq_tx.net.client import RemotingClient
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.net.server import RemotingServerFactory
from rocketmq_tx.net.service import ListeningService, tcp_address
from rocketmq_tx.net.tls import ReloadableServerTLS, TlsModeFactory
from rocketmq_tx.net.transport import ServerEndpoint
from rocketmq_tx.store import StoreDriver
from rocketmq_tx.tlsconfig import TlsMode, TlsSettings

__all__ = ["BrokerService", "LABEL", "FAST_LABEL", "HA_LABEL", "METRICS_LABEL"]

#: What the listening lines say: ``rocketmq-broker listening on <host>:<port>``.
LABEL = "rocketmq-broker"
FAST_LABEL = "rocketmq-broker-fast"
HA_LABEL = "rocketmq-broker-ha"
METRICS_LABEL = "rocketmq-broker-metrics"

log = Logger()


def _timer(interval_s: float, fn: Any, clock: Any, parent: service.MultiService, now: bool = True) -> None:
    # TimerService runs at once when started; *now* False waits one interval, as Java's
    # scheduled tasks with an initial delay do.
    timer = internet.TimerService(interval_s, fn if now else _skip_first(fn))
    timer.clock = clock
    timer.setServiceParent(parent)


def _skip_first(fn: Any) -> Any:
    state = {"first": True}

    def call() -> Any:
        if state["first"]:
            state["first"] = False
            return None
        return fn()
    return call


class BrokerService(service.MultiService):
    """
    :param settings: the configuration (Java's broker.conf keys).
    :param reactor: TCP, time and threads.
    :param tls: the ``tls.*`` settings (``tls.server.mode`` disabled when ``None``); the
        registration with name servers uses TLS when ``tls.enable`` is set.
    :param drive_store: run the store's flush threads (tests drive the store themselves).
    """

    def __init__(self, settings: BrokerSettings, reactor: Any, tls: TlsSettings | None = None,
                 tls_context: ReloadableServerTLS | None = None, drive_store: bool = True) -> None:
        super().__init__()
        self.settings = settings
        self.reactor = reactor
        self.controller = c = BrokerController(settings, reactor)
        # The controller's register_increment/register_all (and on_topic_created) land here.
        self.registrar = c.registrar = BrokerRegistrar(reactor, settings, c, lambda: self.outer_api)
        c.notify_consumer_ids_changed = c.broker2client.notify_consumer_ids_changed
        tls = tls or TlsSettings({"tls.server.mode": TlsMode.DISABLED})
        if tls.mode != TlsMode.DISABLED and tls_context is None:
            tls_context = ReloadableServerTLS(tls)
        if tls_context is not None and not tls["tls.test.mode.enable"]:
            _timer(tls["tls.watch.interval"] / 1000.0, tls_context.check, reactor, self)
        if self.controller.acl is not None:
            # Java's AclFileWatchService: the ACL files are looked at every 5 s.
            _timer(ACL_WATCH_INTERVAL, self.controller.acl.check, reactor, self, now=False)
        self.factories = []
        ports = [(LABEL, settings["listenPort"], False)]
        if settings["fastListenPortEnable"] and settings["listenPort"] > 2:
            ports.append((FAST_LABEL, settings["listenPort"] - 2, True))
        host = settings["bindAddress"]
        for label, port, fast in ports:
            factory = RemotingServerFactory(processor_table(c, fast=fast), reactor,
                                            idle_timeout=settings["serverChannelMaxIdleTimeSeconds"] or None,
                                            on_connection_lost=self._connection_lost)
            self.factories.append(factory)
            endpoint = ServerEndpoint(reactor, port, backlog=settings["serverSocketBacklog"], interface=host)
            listener = ListeningService(label, endpoint,
                                        TlsModeFactory(factory, tls.mode, tls_context, reactor), reactor)
            listener.setServiceParent(self)
            if not fast:
                self.listener = listener
        # Replication: a master listens for slaves on the HA port (listenPort + 1 unless
        # haListenPort says otherwise); a slave connects to its master's.
        self.ha_listener: ListeningService | None = None
        if c.ha_service is not None:
            listen = settings["listenPort"]
            ha_port = c.store_config.ha_listen_port or (listen + 1 if listen else 0)
            self.ha_listener = ListeningService(HA_LABEL, ServerEndpoint(reactor, ha_port, interface=host),
                                                c.ha_service, reactor)
            self.ha_listener.setServiceParent(self)
            # Java's WriteSocketService waits 100 ms for new data; puts wake it sooner.
            _timer(0.1, c.ha_service.tick, reactor, self)
        if c.ha_client is not None:
            _timer(1.0, c.ha_client.tick, reactor, self, now=False)
        client_tls = tls if tls["tls.enable"] else None
        self.namesrv_client = RemotingClient(reactor, tls=client_tls)
        self.outer_api = BrokerOuterAPI(self.namesrv_client, settings["registerBrokerTimeoutMills"])
        c.topic_route_info_manager.lookup = lambda topic: self.outer_api.get_topic_route_info(self.namesrvs, topic)
        self.driver = StoreDriver(c.store, clean=False) if drive_store else None
        self.slave_synchronize: SlaveSynchronize | None = None
        if c.is_slave:
            self.slave_synchronize = SlaveSynchronize(c, self.namesrv_client)
            c.on_master_addr = self._master_addr
            _timer(SYNC_INTERVAL, self._sync_from_master, reactor, self, now=False)
        # Not waiting for the answers: a request still unanswered merges into the next one.
        _timer(settings["registerNameServerPeriod"] / 1000.0, lambda: self.register_broker_all() and None, reactor,
               self, now=False)
        _timer(settings["flushConsumerOffsetInterval"] / 1000.0, self._persist_offsets, reactor, self, now=False)
        _timer(0.1, self._deliver_delayed, reactor, self)
        # Java's StoreStatsService thread: a sample a second, the first one second in
        _timer(1.0, c.store.store_stats_service.sampling, reactor, self, now=False)
        _timer(0.1, self._pop_tick, reactor, self)
        if c.timer_message_service is not None:
            c.timer_message_service.setServiceParent(self)
        _timer(10.0, lambda: c.persister.mark_dirty("delayOffset"), reactor, self, now=False)
        _timer(10.0, lambda: c.persister.mark_dirty("consumerOrderInfo"), reactor, self, now=False)
        _timer(10.0, self._scan_channels, reactor, self, now=False)
        _timer(c.store_config.clean_resource_interval / 1000.0, self._clean, reactor, self, now=False)
        # Java's TransactionalMessageCheckService: a pass every transactionCheckInterval, in
        # slices of a few ms per reactor turn; the first one interval after the start.
        _timer(settings["transactionCheckInterval"] / 1000.0, self._check_transactions, reactor, self, now=False)
        # metricsExporterType=PROM: /metrics, /healthz and /readyz on metricsPromExporterPort
        self.metrics_listener: ListeningService | None = None
        if c.metrics is not None:
            lag = ReactorLagMonitor(reactor)
            lag.setServiceParent(self)
            c.metrics.reactor_lag = lag.take
            host = settings["metricsPromExporterHost"] or settings["brokerIP1"]
            self.metrics_listener = metrics_service(METRICS_LABEL, host, settings["metricsPromExporterPort"],
                                                    metrics_site(c.metrics, reactor), reactor)
            self.metrics_listener.setServiceParent(self)

    def use_namesrv_tls(self, tls: TlsSettings) -> None:
        """Register with the name servers over TLS with these settings (before start)."""
        self.namesrv_client = RemotingClient(self.reactor, tls=tls)
        self.outer_api = BrokerOuterAPI(self.namesrv_client, self.settings["registerBrokerTimeoutMills"])

    @property
    def namesrvs(self) -> list[str]:
        return namesrv_addresses(self.settings["namesrvAddr"])

    # ------------------------------------------------------------------ lifecycle

    def startService(self) -> None:
        c = self.controller
        if not c.load():
            raise RuntimeError("the broker cannot load its store or config files; see the log above")
        c.start()
        if c.metrics is not None:
            c.metrics.store_ready = True
        if self.driver is not None:
            self.driver.start()
        super().startService()
        self.registrar.start()
        port = self.listener.port
        if port is not None:
            c.listening_on(tcp_address(port).port)
        if self.ha_listener is not None and self.ha_listener.port is not None:
            c.ha_listen_port = tcp_address(self.ha_listener.port).port
        if c.ha_client is not None:
            c.ha_client.start()
        log.info("broker {name} ({addr}) of cluster {cluster} started, name servers {ns}",
                 name=self.settings["brokerName"], addr=c.broker_addr, cluster=self.settings["brokerClusterName"],
                 ns=self.settings["namesrvAddr"] or "(none)")
        self.register_broker_all()

    @defer.inlineCallbacks
    def stopService(self) -> Any:
        c = self.controller
        self.registrar.stop()
        if c.ha_client is not None:
            c.ha_client.stop()
        if c.ha_service is not None:
            c.ha_service.close_all()
        if self.namesrvs:
            try:
                yield self.outer_api.unregister_broker_all(
                    self.namesrvs, self.settings["brokerClusterName"], c.broker_addr, self.settings["brokerName"],
                    self.settings["brokerId"])
            except Exception:
                log.failure("unregister failed")
        yield defer.maybeDeferred(super().stopService)
        # Let the writes in flight end (the final synchronous flush in c.shutdown() would
        # otherwise wait for them on the files' locks, holding the reactor).
        yield c.persister.writes_in_flight()
        for factory in self.factories:
            for proto in list(factory.connections):
                assert proto.transport is not None  # a connection in the set is connected
                proto.transport.loseConnection()
        yield self.namesrv_client.close(0.5)
        if self.driver is not None:
            self.driver.stop()
        c.shutdown()
        log.info("broker {name} stopped; store flushed", name=self.settings["brokerName"])

    # ------------------------------------------------------------------ name servers

    def register_broker_all(self) -> Any:
        """The whole topic table to every name server (at start, every
        ``registerNameServerPeriod``); fires with ``{addr: response or None}``."""
        return self.registrar.register_all()

    # ------------------------------------------------------------------ slave

    def _master_addr(self, addr: str | None) -> None:
        sync = self.slave_synchronize
        if sync is None:
            return
        first = sync.master_addr is None and addr is not None
        sync.master_addr = addr
        if first:  # a new slave copies its master's topics at once, not 10 s later
            self._sync_from_master()

    def _sync_from_master(self) -> None:
        if self.slave_synchronize is not None:
            self.slave_synchronize.sync_all()

    # ------------------------------------------------------------------ periodic work

    def _deliver_delayed(self) -> None:
        # a slave's delay levels are its master's work (Java starts the service on masters only)
        if self.controller.store.shutdown_flag or self.controller.is_slave:
            return
        try:
            self.controller.schedule_message_service.deliver_due()
        except Exception:
            log.failure("delay-level delivery failed")

    def _pop_tick(self) -> None:
        """Read the revive log back after a start, then revive expired POP checkpoints (bounded slices)."""
        pop = self.controller.pop_service
        if self.controller.store.shutdown_flag or self.controller.is_slave:
            return
        try:
            if pop.recovering:
                pop.recover_slice()
            else:
                pop.revive_due(self.controller.now_ms())
        except Exception:
            log.failure("POP revive failed")

    def _check_transactions(self) -> None:
        if self.controller.store.shutdown_flag or self.controller.is_slave:
            return
        # Not returned: the TimerService would wait for the pass before its next interval,
        # and a pass still running is simply not started twice.
        self.controller.transactional_message_check_service.tick()

    def _persist_offsets(self) -> None:
        """Every ``flushConsumerOffsetInterval``: consumerOffset.json, written in a thread by
        the persister (a slow disk must not stall the reactor), one write at a time."""
        self.controller.persister.mark_dirty("consumerOffset")

    def _scan_channels(self) -> None:
        self.controller.scan_not_active_channels(self._close_channel)

    def _clean(self) -> None:
        try:
            self.controller.store.delete_expired()
        except Exception:
            log.failure("store clean-up failed")

    # ------------------------------------------------------------------ clients

    @staticmethod
    def _close_channel(channel: Hashable) -> None:
        transport = getattr(channel, "transport", None)
        if transport is not None:
            transport.loseConnection()

    def _connection_lost(self, proto: RemotingProtocol) -> None:
        self.controller.channel_closed(proto)
