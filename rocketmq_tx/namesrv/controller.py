# -*- test-case-name: rocketmq_tx.namesrv.test.test_processors -*-
"""
:class:`NamesrvController`: the name server's state in one object, as processors see it
(Java's ``NamesrvController`` without the networking, which lives in :mod:`.service`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path

from twisted.logger import Logger

from rocketmq_tx.config import PATH_KEYS, ConfigError, control_character_error
from rocketmq_tx.namesrv.config import NamesrvSettings
from rocketmq_tx.namesrv.kvconfig import KVConfigManager
from rocketmq_tx.namesrv.routeinfo import RouteInfoManager

__all__ = ["NamesrvController"]

log = Logger()


class NamesrvController:
    """
    :param settings: the configuration (``UPDATE_NAMESRV_CONFIG`` changes it at run time).
    :param now: milliseconds since the epoch.
    :param close_channel: closes a connection (used when a broker expires).
    """

    def __init__(self, settings: NamesrvSettings, now: Callable[[], int] | None = None,
                 close_channel: Callable[[Hashable], object] | None = None) -> None:
        self.settings = settings
        kwargs = {"now": now} if now is not None else {}
        self.route_info_manager = RouteInfoManager(expired_time=settings["brokerChannelExpiredTime"],
                                                   on_close_channel=close_channel, **kwargs)
        self.kv_config_manager = KVConfigManager(settings["kvConfigPath"])

    def load(self) -> None:
        """Read persisted state (KV configuration)."""
        self.kv_config_manager.load()

    def black_listed(self, keys: Mapping[str, str]) -> bool:
        """Whether *keys* touch a key UPDATE_NAMESRV_CONFIG must not change."""
        black = set(PATH_KEYS | {"configBlackList"})
        black.update(k for k in self.settings["configBlackList"].split(";") if k)
        return any(k in black for k in keys)

    def update_config(self, properties: Mapping[str, str]) -> None:
        """
        UPDATE_NAMESRV_CONFIG: apply the known keys (others are ignored, as Java's
        ``mergeIfExist``) and persist every setting to ``configStorePath``.

        :raises rocketmq_tx.config.ConfigError: a value does not parse, holds a control
            character or would stop the next start (nothing is applied).
        """
        known = {k: v for k, v in properties.items() if k in self.settings}
        bad = control_character_error(properties)
        if bad is not None:
            raise ConfigError(bad)
        # On a copy first: what the next start would refuse is refused now.
        trial = self.settings.copy()
        trial.update_from_properties(known)
        trial.validate()
        self.settings.update_from_properties(known)
        self.route_info_manager.expired_time = self.settings["brokerChannelExpiredTime"]
        path = Path(self.settings["configStorePath"])
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(self.config_text(), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as e:
            log.error("cannot persist configuration to {path}: {error}", path=str(path), error=e)

    def config_text(self) -> str:
        """GET_NAMESRV_CONFIG's body: ``key=value`` lines, as Java's ``properties2String``."""
        return "".join(f"{k}={v}\n" for k, v in self.settings.to_properties().items())


