# -*- test-case-name: rocketmq_tx.namesrv.test.test_service -*-
"""
The name server as a Twisted service tree: the listening port, the broker expiry scan,
and the controller holding the state.
"""

from __future__ import annotations

from typing import cast

from twisted.application import internet, service
from twisted.internet.interfaces import IReactorTCP, IReactorTime
from twisted.logger import Logger

from rocketmq_tx.config import exporter_type
from rocketmq_tx.metrics.http import ReactorLagMonitor, metrics_service, metrics_site
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.metrics import NamesrvMetrics
from rocketmq_tx.namesrv.processors import processor_table
from rocketmq_tx.net.protocol import RemotingProtocol
from rocketmq_tx.net.server import RemotingServerFactory
from rocketmq_tx.net.service import ListeningService, tcp_address
from rocketmq_tx.net.tls import ReloadableServerTLS, TlsModeFactory
from rocketmq_tx.net.transport import ServerEndpoint
from rocketmq_tx.tlsconfig import TlsMode, TlsSettings

__all__ = ["NamesrvService", "LABEL"]

#: What the listening line says: ``rocketmq-namesrv listening on <host>:<port>``.
LABEL = "rocketmq-namesrv"
METRICS_LABEL = "rocketmq-namesrv-metrics"

log = Logger()


class NamesrvService(service.MultiService):
    """
    :param settings: the configuration.
    :param reactor: provides TCP and time (``MemoryReactorClock`` in tests).
    :param tls: the ``tls.*`` settings (``tls.server.mode`` disabled when ``None``).
    :param tls_context: the server's TLS context, built from *tls* when not given.
    :ivar controller: the state (routes, KV configuration).
    :ivar factory: the remoting server factory.
    """

    def __init__(self, settings: NamesrvSettings, reactor: IReactorTCP, tls: TlsSettings | None = None,
                 tls_context: ReloadableServerTLS | None = None) -> None:
        super().__init__()
        clock = cast(IReactorTime, reactor)  # the reactors this runs on provide both
        self.settings = settings
        self.controller = NamesrvController(
            settings, now=lambda: int(clock.seconds() * 1000),
            close_channel=self._close_channel)
        self.factory = RemotingServerFactory(
            processor_table(self.controller), clock,
            idle_timeout=settings["serverChannelMaxIdleTimeSeconds"] or None,
            on_connection_lost=self._connection_lost,
        )
        tls = tls or TlsSettings({"tls.server.mode": TlsMode.DISABLED})
        if tls.mode != TlsMode.DISABLED and tls_context is None:
            tls_context = ReloadableServerTLS(tls)
        # Every connection goes through the TLS-mode check, so a disabled server also
        # closes a TLS hello with a clear log line rather than a frame-length error.
        listening_factory = TlsModeFactory(self.factory, tls.mode, tls_context, clock)
        if tls_context is not None and not tls["tls.test.mode.enable"]:
            watch = internet.TimerService(tls["tls.watch.interval"] / 1000.0, tls_context.check)
            watch.clock = clock
            watch.setServiceParent(self)
        host = settings["bindAddress"]
        endpoint = ServerEndpoint(reactor, settings["listenPort"], backlog=settings["serverSocketBacklog"],
                                  interface=host)
        self.listener = ListeningService(LABEL, endpoint, listening_factory, reactor)  # type: ignore[arg-type]
        self.listener.setServiceParent(self)
        scan = internet.TimerService(settings["scanNotActiveBrokerInterval"] / 1000.0, self._scan)
        scan.clock = clock
        scan.setServiceParent(self)
        # metricsExporterType=PROM: /metrics, /healthz and /readyz on metricsPromExporterPort
        self.metrics: NamesrvMetrics | None = None
        self.metrics_listener: ListeningService | None = None
        if exporter_type(settings["metricsExporterType"]) == "PROM":
            self.metrics = NamesrvMetrics(self.controller, self._node_id, lambda: self.listener.port is not None)
            self.factory.processors.observer = self.metrics.rpc.observer
            lag = ReactorLagMonitor(clock)
            lag.setServiceParent(self)
            self.metrics.reactor_lag = lag.take
            self.metrics_listener = metrics_service(
                METRICS_LABEL, settings["metricsPromExporterHost"] or host, settings["metricsPromExporterPort"],
                metrics_site(self.metrics, reactor), reactor)
            self.metrics_listener.setServiceParent(self)

    def startService(self) -> None:
        self.controller.load()
        super().startService()

    def _node_id(self) -> str:
        port = self.listener.port
        if port is None:
            return f"{self.settings['bindAddress']}:{self.settings['listenPort']}"
        address = tcp_address(port)
        return f"{address.host}:{address.port}"

    def _scan(self) -> None:
        removed = self.controller.route_info_manager.scan_not_active_broker()
        if removed:
            log.info("expired {count} inactive broker(s)", count=removed)

    def _connection_lost(self, proto: RemotingProtocol) -> None:
        addr = self.controller.route_info_manager.on_channel_destroy(proto)
        if addr is not None:
            log.info("broker {addr} left: its connection {peer} closed", addr=addr, peer=proto.peer)

    @staticmethod
    def _close_channel(channel: object) -> None:
        transport = getattr(channel, "transport", None)
        if transport is not None:
            transport.loseConnection()
