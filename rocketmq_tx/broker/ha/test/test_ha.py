"""
The HA master (HAService/HAConnection) and slave (HAClient) over an in-memory connection:
what they send each other, where the transfer starts, and when they drop the connection.
"""

from __future__ import annotations

import os

from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import capturedLogs, formatEvent
from twisted.test import iosim
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.broker.ha import master as master_module
from rocketmq_tx.broker.ha.client import HAClient, HAClientProtocol
from rocketmq_tx.broker.ha.master import HAConnection, HAService
from rocketmq_tx.remoting.ha import FrameDecoder, encode_frame_header, encode_report
from rocketmq_tx.store.config import BrokerRole
from rocketmq_tx.store.status import PutMessageStatus
from rocketmq_tx.store.test.test_ha_append import FILE, files_of, fill, queue_entries
from rocketmq_tx.store.test.util import open_store, temp_root


class HATestBase(SynchronousTestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        self.clock = Clock()
        self.clock.advance(1000)
        self.master = open_store(os.path.join(self.root, "m"), mapped_file_size_commit_log=FILE)
        self.addCleanup(self.master.shutdown)
        self.slave = open_store(os.path.join(self.root, "s"), mapped_file_size_commit_log=FILE,
                                broker_role=BrokerRole.SLAVE)
        self.addCleanup(self.slave.shutdown)
        self.service = HAService(self.master, self.clock)
        self.client = HAClient(self.slave, self.clock)

    def connect(self) -> tuple[HAClientProtocol, HAConnection, iosim.IOPump]:
        client, server, pump = iosim.connectedServerAndClient(
            lambda: self.service.buildProtocol(None), lambda: HAClientProtocol(self.client), clock=self.clock)
        return client, server, pump

    def run_until(self, pump: iosim.IOPump, done, turns: int = 2000) -> None:
        for _ in range(turns):
            if done():
                return
            self.clock.advance(0)
            pump.flush()
        self.fail("did not converge")


class ReplicationTests(HATestBase):
    def test_new_slave_gets_last_file_then_follows(self) -> None:
        """An empty slave reports 0 and gets the master's last file on, byte for byte; then new puts."""
        fill(self.master, 200)
        last = self.master.commit_log.mapped_file_queue.last()
        assert last is not None and last.file_from_offset > 0
        client, server, pump = self.connect()
        self.assertEqual(server.slave_request_offset, 0)
        self.run_until(pump, lambda: self.slave.get_max_phy_offset() == self.master.get_max_phy_offset())
        self.assertEqual(self.slave.get_min_phy_offset(), last.file_from_offset)
        fill(self.master, 100, seed=3)
        self.service.wakeup_all()
        self.run_until(pump, lambda: self.slave.get_max_phy_offset() == self.master.get_max_phy_offset())
        theirs = files_of(self.master)
        mine = files_of(self.slave)
        self.assertGreater(len(mine), 1)
        for name, data in mine.items():
            self.assertEqual(data, theirs[name])
        # the slave's ack comes back: push2SlaveMaxOffset is the master's end
        self.run_until(pump, lambda: self.service.push2slave_max_offset == self.master.get_max_phy_offset())
        self.assertTrue(self.service.is_slave_ok(self.master.get_max_phy_offset()))
        self.assertEqual(server.slave_ack_offset, self.master.get_max_phy_offset())

    def test_slave_resumes_from_its_offset(self) -> None:
        """A slave holding part of the log asks for the rest; everything ends identical."""
        fill(self.master, 300)
        off = 0
        while off < 2 * FILE + 1234:
            data = self.master.commit_log.get_data(off, 32 * 1024)
            assert data is not None
            self.assertTrue(self.slave.append_to_commit_log(off, data))
            off += len(data)
        client, server, pump = self.connect()
        self.assertEqual(server.slave_request_offset, off)
        self.run_until(pump, lambda: self.slave.get_max_phy_offset() == self.master.get_max_phy_offset())
        self.assertEqual(files_of(self.slave), files_of(self.master))
        self.assertEqual(queue_entries(self.slave), queue_entries(self.master))

    def test_batches_bounded_and_paused(self) -> None:
        """Frames carry at most haTransferBatchSize bytes, never past a file; a paused transport gets none."""
        fill(self.master, 300)
        proto = self.service.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        proto.dataReceived(encode_report(1))  # not 0: the transfer starts where asked, even inside a record
        proto.pauseProducing()
        self.clock.advance(0)
        self.assertEqual(transport.value(), b"")
        proto.resumeProducing()
        self.clock.advance(0)
        frames = FrameDecoder().feed(transport.value())
        self.assertEqual(frames[0][0], 1)
        self.assertEqual(frames[-1][0] + len(frames[-1][1]), self.master.get_max_phy_offset())
        for (o1, b1), (o2, _b2) in zip(frames, frames[1:]):
            self.assertEqual(o1 + len(b1), o2)
        for o, b in frames:
            self.assertLessEqual(len(b), 32 * 1024)
            self.assertEqual(o // FILE, (o + len(b) - 1) // FILE)
            self.assertEqual(b, self.master.commit_log.get_data(o, len(b)))

    def test_put_pushed_in_the_next_turn(self) -> None:
        """A put's wake-up pushes the new bytes in the very next reactor turn (a SYNC_MASTER send
        waits for them), not one turn later."""
        fill(self.master, 10)
        proto = self.service.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        self.service.connection_made(proto)
        proto.dataReceived(encode_report(self.master.get_max_phy_offset()))
        self.clock.advance(0)
        transport.clear()
        start = self.master.get_max_phy_offset()
        fill(self.master, 1, seed=5)
        self.service.wakeup_all()
        # one reactor turn: only the calls scheduled so far run (Clock.advance would run the
        # calls they schedule too)
        for call in [c for c in self.clock.getDelayedCalls() if c.getTime() <= self.clock.seconds()]:
            self.clock.calls.remove(call)
            call.func(*call.args, **call.kw)
        frames = FrameDecoder().feed(transport.value())
        self.assertEqual([o for o, _ in frames], [start])
        self.assertEqual(start + len(frames[0][1]), self.master.get_max_phy_offset())


class AckLatencyTests(HATestBase):
    """What a SYNC_MASTER send waits for leaves at once, not at a later reactor turn."""

    def test_push_flushed_at_once(self) -> None:
        """The master sends a push in the turn that made it (our HA port's transports have flush_now)."""
        fill(self.master, 10)
        transport = _FlushCounting()
        proto = self.service.buildProtocol(None)
        proto.makeConnection(transport)
        proto.dataReceived(encode_report(1))
        self.clock.advance(0)
        self.assertTrue(transport.value())
        self.assertEqual(transport.flushes, 1)

    def test_slave_reports_before_dispatching(self) -> None:
        """The slave's ack is written (and sent) before it dispatches the appended records, as
        Java's, whose ReputMessageService dispatches on its own thread."""
        fill(self.master, 20)
        proto = HAClientProtocol(self.client)
        transport = StringTransport()
        proto.makeConnection(transport)
        transport.clear()
        seen: list[tuple[bytes, dict]] = []
        dispatch = self.slave.dispatch_appended

        def record() -> None:
            seen.append((transport.value(), queue_entries(self.slave)))
            dispatch()
        self.patch(self.slave, "dispatch_appended", record)
        data = self.master.commit_log.get_data(0, 32 * 1024)
        assert data is not None
        proto.dataReceived(encode_frame_header(0, len(data)) + data)
        self.assertEqual(seen, [(encode_report(len(data)), {})])
        self.assertEqual(self.slave.dispatch_behind_bytes(), 0)
        self.assertTrue(queue_entries(self.slave))

    def test_ack_flushes_late_answers(self) -> None:
        """An ack that completes SYNC_MASTER waits sends their answers at once; one that completes none does not."""
        calls: list[int] = []
        self.patch(master_module, "flush_late_answers", lambda: calls.append(1))
        fill(self.master, 10)
        end = self.master.get_max_phy_offset()
        proto = self.service.buildProtocol(None)
        proto.makeConnection(StringTransport())
        proto.dataReceived(encode_report(0))
        waiting = self.service.wait_for_slave(end, 3.0)
        proto.dataReceived(encode_report(end - 1))
        self.assertEqual(calls, [])
        proto.dataReceived(encode_report(end))
        self.assertEqual(self.successResultOf(waiting), PutMessageStatus.PUT_OK)
        self.assertEqual(calls, [1])


class _FlushCounting(StringTransport):
    flushes = 0

    def flush_now(self) -> None:
        self.flushes += 1


class RefusalTests(HATestBase):
    def test_master_drops_slave_ahead_of_it(self) -> None:
        """After the first report, one beyond the master's log closes the connection (Java's check)."""
        fill(self.master, 5)
        proto = self.service.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        proto.dataReceived(encode_report(10**12))  # the first is taken as the request offset
        self.assertFalse(transport.disconnecting)
        proto.dataReceived(encode_report(10**12 + 8))
        self.assertTrue(transport.disconnecting)

    def test_first_report_logged_once_per_connection(self) -> None:
        """The slave's first offset is logged once, with its address (Java's "request offset" line); later ones not."""
        fill(self.master, 5)
        end = self.master.get_max_phy_offset()
        with capturedLogs() as events:
            for port in (40001, 40002):
                proto = self.service.buildProtocol(None)
                proto.makeConnection(StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.7", port)))
                proto.dataReceived(encode_report(0))
                proto.dataReceived(encode_report(end) + encode_report(end))
        lines = [formatEvent(e) for e in events if "request offset" in e.get("log_format", "")]
        self.assertEqual(lines, ["slave[10.0.0.7:40001] request offset 0", "slave[10.0.0.7:40002] request offset 0"])

    def test_first_report_beyond_master(self) -> None:
        """
        A first offset beyond the master's log is taken as Java 4.9.8 takes it (heartbeats at it,
        no data), dropped at the slave's next report, and never counted as a slave's ack.
        """
        fill(self.master, 5)
        end = self.master.get_max_phy_offset()
        waiting = self.service.wait_for_slave(end, 3.0)
        got: list = []
        waiting.addCallback(got.append)
        proto = self.service.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        proto.dataReceived(encode_report(10**12))
        self.assertEqual((proto.slave_request_offset, proto.next_transfer_from_where), (10**12, 10**12))
        self.assertEqual(self.service.push2slave_max_offset, 0)
        self.assertEqual(got, [])
        self.clock.advance(5.5)
        self.service.tick()
        self.assertEqual(transport.value(), encode_frame_header(10**12, 0))
        self.assertFalse(transport.disconnecting)
        proto.dataReceived(encode_report(10**12))  # the slave's heartbeat report
        self.assertTrue(transport.disconnecting)
        self.assertEqual(got, [PutMessageStatus.FLUSH_SLAVE_TIMEOUT])

    def test_slave_drops_gap(self) -> None:
        """A frame that does not start at the slave's end closes the connection."""
        fill(self.master, 50)
        data = self.master.commit_log.get_data(0, 4096)
        assert data is not None
        self.assertTrue(self.slave.append_to_commit_log(0, data))
        proto = HAClientProtocol(self.client)
        transport = StringTransport()
        proto.makeConnection(transport)
        self.assertEqual(transport.value(), encode_report(4096))  # reported at once
        more = self.master.commit_log.get_data(5000, 100)
        assert more is not None
        proto.dataReceived(encode_frame_header(5000, 100) + more)
        self.assertTrue(transport.disconnecting)
        self.assertEqual(self.slave.get_max_phy_offset(), 4096)

    def test_heartbeat_and_housekeeping(self) -> None:
        """An idle master sends an empty frame after 5 s; a slave silent 20 s is dropped."""
        fill(self.master, 5)
        proto = self.service.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        proto.dataReceived(encode_report(0))
        self.clock.advance(0)
        end = self.master.get_max_phy_offset()
        transport.clear()
        self.clock.advance(5.5)
        self.service.tick()
        self.assertEqual(transport.value(), encode_frame_header(end, 0))
        self.clock.advance(15)
        self.service.tick()
        self.assertTrue(transport.disconnecting)

    def test_slave_drops_silent_master(self) -> None:
        """Nothing from the master for haHousekeepingInterval (it heartbeats every 5 s): closed."""
        proto = HAClientProtocol(self.client)
        transport = StringTransport()
        proto.makeConnection(transport)
        self.clock.advance(19)
        proto.dataReceived(encode_frame_header(0, 0))
        self.clock.advance(19)
        proto.tick(self.clock.seconds())
        self.assertFalse(transport.disconnecting)
        self.clock.advance(2)
        proto.tick(self.clock.seconds())
        self.assertTrue(transport.disconnecting)

    def test_slave_reports_every_five_seconds(self) -> None:
        client, server, pump = self.connect()
        pump.flush()
        before = server.last_read
        self.clock.advance(5.5)
        self.client.connection = client
        self.client.running = True
        self.client.tick()
        pump.flush()
        self.assertGreater(server.last_read, before)
