"""
Issue #24's cost in instructions on a live broker: the broker daemon (``twistd
rocketmq-broker``, the bench's settings, its own name server) under valgrind's callgrind,
with metrics off and then on (PROM, not scraped: the scrape is once a second and measured
apart), sent ``--messages`` plain 1 KiB sends over TCP by ``--threads`` blocking producers.
Callgrind's counters are zeroed after a warm-up of 1,000 sends (every metrics row made) and
dumped after the measured sends, so start-up and warm-up fall out; the figure is
instructions per send of the whole broker process (all its threads; user space only), and the
functions whose own instructions per send grow most with metrics on.

    python3 bench/broker/live_instructions.py [--messages 4000] [--threads 4]

Unlike ``bench/txpath.py --metrics-instructions`` this has the network path in it (frame
reads and writes, the reactor), so the counting's share is of what a send costs the broker
end to end. Instructions are not time: cache misses, the kernel's work and contention are
not in them. Needs the Debian ``valgrind`` package; prints, writes no summary.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent.parent), str(HERE.parent.parent / "compat-tests")]

import javaharness as jh  # noqa: E402
import rocketmq_java  # noqa: E402
import txharness  # noqa: E402
from brokerbench.peers import tx_command_lines  # noqa: E402
from brokerbench.tools import ensure_topic  # noqa: E402
from txpath import _own_instructions  # noqa: E402

from rocketmq_tx.blocking.client import BlockingProducer  # noqa: E402
from rocketmq_tx.common.message import Message  # noqa: E402

TOPIC = "BenchLiveInstructions"
WARMUP = 1000
#: the frames on the stack when the counters are zeroed, which callgrind_annotate charges
#: with what ran under them: not a function's own cost
ENTRY_FRAMES = re.compile(r"\(below main\)|main|__libc_start_main.*|Py_\w*Main|_PyRun_\w+|PyEval_EvalCode|run_mod"
                          r"|0x[0-9a-f]+")


def _send(namesrv: str, count: int, threads: int) -> None:
    body = b"a" * 1024

    def sender(k: int) -> None:
        with BlockingProducer("bench_live_pg", namesrv, client_id=f"live-{k}") as p:
            for _ in range(count // threads):
                p.send(Message(topic=TOPIC, body=body))

    workers = [threading.Thread(target=sender, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def one_run(on: bool, messages: int, threads: int, out_dir: str) -> str:
    """One broker under callgrind; the path of the dump that covers the measured sends."""
    work = Path(tempfile.mkdtemp(prefix=f"live-{'on' if on else 'off'}-", dir=out_dir))
    ns_port, broker_port = jh.free_port(), rocketmq_java.free_port_block()
    extra = ({"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1",
              "metricsPromExporterPort": str(jh.free_port())} if on else None)
    argv = tx_command_lines(work, ns_port, broker_port, "separate", extra=extra)
    assert argv["namesrv"] is not None and argv["broker"] is not None
    namesrv = txharness.TxProcess(argv["namesrv"], work / "namesrv.log")
    broker = None
    try:
        namesrv.wait_for(r"rocketmq-namesrv listening on")
        out = str(work / "callgrind.out")
        with open(work / "broker.out", "w") as log:
            # a fixed hash seed: the same dict probes in both runs
            broker = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv["broker"]],
                                      env={**os.environ, "PYTHONHASHSEED": "0"}, stdout=log, stderr=subprocess.STDOUT)
        addr = f"127.0.0.1:{ns_port}"
        deadline = time.monotonic() + 300  # registration is slow under callgrind
        while True:
            try:
                ensure_topic(addr, TOPIC)
                break
            except Exception:  # noqa: BLE001 - not registered yet
                if time.monotonic() > deadline or broker.poll() is not None:
                    raise
                time.sleep(2)
        _send(addr, WARMUP, threads)
        subprocess.run(["callgrind_control", "--zero", str(broker.pid)], check=True, capture_output=True)
        _send(addr, messages, threads)
        subprocess.run(["callgrind_control", "--dump", str(broker.pid)], check=True, capture_output=True)
        return out + ".1"
    finally:
        if broker is not None:
            broker.terminate()
            broker.wait(120)
        namesrv.stop()


def _total(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"{path}: no summary line")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("live_instructions.py needs valgrind (callgrind, callgrind_control, callgrind_annotate)")
    out_dir = tempfile.mkdtemp(prefix="live-instructions-")
    try:
        dumps = {on: one_run(on, args.messages, args.threads, out_dir) for on in (False, True)}
        per = {on: _total(path) / args.messages for on, path in dumps.items()}
        print(f"plain send over TCP ({args.threads} blocking producers), broker instructions per send: metrics off "
              f"{per[False]:,.0f}, on {per[True]:,.0f}: +{per[True] - per[False]:,.0f} "
              f"({per[True] / per[False] - 1:+.2%}); callgrind over {args.messages:,} sends after {WARMUP:,}")
        own = {on: _own_instructions(path) for on, path in dumps.items()}
        delta = {name: (own[True].get(name, 0) - own[False].get(name, 0)) / args.messages
                 for name in set(own[True]) | set(own[False]) if not ENTRY_FRAMES.fullmatch(name)}
        print("functions whose own instructions per send grow most with metrics on:")
        for name in sorted(delta, key=delta.get, reverse=True)[:args.top]:  # type: ignore[arg-type]
            print(f"  {delta[name]:+8,.0f}  {name}")
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
