"""
Message store throughput, as ratios to raw sequential writes of the same bytes on the same disk.

    python bench/store.py [--dir DIR] [--messages N] [--file-mb 256] [--rounds 3] [--java 4|5]
                          [--sync-only] [--python-flush]

Cases, all in-process with 1 KiB bodies (plus TAGS, KEYS and UNIQ_KEY properties):
* raw write: the same records written sequentially with os.write (page cache only);
* raw write+fdatasync: the same, one fdatasync per 64 records (the best a group commit can do);
* ASYNC_FLUSH append: put_message in one thread, with the store's driver threads running as
  in the broker (the 500 ms flush, the page warmer), then one final flush;
* SYNC_FLUSH append with 1 and 64 writer threads, and with 64 puts in flight from one thread
  (the broker's shape), with the StoreDriver's group commit and C flusher; each as a ratio to
  raw write+fdatasync/64 measured just before it;
* get_message of 32-message batches (sequential over the queues);
* recovery after a crash (abort file left behind, checkpoint flushed as the broker's periodic
  ConsumeQueue flush leaves it: every record is validated with its CRC), per GiB of CommitLog.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocketmq_tx.common.message import properties_to_string  # noqa: E402
from rocketmq_tx.common.msgid import UniqueKeyGenerator  # noqa: E402
from rocketmq_tx.store import (  # noqa: E402
    DefaultMessageStore,
    FlushDiskType,
    MessageExtBrokerInner,
    MessageStoreConfig,
    PutMessageStatus,
    StoreDriver,
)

BODY = os.urandom(1024)
QUEUES = 8


def table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def messages(n: int) -> list[MessageExtBrokerInner]:
    gen = UniqueKeyGenerator()
    out = []
    for i in range(n):
        props = properties_to_string({"TAGS": "TagA", "KEYS": f"key-{i}", "UNIQ_KEY": gen.create_uniq_id()}).encode()
        out.append(MessageExtBrokerInner("BenchTopic", BODY, props, i % QUEUES, born_timestamp=1,
                                         born_host=("10.0.0.1", 5000)))
    return out


def open_store(root: Path, flush: FlushDiskType, file_mb: int) -> DefaultMessageStore:
    cfg = MessageStoreConfig(store_path_root_dir=str(root), flush_disk_type=flush,
                             mapped_file_size_commit_log=file_mb << 20)
    store = DefaultMessageStore(cfg)
    assert store.load()
    store.start()
    return store


def raw(path: Path, records: list[bytes], fsync_every: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t = time.perf_counter()
        for i, r in enumerate(records):
            os.write(fd, r)
            if fsync_every and (i + 1) % fsync_every == 0:
                os.fdatasync(fd)
        if fsync_every:
            os.fdatasync(fd)
        return time.perf_counter() - t
    finally:
        os.close(fd)
        os.unlink(path)


def java_recovery(key: str, root: Path, file_mb: int) -> float:
    """
    Start the official broker on a crashed store; return the seconds between its "last
    shutdown abnormally" and "load over" log lines (DefaultMessageStore.load, which includes
    the CommitLog and ConsumeQueue recovery).
    """
    import re
    from datetime import datetime

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "compat-tests"))
    import javaharness
    from rocketmq_java import java_cluster

    cp = javaharness.build(key)
    with java_cluster(cp, root, commitlog_size=file_mb << 20, jvm_extra=("-Dcompat.log.level=INFO",)) as cluster:
        text = Path(cluster.broker.stderr_path).read_text(errors="replace")
    stamps = {}
    for line in text.splitlines():
        for name, pattern in (("start", r"shutdown abnormally"), ("end", r"load over")):
            if name not in stamps and re.search(pattern, line):
                stamps[name] = datetime.strptime(line[:12], "%H:%M:%S.%f")
    if len(stamps) != 2:
        raise RuntimeError("Java broker log lacks the recovery lines; its store lines:\n"
                           + "\n".join(line for line in text.splitlines()
                                        if "abnormally" in line or "load" in line or "abort" in line))
    return (stamps["end"] - stamps["start"]).total_seconds()


def sync_case(kind: str, root: Path, msgs: list[MessageExtBrokerInner], file_mb: int,
              flusher: str | None) -> tuple[float, int]:
    """
    One SYNC_FLUSH run on a fresh store with its StoreDriver: *kind* "1" or "64" writer threads
    each blocked in put_message, or "inflight", the broker's shape: one thread (the reactor)
    appends and keeps 64 puts waiting on their flush futures. Returns (msg/s, group commits).
    """
    store = open_store(root, FlushDiskType.SYNC_FLUSH, file_mb)
    if flusher == "python":
        store.sync_flusher_class = None
    driver = StoreDriver(store, clean=False)
    driver.start()
    try:
        t = time.perf_counter()
        if kind == "inflight":
            pending: collections.deque = collections.deque()
            for m in msgs:
                if len(pending) >= 64:
                    assert pending.popleft().result(timeout=10) is PutMessageStatus.PUT_OK
                res = store.async_put_message(m)
                assert res.is_ok(), res.status
                pending.append(res.flush_future)
            while pending:
                assert pending.popleft().result(timeout=10) is PutMessageStatus.PUT_OK
            done = len(msgs)
        else:
            writers = int(kind)
            per = len(msgs) // writers

            def work(k: int) -> None:
                for m in msgs[k * per:(k + 1) * per]:
                    res = store.put_message(m)
                    assert res.is_ok(), res.status

            threads = [threading.Thread(target=work, args=(k,)) for k in range(writers)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            done = per * writers
        dt = time.perf_counter() - t
        gc = store.group_commit_service
        assert gc is not None
        return done / dt, gc.commits
    finally:
        driver.stop()
        store.shutdown()
        shutil.rmtree(root)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None, help="directory on the disk to measure (default: a temp dir)")
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--sync-messages", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each case (the median is reported)")
    ap.add_argument("--file-mb", type=int, default=256)
    ap.add_argument("--sync-only", action="store_true", help="only the raw and SYNC_FLUSH cases")
    ap.add_argument("--python-flush", action="store_true",
                    help="also run the SYNC_FLUSH cases with the Python group commit (no C flusher)")
    ap.add_argument("--java", choices=["4", "5"], default=None,
                    help="also time the official Java broker's recovery of the same crashed store")
    args = ap.parse_args()
    # absolute: the Java broker runs in a directory of its own
    base = Path(tempfile.mkdtemp(prefix="store-bench-", dir=args.dir)).resolve()
    rows = []
    try:
        n = args.messages
        msgs = messages(n)
        # the bytes a store writes: reuse one store run's record sizes via a quick encode
        probe = open_store(base / "probe", FlushDiskType.ASYNC_FLUSH, args.file_mb)
        r = probe.put_message(msgs[0])
        record = probe.select_one_message_by_offset(r.append_result.wrote_offset)
        probe.shutdown()
        shutil.rmtree(base / "probe")
        size = len(record)
        records = [record] * n
        mb = n * size / 1e6

        t_raw = raw(base / "raw", records, 0)
        t_raw_sync = raw(base / "raw-sync", records[: args.sync_messages], 64)
        raw_rate = n / t_raw
        raw_sync_rate = args.sync_messages / t_raw_sync
        rows.append(["raw write", f"{raw_rate:,.0f}", f"{raw_rate * size / 1e6:,.1f}", "1.00", ""])
        rows.append(["raw write+fdatasync/64", f"{raw_sync_rate:,.0f}", f"{raw_sync_rate * size / 1e6:,.1f}", "",
                     "1.00"])

        if not args.sync_only:
            # with the driver threads a broker runs beside its appends (flush every 500 ms, page
            # warmer); the median of --rounds fresh stores, as one run on a small VM varies by 10%
            rates, all_rates = [], []
            store = None
            for _ in range(args.rounds):
                if store is not None:
                    store.shutdown()
                    shutil.rmtree(base / "async")
                store = open_store(base / "async", FlushDiskType.ASYNC_FLUSH, args.file_mb)
                driver = StoreDriver(store, clean=False)
                driver.start()
                t = time.perf_counter()
                for m in msgs:
                    store.put_message(m)
                t_put = time.perf_counter() - t
                driver.stop()
                store.flush()
                t_all = time.perf_counter() - t
                rates.append(n / t_put)
                all_rates.append(n / t_all)
            assert store is not None, "--rounds must be at least 1"
            rate, rate_all = statistics.median(rates), statistics.median(all_rates)
            spread = f" ({min(rates):,.0f}–{max(rates):,.0f})" if len(rates) > 1 else ""
            rows.append([f"ASYNC_FLUSH append, median of {len(rates)}", f"{rate:,.0f}{spread}", f"{rate * size / 1e6:,.1f}",
                         f"{rate / raw_rate:.2f}", ""])
            rows.append(["ASYNC_FLUSH append + final flush", f"{rate_all:,.0f}", f"{rate_all * size / 1e6:,.1f}",
                         f"{rate_all / raw_rate:.2f}", ""])

            # reads: 32-message batches over every queue
            t = time.perf_counter()
            batches = 0
            for q in range(QUEUES):
                offset = 0
                while True:
                    g = store.get_message("g", "BenchTopic", q, offset, 32)
                    if not g.message_buffers:
                        break
                    batches += 1
                    offset = g.next_begin_offset
            t_read = time.perf_counter() - t
            rows.append(["get_message 32/batch", f"{batches * 32 / t_read:,.0f} msg/s ({batches / t_read:,.0f} batches/s)",
                         f"{batches * 32 * size / t_read / 1e6:,.1f}", "", ""])

            # recovery after a crash; the checkpoint is as recent as the broker's periodic
            # flush_consume_queue leaves it, so the scan validates records and re-dispatches nothing
            store.flush_consume_queue(thorough=True)
            end = store.commit_log.get_max_offset()
            store.commit_log.close()
            for queues in store.consume_queue_table.values():
                for cq in queues.values():
                    cq.close()
            store.index_service.close()
            os.close(store._lock_fd)
            if args.java:
                shutil.copytree(base / "async", base / "java-copy")
            t = time.perf_counter()
            again = DefaultMessageStore(store.config)
            assert again.load() and not again.last_exit_ok
            t_rec = time.perf_counter() - t
            assert again.commit_log.get_max_offset() == end
            rows.append(["recovery after crash", f"{t_rec / (end / (1 << 30)):.2f} s/GiB", f"{end / t_rec / 1e6:,.1f}",
                         "", ""])
            again.start()
            again.shutdown()
            shutil.rmtree(base / "async")
            if args.java:
                t_java = java_recovery(args.java, base / "java-copy", args.file_mb)
                rows.append([f"Java {args.java} broker: recovery of the same crashed store",
                             f"{t_java / (end / (1 << 30)):.2f} s/GiB", f"{end / t_java / 1e6:,.1f}", "", ""])
                shutil.rmtree(base / "java-copy")

        # SYNC_FLUSH: each case as a ratio to raw write+fdatasync/64 of the same number of
        # records measured just before it, as this VM's disk drifts by 20% within a run; the
        # median of --rounds pairs
        flushers = [("", None)]
        if args.python_flush:
            flushers.append((", Python group commit", "python"))
        for kind in ("1", "64", "inflight"):
            # the flushers alternate round by round, so drift hits them alike
            runs: dict = {label: ([], [], []) for label, _ in flushers}
            for _ in range(args.rounds):
                for label, flusher in flushers:
                    raw_adjacent = args.sync_messages / raw(base / "raw-sync", records[: args.sync_messages], 64)
                    rate, c = sync_case(kind, base / "sync", msgs[: args.sync_messages], args.file_mb, flusher)
                    rates, ratios, commits = runs[label]
                    rates.append(rate)
                    ratios.append(rate / raw_adjacent)
                    commits.append(c)
            for label, (rates, ratios, commits) in runs.items():
                rate, ratio = statistics.median(rates), statistics.median(ratios)
                name = ("64 in flight from one thread" if kind == "inflight" else f"{kind} writer thread(s)")
                rows.append([f"SYNC_FLUSH append, {name}{label}, median of {len(rates)} "
                             f"({statistics.median(commits):,.0f} group commits)",
                             f"{rate:,.0f} ({min(rates):,.0f}–{max(rates):,.0f})", f"{rate * size / 1e6:,.1f}",
                             f"{rate / raw_rate:.3f}",
                             f"{ratio:.2f} ({min(ratios):.2f}–{max(ratios):.2f})"])
        print(f"record size {size} bytes, {n:,} messages ({mb:,.0f} MB) async, {args.sync_messages:,} sync; "
              f"dir {base}")
        print(table(["case", "msg/s", "MB/s", "ratio to raw write", "ratio to raw write+fdatasync"], rows))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
