"""Master-slave replication, Java 4.9's classic HA (:mod:`.master`, :mod:`.client`)."""

from rocketmq_tx.broker.ha.client import HAClient
from rocketmq_tx.broker.ha.master import HAService

__all__ = ["HAClient", "HAService"]
