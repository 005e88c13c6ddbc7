# -*- test-case-name: rocketmq_tx.broker.test.test_config -*-
"""
Java-style configuration: ``.properties``/``.conf`` files with the Java servers' own keys.

A :class:`Settings` subclass declares its keys once (:class:`Setting`: Java key,
default, type). Values are looked up by Java key, which is the compatibility surface;
files are read with ``javaproperties`` (``java.util.Properties`` syntax exactly:
escapes, continuations, ``:`` or ``=``). Unknown keys are reported, not dropped; a value
that does not parse is a :class:`ConfigError` naming the key, so a daemon can refuse to
start with a one-line message before it binds anything.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import javaproperties

__all__ = ["ConfigError", "Setting", "Settings", "NETTY_SERVER_CONFIG", "read_properties_file", "read_properties_text",
           "control_character_error", "PATH_KEYS", "METRICS_CONFIG", "METRICS_EXPORTER_TYPES", "exporter_type",
           "validate_metrics"]

#: Keys naming files and directories: a running server never takes them from a request
#: (UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG), whatever ``configBlackList`` says. A store
#: moved at run time writes its config and queues elsewhere and leaves its ``abort`` behind.
PATH_KEYS = frozenset({
    "rocketmqHome", "brokerConfigPath", "kvConfigPath", "configStorePath", "storePathRootDir",
    "storePathCommitLog", "storePathConsumeQueue", "storePathIndex", "storeCheckpoint", "abortFile",
    "storePathDLedgerCommitLog", "readOnlyCommitLogStorePaths", "storePathEpochFile", "storePathBrokerIdentity",
    "rocketmq.acl.plain.file", "tls.config.file",
})


class ConfigError(ValueError):
    """A configuration value or file is unusable; the message is one line for the operator."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration key: Java's name, the default, and its type (bool, int, float or str)."""

    key: str
    default: Any
    kind: type = str
    doc: str = ""

    def parse(self, raw: str) -> Any:
        text = raw.strip()
        if self.kind is bool:
            if text.lower() not in ("true", "false"):
                raise ConfigError(f"{self.key}: expected true or false, got {raw!r}")
            return text.lower() == "true"
        if self.kind is int:
            try:
                return int(text)
            except ValueError:
                raise ConfigError(f"{self.key}: expected an integer, got {raw!r}") from None
        if self.kind is float:
            try:
                return float(text)
            except ValueError:
                raise ConfigError(f"{self.key}: expected a number, got {raw!r}") from None
        return raw

    def format(self, value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)


def read_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """
    Read a Java properties file.

    :raises ConfigError: unreadable or undecodable.
    """
    try:
        with open(path, encoding="utf-8") as f:
            return dict(javaproperties.load(f))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"cannot read configuration file {path}: {e}") from None


def read_properties_text(text: str) -> dict[str, str]:
    """
    Parse properties text (a request body, for instance).

    :raises ConfigError: not parseable as properties.
    """
    try:
        return dict(javaproperties.loads(text))
    except ValueError as e:
        raise ConfigError(f"invalid properties text: {e}") from None


def control_character_error(properties: Mapping[str, str]) -> str | None:
    """
    A remark naming the first key or value holding a control character (a newline would
    add lines, blocked keys among them, to the persisted file), else ``None``.
    """
    for key, value in properties.items():
        for text, what in ((key, "key"), (value, "value")):
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
                return f"the {what} of {key[:100]!r} holds a control character; refused"
    return None


class Settings:
    """Typed values by Java key; subclasses set :attr:`SPEC`."""

    SPEC: ClassVar[tuple[Setting, ...]] = ()

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        self._spec = {s.key: s for s in self.SPEC}
        self._values: dict[str, Any] = {s.key: s.default for s in self.SPEC}
        for key, value in (overrides or {}).items():
            if key not in self._spec:
                raise KeyError(key)
            self._values[key] = value

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self._spec:
            raise KeyError(key)
        self._values[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self._spec

    def keys(self) -> Iterable[str]:
        return self._values.keys()

    def update_from_properties(self, properties: Mapping[str, str]) -> list[str]:
        """
        Apply the keys this object knows; returns the unknown keys (for a warning).

        All values are parsed before any is applied, so a bad file changes nothing.

        :raises ConfigError: a known key's value does not parse.
        """
        parsed = {}
        unknown = []
        for key, raw in properties.items():
            setting = self._spec.get(key)
            if setting is None:
                unknown.append(key)
            else:
                parsed[key] = setting.parse(raw)
        self._values.update(parsed)
        return unknown

    def to_properties(self) -> dict[str, str]:
        """Every key with its current value as text (what ``-p`` prints)."""
        return {key: self._spec[key].format(value) for key, value in self._values.items()}

    def copy(self) -> Settings:
        """An independent copy (to try an update before applying it)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._values = dict(self._values)
        return other

    def validate(self) -> None:
        """
        Refuse values that parse but cannot work. A daemon refuses to start on them, and a
        run-time update is refused on them, so a persisted update never stops a restart.

        :raises ConfigError: one line naming the key.
        """
        port = self._values.get("listenPort")
        if port is not None and not 0 <= port <= 65535:
            raise ConfigError(f"listenPort: {port} is not a TCP port")


#: Java's ``NettyServerConfig`` keys, shared by the name server and the broker.
NETTY_SERVER_CONFIG = (
    Setting("listenPort", 9876, int, "TCP port (0: any free port)"),
    Setting("bindAddress", "0.0.0.0", str, "interface to bind (5.x key)"),
    Setting("serverWorkerThreads", 8, int),
    Setting("serverCallbackExecutorThreads", 0, int),
    Setting("serverSelectorThreads", 3, int),
    Setting("serverOnewaySemaphoreValue", 256, int),
    Setting("serverAsyncSemaphoreValue", 64, int),
    Setting("serverChannelMaxIdleTimeSeconds", 120, int, "idle connections are closed after this"),
    Setting("serverSocketSndBufSize", 0, int),
    Setting("serverSocketRcvBufSize", 0, int),
    Setting("writeBufferHighWaterMark", 0, int),
    Setting("writeBufferLowWaterMark", 0, int),
    Setting("serverSocketBacklog", 1024, int),
    Setting("serverNettyWorkerGroupEnable", True, bool),
    Setting("serverPooledByteBufAllocatorEnable", True, bool),
    Setting("useEpollNativeSelector", False, bool),
    Setting("enableShutdownGracefully", False, bool),
    Setting("shutdownWaitTimeSeconds", 30, int),
)


#: Java 5.x's metrics keys (``BrokerConfig``; ``ControllerConfig`` for the name server's, which
#: Java 5.x's name server itself does not have), plus our series limit. PROM is served;
#: OTLP_GRPC and LOG are refused at start (``validate_metrics``).
METRICS_EXPORTER_TYPES = ("DISABLE", "OTLP_GRPC", "PROM", "LOG")
METRICS_CONFIG = (
    Setting("metricsExporterType", "DISABLE", str, "DISABLE or PROM (OTLP_GRPC and LOG are not supported)"),
    Setting("metricsPromExporterHost", "", str, "the metrics port's interface (empty: the server's address)"),
    Setting("metricsPromExporterPort", 5557, int, "the metrics port: /metrics, /healthz, /readyz"),
    Setting("metricsLabel", "", str, "labels added to every series, key:value,key:value"),
    Setting("metricsInDelta", False, bool, "adds the label aggregation=delta (as Java; values stay cumulative)"),
    Setting("metricsOtelCardinalityLimit", 50000, int, "not supported: accepted and ignored (see metricsSeriesLimit)"),
    Setting("metricsGrpcExporterTarget", "", str, "not supported: accepted and ignored"),
    Setting("metricsGrpcExporterHeader", "", str, "not supported: accepted and ignored"),
    Setting("metricGrpcExporterTimeOutInMills", 3000, int, "not supported: accepted and ignored"),
    Setting("metricGrpcExporterIntervalInMills", 60000, int, "not supported: accepted and ignored"),
    Setting("metricLoggingExporterIntervalInMills", 10000, int, "not supported: accepted and ignored"),
    Setting("metricsSeriesLimit", 1000, int,
            "tx: series per metric family; further label sets are counted under otel_metric_overflow"),
)


def exporter_type(raw: str) -> str:
    """Java's ``MetricsExporterType``: a name, or its number (0-3) as Java's int setter takes."""
    text = raw.strip()
    if text.isdigit():
        number = int(text)
        return METRICS_EXPORTER_TYPES[number] if number < len(METRICS_EXPORTER_TYPES) else "DISABLE"
    return text


def validate_metrics(settings: Settings) -> None:
    """
    What the metrics keys refuse (start-up and UPDATE_*_CONFIG).

    :raises ConfigError: an unknown or unsupported exporter type, a port that is no port.
    """
    kind = exporter_type(settings["metricsExporterType"])
    if kind not in METRICS_EXPORTER_TYPES:
        raise ConfigError(f"metricsExporterType: {kind!r} is not one of {', '.join(METRICS_EXPORTER_TYPES)}")
    if kind in ("OTLP_GRPC", "LOG"):
        raise ConfigError(f"metricsExporterType: {kind} is not supported by rocketmq-tx; use PROM or DISABLE")
    port = settings["metricsPromExporterPort"]
    if not 0 <= port <= 65535:
        raise ConfigError(f"metricsPromExporterPort: {port} is not a TCP port")
    if settings["metricsSeriesLimit"] <= 0:
        raise ConfigError(f"metricsSeriesLimit: must be positive, got {settings['metricsSeriesLimit']}")
