# -*- test-case-name: rocketmq_tx.broker.ha.test.test_ha -*-
"""
The master side of replication (Java 4.9 ``HAService`` and ``HAConnection``): one connection
per slave on the HA port, reading the slave's offset reports and pushing CommitLog bytes.

Java runs a reading and a writing thread per slave; here one protocol does both on the
reactor. Each pass pushes a few batches of at most ``haTransferBatchSize`` bytes (a copy
out of the mapped file each), stops when the transport's buffer is full (it is the
producer of its transport) and goes on at the next turn, so a slave catching up on gigabytes
never holds the reactor for more than a few batches.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from twisted.internet import protocol
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IPushProducer
from twisted.logger import Logger
from zope.interface import implementer

from rocketmq_tx.net.protocol import flush_late_answers
from rocketmq_tx.remoting.ha import ReportDecoder, encode_frame_header
from rocketmq_tx.store import DefaultMessageStore
from rocketmq_tx.store.status import PutMessageStatus

__all__ = ["HAService", "HAConnection"]

log = Logger()

#: batches pushed in one reactor turn before yielding to other work
BATCHES_PER_TURN = 8
#: a master's HAClientRuntimeInfo: Java's zeros, its null masterAddr left out
_EMPTY_CLIENT_INFO = {"lastReadTimestamp": 0, "lastWriteTimestamp": 0, "masterFlushOffset": 0, "maxOffset": 0,
                      "transferredByteInSecond": 0}


@implementer(IPushProducer)
class HAConnection(protocol.Protocol):
    """
    One slave (Java ``HAConnection``).

    :ivar slave_request_offset: the slave's first report (-1 before it).
    :ivar slave_ack_offset: its newest report.
    :ivar next_transfer_from_where: where the next batch starts (-1 before the first report).
    """

    def __init__(self, service: HAService) -> None:
        self.service = service
        self.decoder = ReportDecoder()
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.next_transfer_from_where = -1
        self.client_addr = "?"
        self.last_read = self.last_write = service.clock.seconds()
        self._paused = False
        self._scheduled: Any = None
        self._closed = False
        #: the transport's flush_now (our HA port's connections have it; test transports do not)
        self._flush_now: Any = None
        #: bytes pushed in all, and in the last whole second (5.x's transferredByteInSecond)
        self.transferred = 0
        self.transferred_in_second = 0
        self._transferred_mark = (service.clock.seconds(), 0)

    def connectionMade(self) -> None:
        assert self.transport is not None
        peer = self.transport.getPeer()
        self.client_addr = f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}"
        set_tcp_nodelay = getattr(self.transport, "setTcpNoDelay", None)
        if set_tcp_nodelay is not None:
            set_tcp_nodelay(True)  # as Java's: small reports must not wait
        self.transport.registerProducer(self, True)  # type: ignore[attr-defined]  # a TCP transport
        self._flush_now = getattr(self.transport, "flush_now", None)
        self.service.connection_made(self)
        log.info("HAService receive new connection, {addr}", addr=self.client_addr)

    def connectionLost(self, reason: Any = None) -> None:
        self._closed = True
        if self._scheduled is not None and self._scheduled.active():
            self._scheduled.cancel()
        self._scheduled = None
        self.service.connection_lost(self)
        log.info("HA connection of slave {addr} closed", addr=self.client_addr)

    # -- the slave's reports (Java ReadSocketService)

    def dataReceived(self, data: bytes) -> None:
        self.last_read = self.service.clock.seconds()
        offset = self.decoder.feed(data)
        if offset is None:
            return
        self.slave_ack_offset = offset
        mine = self.service.store.get_max_phy_offset()
        if self.slave_request_offset < 0:
            # The first report is where the slave wants the transfer to start; Java 4.9.8 logs it
            # and takes it unchecked (one beyond our log gets heartbeats at it, and the check
            # below drops the connection at the slave's next report, within a heartbeat interval).
            self.slave_request_offset = offset
            log.info("slave[{addr}] request offset {offset}", addr=self.client_addr, offset=offset)
        elif offset > mine:
            # Java drops a slave that claims more than the master holds (a slave of another master)
            log.warn("slave[{addr}] request offset={offset} greater than local commitLog offset={mine}",
                     addr=self.client_addr, offset=offset, mine=mine)
            self.close()
            return
        if offset <= mine:
            # Java counts a first report beyond its log as acknowledged too, and push2SlaveMaxOffset
            # never goes down: SYNC_MASTER puts up to that offset would be answered PUT_OK unreplicated.
            if self.service.notify_transfer_some(offset):
                # the answers of the puts this ack completed leave now, not at the next poll
                flush_late_answers()
        if self.next_transfer_from_where < 0:
            self.next_transfer_from_where = self._first_transfer_offset()
            log.info("master transfer data from {start} to slave[{addr}], and slave request {req}",
                     start=self.next_transfer_from_where, addr=self.client_addr, req=self.slave_request_offset)
            self.wakeup()

    def _first_transfer_offset(self) -> int:
        if self.slave_request_offset != 0:
            return self.slave_request_offset
        # An empty slave gets the master's last file only, as Java's WriteSocketService does.
        master = self.service.store.get_max_phy_offset()
        return max(0, master - master % self.service.store.config.mapped_file_size_commit_log)

    # -- pushing (Java WriteSocketService)

    def wakeup(self) -> None:
        """New data may be there: push at the next turn (coalesced)."""
        if self._closed or self._paused or self.next_transfer_from_where < 0:
            return
        if self._scheduled is None or not self._scheduled.active():
            self._scheduled = self.service.clock.callLater(0, self._push)

    def push_now(self) -> None:
        """Push in this turn (the service's one wake-up per turn of puts): a SYNC_MASTER send
        waits for this push, so it should not wait one more reactor turn for it."""
        if self._scheduled is not None and self._scheduled.active():
            self._scheduled.cancel()
        self._push()

    def _push(self) -> None:
        self._scheduled = None
        if self._closed or self._paused or self.next_transfer_from_where < 0:
            return
        store = self.service.store
        batch = store.config.ha_transfer_batch_size
        transport = self.transport
        assert transport is not None
        for _ in range(BATCHES_PER_TURN):
            if self._paused or self._closed:
                break
            offset = self.next_transfer_from_where
            data = store.commit_log.get_data(offset, batch)
            if data is None:
                break  # caught up: the next put (or the heartbeat timer) wakes us
            self.next_transfer_from_where = offset + len(data)
            self.transferred += len(data)
            transport.writeSequence([encode_frame_header(offset, len(data)), data])
            self.last_write = self.service.clock.seconds()
        else:
            self.wakeup()  # more may be waiting: go on after other work had its turn
        if self._flush_now is not None:
            # Send now, not at the reactor's next writable event: a SYNC_MASTER put waits for
            # the slave's ack of these bytes, and one poll round later is that much longer.
            self._flush_now()

    def tick(self, now: float) -> None:
        """The service's timer: heartbeat frame, idle check, transfer rate."""
        cfg = self.service.store.config
        since, before = self._transferred_mark
        if now - since >= 1.0:
            self.transferred_in_second = int((self.transferred - before) / (now - since))
            self._transferred_mark = (now, self.transferred)
        if now - self.last_read > cfg.ha_housekeeping_interval / 1000.0:
            log.warn("ha housekeeping, found this connection[{addr}] expired, {ms}", addr=self.client_addr,
                     ms=int((now - self.last_read) * 1000))
            self.close()
            return
        if self.next_transfer_from_where >= 0 and not self._paused \
                and now - self.last_write > cfg.ha_send_heartbeat_interval / 1000.0:
            assert self.transport is not None
            self.transport.write(encode_frame_header(self.next_transfer_from_where, 0))
            self.last_write = now
        self.wakeup()

    def close(self) -> None:
        if self.transport is not None and not self._closed:
            getattr(self.transport, "abortConnection", self.transport.loseConnection)()

    # -- IPushProducer: the transport's buffer is full, or has room again

    def pauseProducing(self) -> None:
        self._paused = True

    def resumeProducing(self) -> None:
        self._paused = False
        self.wakeup()

    def stopProducing(self) -> None:
        self._closed = True


class HAService(protocol.ServerFactory):
    """
    The HA port's factory and the master's view of its slaves (Java ``HAService``).

    :ivar push2slave_max_offset: the highest offset any slave has acknowledged (Java
        ``push2SlaveMaxOffset``; SYNC_MASTER waits on it).
    """

    def __init__(self, store: DefaultMessageStore, clock: Any) -> None:
        self.store = store
        self.clock = clock
        self.connections: list[HAConnection] = []
        self.push2slave_max_offset = 0
        self._wake_scheduled = False
        #: SYNC_MASTER puts waiting for a slave's ack (Java's GroupTransferService): (end
        #: offset, deadline, Deferred) in put order, so ends and deadlines both ascend
        self._waiting: deque[tuple[int, float, Deferred]] = deque()
        self._expiry: Any = None

    def buildProtocol(self, addr: Any) -> HAConnection:
        return HAConnection(self)

    @property
    def connection_count(self) -> int:
        return len(self.connections)

    def connection_made(self, conn: HAConnection) -> None:
        self.connections.append(conn)

    def connection_lost(self, conn: HAConnection) -> None:
        if conn in self.connections:
            self.connections.remove(conn)

    def notify_transfer_some(self, offset: int) -> bool:
        """A slave acknowledged *offset*: the waits it completes are answered; ``True`` if any."""
        if offset <= self.push2slave_max_offset:
            return False
        self.push2slave_max_offset = offset
        waiting = self._waiting
        released = bool(waiting) and waiting[0][0] <= offset
        while waiting and waiting[0][0] <= offset:
            waiting.popleft()[2].callback(PutMessageStatus.PUT_OK)
        return released

    def wait_for_slave(self, end_offset: int, timeout: float) -> Deferred:
        """
        A SYNC_MASTER put ending at *end_offset*: fires with PUT_OK once a slave acknowledged
        it, or FLUSH_SLAVE_TIMEOUT after *timeout* seconds (Java ``slaveTimeout``).
        """
        d: Deferred = Deferred()
        if self.push2slave_max_offset >= end_offset:
            d.callback(PutMessageStatus.PUT_OK)
            return d
        self._waiting.append((end_offset, self.clock.seconds() + timeout, d))
        if self._expiry is None:
            self._expiry = self.clock.callLater(timeout, self._expire)
        return d

    def _expire(self) -> None:
        # one timer for all the waits: the oldest wait has the nearest deadline
        self._expiry = None
        now = self.clock.seconds()
        waiting = self._waiting
        while waiting and waiting[0][1] <= now:
            waiting.popleft()[2].callback(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        if waiting:
            self._expiry = self.clock.callLater(max(0.0, waiting[0][1] - now), self._expire)

    def fail_waits(self) -> None:
        """At shutdown: every wait ends as a timeout."""
        if self._expiry is not None and self._expiry.active():
            self._expiry.cancel()
        self._expiry = None
        while self._waiting:
            self._waiting.popleft()[2].callback(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)

    def is_slave_ok(self, master_put_where: int) -> bool:
        """Java ``isSlaveOK``: a slave is connected and less than haSlaveFallbehindMax behind."""
        return bool(self.connections) and \
            master_put_where - self.push2slave_max_offset < self.store.config.ha_slave_fallbehind_max

    def wakeup_all(self) -> None:
        """Something was appended: every slave pushes at the next turn (one call per turn)."""
        if not self.connections or self._wake_scheduled:
            return
        self._wake_scheduled = True
        self.clock.callLater(0, self._wake)

    def _wake(self) -> None:
        self._wake_scheduled = False
        for conn in list(self.connections):
            conn.push_now()

    def tick(self) -> None:
        now = self.clock.seconds()
        for conn in list(self.connections):
            conn.tick(now)

    def runtime_info(self) -> dict[str, Any]:
        """
        GET_BROKER_HA_STATUS's body on a master (Java 5.x ``DefaultHAService.getRuntimeInfo``,
        ``HARuntimeInfo`` as fastjson writes it: fields sorted, nulls left out). A slave is
        in sync while less than ``haSlaveFallbehindMax`` behind (5.x: ``haMaxGapNotInSync``,
        the same 256 MiB by default).
        """
        where = self.store.get_max_phy_offset()
        gap = self.store.config.ha_slave_fallbehind_max
        conns = []
        for conn in self.connections:
            ack = conn.slave_ack_offset
            conns.append({"addr": conn.client_addr, "diff": where - ack, "inSync": where - ack < gap,
                          "slaveAckOffset": ack, "transferFromWhere": conn.next_transfer_from_where,
                          "transferredByteInSecond": conn.transferred_in_second})
        return {"haClientRuntimeInfo": _EMPTY_CLIENT_INFO, "haConnectionInfo": conns,
                "inSyncSlaveNums": sum(1 for c in conns if c["inSync"]), "master": True,
                "masterCommitLogMaxOffset": where}

    def close_all(self) -> None:
        for conn in list(self.connections):
            conn.close()
