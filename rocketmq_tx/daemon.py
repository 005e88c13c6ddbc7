"""
Command-line handling shared by the twistd plugins (``rocketmq-namesrv``,
``rocketmq-broker``, ``rocketmq-standalone``): a Java properties file with ``-c``, ``-p``
to print the effective configuration, ``--set key=value`` overrides, ``tls.*`` keys, and a
one-line refusal (exit status 1) for a bad value before anything binds.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from twisted.python import usage

from rocketmq_tx.config import ConfigError, Settings, read_properties_file
from rocketmq_tx.net.tls import ReloadableServerTLS
from rocketmq_tx.tlsconfig import TlsMode, TlsSettings

__all__ = ["DaemonOptions", "refuse"]


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
