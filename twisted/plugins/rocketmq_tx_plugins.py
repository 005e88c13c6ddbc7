"""
twistd plugins of rocketmq_tx. Only data here, and the one step every daemon takes first:
importing it must stay cheap and must not import a reactor (``twistd --reactor`` would
break).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.application.service import ServiceMaker

if TYPE_CHECKING:
    from twisted.application.service import IService
    from twisted.python.usage import Options


class _DaemonMaker(ServiceMaker):
    """Routes stdlib ``logging`` into ``twisted.logger`` before it builds the services."""

    def makeService(self, options: Options) -> IService:
        # Late import: rocketmq_tx.daemon is heavier than a plugin scan should pay for.
        from rocketmq_tx.daemon import bridge_stdlib_logging

        bridge_stdlib_logging()
        return super().makeService(options)


rocketmq_echo = _DaemonMaker(
    "rocketmq-tx echo server",
    "rocketmq_tx.testing.echo",
    "A RocketMQ remoting echo server (diagnostics and interop tests).",
    "rocketmq-echo",
)

rocketmq_namesrv = _DaemonMaker(
    "rocketmq-tx name server",
    "rocketmq_tx.namesrv.tap",
    "A RocketMQ name server (routes, broker registration, KV config), like mqnamesrv.",
    "rocketmq-namesrv",
)

rocketmq_broker = _DaemonMaker(
    "rocketmq-tx broker",
    "rocketmq_tx.broker.tap",
    "A RocketMQ broker (store, send, pull, consumer groups), like mqbroker.",
    "rocketmq-broker",
)

rocketmq_standalone = _DaemonMaker(
    "rocketmq-tx name server and broker",
    "rocketmq_tx.broker.standalone",
    "A RocketMQ name server and broker in one process: the quickest start.",
    "rocketmq-standalone",
)
