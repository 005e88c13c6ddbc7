"""
Message store throughput, as ratios to raw writes of the same bytes into files prepared as
the store prepares its CommitLog files, on the same disk (issue #4).

    python bench/store.py [--dir DIR] [--messages N] [--sync-messages N] [--file-mb 256] [--rounds 3]
                          [--java 4|5] [--sync-only] [--python-flush] [--summary PATH | --no-summary]

The raw baselines ("like for like"): the records are written with ``os.pwrite`` at
sequential offsets into files of ``--file-mb`` (the store's CommitLog file size in this run)
prepared the way the store prepares a CommitLog file under SYNC_FLUSH: ``posix_fallocate``
of the whole file (``MappedFile``), then zeros written over the range the records will
occupy and waited for (the page warmer's zero mode, the same ``_speedups.zero_fill``), so the
records land in written extents, as the store's do. The preparation is not timed (the store
does it on a driver thread, ahead of its appends). "raw write" is page cache only;
"raw write+fdatasync/64" adds one fdatasync per 64 records (the best a group commit of 64
writers can do). The old baselines, the same writes appended to a fresh, growing file
(``O_TRUNC``, ``os.write``), are kept as extra lines: writing into a fresh file's new extents
is slower (the fdatasync also commits the allocation), so ratios to it flatter the store.

Cases, all in-process with 1 KiB bodies (plus TAGS, KEYS and UNIQ_KEY properties):
* ASYNC_FLUSH append: put_message in one thread, with the store's driver threads running as
  in the broker (the 500 ms flush, the page warmer), then one final flush;
* SYNC_FLUSH append with 1 and 64 writer threads, and with 64 puts in flight from one thread
  (the broker's shape), with the StoreDriver's group commit and C flusher; each as a ratio to
  the mean of the raw write+fdatasync/64 baselines measured just before and just after it,
  the median of ``--rounds``;
* get_message of 32-message batches (sequential over the queues);
* recovery after a crash (abort file left behind, checkpoint flushed as the broker's periodic
  ConsumeQueue flush leaves it: every record is validated with its CRC), per GiB of CommitLog.

Prints a Markdown table and the issue's goals, met or not, and writes a small JSON summary
(commit, settings, load average, every figure) to ``bench/results/store-<UTC time>.json``
(``--summary PATH`` elsewhere, ``--no-summary`` not at all).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import errno
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _summary  # noqa: E402  (bench is not a package)

from rocketmq_tx.common.message import properties_to_string  # noqa: E402
from rocketmq_tx.common.msgid import UniqueKeyGenerator  # noqa: E402
from rocketmq_tx.common.native import speedups  # noqa: E402
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
MIB = 1 << 20
FSYNC_EVERY = 64

#: issue #4's goals, as the issue wrote them
GOAL_ASYNC = "ASYNC_FLUSH appends at least 150,000 messages/s"
GOAL_SYNC = "SYNC_FLUSH with 64 writers at least 50% of raw fdatasync'd write bandwidth"
GOAL_RECOVERY = "recovery faster than the Java broker's on the same store (measure it)"
ASYNC_MIN, SYNC_MIN = 150_000, 0.5


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


def crash(store: DefaultMessageStore) -> None:
    """Leave *store* as a SIGKILL would (files closed, nothing flushed, the abort file kept)."""
    store.simulate_crash()


# --------------------------------------------------------------------------- raw baselines

def prepare_file(path: Path, file_size: int, used: int) -> int:
    """
    A file prepared as the store prepares a CommitLog file under SYNC_FLUSH: *file_size*
    bytes allocated with ``posix_fallocate`` (``MappedFile``; ``ftruncate`` where the file
    system cannot), then zeros written over the first *used* bytes, rounded up to 1 MiB (the
    page warmer's chunks), and waited for (``_speedups.zero_fill``, which the warmer runs).
    A last fdatasync commits the extents' conversion, so none of the timed syncs does.
    Returns the open descriptor.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            os.posix_fallocate(fd, 0, file_size)
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            os.ftruncate(fd, file_size)
        end = min(file_size, -(-used // MIB) * MIB)
        if speedups is not None and hasattr(speedups, "zero_fill"):
            err = speedups.zero_fill(fd, 0, end)
            if err:
                raise OSError(err, f"zero_fill: {os.strerror(err)}")
        else:  # the pure-Python store does not zero ahead; the baseline still does
            zeros = bytes(MIB)
            for at in range(0, end, MIB):
                os.pwrite(fd, zeros[:end - at], at)
        os.fdatasync(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def raw_prepared(base: Path, records: list[bytes], fsync_every: int, file_size: int) -> float:
    """
    Seconds to ``pwrite`` *records* one after another into files of *file_size* prepared by
    :func:`prepare_file` (preparation not timed), with one fdatasync per *fsync_every*
    records (0: none). A record that does not fit starts the next file, as in the CommitLog.
    """
    size = len(records[0])
    per_file = file_size // size
    counts = [min(per_file, len(records) - k) for k in range(0, len(records), per_file)]
    paths = [base.with_name(f"{base.name}-{k}") for k in range(len(counts))]
    fds: list[int] = []
    try:
        for path, count in zip(paths, counts):
            fds.append(prepare_file(path, file_size, count * size))
        i = 0
        t = time.perf_counter()
        for fd, count in zip(fds, counts):
            pos = 0
            for r in records[i:i + count]:
                os.pwrite(fd, r, pos)
                pos += len(r)
                i += 1
                if fsync_every and i % fsync_every == 0:
                    os.fdatasync(fd)
            if fsync_every:
                os.fdatasync(fd)
        return time.perf_counter() - t
    finally:
        for fd in fds:
            os.close(fd)
        for path in paths:
            path.unlink(missing_ok=True)


def raw_fresh(path: Path, records: list[bytes], fsync_every: int) -> float:
    """The old baseline: *records* appended with ``os.write`` to a fresh, growing file."""
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


# --------------------------------------------------------------------------- store cases

def java_recovery(key: str, root: Path, file_mb: int) -> float:
    """
    Start the official broker on a crashed store; return the seconds between its "last
    shutdown abnormally" and "load over" log lines (DefaultMessageStore.load, which includes
    the CommitLog and ConsumeQueue recovery).
    """
    import re

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
                stamps[name] = dt.datetime.strptime(line[:12], "%H:%M:%S.%f")
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
        elapsed = time.perf_counter() - t
        gc = store.group_commit_service
        assert gc is not None
        return done / elapsed, gc.commits
    finally:
        driver.stop()
        store.shutdown()
        shutil.rmtree(root)


def async_cases(args: argparse.Namespace, base: Path, msgs: list[MessageExtBrokerInner], size: int,
                raw_rate: float, rows: list, figures: dict) -> None:
    """ASYNC_FLUSH appends, reads and recovery (and Java's recovery with ``--java``)."""
    n = len(msgs)
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
                 f"{rate / raw_rate:.2f}", "", ""])
    rows.append(["ASYNC_FLUSH append + final flush", f"{rate_all:,.0f}", f"{rate_all * size / 1e6:,.1f}",
                 f"{rate_all / raw_rate:.2f}", "", ""])
    figures["async_append"] = {"msg_per_s_median": round(rate), "msg_per_s_rounds": [round(r) for r in rates],
                               "with_final_flush_median": round(rate_all),
                               "ratio_to_raw_write": round(rate / raw_rate, 3)}

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
                 f"{batches * 32 * size / t_read / 1e6:,.1f}", "", "", ""])
    figures["get_message_32"] = {"msg_per_s": round(batches * 32 / t_read)}

    # recovery after a crash; the checkpoint is as recent as the broker's periodic
    # flush_consume_queue leaves it, so the scan validates records and re-dispatches nothing
    store.flush_consume_queue(thorough=True)
    end = store.commit_log.get_max_offset()
    crash(store)
    if args.java:
        shutil.copytree(base / "async", base / "java-copy")
    t = time.perf_counter()
    again = DefaultMessageStore(store.config)
    assert again.load() and not again.last_exit_ok
    t_rec = time.perf_counter() - t
    assert again.commit_log.get_max_offset() == end
    per_gib = t_rec / (end / (1 << 30))
    rows.append(["recovery after crash", f"{per_gib:.2f} s/GiB", f"{end / t_rec / 1e6:,.1f}", "", "", ""])
    figures["recovery"] = {"s_per_gib": round(per_gib, 3), "commitlog_bytes": end}
    again.start()
    again.shutdown()
    shutil.rmtree(base / "async")
    if args.java:
        t_java = java_recovery(args.java, base / "java-copy", args.file_mb)
        java_per_gib = t_java / (end / (1 << 30))
        rows.append([f"Java {args.java} broker: recovery of the same crashed store",
                     f"{java_per_gib:.2f} s/GiB", f"{end / t_java / 1e6:,.1f}", "", "", ""])
        figures["recovery"]["java"] = {"version": args.java, "s_per_gib": round(java_per_gib, 3)}
        shutil.rmtree(base / "java-copy")


def sync_cases(args: argparse.Namespace, base: Path, msgs: list[MessageExtBrokerInner], records: list[bytes],
               raw_rate: float, rows: list, figures: dict) -> None:
    """
    SYNC_FLUSH: each case as a ratio to raw write+fdatasync/64 of the same number of records,
    the mean of the baselines measured just before and just after it (the prepared file,
    then the fresh one), as this VM's disk drifts by 20% and more within a run; the median
    of --rounds.
    """
    size = len(records[0])
    sync_records = records[:args.sync_messages]
    file_size = args.file_mb << 20
    flushers = [("", None)]
    if args.python_flush:
        flushers.append((", Python group commit", "python"))

    def baselines() -> tuple[float, float]:
        prepared = len(sync_records) / raw_prepared(base / "raw-sync", sync_records, FSYNC_EVERY, file_size)
        fresh = len(sync_records) / raw_fresh(base / "raw-sync-fresh", sync_records, FSYNC_EVERY)
        return prepared, fresh

    figures["sync"] = {}
    for kind in ("1", "64", "inflight"):
        # the flushers alternate round by round, so drift hits them alike
        runs: dict = {label: collections.defaultdict(list) for label, _ in flushers}
        before = baselines()
        for _ in range(args.rounds):
            for label, flusher in flushers:
                rate, commits = sync_case(kind, base / "sync", msgs[:args.sync_messages], args.file_mb, flusher)
                after = baselines()
                prepared, fresh = ((b + a) / 2 for b, a in zip(before, after))
                run = runs[label]
                run["rate"].append(rate)
                run["raw"].append(prepared)
                run["raw_fresh"].append(fresh)
                run["ratio"].append(rate / prepared)
                run["ratio_fresh"].append(rate / fresh)
                run["commits"].append(commits)
                run["loadavg_1min"].append(round(os.getloadavg()[0], 2))
                before = after
        for label, run in runs.items():
            rate, ratio, ratio_fresh = (statistics.median(run[k]) for k in ("rate", "ratio", "ratio_fresh"))
            name = "64 in flight from one thread" if kind == "inflight" else f"{kind} writer thread(s)"
            rows.append([f"SYNC_FLUSH append, {name}{label}, median of {len(run['rate'])} "
                         f"({statistics.median(run['commits']):,.0f} group commits)",
                         f"{rate:,.0f} ({min(run['rate']):,.0f}–{max(run['rate']):,.0f})", f"{rate * size / 1e6:,.1f}",
                         f"{rate / raw_rate:.3f}",
                         f"{ratio:.2f} ({min(run['ratio']):.2f}–{max(run['ratio']):.2f})",
                         f"{ratio_fresh:.2f} ({min(run['ratio_fresh']):.2f}–{max(run['ratio_fresh']):.2f})"])
            key = {"1": "writers_1", "64": "writer_threads_64", "inflight": "inflight_64"}[kind]
            key += "_python_flush" if label else ""
            figures["sync"][key] = {
                "msg_per_s_median": round(rate), "ratio_median": round(ratio, 3),
                "ratio_fresh_file_median": round(ratio_fresh, 3),
                "group_commits_median": statistics.median(run["commits"]),
                "rounds": {k: [_rounded(k, v) for v in values] for k, values in run.items()},
            }


def _rounded(key: str, value: float) -> float:
    return value if key == "loadavg_1min" else round(value, 3) if key.startswith("ratio") else round(value)


def goals(figures: dict) -> list[dict]:
    """Issue #4's goals, each with its figure and met / not met (None: not measured)."""
    out = []
    async_rate = figures.get("async_append", {}).get("msg_per_s_median")
    out.append({"goal": GOAL_ASYNC, "case": "ASYNC_FLUSH append, median",
                "figure": async_rate, "met": None if async_rate is None else async_rate >= ASYNC_MIN})
    sync = figures.get("sync", {})
    for key, case in (("writer_threads_64", "SYNC_FLUSH, 64 writer threads, ratio to the like-for-like raw"),
                      ("inflight_64", "SYNC_FLUSH, 64 in flight from one thread (the broker's shape), "
                                      "ratio to the like-for-like raw")):
        ratio = sync.get(key, {}).get("ratio_median")
        out.append({"goal": GOAL_SYNC, "case": case, "figure": ratio,
                    "met": None if ratio is None else ratio >= SYNC_MIN})
    rec = figures.get("recovery", {})
    if "java" in rec:
        out.append({"goal": GOAL_RECOVERY, "case": f"s/GiB, ours against Java {rec['java']['version']}",
                    "figure": [rec["s_per_gib"], rec["java"]["s_per_gib"]],
                    "met": rec["s_per_gib"] < rec["java"]["s_per_gib"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="directory on the disk to measure (default: a temp dir)")
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--sync-messages", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each case (the median is reported)")
    ap.add_argument("--file-mb", type=int, default=256,
                    help="the CommitLog file size of the store, and of the raw baselines' files")
    ap.add_argument("--sync-only", action="store_true", help="only the raw and SYNC_FLUSH cases")
    ap.add_argument("--python-flush", action="store_true",
                    help="also run the SYNC_FLUSH cases with the Python group commit (no C flusher)")
    ap.add_argument("--java", choices=["4", "5"], default=None,
                    help="also time the official Java broker's recovery of the same crashed store")
    ap.add_argument("--summary", type=Path, default=None,
                    help="where to write the JSON summary (default bench/results/store-<UTC time>.json)")
    ap.add_argument("--no-summary", action="store_true", help="write no JSON summary")
    args = ap.parse_args()
    started = dt.datetime.now(dt.UTC)
    load_start = _summary.loadavg()
    # absolute: the Java broker runs in a directory of its own
    base = Path(tempfile.mkdtemp(prefix="store-bench-", dir=args.dir)).resolve()
    rows: list[list[object]] = []
    figures: dict = {}
    try:
        n = args.messages
        msgs = messages(n)
        # the bytes a store writes: one store run's record, read back
        probe = open_store(base / "probe", FlushDiskType.ASYNC_FLUSH, args.file_mb)
        r = probe.put_message(msgs[0])
        record = probe.select_one_message_by_offset(r.append_result.wrote_offset)
        probe.shutdown()
        shutil.rmtree(base / "probe")
        size = len(record)
        records = [record] * n
        mb = n * size / 1e6
        file_size = args.file_mb << 20

        raw_rate = n / raw_prepared(base / "raw", records, 0, file_size)
        raw_sync_rate = args.sync_messages / raw_prepared(base / "raw-sync", records[:args.sync_messages],
                                                          FSYNC_EVERY, file_size)
        fresh_rate = n / raw_fresh(base / "raw-fresh", records, 0)
        fresh_sync_rate = args.sync_messages / raw_fresh(base / "raw-sync-fresh", records[:args.sync_messages],
                                                         FSYNC_EVERY)
        rows.append(["raw write, prepared file (like for like)", f"{raw_rate:,.0f}",
                     f"{raw_rate * size / 1e6:,.1f}", "1.00", "", ""])
        rows.append(["raw write+fdatasync/64, prepared file (like for like)", f"{raw_sync_rate:,.0f}",
                     f"{raw_sync_rate * size / 1e6:,.1f}", "", "1.00", ""])
        rows.append(["old baseline: raw write, fresh growing file", f"{fresh_rate:,.0f}",
                     f"{fresh_rate * size / 1e6:,.1f}", f"{fresh_rate / raw_rate:.2f}", "", ""])
        rows.append(["old baseline: raw write+fdatasync/64, fresh growing file", f"{fresh_sync_rate:,.0f}",
                     f"{fresh_sync_rate * size / 1e6:,.1f}", "", f"{fresh_sync_rate / raw_sync_rate:.2f}", "1.00"])
        figures["raw_at_start"] = {"write_prepared": round(raw_rate),
                                   "write_fdatasync64_prepared": round(raw_sync_rate),
                                   "write_fresh": round(fresh_rate), "write_fdatasync64_fresh": round(fresh_sync_rate)}

        if not args.sync_only:
            async_cases(args, base, msgs, size, raw_rate, rows, figures)
        sync_cases(args, base, msgs, records, raw_rate, rows, figures)

        print(f"record size {size} bytes, {n:,} messages ({mb:,.0f} MB) async, {args.sync_messages:,} sync; "
              f"CommitLog and raw files of {args.file_mb} MiB; dir {base}")
        print(table(["case", "msg/s", "MB/s", "ratio to raw write",
                     "ratio to raw write+fdatasync/64 (prepared file)",
                     "ratio to raw write+fdatasync/64 (old: fresh file)"], rows))
        results = goals(figures)
        print("\nGoals (issue #4):")
        for g in results:
            verdict = "not measured" if g["met"] is None else "met" if g["met"] else "NOT MET"
            print(f"- \"{g['goal']}\": {g['case']}: {g['figure']}: {verdict}")
        load_end = _summary.loadavg()
        print(f"\nload average (1, 5, 15 min): {load_start} at the start, {load_end} at the end")
        if not args.no_summary:
            path = _summary.write({
                "bench": "store", "started": started.isoformat(timespec="seconds"),
                "commit": _summary.git_commit(), "command": _summary.command_line("bench/store.py"),
                "settings": {"messages": n, "sync_messages": args.sync_messages, "rounds": args.rounds,
                             "file_mb": args.file_mb, "record_bytes": size, "fdatasync_every": FSYNC_EVERY,
                             "sync_only": args.sync_only, "python_flush": args.python_flush, "java": args.java,
                             "c_accelerator": speedups is not None},
                "machine": _summary.machine(), "loadavg_start": load_start, "loadavg_end": load_end,
                "figures": figures, "goals": results,
            }, args.summary or _summary.default_path("store", started))
            print(f"summary: {path}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
