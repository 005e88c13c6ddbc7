# -*- test-case-name: rocketmq_tx.remoting.test.test_framing -*-
"""Request ids: a signed 32-bit counter that wraps, as Java's ``AtomicInteger`` does."""

from __future__ import annotations

__all__ = ["OpaqueSequence"]


class OpaqueSequence:
    """Hands out opaques; one per client connection pool is enough (ids are per connection)."""

    __slots__ = ("_next",)

    def __init__(self, start: int = 0) -> None:
        self._next = start

    def __call__(self) -> int:
        value = self._next
        self._next = -0x80000000 if value == 0x7FFFFFFF else value + 1
        return value
