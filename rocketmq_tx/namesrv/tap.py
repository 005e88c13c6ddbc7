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

import sys
from typing import Any

from twisted.application import service
from twisted.logger import Logger
from twisted.python import usage

from rocketmq_tx.config import ConfigError, read_properties_file
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.service import NamesrvService
from rocketmq_tx.net.tls import ReloadableServerTLS
from rocketmq_tx.tlsconfig import TlsMode, TlsSettings

__all__ = ["Options", "makeService"]

log = Logger()


class Options(usage.Options):
    """Command line of ``twistd rocketmq-namesrv``."""

    synopsis = "[-c namesrv.properties] [-p] [--set key=value ...]"
    longdesc = "A RocketMQ name server, wire-compatible with Java's mqnamesrv."
    optParameters = [["configFile", "c", None, "Name server configuration file (Java properties)."]]
    optFlags = [["printConfigItem", "p", "Print the effective configuration and exit."]]

    def __init__(self) -> None:
        super().__init__()
        self.overrides: dict[str, str] = {}
        self.unknown: list[str] = []
        self.settings: NamesrvSettings | None = None
        self.tls: TlsSettings | None = None
        self.tls_context: ReloadableServerTLS | None = None

    def opt_set(self, assignment: str) -> None:
        """Override one configuration key (repeatable), e.g. --set listenPort=9877."""
        key, sep, value = assignment.partition("=")
        if not sep or not key:
            raise usage.UsageError(f"--set expects key=value, got {assignment!r}")
        self.overrides[key.strip()] = value

    def postOptions(self) -> None:
        settings = NamesrvSettings()
        try:
            from_file = read_properties_file(self["configFile"]) if self["configFile"] else {}
            self.unknown += settings.update_from_properties(from_file)
            self.unknown += settings.update_from_properties(self.overrides)
            # tls.* keys may sit in the same file or come from --set (and tls.config.file).
            self.tls = TlsSettings.from_sources(from_file, self.overrides)
            if self.tls.mode != TlsMode.DISABLED:
                self.tls_context = ReloadableServerTLS(self.tls)
        except ConfigError as e:
            _refuse(str(e))
        self.unknown = [key for key in self.unknown if not key.startswith("tls.")]
        port = settings["listenPort"]
        if not 0 <= port <= 65535:
            _refuse(f"listenPort: {port} is not a TCP port")
        for key in ("scanNotActiveBrokerInterval", "brokerChannelExpiredTime"):
            if settings[key] <= 0:
                _refuse(f"{key}: must be positive, got {settings[key]}")
        self.settings = settings
        if self["printConfigItem"]:
            for key, value in settings.to_properties().items():
                print(f"{key}={value}")
            sys.exit(0)


def _refuse(message: str) -> None:
    # One line on stderr and status 1; twistd's UsageError would print the whole usage too.
    raise SystemExit(f"rocketmq-namesrv: {message}")


def makeService(options: Options, reactor: Any = None) -> service.IService:
    """The name server service tree for parsed *options*."""
    if reactor is None:
        from twisted.internet import reactor  # late: twistd picks the reactor first
    assert options.settings is not None
    for key in options.unknown:
        log.warn("unknown configuration key {key} ignored", key=key)
    return NamesrvService(options.settings, reactor, options.tls, options.tls_context)


