"""
The store's SQL92 scan in process: records read per second by ``get_message`` with a SQL92
filter (issue #21's filtered consume, without the network and the consumer).

    python bench/sqlscan.py [--messages 200000] [--rounds 5] [--expression "a = 0"]

A store (ASYNC_FLUSH, 4 queues) is filled with 1 KiB messages whose property ``a`` is
``i % 10`` (and UNIQ_KEY, WAIT, as the Java producer sends them); then each round reads
every queue from offset 0 to its end with pulls of 32, as a push consumer does, through the
broker's ``SqlFilter`` (the pull processor's filter). Prints the median records scanned per
second and the matches (a tenth of the messages for ``a = 0``). ``--profile`` adds a cProfile
of one round. Runs on any commit that has ``SqlFilter`` (run it on two commits, same machine,
to compare them).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocketmq_tx.broker.processors.pull import SqlFilter  # noqa: E402
from rocketmq_tx.common.message import properties_to_string  # noqa: E402
from rocketmq_tx.common.msgid import UniqueKeyGenerator  # noqa: E402
from rocketmq_tx.filter import compile_sql92  # noqa: E402
from rocketmq_tx.store import (  # noqa: E402
    DefaultMessageStore,
    FlushDiskType,
    MessageExtBrokerInner,
    MessageStoreConfig,
)

QUEUES = 4
BATCH = 32


def fill(root: Path, messages: int) -> DefaultMessageStore:
    cfg = MessageStoreConfig(store_path_root_dir=str(root), flush_disk_type=FlushDiskType.ASYNC_FLUSH)
    store = DefaultMessageStore(cfg)
    assert store.load()
    store.start()
    ids, body = UniqueKeyGenerator(), os.urandom(1024)
    for i in range(messages):
        props = properties_to_string({"a": str(i % 10), "UNIQ_KEY": ids.create_uniq_id(), "WAIT": "true"}).encode()
        store.put_message(MessageExtBrokerInner("BenchSql92", body, props, i % QUEUES, born_timestamp=1,
                                                born_host=("10.0.0.1", 5000)))
    return store


def scan(store: DefaultMessageStore, sql_filter: SqlFilter, per_queue: int) -> tuple[int, int]:
    """One consumer's pass over every queue: (matches, pulls)."""
    matches = pulls = 0
    for queue in range(QUEUES):
        offset = 0
        while offset < per_queue:
            result = store.get_message("bench", "BenchSql92", queue, offset, BATCH, sql_filter)
            pulls += 1
            matches += len(result.message_buffers)
            if result.next_begin_offset <= offset:
                break
            offset = result.next_begin_offset
    return matches, pulls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--expression", default="a = 0")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sqlscan-"))
    try:
        store = fill(root, args.messages)
        sql_filter = SqlFilter(compile_sql92(args.expression))
        per_queue = args.messages // QUEUES
        rates = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            matches, pulls = scan(store, sql_filter, per_queue)
            rates.append(args.messages / (time.perf_counter() - t0))
        print(f"{args.messages:,} records, '{args.expression}': {statistics.median(rates):,.0f} records/s "
              f"(median of {args.rounds}; min {min(rates):,.0f}, max {max(rates):,.0f}); "
              f"{matches:,} matches in {pulls:,} pulls")
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(scan, store, sql_filter, per_queue)
            pstats.Stats(profile).sort_stats("tottime").print_stats(15)
        store.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
