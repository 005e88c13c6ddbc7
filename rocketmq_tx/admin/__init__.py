"""
``rocketmq-tx-admin``: the mqadmin command line over
:class:`~rocketmq_tx.blocking.admin.BlockingAdmin` (no reactor).
:mod:`~rocketmq_tx.admin.cli` parses, :mod:`~rocketmq_tx.admin.commands` holds the commands
(one module per concern), :mod:`~rocketmq_tx.admin.registry` their table and session, and
:mod:`~rocketmq_tx.admin.output` prints.
"""
