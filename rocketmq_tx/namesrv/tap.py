# -*- test-case-name: rocketmq_tx.namesrv.test.test_tap -*-
"""
``twistd -n rocketmq-namesrv [-c namesrv.properties] [-p] [--set key=value ...]``
(``tls.*`` keys too, in the file or with ``--set``),
mirroring Java's ``mqnamesrv``: ``-c`` reads a properties file with NamesrvConfig and
NettyServerConfig keys, ``-p`` prints the effective configuration and exits. A bad value
or an unreadable file stops the start with a one-line error (exit status 1) before
anything binds; unknown keys are warned about.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger

from rocketmq_tx.daemon import DaemonOptions
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.service import NamesrvService

__all__ = ["Options", "makeService"]

log = Logger()


class Options(DaemonOptions):
    """Command line of ``twistd rocketmq-namesrv``."""

    label = "rocketmq-namesrv"
    settings_class = NamesrvSettings
    synopsis = "[-c namesrv.properties] [-p] [--set key=value ...]"
    longdesc = "A RocketMQ name server, wire-compatible with Java's mqnamesrv."



def makeService(options: Options, reactor: Any = None) -> NamesrvService:
    """The name server service tree for parsed *options*."""
    if reactor is None:
        from twisted.internet import reactor  # late: twistd picks the reactor first
    assert options.settings is not None
    for key in options.unknown:
        log.warn("unknown configuration key {key} ignored", key=key)
    return NamesrvService(options.settings, reactor, options.tls, options.tls_context)


