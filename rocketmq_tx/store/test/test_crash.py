"""
Crash test: a writer process (crashwriter) appending with SYNC_FLUSH or ASYNC_FLUSH is killed
with SIGKILL at random moments, many times; after each recovery every acknowledged message
is present and intact, queue offsets are dense, and nothing else is served.

The ASYNC_FLUSH run also simulates losing the page cache (a power cut) in some cycles: the
CommitLog is zeroed from a random point at or after the last offset the writer reported as
flushed. Then every message that ended before that point must survive, and recovery must drop
the rest consistently (ConsumeQueue entries included).

Bounded in time: ``ROCKETMQ_TX_CRASH_SECONDS`` (default 10) per flush mode. The kill moments
come from a seed, printed at the start (and in a failure's message): ``ROCKETMQ_TX_CRASH_SEED``
replays a run's kills and page-cache losses. A writer that does not say READY within
``READY_TIMEOUT`` seconds fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time

from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.messagecodec import decode_messages
from rocketmq_tx.store import DefaultMessageStore, GetMessageStatus
from rocketmq_tx.store.test.crashwriter import TOPIC, body_of, config
from rocketmq_tx.store.test.util import temp_root

SECONDS = float(os.environ.get("ROCKETMQ_TX_CRASH_SECONDS", "10"))
THREADS = 3
#: seconds for a writer to open the store and say READY (a few milliseconds when idle)
READY_TIMEOUT = 60.0
ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def read_line(fd: int, timeout: float) -> tuple[bytes, bytes]:
    """The first line from *fd* (without its newline) and whatever came after it, waiting at
    most *timeout* seconds; ``(b"", what came)`` when no whole line came in time or at EOF."""
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"", buf
        r, _, _ = select.select([fd], [], [], remaining)
        if r:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"", buf
            buf += chunk
    line, rest = buf.split(b"\n", 1)
    return line.strip(), rest


class CrashTests(SynchronousTestCase):
    def run_cycles(self, flush: str) -> None:
        root = os.path.abspath(temp_root(self))
        os.makedirs(root)
        seed = int(os.environ.get("ROCKETMQ_TX_CRASH_SEED", str(time.time_ns())))
        print(f"crash test {flush}: ROCKETMQ_TX_CRASH_SEED={seed}", file=sys.stderr)
        rng = random.Random(seed)
        acked: dict[int, int] = {q: 0 for q in range(THREADS)}  # queue -> number acknowledged
        ends: dict[int, dict[int, int]] = {q: {} for q in range(THREADS)}  # queue -> n -> record end
        deadline = time.monotonic() + SECONDS
        cycles = 0
        while time.monotonic() < deadline or cycles < 3:
            cycles += 1
            proc = subprocess.Popen(
                [sys.executable, "-m", "rocketmq_tx.store.test.crashwriter", root, flush, str(THREADS)],
                stdout=subprocess.PIPE, cwd=ROOT_DIR, bufsize=0)
            try:
                first, buf = read_line(proc.stdout.fileno(), READY_TIMEOUT)
                self.assertEqual(first, b"READY", f"writer did not say READY within {READY_TIMEOUT} s "
                                                  f"(ROCKETMQ_TX_CRASH_SEED={seed})")
                kill_at = time.monotonic() + rng.uniform(0.02, 0.4)
                while time.monotonic() < kill_at:
                    r, _, _ = select.select([proc.stdout], [], [], max(0.0, kill_at - time.monotonic()))
                    if r:
                        chunk = os.read(proc.stdout.fileno(), 65536)
                        if not chunk:
                            break
                        buf += chunk
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                buf += proc.stdout.read()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                proc.stdout.close()
            flushed = -1
            for line in buf.decode().splitlines():
                parts = line.split()
                if parts and parts[0] == "ACK" and len(parts) == 4:
                    q, n = int(parts[1]), int(parts[2])
                    acked[q] = max(acked[q], n + 1)
                    ends[q][n] = int(parts[3])
                elif parts and parts[0] == "FLUSHED":
                    flushed = max(flushed, int(parts[1]))
                elif parts and parts[0] == "FAIL":
                    self.fail(f"{line} (ROCKETMQ_TX_CRASH_SEED={seed})")
            if flush == "ASYNC_FLUSH" and flushed >= 0 and rng.random() < 0.5:
                cut = self.lose_unflushed(root, flushed, rng)
                for q in acked:  # what ended after the cut may be gone; what ended before may not
                    acked[q] = min([n for n, end in ends[q].items() if n < acked[q] and end > cut] + [acked[q]])
            for q in ends:
                ends[q] = {}
            try:
                self.verify(root, flush, acked, clean=rng.random() < 0.3)
            except self.failureException as e:
                raise self.failureException(f"{e} (cycle {cycles}, ROCKETMQ_TX_CRASH_SEED={seed})") from e
        self.assertGreaterEqual(cycles, 3)
        self.assertGreater(sum(acked.values()), 100, "the writer hardly wrote anything")
        if os.environ.get("ROCKETMQ_TX_CRASH_VERBOSE"):
            print(f"{flush}: {cycles} kill/recover cycles, {sum(acked.values())} messages", file=sys.stderr)

    def lose_unflushed(self, root: str, flushed: int, rng: random.Random) -> int:
        """Zero the CommitLog from a random offset >= *flushed*; return that offset."""
        directory = os.path.join(root, "commitlog")
        names = sorted(n for n in os.listdir(directory) if n.isdigit())
        size = os.path.getsize(os.path.join(directory, names[0]))
        end = int(names[-1]) + size
        cut = rng.randrange(flushed, end + 1) if end > flushed else flushed
        for name in names:
            start = int(name)
            if start + size <= cut:
                continue
            with open(os.path.join(directory, name), "r+b") as fh:
                fh.seek(max(0, cut - start))
                fh.write(bytes(start + size - max(cut, start)))
        return cut

    def verify(self, root: str, flush: str, acked: dict[int, int], clean: bool) -> None:
        store = DefaultMessageStore(config(root, flush))
        self.assertTrue(store.load())
        try:
            for q, n_acked in acked.items():
                max_offset = store.get_max_offset_in_queue(TOPIC, q)
                self.assertGreaterEqual(max_offset, n_acked, f"queue {q}: acknowledged messages lost")
                offset = 0
                while offset < max_offset:
                    g = store.get_message("g", TOPIC, q, offset, 32)
                    self.assertEqual(g.status, GetMessageStatus.FOUND)
                    msgs = decode_messages(g.body(), check_crc=True)
                    for i, m in enumerate(msgs):
                        self.assertEqual(g.message_queue_offsets[i], offset + i)
                        self.assertEqual(m.queue_offset, offset + i)
                        self.assertEqual(m.body, body_of(q, offset + i))
                        self.assertEqual(m.keys, [f"{q}-{offset + i}"])
                    offset = g.next_begin_offset
                self.assertEqual(offset, max_offset)
                g = store.get_message("g", TOPIC, q, max_offset, 32)
                self.assertEqual(g.status, GetMessageStatus.OFFSET_OVERFLOW_ONE)
                acked[q] = max_offset  # unacknowledged but complete messages stay; the writer continues
        finally:
            if clean:
                store.start()
                store.shutdown()
            else:
                store.simulate_crash()

    def test_sync_flush(self) -> None:
        self.run_cycles("SYNC_FLUSH")

    def test_async_flush(self) -> None:
        self.run_cycles("ASYNC_FLUSH")
