"""POP consumption (5.x): checkpoints, acks, revival and long polling of POP requests."""

from rocketmq_tx.broker.pop.polling import PopLongPollingService, PopRequest
from rocketmq_tx.broker.pop.service import REVIVE_GROUP, PopService

__all__ = ["PopService", "PopLongPollingService", "PopRequest", "REVIVE_GROUP"]
