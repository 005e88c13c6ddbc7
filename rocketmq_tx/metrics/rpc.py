# -*- test-case-name: rocketmq_tx.metrics.test.test_core -*-
"""
``rocketmq_rpc_latency``: every answered request's latency by request and response code, as
Java 5.x's ``NettyRemotingAbstract.writeResponse`` records it (both servers).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial

from prometheus_client.core import Metric

from rocketmq_tx.common.native import speedups
from rocketmq_tx.metrics.core import RPC_LATENCY_BUCKETS, Family, HistogramTable, Row, bool_label, observe_row
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.remoting.command import RPC_ONEWAY

__all__ = ["RpcLatency", "RPC_LATENCY", "request_code_desc", "response_code_desc", "row_key", "rpc_count"]

RPC_LATENCY = Family("rocketmq_rpc_latency", "histogram", "Rpc latency",
                     ("protocol_type", "request_code", "response_code", "is_long_polling", "result"),
                     unit="milliseconds", java=True)
#: codes a held (long-polling) request answers later; Java's ``is_long_polling`` is a suspended one
_LONG_POLLING_CODES = frozenset({RequestCode.PULL_MESSAGE, RequestCode.POP_MESSAGE, RequestCode.NOTIFICATION})


def request_code_desc(code: int) -> str:
    """Java ``RemotingHelper.getRequestCodeDesc``: the RequestCode field's name in lower case."""
    try:
        return RequestCode(code).name.lower()
    except ValueError:
        return str(code)


def response_code_desc(code: int) -> str:
    """Java ``RemotingHelper.getResponseCodeDesc``."""
    try:
        return ResponseCode(code).name.lower()
    except ValueError:
        return str(code)


def row_key(response_code: int, flag: int, long_polling: bool) -> int:
    """The key of a row within its request code's: response code, oneway and long polling in
    one int (``RPC_ONEWAY`` is 2), small for every common code, so the C twin makes no object."""
    return response_code * 4 + (flag & RPC_ONEWAY) + long_polling


def _rpc_count(state: tuple[dict[int, dict[int, Row]], Callable[..., object], frozenset[int], tuple[float, ...]],
               request: RemotingCommand, response: RemotingCommand | None, started: float, later: bool) -> object:
    """
    One answer counted into ``rows[code][row_key(...)]``, *state* being ``(rows, fallback,
    long_polling_codes, bounds)`` (the twin of ``_speedups.rpc_count``, which the processor
    tables call through a ``partial``: no Python frame on every request). A row not there yet
    is *fallback*'s (:meth:`RpcLatency.rpc_done`, which makes it).
    """
    if response is None:
        return None
    rows, fallback, long_polling_codes, bounds = state
    elapsed_ms = int((time.monotonic() - started) * 1000.0)
    code = request.code
    codes = rows.get(code)
    row = None if codes is None else codes.get(row_key(response.code, request.flag,
                                                       later and code in long_polling_codes))
    if row is None:
        return fallback(request, response, started, later)
    observe_row(row, bounds, elapsed_ms)  # Java records whole ms (Stopwatch.elapsed(MILLISECONDS))
    return None


rpc_count = speedups.rpc_count if speedups else _rpc_count


class RpcLatency:
    """
    The histogram, fed by :meth:`rpc_done` (a :class:`~rocketmq_tx.net.dispatch.ProcessorTable`
    observer).

    :param limit: series at most (request and response codes come from peers).
    """

    def __init__(self, limit: int, on_capped: Callable[[str, int], object] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # counted on every answer: compact rows (see SeriesTable)
        self.table = HistogramTable(RPC_LATENCY.name, RPC_LATENCY_BUCKETS, limit, on_capped, compact=True)
        self.clock = clock
        #: request code -> row_key -> the table's row: the hot path's cache
        self._rows: dict[int, dict[int, Row]] = {}
        self._cached = 0

    @property
    def observer(self) -> Callable[[RemotingCommand, RemotingCommand | None, float, bool], object]:
        """What a processor table calls on every answer: :func:`rpc_count` on the rows (C when
        the accelerator is there), :meth:`rpc_done` for a new row or a test's own clock."""
        if self.clock is not time.monotonic:
            return self.rpc_done
        # one tuple bound, not four items: see _speedups' unpack_state
        return partial(rpc_count, (self._rows, self.rpc_done, _LONG_POLLING_CODES, RPC_LATENCY_BUCKETS))

    def rpc_done(self, request: RemotingCommand, response: RemotingCommand | None, started: float,
                 later: bool) -> None:
        """
        A request was answered: its latency by request and response code; *later*: answered
        through a Deferred (a held pull or POP is Java's ``is_long_polling``). No response, no
        sample, as for Java's oneway requests.
        """
        if response is None:
            return
        elapsed_ms = int((self.clock() - started) * 1000.0)
        code = request.code
        long_polling = bool(later and code in _LONG_POLLING_CODES)
        codes = self._rows.get(code)
        row = None if codes is None else codes.get(row_key(response.code, request.flag, long_polling))
        if row is None:
            row = self._row(code, response.code, long_polling, request.flag & RPC_ONEWAY)
        observe_row(row, RPC_LATENCY_BUCKETS, elapsed_ms)

    def _row(self, code: int, response_code: int, long_polling: bool, oneway: int) -> Row:
        # the histogram row of raw codes, found once: a table never drops a row (the overflow
        # row included), so the hot path is two dict lookups
        if self._cached > 4 * self.table.limit:
            self._rows.clear()
            self._cached = 0
        key = ("remoting", request_code_desc(code), response_code_desc(response_code), bool_label(long_polling),
               "oneway" if oneway else "success")
        row = self.table.rows.get(key) or self.table.new_row(key)
        self._rows.setdefault(code, {})[row_key(response_code, oneway, long_polling)] = row
        self._cached += 1
        return row

    def build(self, common: Mapping[str, str]) -> Metric:
        """The family now."""
        return self.lazy(common)()

    def lazy(self, common: Mapping[str, str]) -> Callable[[], Metric]:
        """A copy of the histogram now, and the function building its family from it later."""
        rows, overflow = self.table.snapshot()
        return partial(RPC_LATENCY.build, dict(common), rows, overflow, bounds=RPC_LATENCY_BUCKETS)
