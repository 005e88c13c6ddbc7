# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
The broker"s own configuration and figures: UPDATE_BROKER_CONFIG and GET_BROKER_CONFIG
(persisted to :func:`broker_config_path`), runtime info, stats data.
"""

from __future__ import annotations

import os

from twisted.logger import Logger

from rocketmq_tx.broker.config import _store_field
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.broker.processors.admin import AdminProcessor
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.route import DataVersion
from rocketmq_tx.config import PATH_KEYS, ConfigError, control_character_error, read_properties_text
from rocketmq_tx.net.dispatch import IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.adminbodies import BrokerStatsData
from rocketmq_tx.remoting.headers.admin import GetBrokerConfigResponseHeader, ViewBrokerStatsDataRequestHeader

__all__ = ["BrokerConfigProcessor", "broker_config_path"]

log = Logger()

#: Keys UPDATE_BROKER_CONFIG never changes, whatever ``configBlackList`` says: Java's
#: ``initConfigBlackList``, every path key, and the store's file sizes (files of another
#: size stop the next start).
_ALWAYS_BLACK = PATH_KEYS | {"configBlackList", "mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue"}


def broker_config_path(controller: BrokerController) -> str:
    """Where UPDATE_BROKER_CONFIG persists: ``brokerConfigPath``, else ``<store>/config/broker.properties``."""
    path = controller.settings["brokerConfigPath"]
    if path:
        return str(path)
    return os.path.join(controller.store_config.store_path_root_dir, "config", "broker.properties")


class BrokerConfigProcessor(AdminProcessor):
    """UPDATE_BROKER_CONFIG, GET_BROKER_CONFIG, GET_BROKER_RUNTIME_INFO, VIEW_BROKER_STATS_DATA."""

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
            RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
        }

    def get_broker_runtime_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=fastjson.dumps({"table": self.controller.runtime_info()}))

    def _config_version(self) -> DataVersion:
        # On the controller, not here: the main and fast ports each have a processor.
        return self.controller.config_data_version

    def config_text(self) -> str:
        """GET_BROKER_CONFIG's body: every setting as ``key=value`` lines (Java ``properties2String``)."""
        return "".join(f"{k}={v}\n" for k, v in self.settings.to_properties().items())

    def update_broker_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        """
        UPDATE_BROKER_CONFIG (25): apply the known keys of a properties body at run time
        (unknown keys are ignored, as Java's ``mergeIfExist``), then persist every setting.
        """
        if not request.body:
            return request.make_response()
        try:
            properties = read_properties_text(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ConfigError):
            return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        black = set(_ALWAYS_BLACK)
        black.update(k for k in str(self.settings["configBlackList"]).split(";") if k)
        if any(k in black for k in properties):
            return request.make_response(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        bad = control_character_error(properties)
        if bad is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, bad)
        log.info("updateBrokerConfig, new config: [{props}] client: {peer}", props=properties, peer=ctx.peer)
        store_keys = {k: v for k, v in properties.items() if _store_field(k) is not None}
        known = {k: v for k, v in properties.items() if k in self.settings or k in store_keys}
        try:
            # Tried on a copy first: a value the next start would refuse is refused now, so
            # nothing persisted here can keep the broker from restarting.
            trial = self.settings.copy()
            trial.update_from_properties(known)
            trial.validate()
            self.settings.update_from_properties(known)
        except ConfigError as e:
            # Java sets what parses and logs the rest; refusing the whole update is safer.
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        if store_keys:
            self._apply_store_keys(store_keys)
        self._apply_cached_settings()
        self._config_version().next_version(self.controller.now_ms())
        self._persist_config()
        if "brokerPermission" in properties:
            # Java bumps the topic data version and registers at once with the new permission.
            self.controller.topic_config_manager.data_version.next_version()
            self.controller.on_topic_created(None)
        return request.make_response()

    def _apply_cached_settings(self) -> None:
        # Managers that copied a setting when built see the new value too (Java's read
        # the live BrokerConfig).
        c = self.controller
        c.subscription_group_manager.auto_create = bool(self.settings["autoCreateSubscriptionGroup"])
        timeout = int(self.settings["channelExpiredTimeout"])
        c.consumer_manager.channel_expired_timeout = timeout
        c.producer_manager.channel_expired_timeout = timeout

    def _apply_store_keys(self, keys: dict[str, str]) -> None:
        # The store already runs: copy the changed fields onto its live config, as Java's
        # properties2Object does on the MessageStoreConfig object.
        c = self.controller
        fresh = self.settings.message_store_config(store_host=c.store_config.store_host)
        for key in keys:
            name = _store_field(key)
            if name is not None and hasattr(c.store_config, name):
                setattr(c.store_config, name, getattr(fresh, name))

    def _persist_config(self) -> None:
        # Written in a thread (Java's string2File protocol: .tmp, .bak, fsync); the last text
        # wins when updates come quickly, and a clean stop flushes it.
        self.controller.persister.write_text(broker_config_path(self.controller), self.config_text())

    def get_broker_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        version = fastjson.dumps(self._config_version().to_json()).decode("utf-8")
        return request.make_response(ext_fields=GetBrokerConfigResponseHeader(version).to_ext_fields(),
                                     body=self.config_text().encode("utf-8"))

    def view_broker_stats_data(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader.from_ext_fields(request.ext_fields)
        stats = self.controller.stats
        data = stats.stats_data(header.stats_name, header.stats_key)
        if data is None and header.stats_name.startswith("BROKER_") and \
                header.stats_key == self.settings["brokerClusterName"]:
            # Java keys the broker-wide counters by cluster name; ours use "".
            data = stats.stats_data(header.stats_name, "")
        if data is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"The stats <{header.stats_name}> <{header.stats_key}> not exist")
        body = BrokerStatsData.from_json(data).to_json()
        return request.make_response(body=fastjson.dumps(body))
