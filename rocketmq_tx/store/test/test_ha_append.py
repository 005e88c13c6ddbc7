"""
A slave's store (Java ``appendToCommitLog`` and the slave's reput): the master's CommitLog
bytes appended verbatim, files rolled where the master rolled them, records dispatched
once complete, and recovery after a crash resuming at the slave's own valid end.
"""

from __future__ import annotations

import os
import random

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.store.config import BrokerRole
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.store import DefaultMessageStore
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root

FILE = 64 * 1024


def fill(master: DefaultMessageStore, n: int, seed: int = 1) -> None:
    rnd = random.Random(seed)
    for i in range(n):
        body = bytes([i % 251]) * rnd.randrange(10, 3000)
        r = master.put_message(message(f"T{i % 3}", body, i % 4, tags=f"tag{i % 5}", keys=f"k{i}", uniq=f"U{i:08d}"))
        assert r.status is PutMessageStatus.PUT_OK, r


def replicate(master: DefaultMessageStore, slave: DefaultMessageStore, start: int, batch: int,
              until: int | None = None) -> int:
    """Push master bytes from *start* in HA-sized batches, as HAConnection does; the new offset."""
    off = start
    end = master.get_max_phy_offset() if until is None else until
    while off < end:
        data = master.commit_log.get_data(off, min(batch, end - off))
        assert data is not None, off
        assert slave.append_to_commit_log(off, data), off
        off += len(data)
    return off


def files_of(store: DefaultMessageStore) -> dict[str, bytes]:
    d = store.config.store_path_commit_log
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))}


def queue_entries(store: DefaultMessageStore) -> dict[tuple[str, int], list]:
    out = {}
    for topic, queues in store.consume_queue_table.items():
        for qid, cq in queues.items():
            lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
            out[(topic, qid)] = [cq.get_entry(i) for i in range(lo, hi)]
    return out


class SlaveAppendTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock()
        self.master = open_store(os.path.join(self.root, "m"), self.clock, mapped_file_size_commit_log=FILE)
        self.addCleanup(self.master.shutdown)

    def open_slave(self, name: str = "s") -> DefaultMessageStore:
        slave = open_store(os.path.join(self.root, name), self.clock, mapped_file_size_commit_log=FILE,
                           broker_role=BrokerRole.SLAVE)
        return slave

    def test_byte_identical_from_zero(self) -> None:
        """Batches of any size, records split across them: same files, same queues, same reads."""
        fill(self.master, 300)
        self.assertGreater(len(self.master.commit_log.mapped_file_queue.files), 3)
        slave = self.open_slave()
        self.addCleanup(slave.shutdown)
        replicate(self.master, slave, 0, 1000)
        self.assertEqual(slave.get_max_phy_offset(), self.master.get_max_phy_offset())
        self.assertEqual(files_of(slave), files_of(self.master))
        self.assertEqual(queue_entries(slave), queue_entries(self.master))
        self.assertEqual(slave.topic_queue_table, self.master.topic_queue_table)
        self.assertEqual(slave.dispatch_behind_bytes(), 0)
        got = slave.get_message("g", "T1", 2, 0, 32)
        want = self.master.get_message("g", "T1", 2, 0, 32)
        self.assertEqual([bytes(m) for m in got.message_buffers], [bytes(m) for m in want.message_buffers])
        q = slave.query_message("T1", "k1", 10, 0, 2**62)
        self.assertEqual(len(q.message_buffers), 1)

    def test_partial_record_waits(self) -> None:
        """A batch ending inside a record: that record is dispatched when its rest arrives."""
        fill(self.master, 3)
        slave = self.open_slave()
        self.addCleanup(slave.shutdown)
        first = self.master.get_message("g", "T0", 0, 0, 1).message_buffers
        self.assertTrue(first)
        replicate(self.master, slave, 0, 32 * 1024, until=100)
        self.assertEqual(slave.get_max_offset_in_queue("T0", 0), 0)
        self.assertEqual(slave.dispatch_behind_bytes(), 100)
        replicate(self.master, slave, 100, 32 * 1024)
        self.assertEqual(slave.get_max_offset_in_queue("T0", 0), 1)
        self.assertEqual(slave.dispatch_behind_bytes(), 0)

    def test_dispatch_later(self) -> None:
        """dispatch=False appends only (the log grows, the queues do not); dispatch_appended catches up."""
        fill(self.master, 40)
        slave = self.open_slave()
        self.addCleanup(slave.shutdown)
        end = self.master.get_max_phy_offset()
        off = 0
        while off < end:
            data = self.master.commit_log.get_data(off, 7000)
            assert data is not None
            self.assertTrue(slave.append_to_commit_log(off, data, dispatch=False))
            off += len(data)
        self.assertEqual(slave.get_max_phy_offset(), end)
        self.assertEqual(slave.dispatch_behind_bytes(), end)
        self.assertEqual(queue_entries(slave), {})
        slave.dispatch_appended()
        self.assertEqual(slave.dispatch_behind_bytes(), 0)
        self.assertEqual(queue_entries(slave), queue_entries(self.master))

    def test_new_slave_starts_at_last_file(self) -> None:
        """An empty slave fed from the start of the master's last file (Java's first transfer)."""
        fill(self.master, 200)
        last = self.master.commit_log.mapped_file_queue.last()
        assert last is not None
        start = last.file_from_offset
        self.assertGreater(start, 0)
        slave = self.open_slave()
        self.addCleanup(slave.shutdown)
        replicate(self.master, slave, start, 32 * 1024)
        self.assertEqual(slave.get_min_phy_offset(), start)
        mine = files_of(slave)
        self.assertEqual(list(mine), [last.file_name])
        self.assertEqual(mine[last.file_name], files_of(self.master)[last.file_name])
        # the queues begin where the file does: reads from there on match the master's
        for (topic, qid), entries in queue_entries(slave).items():
            self.assertTrue(entries, (topic, qid))
            lo = slave.get_min_offset_in_queue(topic, qid)
            self.assertEqual(slave.get_max_offset_in_queue(topic, qid),
                             self.master.get_max_offset_in_queue(topic, qid))
            got = slave.get_message("g", topic, qid, lo, 32).message_buffers
            want = self.master.get_message("g", topic, qid, lo, 32).message_buffers
            self.assertEqual(got, want)
        # and it goes on with what the master appends next, across the next file roll
        fill(self.master, 60, seed=2)
        replicate(self.master, slave, slave.get_max_phy_offset(), 32 * 1024)
        theirs = files_of(self.master)
        for name, data in files_of(slave).items():
            self.assertEqual(data, theirs[name])

    def test_refusals(self) -> None:
        """Bytes that do not continue the log, or cross a file's end, are refused; nothing written."""
        fill(self.master, 50)
        slave = self.open_slave()
        self.addCleanup(slave.shutdown)
        self.assertFalse(slave.append_to_commit_log(100, b"x" * 10))  # an empty log starts at a file
        self.assertTrue(slave.append_to_commit_log(0, b""))  # a heartbeat frame: nothing to write
        self.assertEqual(slave.get_max_phy_offset(), 0)
        replicate(self.master, slave, 0, 4096, until=5000)
        self.assertFalse(slave.append_to_commit_log(4999, b"y"))
        self.assertFalse(slave.append_to_commit_log(6000, b"y"))
        self.assertFalse(slave.append_to_commit_log(5000, b"z" * FILE))
        self.assertEqual(slave.get_max_phy_offset(), 5000)
        self.assertEqual(slave.put_message(message()).status, PutMessageStatus.SERVICE_NOT_AVAILABLE)

    def test_crash_resumes_at_own_offset(self) -> None:
        """Killed with a record half replicated: recovery cuts it, replication resumes from there."""
        fill(self.master, 250)
        slave = self.open_slave()
        cut = 3 * FILE + 5000
        replicate(self.master, slave, 0, 32 * 1024, until=cut)
        self.assertEqual(slave.get_max_phy_offset(), cut)
        slave.simulate_crash()
        slave = DefaultMessageStore(slave.config, now=self.clock)
        self.addCleanup(slave.shutdown)
        self.assertTrue(slave.load())
        slave.start()
        recovered = slave.get_max_phy_offset()
        self.assertLess(recovered, cut)  # the cut falls inside a record (sizes are seeded)
        self.assertGreater(recovered, 3 * FILE)  # a record was complete
        # the recovered end is a record boundary of the master's log
        self.assertIsNotNone(self.master.look_message_by_offset(recovered))
        replicate(self.master, slave, recovered, 32 * 1024)
        self.assertEqual(files_of(slave), files_of(self.master))
        self.assertEqual(queue_entries(slave), queue_entries(self.master))
        self.assertEqual(slave.topic_queue_table, self.master.topic_queue_table)
