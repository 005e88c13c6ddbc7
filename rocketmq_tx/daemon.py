# -*- test-case-name: rocketmq_tx.test.test_daemon -*-
"""
What the daemons (``rocketmq-namesrv``, ``rocketmq-broker``, ``rocketmq-standalone``)
share:

* the command line: a Java properties file with ``-c``, ``-p`` to print the effective
  configuration, ``--set key=value`` overrides, ``tls.*`` keys, and a one-line refusal
  (exit status 1) for a bad value before anything binds;
* :func:`bridge_stdlib_logging`: the packages without Twisted (the store, the delay-level
  schedule, the blocking client, Spark) log with stdlib ``logging``; under twistd those
  records go to ``twisted.logger`` with their level and their logger's name as namespace,
  instead of reaching stderr as ``[stderr#error]`` lines (and INFO not at all). The twistd
  plugins install it before they build the services.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Callable
from typing import Any, ClassVar

from twisted.logger import LogEvent, LogLevel, globalLogPublisher
from twisted.python import usage

from rocketmq_tx.config import ConfigError, Settings, read_properties_file
from rocketmq_tx.net.tls import ReloadableServerTLS
from rocketmq_tx.tlsconfig import TlsMode, TlsSettings

__all__ = ["DaemonOptions", "refuse", "StdlibLogBridge", "bridge_stdlib_logging"]


def refuse(label: str, message: str) -> None:
    # One line on stderr and status 1; twistd's UsageError would print the whole usage too.
    raise SystemExit(f"{label}: {message}")


class DaemonOptions(usage.Options):
    """Subclasses set :attr:`label` and :attr:`settings_class` and may override :meth:`check`."""

    label: ClassVar[str] = ""
    settings_class: ClassVar[type[Settings]] = Settings
    optParameters = [["configFile", "c", None, "Configuration file (Java properties)."]]
    optFlags = [["printConfigItem", "p", "Print the effective configuration and exit."]]

    def __init__(self) -> None:
        super().__init__()
        self.overrides: dict[str, str] = {}
        self.unknown: list[str] = []
        self.settings: Any = None
        self.tls: TlsSettings | None = None
        self.tls_context: ReloadableServerTLS | None = None

    def opt_set(self, assignment: str) -> None:
        """Override one configuration key (repeatable), e.g. --set listenPort=9877."""
        key, sep, value = assignment.partition("=")
        if not sep or not key:
            raise usage.UsageError(f"--set expects key=value, got {assignment!r}")
        self.overrides[key.strip()] = value

    def extra_overrides(self) -> dict[str, str]:
        """Options of the subclass that map to configuration keys (``-n`` for namesrvAddr)."""
        return {}

    def check(self, settings: Any) -> None:
        """Refuse values that parse but cannot work: the settings' own :meth:`~Settings.validate`."""
        try:
            settings.validate()
        except ConfigError as e:
            refuse(self.label, str(e))

    def postOptions(self) -> None:
        settings = self.settings_class()
        try:
            from_file = read_properties_file(self["configFile"]) if self["configFile"] else {}
            overrides = {**self.overrides, **self.extra_overrides()}
            self.unknown += settings.update_from_properties(from_file)
            self.unknown += settings.update_from_properties(overrides)
            # tls.* keys may sit in the same file or come from --set (and tls.config.file).
            self.tls = TlsSettings.from_sources(from_file, overrides)
            if self.tls.mode != TlsMode.DISABLED:
                self.tls_context = ReloadableServerTLS(self.tls)
        except ConfigError as e:
            refuse(self.label, str(e))
        self.unknown = [key for key in self.unknown if not key.startswith("tls.")]
        self.check(settings)
        self.settings = settings
        if self["printConfigItem"]:
            for key, value in settings.to_properties().items():
                print(f"{key}={value}")
            sys.exit(0)


#: A ``twisted.logger`` observer (``ILogObserver``) as the callable it is: typed so, any
#: callable taking an event (a list's ``append`` in tests) checks too.
LogObserver = Callable[[LogEvent], None]


class StdlibLogBridge(logging.Handler):
    """
    A stdlib ``logging`` handler that hands each record to a ``twisted.logger`` observer as
    one event: the record's level, its logger's name as ``log_namespace``, its creation time,
    and its message (with the traceback, if any) as the text.
    """

    def __init__(self, observer: LogObserver = globalLogPublisher) -> None:
        super().__init__()
        self.observer = observer

    @staticmethod
    def level_of(levelno: int) -> LogLevel:
        """The ``twisted.logger`` level of a stdlib level (custom levels: the next one down)."""
        if levelno >= logging.CRITICAL:
            return LogLevel.critical
        if levelno >= logging.ERROR:
            return LogLevel.error
        if levelno >= logging.WARNING:
            return LogLevel.warn
        if levelno >= logging.INFO:
            return LogLevel.info
        return LogLevel.debug

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                # As text, not as log_failure: an observer (trial's) would take it for an
                # unhandled error, and the record already says how bad it is.
                text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            self.observer({
                "log_format": "{log_text}",
                "log_text": text,
                "log_level": self.level_of(record.levelno),
                "log_namespace": record.name,
                "log_source": None,
                "log_time": record.created,
            })
        except Exception:
            self.handleError(record)


def bridge_stdlib_logging(observer: LogObserver = globalLogPublisher, level: int = logging.INFO) -> StdlibLogBridge:
    """
    Route every stdlib ``logging`` record to *observer* (a bridge on the root logger), and
    let ``rocketmq_tx``'s own records through from *level* on unless a level was set for
    it already. Calling it again returns the bridge in place.
    """
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler, StdlibLogBridge):
            return handler
    bridge = StdlibLogBridge(observer)
    root.addHandler(bridge)
    ours = logging.getLogger("rocketmq_tx")
    if ours.level == logging.NOTSET:
        ours.setLevel(level)
    return bridge
