"""Offset JSON, admission control and partition planning: pure functions, checked with Hypothesis."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.spark.offsets import QueueRange, from_json, limit_offsets, plan_ranges, to_json

A0, A1, B0 = ("T", "broker-a", 0), ("T", "broker-a", 1), ("T", "broker-b", 0)

keys = st.tuples(st.sampled_from(["T", "U"]), st.sampled_from(["broker-a", "broker-b"]), st.integers(0, 15))
#: (start, lag) per queue
queue_states = st.dictionaries(keys, st.tuples(st.integers(0, 10**6), st.integers(0, 10**4)), max_size=12)


class JsonTests(SynchronousTestCase):
    def test_shape(self) -> None:
        doc = to_json({B0: 7, A1: 3, A0: 5})
        self.assertEqual(json.dumps(doc), '{"T": {"broker-a": {"0": 5, "1": 3}, "broker-b": {"0": 7}}}')
        self.assertEqual(from_json(json.loads(json.dumps(doc))), {A0: 5, A1: 3, B0: 7})


class LimitTests(SynchronousTestCase):
    def test_no_limit_or_under_it(self) -> None:
        self.assertEqual(limit_offsets({A0: 5, A1: 0}, {A0: 10, A1: 4}, None), {A0: 10, A1: 4})
        self.assertEqual(limit_offsets({A0: 5, A1: 0}, {A0: 10, A1: 4}, 9), {A0: 10, A1: 4})

    def test_proportional(self) -> None:
        """Lags 90 and 10 under a limit of 20: 18 and 2, as Kafka splits."""
        self.assertEqual(limit_offsets({A0: 0, A1: 100}, {A0: 90, A1: 110}, 20), {A0: 18, A1: 102})

    def test_remainder_handed_out(self) -> None:
        """Three equal lags under a limit of 10: 4 + 3 + 3, the first queue breaking the tie."""
        self.assertEqual(limit_offsets({A0: 0, A1: 0, B0: 0}, {A0: 9, A1: 9, B0: 9}, 10), {A0: 4, A1: 3, B0: 3})

    def test_missing_and_new_queues(self) -> None:
        """A queue whose broker is away keeps its offset; a new queue starts where it is told to."""
        self.assertEqual(limit_offsets({A0: 4, A1: 8}, {A0: 6, B0: 12}, None, {B0: 10}), {A0: 6, A1: 8, B0: 12})
        self.assertEqual(limit_offsets({A0: 4}, {A0: 2}, None), {A0: 4})

    @given(queue_states, st.integers(1, 5000), st.dictionaries(keys, st.integers(0, 10**6), max_size=3))
    def test_properties(self, states, limit, gone) -> None:
        start = {k: s for k, (s, _) in states.items()}
        start.update({k: v for k, v in gone.items() if k not in states})
        latest = {k: s + lag for k, (s, lag) in states.items()}
        end = limit_offsets(start, latest, limit)
        total = sum(lag for _, lag in states.values())
        self.assertEqual(set(end), set(start) | set(latest))
        for key, offset in end.items():
            self.assertGreaterEqual(offset, start[key])
            self.assertLessEqual(offset, latest.get(key, start[key]))
        self.assertEqual(sum(end[k] - start[k] for k in end), min(total, limit))


class PlanTests(SynchronousTestCase):
    def test_one_range_per_queue_with_data(self) -> None:
        self.assertEqual(plan_ranges({A0: 0, A1: 5, B0: 2}, {A0: 3, A1: 5, B0: 4}),
                         [QueueRange("T", "broker-a", 0, 0, 3), QueueRange("T", "broker-b", 0, 2, 4)])

    def test_min_partitions_halves_the_widest(self) -> None:
        ranges = plan_ranges({A0: 0, A1: 0}, {A0: 100, A1: 10}, 4)
        self.assertEqual([(r.queue_id, r.start, r.end) for r in ranges], [(0, 0, 25), (0, 25, 50), (0, 50, 100),
                                                                           (1, 0, 10)])
        self.assertEqual(len(plan_ranges({A0: 0}, {A0: 3}, 10)), 3)

    def test_new_queue_flag(self) -> None:
        [fresh] = plan_ranges({}, {B0: 4}, None, new_queues=[B0])
        self.assertEqual((fresh.start, fresh.end, fresh.new_queue), (0, 4, True))

    @given(queue_states, st.one_of(st.none(), st.integers(1, 64)))
    def test_ranges_cover_each_offset_once(self, states, min_partitions) -> None:
        start = {k: s for k, (s, _) in states.items()}
        end = {k: s + lag for k, (s, lag) in states.items()}
        ranges = plan_ranges(start, end, min_partitions)
        self.assertEqual(ranges, plan_ranges(start, end, min_partitions))  # deterministic
        covered: dict = {}
        for r in ranges:
            self.assertGreater(r.end, r.start)
            covered.setdefault((r.topic, r.broker_name, r.queue_id), []).append((r.start, r.end))
        for key, pieces in covered.items():
            pieces.sort()
            self.assertEqual(pieces[0][0], start[key])
            self.assertEqual(pieces[-1][1], end[key])
            for (_, a_end), (b_start, _) in zip(pieces, pieces[1:]):
                self.assertEqual(a_end, b_start)
        self.assertEqual(set(covered), {k for k in end if end[k] > start[k]})
        if min_partitions is not None:
            total = sum(end[k] - start[k] for k in end)
            self.assertGreaterEqual(len(ranges), min(min_partitions, total))
