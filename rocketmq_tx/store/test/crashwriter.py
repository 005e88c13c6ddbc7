"""
The writer process of the crash test: appends to a store until it is killed.

``python -m rocketmq_tx.store.test.crashwriter ROOT SYNC_FLUSH|ASYNC_FLUSH THREADS``

Thread *t* writes queue *t* of topic ``Crash``; message *n* of a queue has queue offset *n*
and the body :func:`body_of` ``(t, n)``. After each acknowledged put the writer prints
``ACK t n end`` (*end* = the CommitLog offset just past the record); it prints ``READY`` once
the store is open, and ``FLUSHED offset`` whenever the CommitLog's flushed offset (data known to
be on disk) moves.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time

from rocketmq_tx.common.message import properties_to_string
from rocketmq_tx.store import DefaultMessageStore, FlushDiskType, MessageExtBrokerInner, StoreDriver
from rocketmq_tx.store.test.util import small_config

TOPIC = "Crash"


def body_of(queue: int, n: int) -> bytes:
    seed = hashlib.sha256(b"%d/%d" % (queue, n)).digest()
    return b"%d:%d:" % (queue, n) + seed * (1 + (seed[0] % 24))


def config(root: str, flush: str):
    return small_config(root, flush_disk_type=FlushDiskType(flush), mapped_file_size_commit_log=256 * 1024,
                        mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=1000,
                        max_index_num=4000, flush_interval_commit_log=20)


def main() -> None:
    root, flush, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = DefaultMessageStore(config(root, flush))
    if not store.load():
        print("LOAD-FAILED", flush=True)
        sys.exit(2)
    store.start()
    # scaled to the small files, so SYNC_FLUSH's zeroing ahead runs (and is killed) too
    warmer = store.page_warmer
    warmer.window, warmer.margin, warmer.chunk = 32 * 1024, 4096, 16 * 1024
    driver = StoreDriver(store, clean=False)
    driver.start()
    out_lock = threading.Lock()

    def write(q: int) -> None:
        n = store.get_max_offset_in_queue(TOPIC, q)
        while True:
            props = properties_to_string({"KEYS": f"{q}-{n}", "TAGS": f"t{q}"}).encode()
            r = store.put_message(MessageExtBrokerInner(TOPIC, body_of(q, n), props, q))
            if not r.is_ok():
                with out_lock:
                    print(f"FAIL {q} {n} {r.status.name}", flush=True)
                return
            assert r.append_result.logics_offset == n, (r.append_result.logics_offset, n)
            with out_lock:
                sys.stdout.write(f"ACK {q} {n} {r.append_result.wrote_offset + r.append_result.wrote_bytes}\n")
                sys.stdout.flush()
            n += 1

    print("READY", flush=True)
    for q in range(threads):
        threading.Thread(target=write, args=(q,), daemon=True).start()
    reported = -1
    while True:
        time.sleep(0.005)
        flushed = store.commit_log.flushed_where
        if flushed != reported:
            reported = flushed
            with out_lock:
                sys.stdout.write(f"FLUSHED {flushed}\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
