# -*- test-case-name: rocketmq_tx.broker.ha.test.test_ha -*-
"""
The slave side of replication (Java 4.9 ``HAService.HAClient``): connect to the master's HA
port, report the CommitLog max offset, append the frames the master pushes.

Java's client reports 5 s after connecting; this one reports at once (the master cannot tell
the difference, and the transfer starts 5 s sooner). Each frame is at most a Java master's
``haTransferBatchSize`` (32 KiB by default), so the append and the dispatch of one are short.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import protocol
from twisted.internet.endpoints import HostnameEndpoint
from twisted.logger import Logger

from rocketmq_tx.net.transport import write_now
from rocketmq_tx.remoting.ha import FrameDecoder, HAProtocolError, encode_report
from rocketmq_tx.store import DefaultMessageStore

__all__ = ["HAClient", "HAClientProtocol"]

log = Logger()


class HAClientProtocol(protocol.Protocol):
    def __init__(self, client: HAClient) -> None:
        self.client = client
        self.decoder = FrameDecoder()
        self.current_reported_offset = 0
        self.last_write = self.last_read = client.clock.seconds()

    def connectionMade(self) -> None:
        set_tcp_nodelay = getattr(self.transport, "setTcpNoDelay", None)
        if set_tcp_nodelay is not None:
            set_tcp_nodelay(True)
        self.current_reported_offset = self.client.store.get_max_phy_offset()
        self.client.connection_made(self)
        self.report(self.current_reported_offset)

    def connectionLost(self, reason: Any = None) -> None:
        self.client.connection_lost(self)

    def report(self, offset: int) -> None:
        assert self.transport is not None
        self.transport.write(encode_report(offset))
        self.last_write = self.client.clock.seconds()

    def dataReceived(self, data: bytes) -> None:
        store = self.client.store
        self.last_read = self.client.clock.seconds()
        self.client.transferred += len(data)
        try:
            frames = self.decoder.feed(data)
        except HAProtocolError as e:
            log.error("HAClient: {error}; closing the connection to the master", error=e)
            self.close()
            return
        try:
            for master_offset, body in frames:
                slave_offset = store.get_max_phy_offset()
                if slave_offset != 0 and slave_offset != master_offset:
                    log.error("master pushed offset not equal the max phy offset in slave, SLAVE: {slave} MASTER: "
                              "{master}", slave=slave_offset, master=master_offset)
                    self.close()
                    return
                if not store.append_to_commit_log(master_offset, body, dispatch=False):
                    log.error("HAClient: cannot append {n} bytes at {offset}; closing the connection",
                              n=len(body), offset=master_offset)
                    self.close()
                    return
            if self.report_plus():
                # The ack leaves before the dispatch below: a SYNC_MASTER's sends wait for it, and
                # Java's slave acknowledges the append too, its dispatch on another thread.
                write_now(self.transport)
        finally:
            store.dispatch_appended()  # what was appended, even when a frame is refused

    def report_plus(self) -> bool:
        """Java ``reportSlaveMaxOffsetPlus``: report when the log grew; ``True`` if it did."""
        current = self.client.store.get_max_phy_offset()
        if current > self.current_reported_offset:
            self.current_reported_offset = current
            self.report(current)
            return True
        return False

    def tick(self, now: float) -> None:
        cfg = self.client.store.config
        if now - self.last_read > cfg.ha_housekeeping_interval / 1000.0:
            # A master sends at least an empty frame every haSendHeartbeatInterval: this one is
            # gone (Java's client watches its own writes only, which a dead peer's socket buffer
            # still accepts for a while).
            log.warn("HAClient, housekeeping, found this connection[{addr}] expired, {ms}",
                     addr=self.client.master_address, ms=int((now - self.last_read) * 1000))
            self.close()
            return
        if now - self.last_write > cfg.ha_send_heartbeat_interval / 1000.0:
            self.report(self.current_reported_offset)

    def close(self) -> None:
        if self.transport is not None:
            getattr(self.transport, "abortConnection", self.transport.loseConnection)()


class HAClient:
    """
    Keeps one connection to the master's HA address while one is known (Java retries every
    5 s; the broker service's timer calls :meth:`tick` every second).
    """

    def __init__(self, store: DefaultMessageStore, reactor: Any) -> None:
        self.store = store
        self.clock = reactor
        self.reactor = reactor
        self.master_address: str | None = store.config.ha_master_address or None
        self.connection: HAClientProtocol | None = None
        #: bytes received in all, and in the last whole second
        self.transferred = 0
        self.transferred_in_second = 0
        self._transferred_mark = (reactor.seconds(), 0)
        self.last_read = self.last_write = 0.0
        self._connecting: Any = None
        self._next_attempt = 0.0
        self.running = False

    def update_master_address(self, addr: str | None) -> None:
        if addr and addr != self.master_address:
            log.info("update master address, OLD: {old} NEW: {new}", old=self.master_address, new=addr)
            self.master_address = addr

    def start(self) -> None:
        self.running = True
        self.tick()

    def stop(self) -> None:
        self.running = False
        if self._connecting is not None:
            self._connecting.cancel()
            self._connecting = None
        if self.connection is not None:
            self.connection.close()

    def connection_made(self, conn: HAClientProtocol) -> None:
        self.connection = conn
        log.info("HAClient connected to master {addr}", addr=self.master_address)

    def runtime_info(self) -> dict[str, Any]:
        """GET_BROKER_HA_STATUS's body on a slave (Java 5.x ``DefaultHAService.getRuntimeInfo``)."""
        conn = self.connection
        if conn is not None:
            self.last_read, self.last_write = conn.last_read, conn.last_write
        client: dict[str, Any] = {"lastReadTimestamp": int(self.last_read * 1000),
                                  "lastWriteTimestamp": int(self.last_write * 1000)}
        if self.master_address:
            client["masterAddr"] = self.master_address
        # masterFlushOffset: 5.x's own HA protocol reports it; the classic one leaves it 0
        client.update(masterFlushOffset=0, maxOffset=self.store.get_max_phy_offset(),
                      transferredByteInSecond=self.transferred_in_second)
        return {"haClientRuntimeInfo": client, "haConnectionInfo": [], "inSyncSlaveNums": 0, "master": False,
                "masterCommitLogMaxOffset": 0}

    def connection_lost(self, conn: HAClientProtocol) -> None:
        if self.connection is conn:
            self.last_read, self.last_write = conn.last_read, conn.last_write
            self.connection = None
            log.info("HAClient: connection to master {addr} closed", addr=self.master_address)

    def tick(self) -> None:
        if not self.running:
            return
        now = self.clock.seconds()
        since, before = self._transferred_mark
        if now - since >= 1.0:
            self.transferred_in_second = int((self.transferred - before) / (now - since))
            self._transferred_mark = (now, self.transferred)
        conn = self.connection
        if conn is not None:
            conn.tick(now)
            return
        if self._connecting is not None or not self.master_address or now < self._next_attempt:
            return
        host, _, port = self.master_address.rpartition(":")
        if not host or not port.isdigit():
            log.error("HAClient: bad master address {addr}", addr=self.master_address)
            return
        self._next_attempt = now + 5.0
        endpoint = HostnameEndpoint(self.reactor, host, int(port), timeout=3)
        d = self._connecting = endpoint.connect(protocol.Factory.forProtocol(lambda: HAClientProtocol(self)))

        def done(result: Any) -> None:
            self._connecting = None
            if not isinstance(result, protocol.Protocol):
                log.warn("HAClient: cannot connect to master {addr}: {error}", addr=self.master_address,
                         error=result.getErrorMessage())

        d.addBoth(done)
