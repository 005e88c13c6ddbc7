# -*- test-case-name: rocketmq_tx.broker.test.test_tap -*-
"""
``twistd -n rocketmq-broker [-c broker.conf] [-n "host:port;host:port"] [-p] [--set key=value ...]``,
mirroring Java's ``mqbroker``: ``-c`` reads BrokerConfig, MessageStoreConfig and
NettyServerConfig keys (``tls.*`` too), ``-n`` sets the name servers, ``-p`` prints the
effective configuration and exits. A bad value stops the start with a one-line error
(exit status 1) before anything binds; unknown keys are warned about.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger

from rocketmq_tx.broker.config import BrokerSettings
from rocketmq_tx.broker.service import BrokerService
from rocketmq_tx.daemon import DaemonOptions

__all__ = ["Options", "makeService"]

log = Logger()


class Options(DaemonOptions):
    """Command line of ``twistd rocketmq-broker``."""

    label = "rocketmq-broker"
    settings_class = BrokerSettings
    synopsis = '[-c broker.conf] [-n "host:port;host:port"] [-p] [--set key=value ...]'
    longdesc = "A RocketMQ broker, wire- and disk-compatible with Java's mqbroker."
    optParameters = DaemonOptions.optParameters + [
        ["namesrvAddr", "n", None, "Name server list, e.g. '192.168.0.1:9876;192.168.0.2:9876'."]]

    def extra_overrides(self) -> dict[str, str]:
        return {"namesrvAddr": self["namesrvAddr"]} if self["namesrvAddr"] else {}


def makeService(options: Options, reactor: Any = None) -> BrokerService:
    """The broker service tree for parsed *options*."""
    if reactor is None:
        from twisted.internet import reactor  # late: twistd picks the reactor first
    for key in options.unknown:
        log.warn("unknown configuration key {key} ignored", key=key)
    return BrokerService(options.settings, reactor, options.tls, options.tls_context)
