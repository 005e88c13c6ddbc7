# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
FIFO POP's per-queue state (Java ``ConsumerOrderInfoManager`` and its ``OrderInfo``): which
offsets an ``order=true`` POP handed out, when, which are acked, how often each was handed
out, and per-offset visibility changes. A queue with messages handed out, not acked and not
yet visible again is blocked: no other POP gets anything from it, which keeps the order.

The group's offset is not moved by a FIFO POP; an ack moves it to the first offset not acked
(all acked: past the last). Kept in memory only: Java persists it (``consumerOrderInfo.json``);
after our restart a blocked queue is free at once, so its unacked messages come again early.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["OrderInfo", "ConsumerOrderInfoManager"]


@dataclass(slots=True)
class OrderInfo:
    """What one FIFO POP handed out of one queue."""

    pop_time: int
    invisible_time: int
    offsets: list[int]
    attempt_id: str | None = None
    commit_bits: int = 0
    #: offset -> ms when it is visible again (CHANGE_MESSAGE_INVISIBLETIME)
    next_visible: dict[int, int] = field(default_factory=dict)
    #: offset -> times handed out before this POP (only offsets handed out again)
    consumed_count: dict[int, int] = field(default_factory=dict)

    def need_block(self, attempt_id: str | None, invisible_time: int, now_ms: int) -> bool:
        """``OrderInfo.needBlock``: a message handed out, not acked and not visible yet."""
        if not self.offsets:
            return False
        if self.attempt_id is not None and self.attempt_id == attempt_id:
            return False  # the same attempt asking again (a retried request) is not blocked
        if self.invisible_time <= 0:
            self.invisible_time = invisible_time
        for i, offset in enumerate(self.offsets):
            if not self.commit_bits & (1 << i):
                visible = self.next_visible.get(offset, self.pop_time + self.invisible_time)
                if now_ms < visible:
                    return True
        return False

    def next_offset(self) -> int:
        """``getNextOffset``: the first offset not acked, or past the last when all are."""
        for i, offset in enumerate(self.offsets):
            if not self.commit_bits & (1 << i):
                return offset
        return self.offsets[-1] + 1


class ConsumerOrderInfoManager:
    """``(topic, group) -> queue id -> OrderInfo``; the caller passes the clock (ms)."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, str], dict[int, OrderInfo]] = {}

    def update(self, attempt_id: str | None, topic: str, group: str, queue_id: int, pop_time: int,
               invisible_time: int, offsets: list[int]) -> tuple[dict[int, int], int]:
        """
        Record a FIFO POP of *offsets*; returns ``({offset: times handed out before}, the
        smallest of them)`` for the response's ``orderCountInfo`` (Java ``update``).
        """
        queues = self.table.setdefault((topic, group), {})
        previous = queues.get(queue_id)
        info = OrderInfo(pop_time, invisible_time, list(offsets), attempt_id)
        if previous is not None:
            if previous.attempt_id is not None and previous.attempt_id == attempt_id:
                info.consumed_count = previous.consumed_count
            else:
                before = set(previous.offsets)
                info.consumed_count = {o: previous.consumed_count.get(o, 0) + 1 for o in offsets if o in before}
        queues[queue_id] = info
        counts = {o: info.consumed_count[o] for o in offsets if o in info.consumed_count}
        minimum = min(counts.values()) if counts and len(counts) == len(offsets) else 0
        return counts, minimum

    def check_block(self, attempt_id: str | None, topic: str, group: str, queue_id: int, invisible_time: int,
                    now_ms: int) -> bool:
        """Whether the queue is blocked for a FIFO POP (Java ``checkBlock``)."""
        info = self.table.get((topic, group), {}).get(queue_id)
        return info is not None and info.need_block(attempt_id, invisible_time, now_ms)

    def commit_and_next(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int) -> int:
        """
        An ack of *offset* from the POP at *pop_time*: the group's next offset, or -1 (the
        offset is not one the POP handed out), -2 (a stale POP), as Java ``commitAndNext``.
        """
        info = self.table.get((topic, group), {}).get(queue_id)
        if info is None:
            return offset + 1
        if not info.offsets:
            return -1
        if pop_time != info.pop_time:
            return -2
        try:
            index = info.offsets.index(offset)
        except ValueError:
            return -1
        info.commit_bits |= 1 << index
        return info.next_offset()

    def update_next_visible_time(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int,
                                 next_visible_ms: int) -> None:
        """CHANGE_MESSAGE_INVISIBLETIME of a FIFO message (ignored for a stale POP)."""
        info = self.table.get((topic, group), {}).get(queue_id)
        if info is not None and info.pop_time == pop_time:
            info.next_visible[offset] = next_visible_ms
