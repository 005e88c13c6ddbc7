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

from rocketmq_tx.remoting.ha import FrameDecoder, HAProtocolError, encode_report
from rocketmq_tx.store import DefaultMessageStore

__all__ = ["HAClient", "HAClientProtocol"]

log = Logger()


class HAClientProtocol(protocol.Protocol):
    def __init__(self, client: HAClient) -> None:
        self.client = client
        self.decoder = FrameDecoder()
        self.current_reported_offset = 0
        self.last_write = client.clock.seconds()

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
        try:
            frames = self.decoder.feed(data)
        except HAProtocolError as e:
            log.error("HAClient: {error}; closing the connection to the master", error=e)
            self.close()
            return
        for master_offset, body in frames:
            slave_offset = store.get_max_phy_offset()
            if slave_offset != 0 and slave_offset != master_offset:
                log.error("master pushed offset not equal the max phy offset in slave, SLAVE: {slave} MASTER: "
                          "{master}", slave=slave_offset, master=master_offset)
                self.close()
                return
            if not store.append_to_commit_log(master_offset, body):
                log.error("HAClient: cannot append {n} bytes at {offset}; closing the connection",
                          n=len(body), offset=master_offset)
                self.close()
                return
        self.report_plus()

    def report_plus(self) -> None:
        """Java ``reportSlaveMaxOffsetPlus``: report when the log grew."""
        current = self.client.store.get_max_phy_offset()
        if current > self.current_reported_offset:
            self.current_reported_offset = current
            self.report(current)

    def tick(self, now: float) -> None:
        cfg = self.client.store.config
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

    def connection_lost(self, conn: HAClientProtocol) -> None:
        if self.connection is conn:
            self.connection = None
            log.info("HAClient: connection to master {addr} closed", addr=self.master_address)

    def tick(self) -> None:
        if not self.running:
            return
        now = self.clock.seconds()
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
