# -*- test-case-name: rocketmq_tx.net.test.test_dispatch -*-
"""
:class:`FirstSeen`: "is this the first time?" over a bounded set, for logging a refusal
once per cause without letting a peer that invents causes grow memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["FirstSeen"]


class FirstSeen:
    """The *capacity* most recently seen keys; the least recently seen is forgotten first."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._seen: OrderedDict[Hashable, None] = OrderedDict()

    def first(self, key: Hashable) -> bool:
        """``True`` if *key* is not among the keys remembered (it is remembered from now on)."""
        seen = self._seen
        if key in seen:
            seen.move_to_end(key)
            return False
        seen[key] = None
        if len(seen) > self.capacity:
            seen.popitem(last=False)
        return True

    def clear(self) -> None:
        self._seen.clear()

    def __len__(self) -> int:
        return len(self._seen)
