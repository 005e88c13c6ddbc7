# -*- test-case-name: rocketmq_tx.broker.test.test_tap -*-
"""
``twistd -n rocketmq-standalone [-c broker.conf] [--set key=value ...]``: a name server
and a broker in one process — the quickest way to a working RocketMQ. The name server
listens on ``namesrvPort`` (9876), the broker on ``listenPort`` (10911) and registers with
the name server in the same process; the store defaults to ``~/store``. Every broker key
works as for ``rocketmq-broker``.
"""

from __future__ import annotations

from typing import Any

from twisted.application import service
from twisted.logger import Logger

from rocketmq_tx.broker.config import BrokerSettings
from rocketmq_tx.broker.service import BrokerService
from rocketmq_tx.config import ConfigError, Setting
from rocketmq_tx.daemon import DaemonOptions
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.service import NamesrvService
from rocketmq_tx.net.service import tcp_address
from rocketmq_tx.tlsconfig import TlsMode, TlsSettings

__all__ = ["Options", "makeService", "StandaloneSettings"]

log = Logger()


class StandaloneSettings(BrokerSettings):
    """The broker's keys plus the name server's port and host."""

    SPEC = BrokerSettings.SPEC + (
        Setting("namesrvPort", 9876, int, "tx: the in-process name server's port"),
        Setting("namesrvBindAddress", "0.0.0.0", str, "tx: the in-process name server's interface"),
    )

    def validate(self) -> None:
        super().validate()
        if not 0 <= self["namesrvPort"] <= 65535:
            raise ConfigError(f"namesrvPort: {self['namesrvPort']} is not a TCP port")


class Options(DaemonOptions):
    """Command line of ``twistd rocketmq-standalone``."""

    label = "rocketmq-standalone"
    settings_class = StandaloneSettings
    synopsis = "[-c broker.conf] [-p] [--set key=value ...]"
    longdesc = "A RocketMQ name server and broker in one process."


class _Standalone(service.MultiService):
    """Starts the name server first; once it listens, points the broker at it."""

    def __init__(self, namesrv: NamesrvService, broker: BrokerService) -> None:
        super().__init__()
        self.namesrv = namesrv
        self.broker = broker
        namesrv.setServiceParent(self)
        broker.setServiceParent(self)

    def startService(self) -> None:
        service.Service.startService(self)
        self.namesrv.startService()
        port = self.namesrv.listener.port
        actual = tcp_address(port).port if port is not None else self.namesrv.settings["listenPort"]
        own = f"127.0.0.1:{actual}"
        extra = self.broker.settings["namesrvAddr"]
        self.broker.settings["namesrvAddr"] = ";".join(a for a in (own, extra) if a)
        self.broker.startService()

    def stopService(self) -> Any:
        # Broker first: it unregisters from the name server that is still listening.
        service.Service.stopService(self)
        d = self.broker.stopService()
        d.addCallback(lambda _: self.namesrv.stopService())
        return d


def makeService(options: Options, reactor: Any = None) -> service.MultiService:
    if reactor is None:
        from twisted.internet import reactor  # late: twistd picks the reactor first
    for key in options.unknown:
        log.warn("unknown configuration key {key} ignored", key=key)
    settings = options.settings
    ns_settings = NamesrvSettings()
    ns_settings["listenPort"] = settings["namesrvPort"]
    ns_settings["bindAddress"] = settings["namesrvBindAddress"]
    namesrv = NamesrvService(ns_settings, reactor, options.tls, options.tls_context)
    broker = BrokerService(settings, reactor, options.tls, options.tls_context)
    tls = options.tls
    if tls is not None and tls.mode == TlsMode.ENFORCING and not tls["tls.enable"]:
        # The in-process name server refuses plaintext: register with it over TLS, with
        # the tls.client.* settings (a client certificate when mutual TLS is required).
        client_tls = TlsSettings({**{k: tls[k] for k in tls.keys()}, "tls.enable": True})
        broker.use_namesrv_tls(client_tls)
    return _Standalone(namesrv, broker)
    return _Standalone(namesrv, broker)
