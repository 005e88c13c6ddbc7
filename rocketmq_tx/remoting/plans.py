# -*- test-case-name: rocketmq_tx.remoting.test.test_sendapi -*-
"""
Plans: client operations written once, without I/O, for both drivers.

A plan is a generator that yields the steps it needs and is sent their results, so the
Twisted client (:meth:`rocketmq_tx.client.instance.MQClientInstance.run`) and the
blocking one (:meth:`rocketmq_tx.blocking.client.BlockingMQClient.run`, over
:func:`run_plan`) take the same steps and differ only in how they move commands:

* ``response = yield Call(addr, request)`` sends one request; a transport failure
  (:class:`RemotingError`) is raised at the ``yield``. ``addr`` :data:`NAMESRV` (``None``)
  means the name servers, with fail-over (:func:`rocketmq_tx.remoting.sendapi.namesrv_call`).
  ``Call(..., oneway=True)`` sends and gets ``None`` back.
* ``results = yield [Call(...), ...]`` sends them all (concurrently on Twisted) and gets a
  list, in order, of responses or the :class:`RemotingError` each call failed with.
* ``yield Warn(text)``: the driver logs *text* as a warning, in its own logging system.

The admin operations are in :mod:`rocketmq_tx.remoting.adminapi`; routes and sends in
:mod:`rocketmq_tx.remoting.sendapi`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import RemotingError

__all__ = ["NAMESRV", "Call", "Warn", "Step", "Plan", "run_plan"]

T = TypeVar("T")

#: A :class:`Call` address meaning "the name servers, with fail-over".
NAMESRV = None


@dataclass(frozen=True, slots=True)
class Call:
    """
    One request of a plan.

    :ivar addr: a broker or name-server address, or :data:`NAMESRV`.
    :ivar timeout_scale: times the driver's request timeout (Java gives GET_CONSUME_STATS
        and QUERY_MESSAGE three times its ``timeoutMillis``).
    :ivar timeout: seconds, instead of the scaled request timeout (what is left of a send's
        time budget).
    :ivar oneway: send without waiting for an answer; the step's result is ``None``.
    """

    addr: str | None
    request: RemotingCommand
    timeout_scale: float = 1.0
    timeout: float | None = None
    oneway: bool = False

    def seconds(self, default: float) -> float:
        """This call's timeout when the driver's request timeout is *default*."""
        return self.timeout if self.timeout is not None else default * self.timeout_scale


@dataclass(frozen=True, slots=True)
class Warn:
    """A warning for the driver's log (a failed attempt that the plan retries)."""

    message: str


Step = Call | list[Call] | Warn
#: A client operation: yields steps, returns its result.
Plan = Generator[Step, Any, T]


def run_plan(plan: Plan[T], invoke: Callable[[Call], RemotingCommand | None],
             warn: Callable[[str], object] = lambda message: None) -> T:
    """
    Drive *plan* with a blocking *invoke* (calls of a list go one after another).

    :raises: whatever the plan raises; a :class:`RemotingError` of a single call is raised
        inside the plan first, so the plan may handle it.
    """
    reply: Any = None
    error: RemotingError | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(reply)
        except StopIteration as stop:
            return stop.value
        reply, error = None, None
        if isinstance(step, Warn):
            warn(step.message)
        elif isinstance(step, list):
            results: list[RemotingCommand | RemotingError | None] = []
            for call in step:
                try:
                    results.append(invoke(call))
                except RemotingError as e:
                    results.append(e)
            reply = results
        else:
            try:
                reply = invoke(step)
            except RemotingError as e:
                error = e
