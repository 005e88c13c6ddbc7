"""
Prometheus metrics for the servers (``metricsExporterType=PROM``): :mod:`.core` counts (no
Twisted), :mod:`.rpc` is the request latency both servers share, :mod:`.http` serves the port
(``/metrics``, ``/healthz``, ``/readyz``). What each server exposes is its own ``metrics``
module (:mod:`rocketmq_tx.broker.metrics`, :mod:`rocketmq_tx.namesrv.metrics`).
"""
