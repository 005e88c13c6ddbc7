"""
The name server's request processors and its one processor table.

:func:`processor_table` is the single place that says which processors the name server
has (Java's ``NamesrvController.registerProcessor``); each answers the codes of its
``handlers``, one method per code, and every other code gets REQUEST_CODE_NOT_SUPPORTED,
as from a 5.x name server.
"""

from __future__ import annotations

from rocketmq_tx.namesrv.controller import NamesrvController
from rocketmq_tx.namesrv.processors.client import ClientRequestProcessor
from rocketmq_tx.namesrv.processors.default import DefaultRequestProcessor
from rocketmq_tx.net.dispatch import ProcessorTable

__all__ = ["processor_table", "ClientRequestProcessor", "DefaultRequestProcessor"]


def processor_table(controller: NamesrvController) -> ProcessorTable:
    """The name server's processors, each for the codes of its ``handlers``."""
    table = ProcessorTable()
    table.register_handlers(DefaultRequestProcessor(controller))
    table.register_handlers(ClientRequestProcessor(controller))
    return table
