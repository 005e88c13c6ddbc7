"""
The name server: route registration, expiry and discovery, KV configuration.

``twistd -n rocketmq-namesrv [-c namesrv.properties] [-p]`` runs it (see :mod:`.tap`).
"""

from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.routeinfo import RouteInfoManager
from rocketmq_tx.namesrv.service import NamesrvService

__all__ = ["NamesrvController", "NamesrvService", "RouteInfoManager"]
