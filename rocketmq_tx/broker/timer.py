# -*- test-case-name: rocketmq_tx.broker.test.test_timer -*-
"""
Drives the 5.x timer store (:class:`~rocketmq_tx.store.timer.store.TimerMessageStore`) on
the reactor, as Java's timer threads do: every ``100 * timerPrecisionMs / 1000`` ms, and 1 ms
after each ``timerPrecisionMs`` boundary, it takes new entries of ``rmq_sys_wheel_timer`` into
the wheel and delivers the due slots; every
``timerFlushIntervalMs`` the TimerLog, wheel, checkpoint and metrics go to disk in a thread.

Work is done in slices of :attr:`TimerMessageService.slice_budget` units; a slice that
leaves work behind schedules the next one at once (``callLater(0)``), so a slot of many
timers never holds the reactor for more than one slice (a few ms).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from twisted.application import service
from twisted.internet import defer, threads
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.remoting import ResponseCode
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.store import DefaultMessageStore
from rocketmq_tx.store.timer.hook import transform_timer_message
from rocketmq_tx.store.timer.store import TimerMessageStore

__all__ = ["TimerMessageService", "timer_disabled_hook", "timer_put_result_response", "DISABLED_RUNTIME_INFO"]

log = Logger()

#: seconds between TimerLog clean-ups (Java's fixed 30 s)
CLEAN_INTERVAL = 30.0


def timer_disabled_hook(msg: Any) -> PutMessageStatus | None:
    """The put hook with ``timerWheelEnable=false``: timer messages are refused (WHEEL_TIMER_NOT_ENABLE)."""
    return transform_timer_message(msg, enabled=False, precision_ms=1000, max_delay_sec=0, now_ms=0)


class TimerMessageService(service.Service):
    """
    :param store: the message store (loaded before :meth:`load`).
    :param clock: ``seconds`` and ``callLater`` (the reactor, or a ``task.Clock``).
    :param run_in_thread: runs the disk flush away from the reactor; a Deferred-returning
        callable (tests pass one that runs it at once).
    :param slice_budget: units of work per slice (a message read and delivered is one).
    :param slice_seconds: wall time one turn may take before it yields to the reactor.
    """

    def __init__(self, store: DefaultMessageStore, clock: Any,
                 run_in_thread: Callable[..., defer.Deferred] | None = None, slice_budget: int = 64,
                 slice_seconds: float = 0.004) -> None:
        self.clock = clock
        self.config = store.config
        self.store = store
        self.timer_store = TimerMessageStore(store, store.config, self.now_ms)
        self.run_in_thread = run_in_thread or self._default_run
        self.slice_budget = slice_budget
        self.slice_seconds = slice_seconds
        self.tick_seconds = 100 * self.config.timer_precision_ms / 1000 / 1000
        self._call: Any = None
        self._flush_call: Any = None
        self._clean_call: Any = None
        self._tps: tuple[float, float] = (0.0, 0.0)
        self._tps_mark = (clock.seconds(), 0, 0)
        self._flushing: defer.Deferred | None = None

    def _default_run(self, fn: Callable[..., Any], *args: Any) -> defer.Deferred:
        # the reactor's pool (as the persister); a memory reactor without threads: here
        pool = getattr(self.clock, "getThreadPool", None)
        if pool is None:
            return defer.maybeDeferred(fn, *args)
        return threads.deferToThreadPool(self.clock, pool(), fn, *args)

    def now_ms(self) -> int:
        return int(self.clock.seconds() * 1000)

    # ------------------------------------------------------------------ hook

    def put_hook(self, msg: Any) -> PutMessageStatus | None:
        """The store's timer hook (Java ``handleScheduleMessage``'s timer part)."""
        cfg = self.config
        return transform_timer_message(msg, enabled=cfg.timer_wheel_enable, precision_ms=cfg.timer_precision_ms,
                                       max_delay_sec=cfg.timer_max_delay_sec, now_ms=self.now_ms(),
                                       is_reject=self.timer_store.is_reject)

    # ------------------------------------------------------------------ lifecycle

    def load(self) -> bool:
        """Recover the timer files against the loaded store; installs the put hook."""
        if not self.timer_store.load():
            return False
        self.store.timer_hook = self.put_hook
        return True

    def startService(self) -> None:
        super().startService()
        self.timer_store.start()
        self._tps_mark = (self.clock.seconds(), self.timer_store.enqueued, self.timer_store.dequeued)
        self._call = self.clock.callLater(0, self._tick)
        self._flush_call = self.clock.callLater(self.config.timer_flush_interval_ms / 1000, self._flush_round)
        self._clean_call = self.clock.callLater(CLEAN_INTERVAL, self._clean)

    def stopService(self) -> Any:
        super().stopService()
        for call in (self._call, self._flush_call, self._clean_call):
            if call is not None and call.active():
                call.cancel()
        self._call = self._flush_call = self._clean_call = None
        return self._flushing if self._flushing is not None else defer.succeed(None)

    def shutdown(self) -> None:
        """Final checkpoint and close (after :meth:`stopService`, before the store shuts down)."""
        self.store.timer_hook = None
        self.timer_store.shutdown()

    # ------------------------------------------------------------------ work

    def _tick(self) -> None:
        self._call = None
        if not self.running or self.store.shutdown_flag:
            return
        more = False
        start = time.monotonic()
        try:
            while True:
                taken = self.timer_store.enqueue(self.slice_budget)
                done = self.timer_store.dequeue(self.slice_budget)
                more = taken >= self.slice_budget or done >= self.slice_budget
                if not more or time.monotonic() - start >= self.slice_seconds:
                    break
        except Exception:
            log.failure("timer: enqueue/dequeue failed")
            more = False
        self._call = self.clock.callLater(0 if more else self._idle_delay(), self._tick)

    def _idle_delay(self) -> float:
        """Seconds to the next tick when nothing is left to do: the polling interval, or less
        when a precision boundary comes first. A slot is due once the clock has passed its
        tick (the write time moves at the boundary), so a tick 1 ms after each boundary
        delivers it then rather than up to one polling interval later (Java's dequeue thread,
        finding nothing due, sleeps ``100 * timerPrecisionMs / 1000`` ms)."""
        precision = self.config.timer_precision_ms
        now_ms = self.clock.seconds() * 1000
        to_boundary = ((now_ms // precision + 1) * precision - now_ms + 1) / 1000
        return min(self.tick_seconds, to_boundary)

    def runtime_info(self) -> dict[str, str]:
        """Java 5.x's timer keys of GET_BROKER_RUNTIME_INFO (``timerReadBehind`` in seconds)."""
        ts = self.timer_store
        return {
            "timerReadBehind": str(max(ts.dequeue_behind_millis(), 0) // 1000),
            "timerOffsetBehind": str(ts.enqueue_behind_messages()),
            "timerCongestNum": str(ts.congest_num),
            "timerEnqueueTps": _java_float(self._tps[0]),
            "timerDequeueTps": _java_float(self._tps[1]),
        }

    def _measure_tps(self) -> None:
        now = self.clock.seconds()
        ts = self.timer_store
        last_t, last_in, last_out = self._tps_mark
        if now > last_t:
            self._tps = ((ts.enqueued - last_in) / (now - last_t), (ts.dequeued - last_out) / (now - last_t))
        self._tps_mark = (now, ts.enqueued, ts.dequeued)

    def _clean(self) -> None:
        """Every 30 s, as Java: TimerLog files whose messages are all gone from the CommitLog."""
        self._clean_call = None
        if not self.running:
            return
        if self._flushing is not None:  # never unmap a file the flush thread may be syncing
            self._clean_call = self.clock.callLater(1.0, self._clean)
            return
        try:
            deleted = self.timer_store.delete_expired_timer_log()
            if deleted:
                log.info("timer: deleted {n} expired TimerLog file(s)", n=deleted)
        except Exception:
            log.failure("timer: TimerLog clean-up failed")
        self._clean_call = self.clock.callLater(CLEAN_INTERVAL, self._clean)

    def _flush_round(self) -> None:
        self._flush_call = None
        if not self.running:
            return
        self._measure_tps()
        if self._flushing is None:
            ts = self.timer_store
            checkpoint = ts.prepare_checkpoint()
            text = ts.metrics.encode()
            d = self.run_in_thread(ts.flush, checkpoint, text)
            self._flushing = d

            def done(result: Any) -> None:
                self._flushing = None
                if isinstance(result, Failure):
                    log.failure("timer: flush failed", result)
            d.addBoth(done)
        self._flush_call = self.clock.callLater(self.config.timer_flush_interval_ms / 1000, self._flush_round)


#: GET_BROKER_RUNTIME_INFO's timer keys without a timer store (Java's literal values)
DISABLED_RUNTIME_INFO = {"timerReadBehind": "0", "timerOffsetBehind": "0", "timerCongestNum": "0",
                         "timerEnqueueTps": "0.0", "timerDequeueTps": "0.0"}


def _java_float(value: float) -> str:
    """About Java's ``String.valueOf(float)`` for a rate: ``0.0``, ``12.5``."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def timer_put_result_response(status: PutMessageStatus, store_config: Any) -> tuple[int, str] | None:
    """Java ``SendMessageProcessor.handlePutMessageResult`` for the WHEEL_TIMER_* statuses; else ``None``."""
    if status is PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL:
        return ResponseCode.MESSAGE_ILLEGAL, (
            "timer message illegal, the delay time should not be bigger than the max delay "
            f"{store_config.timer_max_delay_sec * 1000}ms; or if set del msg, the delay time should be bigger than "
            "the current time")
    if status is PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL:
        n = store_config.timer_congest_num_each_slot
        return ResponseCode.SYSTEM_ERROR, (
            f"timer message is under flow control, max num limit is {n * 2} or the current value is greater than "
            f"{n} and less than {n * 2}, trigger random flow control")
    if status is PutMessageStatus.WHEEL_TIMER_NOT_ENABLE:
        return ResponseCode.SYSTEM_ERROR, (
            "accurate timer message is not enabled, timerWheelEnable is "
            f"{'true' if store_config.timer_wheel_enable else 'false'}")
    return None
