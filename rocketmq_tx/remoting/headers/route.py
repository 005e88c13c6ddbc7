# -*- test-case-name: rocketmq_tx.remoting.test.test_header -*-
"""Header of GET_ROUTEINFO_BY_TOPIC (105)."""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = ["GetRouteInfoRequestHeader"]


@custom_header
class GetRouteInfoRequestHeader(CommandCustomHeader):
    """``GetRouteInfoRequestHeader``; ``acceptStandardJsonOnly`` exists from 4.9.4."""

    topic: str = wire("topic", required=True)
    accept_standard_json_only: bool | None = wire("acceptStandardJsonOnly")
