# -*- test-case-name: rocketmq_tx.broker.test.test_persister -*-
"""
:class:`MetadataPersister`: the broker's metadata files (``topics.json``,
``subscriptionGroup.json``, ``consumerOffset.json``, ``delayOffset.json``, ``broker.properties``)
written off the request path.

A change only marks its file dirty. On a later reactor turn the persister takes a snapshot
of the table (on the reactor, cheap: a shallow copy) and writes it in a thread (encoding,
``.tmp``, ``.bak``, fsyncs: :meth:`rocketmq_tx.store.configfile.ConfigFile.persist`). One
write per file is in flight; changes made meanwhile are written together by one more write
after it, which starts no sooner than the last one took (``pacing``). A burst of changes (a
heartbeat naming 500 new groups) costs the reactor nothing but the flags, and the disk one
write per file.

Each write carries a generation, so an older snapshot never overwrites a newer one, and a
failed write is retried after ``retry_delay``. :meth:`flush_sync` writes whatever is dirty in
the calling thread: the clean shutdown's last step, so nothing acknowledged is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer, threads
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.store.configfile import ConfigFile

__all__ = ["MetadataPersister"]

log = Logger()

#: What a snapshot function returns: the file's text, or a function that encodes it (run in
#: the writing thread, so an O(table) encoding never runs on the reactor).
Snapshot = str | Callable[[], str]


@dataclass(eq=False)
class _Entry:
    name: str
    file: ConfigFile
    snapshot: Callable[[], Snapshot]
    dirty: bool = False
    writing: Deferred | None = None
    call: Any = None
    #: generation of the latest snapshot taken (the file's own ``generation`` is what is on disk)
    generation: int = 0
    #: (generation wanted, Deferred) from :meth:`MetadataPersister.flush`
    waiters: list[tuple[int, Deferred]] = field(default_factory=list)


def _write(file: ConfigFile, snapshot: Snapshot, generation: int) -> bool:
    text = snapshot() if callable(snapshot) else snapshot
    return file.persist(text, generation)


class MetadataPersister:
    """
    :param reactor: ``callLater`` and, when it has one, the thread pool writes run in.
    :param run_in_thread: ``(fn, *args) -> Deferred`` running *fn* off the reactor (tests);
        default: the reactor's thread pool, or at once where the reactor has none.
    :param retry_delay: seconds before a failed write is tried again.
    :param pacing: after a write that took *d* seconds, the next write of that file starts
        ``pacing * d`` seconds later at the earliest. The encoding holds the GIL: under a
        steady stream of changes to a large table, back-to-back writes would take it from
        the reactor half of the time; with 1.0, a third (the delay stays within one write).
    """

    def __init__(self, reactor: Any, run_in_thread: Callable[..., Deferred] | None = None,
                 retry_delay: float = 1.0, pacing: float = 1.0) -> None:
        self.reactor = reactor
        self._run = run_in_thread or self._default_run
        self.retry_delay = retry_delay
        self.pacing = pacing
        self._entries: dict[str, _Entry] = {}
        self._stopped = False

    def _default_run(self, fn: Callable[..., Any], *args: Any) -> Deferred:
        pool = getattr(self.reactor, "getThreadPool", None)
        if pool is None:  # a memory reactor without threads: write here
            return defer.maybeDeferred(fn, *args)
        return threads.deferToThreadPool(self.reactor, pool(), fn, *args)

    def add(self, name: str, file: ConfigFile, snapshot: Callable[[], Snapshot]) -> Callable[[], None]:
        """Manage *file* under *name*; returns the function that marks it dirty."""
        self._entries[name] = _Entry(name, file, snapshot)
        return lambda: self.mark_dirty(name)

    def write_text(self, path: str, text: str) -> None:
        """Write *text* to *path* soon, with the same protocol (one-off content such as
        UPDATE_BROKER_CONFIG's ``broker.properties``); when several come while a write is in
        flight, the last one is written after it."""
        entry = self._entries.get(path)
        if entry is None:
            entry = self._entries[path] = _Entry(path, ConfigFile(path), lambda: text)
        else:
            entry.snapshot = lambda: text
        self.mark_dirty(path)

    def mark_dirty(self, name: str) -> None:
        entry = self._entries[name]
        entry.dirty = True
        if not self._stopped:
            self._schedule(entry, 0)

    def writes_in_flight(self) -> Deferred:
        """Fires when the writes running now have ended (whatever their outcome)."""
        running = [e.writing for e in self._entries.values() if e.writing is not None]
        return defer.DeferredList(running, consumeErrors=True).addCallback(lambda _: None)

    def is_idle(self) -> bool:
        """Nothing dirty and nothing being written."""
        return all(not e.dirty and e.writing is None for e in self._entries.values())

    # ------------------------------------------------------------------ writing

    def _schedule(self, entry: _Entry, delay: float) -> None:
        # The running write reschedules when it ends; a scheduled start already covers this.
        if entry.writing is None and entry.call is None:
            entry.call = self.reactor.callLater(delay, self._start, entry)

    def _start(self, entry: _Entry) -> None:
        entry.call = None
        if entry.writing is not None or not entry.dirty or self._stopped:
            return
        entry.dirty = False
        entry.generation += 1
        generation = entry.generation
        try:
            snapshot = entry.snapshot()
        except Exception:  # a bug: not retried in a loop; the next change or the stop tries again
            log.failure("cannot snapshot {name}", name=entry.name)
            entry.dirty = True
            return
        started = self.reactor.seconds()
        d = self._run(_write, entry.file, snapshot, generation)
        entry.writing = d
        d.addBoth(self._written, entry, started)

    def _written(self, result: Any, entry: _Entry, started: float) -> None:
        entry.writing = None
        if result is True:
            self._wake(entry)
            delay = max(0.0, self.reactor.seconds() - started) * self.pacing
        else:
            if result is not False:  # an exception, not a logged OSError
                log.failure("cannot persist {path}", result, path=entry.file.path)
            # The snapshot taken is lost; the next one covers it.
            entry.dirty = True
            delay = self.retry_delay
        if entry.dirty and not self._stopped:
            self._schedule(entry, delay)

    def _wake(self, entry: _Entry) -> None:
        on_disk = entry.file.generation
        ready = [d for wanted, d in entry.waiters if wanted <= on_disk]
        entry.waiters = [(wanted, d) for wanted, d in entry.waiters if wanted > on_disk]
        for d in ready:
            d.callback(None)

    # ------------------------------------------------------------------ flushing

    def flush(self) -> Deferred:
        """Fires once every change made so far is on disk (tests; admin operations that must
        be durable before they answer)."""
        waits = []
        for entry in self._entries.values():
            wanted = entry.generation + 1 if entry.dirty else entry.generation
            if wanted <= entry.file.generation:
                continue
            d: Deferred = Deferred()
            entry.waiters.append((wanted, d))
            waits.append(d)
        return defer.gatherResults(waits).addCallback(lambda _: None)

    def flush_sync(self, stop: bool = False) -> bool:
        """
        Write every dirty file now, in the calling thread (a write in flight in a thread is
        waited for by the file's lock; its older generation then cannot overwrite this one).
        With *stop*, no write is started afterwards (the broker's shutdown).
        Returns ``False`` if a write failed.
        """
        if stop:
            self._stopped = True
        ok = True
        for entry in self._entries.values():
            if entry.call is not None and entry.call.active():
                entry.call.cancel()
            entry.call = None
            if not entry.dirty:
                continue
            entry.dirty = False
            entry.generation += 1
            try:
                written = _write(entry.file, entry.snapshot(), entry.generation)
            except Exception:
                log.failure("cannot persist {path}", path=entry.file.path)
                written = False
            if written:
                self._wake(entry)
            else:
                entry.dirty = True
                ok = False
                if not self._stopped:
                    self._schedule(entry, self.retry_delay)
        return ok
