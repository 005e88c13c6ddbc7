# -*- test-case-name: rocketmq_tx.broker.test.test_registration -*-
"""
:class:`BrokerRegistrar`: when the broker sends REGISTER_BROKER, and with which topics.

As Java 4.9/5.x, a created or changed topic is announced alone (``registerIncrementBrokerData``:
a REGISTER_BROKER whose table holds only that topic, with the current DataVersion; a name
server adds it without dropping the topics it already has), while the whole table goes at
start, every ``registerNameServerPeriod`` and when ``brokerPermission`` changes.

Each name server has a lane with at most one registration in flight. What comes while one is
in flight waits and goes next as one registration: topics created meanwhile travel together
in one increment, full requests collapse into one. A failed or refused registration leaves
the lane unsynced: its next registration carries the whole table (so no topic of the failed
one is lost), tried again after a backoff (1 s doubling to 30 s) or at the next full request.

:meth:`BrokerRegistrar.when_registered` gives a Deferred that fires once the registration
carrying a topic (pending or in flight) has been answered, or has failed, at every name server.
A send that created its topic is answered only then, as Java's ``createTopicInSendMessageMethod``
calls ``registerBrokerAll`` before the send is answered, so the producer's next route lookup
(or a consumer's) finds the topic. A name server backing off after a failure is not waited for.

The whole table also goes, instead of an increment, over a connection that did not carry a
successful full registration: a new connection may reach a name server that restarted and
knows nothing of this broker. A 4.9 name server (and ours) applies a table only when the
DataVersion differs from the last one it got, so after an increment reached a fresh name
server the next full registration, with that same version, would be ignored and the other
topics missing until the version changed; a 5.x one refuses a one-topic increment from a
broker it does not know.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.broker.outerapi import namesrv_addresses
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import RemotingCommand, ResponseCode

__all__ = ["BrokerRegistrar"]

log = Logger()

_RW = 6


@dataclass(eq=False)
class _Lane:
    addr: str
    in_flight: bool = False
    #: a full registration was asked for
    full: bool = False
    #: topic names created or changed since the last registration that carried them
    pending: dict[str, None] = field(default_factory=dict)
    #: register_all() callers waiting for this lane's next full registration
    waiters: list[Deferred] = field(default_factory=list)
    #: when_registered() callers waiting for the next registration (it carries their topics)
    increment_waiters: list[Deferred] = field(default_factory=list)
    #: the registration in flight
    attempt: Any = None
    #: the connection over which the last full registration succeeded (None: send the whole table)
    synced: Any = None
    #: a registration failed: try again (the whole table) once the backoff is over
    retry: bool = False
    not_before: float = 0.0
    backoff: float = 0.0


@dataclass(eq=False)
class _Attempt:
    full: bool = False
    names: list[str] = field(default_factory=list)
    waiters: list[Deferred] = field(default_factory=list)
    token: Any = None


class BrokerRegistrar:
    """
    :param clock: ``callLater`` and ``seconds``.
    :param settings: the broker settings (names, addresses, ``namesrvAddr``,
        ``brokerPermission``, ``compressedRegister``), read at each registration.
    :param controller: the topic table and DataVersion, and the broker's address.
    :param outer_api: returns the current :class:`~rocketmq_tx.broker.outerapi.BrokerOuterAPI`
        (the service may replace it).
    """

    def __init__(self, clock: Any, settings: Any, controller: Any, outer_api: Callable[[], Any],
                 min_backoff: float = 1.0, max_backoff: float = 30.0) -> None:
        self.clock = clock
        self.settings = settings
        self.controller = controller
        self._api = outer_api
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.lanes: dict[str, _Lane] = {}
        self.running = False
        self._call: Any = None

    # ------------------------------------------------------------------ API

    def start(self) -> None:
        self.running = True
        self._soon()  # what was asked before

    def stop(self) -> None:
        self.running = False
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        for lane in self.lanes.values():  # nobody waits for what will not be sent
            waiters, lane.waiters = lane.waiters + lane.increment_waiters, []
            lane.increment_waiters = []
            for d in waiters:
                d.callback(None)

    def register_increment(self, topic_configs: Iterable[TopicConfig]) -> None:
        """Announce these topics (created or changed) soon, as an increment. The configs sent
        are the table's at sending time; a topic deleted by then is left out."""
        names = [tc.topic_name for tc in topic_configs]
        if not names:
            return
        for lane in self._current_lanes():
            lane.pending.update(dict.fromkeys(names))
        self._soon()

    def when_registered(self, topic: str) -> Deferred | None:
        """
        ``None`` when no registration carrying *topic* is waiting or in flight; else a Deferred
        that fires with ``None`` once each name server has answered it or it failed there. A
        name server backing off after a failure is not waited for (it gets the topic with the
        whole table when it is back), nor is anything before :meth:`start`.
        """
        if not self.running:
            return None
        now = self.clock.seconds()
        waits: list[Deferred] = []
        for lane in self._current_lanes():
            if lane.retry and now < lane.not_before:
                continue
            d: Deferred = Deferred()
            if topic in lane.pending:
                lane.increment_waiters.append(d)
            elif lane.attempt is not None and (lane.attempt.full or topic in lane.attempt.names):
                lane.attempt.waiters.append(d)
            else:
                continue
            waits.append(d)
        if not waits:
            return None
        return defer.gatherResults(waits).addCallback(lambda _: None)

    def register_all(self) -> Deferred:
        """Send the whole table to every name server now (after the registration in flight,
        if any). Fires with ``{addr: response, or None if it failed}``."""
        waits = {}
        for lane in self._current_lanes():
            lane.full = True
            d: Deferred = Deferred()
            lane.waiters.append(d)
            waits[lane.addr] = d
        if self.running:
            if self._call is not None and self._call.active():
                self._call.cancel()
            self._pump()
        if not waits:
            return defer.succeed({})
        return defer.gatherResults(list(waits.values())).addCallback(lambda results: dict(zip(waits, results)))

    def is_registered(self) -> bool:
        """Whether a name server has the whole topic table: its last full registration succeeded
        and nothing failed since (``/readyz``)."""
        return any(lane.synced is not None and not lane.retry for lane in self.lanes.values())

    def is_idle(self) -> bool:
        """Nothing in flight and nothing waiting (tests, benchmarks)."""
        return all(not (lane.in_flight or lane.full or lane.pending or lane.retry) for lane in self.lanes.values())

    # ------------------------------------------------------------------ lanes

    def _current_lanes(self) -> list[_Lane]:
        addrs = namesrv_addresses(self.settings["namesrvAddr"])
        for addr in [a for a in self.lanes if a not in addrs]:  # namesrvAddr changed
            gone = self.lanes.pop(addr)
            for d in gone.waiters + gone.increment_waiters:
                d.callback(None)
        return [self.lanes.setdefault(addr, _Lane(addr)) for addr in addrs]

    def _soon(self, delay: float = 0.0) -> None:
        at = self.clock.seconds() + delay
        if self._call is not None and self._call.active():
            if self._call.getTime() <= at:
                return
            self._call.cancel()
        self._call = self.clock.callLater(delay, self._pump)

    def _pump(self) -> None:
        self._call = None
        if not self.running:
            return
        now = self.clock.seconds()
        later = None
        for lane in self._current_lanes():
            if lane.in_flight:
                continue  # its end pumps again
            if lane.full or ((lane.pending or lane.retry) and now >= lane.not_before):
                self._send(lane)
            elif lane.pending or lane.retry:
                later = lane.not_before if later is None else min(later, lane.not_before)
        if later is not None:
            self._soon(later - now)

    def _send(self, lane: _Lane) -> None:
        # The attempt takes what the lane asked for now; what comes later waits for the next.
        lane.in_flight = True
        attempt = _Attempt(lane.full or lane.retry, list(lane.pending), lane.waiters + lane.increment_waiters)
        lane.pending.clear()
        lane.waiters = []
        lane.increment_waiters = []
        lane.full = lane.retry = False
        lane.attempt = attempt
        d = defer.maybeDeferred(self._api().connection, lane.addr)
        d.addCallback(self._register, lane, attempt)
        d.addBoth(self._registered, lane, attempt)

    def _register(self, token: Any, lane: _Lane, attempt: _Attempt) -> Any:
        attempt.token = token
        if lane.synced is None or lane.synced is not token:
            attempt.full = True
        tcm = self.controller.topic_config_manager
        table = tcm.topic_config_table
        if attempt.full:
            topics = dict(table)
        else:
            topics = {name: table[name] for name in attempt.names if name in table}
            if not topics:
                return None  # every one deleted meanwhile: nothing to say
        perm = self.settings["brokerPermission"]
        if perm != _RW:
            # Java masks every topic's permission with the broker's when it is not RW.
            topics = {name: dataclasses.replace(tc, perm=tc.perm & perm) for name, tc in topics.items()}
        s = self.settings
        c = self.controller
        ha_addr = c.ha_server_addr()
        sent = self._api().register_broker([lane.addr], s["brokerClusterName"], c.broker_addr, s["brokerName"],
                                           s["brokerId"], ha_addr, tcm.data_version, topics, s["compressedRegister"])
        return sent[lane.addr]

    def _registered(self, result: Any, lane: _Lane, attempt: _Attempt) -> None:
        lane.in_flight = False
        lane.attempt = None
        ok = result is None or (isinstance(result, RemotingCommand) and result.code == ResponseCode.SUCCESS)
        if ok:
            lane.backoff = 0.0
            if attempt.full:
                lane.synced = attempt.token
        else:
            if isinstance(result, RemotingCommand):
                log.warn("name server {addr} refused the registration: {code} {remark}", addr=lane.addr,
                         code=result.code, remark=result.remark)
            else:
                log.warn("cannot register with name server {addr}: {error}", addr=lane.addr,
                         error=result.getErrorMessage())
            # The next registration carries the whole table, whatever this one carried.
            lane.synced = None
            lane.retry = True
            lane.backoff = min(self.max_backoff, max(self.min_backoff, lane.backoff * 2))
            lane.not_before = self.clock.seconds() + lane.backoff
        response = result if isinstance(result, RemotingCommand) else None
        if ok and response is not None:
            on_result = getattr(self.controller, "on_register_result", None)
            if on_result is not None:
                on_result(response)
        for d in attempt.waiters:
            d.callback(response)
        if self.running and (lane.full or lane.pending or lane.retry):
            self._soon()
