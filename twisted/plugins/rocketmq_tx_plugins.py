"""
twistd plugins of rocketmq_tx. Only data here: importing it must stay cheap and must not
import a reactor (``twistd --reactor`` would break).
"""

from twisted.application.service import ServiceMaker

rocketmq_echo = ServiceMaker(
    "rocketmq-tx echo server",
    "rocketmq_tx.testing.echo",
    "A RocketMQ remoting echo server (diagnostics and interop tests).",
    "rocketmq-echo",
)

rocketmq_namesrv = ServiceMaker(
    "rocketmq-tx name server",
    "rocketmq_tx.namesrv.tap",
    "A RocketMQ name server (routes, broker registration, KV config), like mqnamesrv.",
    "rocketmq-namesrv",
)

rocketmq_broker = ServiceMaker(
    "rocketmq-tx broker",
    "rocketmq_tx.broker.tap",
    "A RocketMQ broker (store, send, pull, consumer groups), like mqbroker.",
    "rocketmq-broker",
)

rocketmq_standalone = ServiceMaker(
    "rocketmq-tx name server and broker",
    "rocketmq_tx.broker.standalone",
    "A RocketMQ name server and broker in one process: the quickest start.",
    "rocketmq-standalone",
)
