# -*- test-case-name: rocketmq_tx.broker.test.test_pop -*-
"""
FIFO POP's per-queue state (Java ``ConsumerOrderInfoManager`` and its ``OrderInfo``): which
offsets an ``order=true`` POP handed out, when, which are acked, how often each was handed
out, and per-offset visibility changes. A queue with messages handed out, not acked and not
yet visible again is blocked: no other POP gets anything from it, which keeps the order.

The group's offset is not moved by a FIFO POP; an ack moves it to the first offset not acked
(all acked: past the last).

Kept in ``config/consumerOrderInfo.json`` as Java 5.x keeps it, so a blocked queue stays
blocked across a restart and either broker takes the other's file over. Java writes it every
10 s and at shutdown (so does the broker service here); on encoding it drops entries whose
topic or group is gone, queue ids past the topic's read queues and queues not popped for 24 h.
The shape (fastjson field names of Java's ``OrderInfo``; offsets as the first one followed by
differences from it)::

    {"orderInfoCount": 1, "orderedConsumptionLevel": "QUEUE",
     "table": {"<topic>@<group>": {"<queueId>": {"popTime": 1, "i": 60000, "o": [7, 1, 2],
        "ot": {"8": 2}, "oc": {"7": 1}, "l": 1, "cm": 1, "a": "<attemptId>"}}}}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_tx.store.configfile import ConfigFile, dumps

__all__ = ["OrderInfo", "ConsumerOrderInfoManager", "CLEAN_SPAN_FROM_LAST_MS"]

#: Java ``CLEAN_SPAN_FROM_LAST``: a queue not popped for a day is forgotten
CLEAN_SPAN_FROM_LAST_MS = 24 * 3600 * 1000


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
    #: ms of the POP that made this entry (Java ``lastConsumeTimestamp``), for the clean-up
    last_consume_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        """Java's fastjson form (null fields left out, as fastjson leaves them)."""
        first = self.offsets[0] if self.offsets else 0
        out: dict[str, Any] = {"popTime": self.pop_time, "i": self.invisible_time,
                               "o": [o if i == 0 else o - first for i, o in enumerate(self.offsets)]}
        if self.next_visible:
            out["ot"] = {str(k): v for k, v in self.next_visible.items()}
        if self.consumed_count:
            out["oc"] = {str(k): v for k, v in self.consumed_count.items()}
        out["l"] = self.last_consume_timestamp
        out["cm"] = self.commit_bits
        if self.attempt_id is not None:
            out["a"] = self.attempt_id
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OrderInfo:
        """Read one entry of either broker's file; raises ValueError/TypeError/KeyError on a bad one."""
        compact = [int(o) for o in data.get("o") or ()]
        offsets = [o if i == 0 else compact[0] + o for i, o in enumerate(compact)]
        attempt = data.get("a")
        return cls(pop_time=int(data.get("popTime", 0)), invisible_time=int(data.get("i") or 0), offsets=offsets,
                   attempt_id=None if attempt is None else str(attempt), commit_bits=int(data.get("cm", 0)),
                   next_visible={int(k): int(v) for k, v in dict(data.get("ot") or {}).items()},
                   consumed_count={int(k): int(v) for k, v in dict(data.get("oc") or {}).items()},
                   last_consume_timestamp=int(data.get("l", 0)))

    def snapshot(self) -> OrderInfo:
        """A copy whose later encoding in another thread sees this moment's state."""
        return OrderInfo(self.pop_time, self.invisible_time, self.offsets, self.attempt_id, self.commit_bits,
                         dict(self.next_visible), self.consumed_count, self.last_consume_timestamp)

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
    """
    ``(topic, group) -> queue id -> OrderInfo``; the caller passes the clock (ms).

    :param path: ``<storePathRootDir>/config/consumerOrderInfo.json``.
    :ivar read_queue_nums: topic -> its read queue count, ``None`` when the topic is gone
        (set by the broker; the clean-up on encoding uses it).
    :ivar group_exists: whether a subscription group is known (likewise).
    """

    def __init__(self, path: str) -> None:
        self.table: dict[tuple[str, str], dict[int, OrderInfo]] = {}
        self.file = ConfigFile(path)
        self.read_queue_nums: Callable[[str], int | None] = lambda topic: None
        self.group_exists: Callable[[str], bool] = lambda group: False

    # ------------------------------------------------------------------ file

    def load(self) -> bool:
        """Merge the file (missing: empty). ``False`` when it is unreadable (nothing merged)."""
        data = self.file.load()
        if data is None:
            return True
        table: dict[tuple[str, str], dict[int, OrderInfo]] = {}
        try:
            for key, queues in dict(data.get("table") or {}).items():
                topic, sep, group = str(key).partition("@")
                if not sep or "@" in group:
                    continue  # Java skips a key that does not split in two
                table[(topic, group)] = {int(qid): OrderInfo.from_json(dict(info))
                                         for qid, info in dict(queues or {}).items()}
        except (TypeError, ValueError, KeyError, AttributeError, IndexError):
            return False
        self.table.update(table)
        return True

    def auto_clean(self, now_ms: int) -> None:
        """Java ``autoClean``: forget what no longer has a topic, group or queue, or lies idle a day."""
        for key in list(self.table):
            topic, group = key
            queues = self.table[key]
            read_queues = self.read_queue_nums(topic)
            if read_queues is None or not self.group_exists(group) or not queues:
                del self.table[key]
                continue
            for qid in [q for q, info in queues.items()
                        if q >= read_queues or now_ms - info.last_consume_timestamp > CLEAN_SPAN_FROM_LAST_MS]:
                del queues[qid]

    def snapshot(self, now_ms: int) -> Callable[[], str]:
        """Clean, copy the table now (small: FIFO queues in use); the function encodes it in any thread."""
        self.auto_clean(now_ms)
        copy = {f"{topic}@{group}": {qid: info.snapshot() for qid, info in queues.items()}
                for (topic, group), queues in self.table.items()}
        # 5.5.0 also writes two derived fields (from getters), read by nobody: written alike.
        return lambda: dumps({"orderInfoCount": len(copy), "orderedConsumptionLevel": "QUEUE",
                              "table": {key: {str(qid): info.to_json() for qid, info in queues.items()}
                                        for key, queues in copy.items()}})

    # ------------------------------------------------------------------ FIFO POP

    def update(self, attempt_id: str | None, topic: str, group: str, queue_id: int, pop_time: int,
               invisible_time: int, offsets: list[int]) -> tuple[dict[int, int], int]:
        """
        Record a FIFO POP of *offsets*; returns ``({offset: times handed out before}, the
        smallest of them)`` for the response's ``orderCountInfo`` (Java ``update``).
        """
        queues = self.table.setdefault((topic, group), {})
        previous = queues.get(queue_id)
        info = OrderInfo(pop_time, invisible_time, list(offsets), attempt_id, last_consume_timestamp=pop_time)
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
