# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""
The commands of ``rocketmq-tx-admin``: mqadmin's names, flags and printed layouts (Java
4.9.8's ``tools`` module), over :class:`~rocketmq_tx.blocking.admin.BlockingAdmin`, one
module per concern. Importing this package registers every command in
:data:`rocketmq_tx.admin.registry.COMMANDS`.
"""

# isort: off
# The import order is the order --help lists the commands in: brokers, topics, groups,
# messages, name servers, ACL.
from rocketmq_tx.admin.commands import cluster, topics, groups, messages, namesrv, acl  # noqa: F401
# isort: on
from rocketmq_tx.admin.commands.common import parse_timestamp

__all__ = ["parse_timestamp"]
