"""
The broker's transactional send path in process: CPU per message of a plain send, and of a
transactional one (the half message's SEND_MESSAGE_V2, then END_TRANSACTION commit: the real
message and the op message), through the broker's own processor table, without the network
(issue #21's transactional ratio, the broker's share of it).

    python bench/txpath.py [--messages 20000] [--rounds 5] [--profile [--profile-plain]] [--metrics]
    python bench/txpath.py --metrics-cost [--messages 2000] [--rounds 8]
    python bench/txpath.py --metrics-instructions [--messages 4000]

A broker controller (ASYNC_FLUSH, Java's default file sizes) on a temp store; 1 KiB bodies
with the properties the 5.5.0 producer sends (UNIQ_KEY, WAIT, TAGS; and TRAN_MSG, PGROUP for
a half message). Prints the median µs of process CPU per message for each and their ratio
(plain / transactional: the broker's best case for the end-to-end ratio). ``--profile``
adds a cProfile of one transactional round (``--profile-plain``: a plain one); ``--metrics``
runs the broker with its Prometheus counting on (issue #24's cost, in process). Run it on
two commits, same machine, to compare.

``--metrics-cost`` measures issue #24's cost alone: one broker with PROM on, plain sends
with its counting switched on and off in turn (rounds of 3 × ``--messages``), the minimum
µs per send of each over ``--rounds`` (the minimum: on a noisy machine the rounds a
neighbour slowed down say nothing of the code), and what one scrape costs (collect and
render, process CPU, median of 20).

``--metrics-instructions`` measures the same cost in instructions, which a busy machine does
not change: the broker under ``valgrind --tool=callgrind`` (the Debian ``valgrind`` package)
four times, counting on and off, with 2,000 and 2,000 + ``--messages`` plain sends after the
same warm-up; the difference of the two runs of a mode over ``--messages`` is its instructions
per send (start-up and warm-up cancel out), and the functions whose own instructions differ
most between the modes say where the cost is. Instructions are not time (cache misses are
not counted), so this directs the work; the time figures stay ``--metrics-cost``'s.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from twisted.internet.testing import MemoryReactorClock  # noqa: E402

from rocketmq_tx.broker.config import BrokerSettings  # noqa: E402
from rocketmq_tx.broker.controller import BrokerController  # noqa: E402
from rocketmq_tx.broker.processors import processor_table  # noqa: E402
from rocketmq_tx.common.message import properties_to_string  # noqa: E402
from rocketmq_tx.common.msgid import UniqueKeyGenerator  # noqa: E402
from rocketmq_tx.common.sysflag import MessageSysFlag  # noqa: E402
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode  # noqa: E402
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeader  # noqa: E402
from rocketmq_tx.remoting.headers.transaction import EndTransactionRequestHeader  # noqa: E402

TOPIC = "BenchTx"


class _Reactor(MemoryReactorClock):
    def callFromThread(self, f, *args, **kw):  # noqa: N802 (Twisted's name)
        f(*args, **kw)


class _Ctx:
    peer = "127.0.0.1:5555"

    def send_oneway(self, request: RemotingCommand) -> None:
        pass


def start(root: str, metrics: bool = False) -> tuple[BrokerController, object]:
    keys = {"brokerIP1": "127.0.0.1", "brokerName": "broker-a"}
    if metrics:
        keys["metricsExporterType"] = "PROM"
    settings = BrokerSettings(keys)
    assert not settings.update_from_properties({"storePathRootDir": root})
    controller = BrokerController(settings, _Reactor())
    assert controller.load()
    controller.start()
    return controller, processor_table(controller)


def run(table, n: int, transactional: bool, ids: UniqueKeyGenerator, body: bytes) -> None:
    ctx = _Ctx()
    for i in range(n):
        key = ids.create_uniq_id()
        props = {"UNIQ_KEY": key, "WAIT": "true", "TAGS": "TagA"}
        if transactional:
            props.update(TRAN_MSG="true", PGROUP="bench_pg")
        header = SendMessageRequestHeader(
            producer_group="bench_pg", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4,
            queue_id=i % 4, sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE if transactional else 0,
            born_timestamp=int(time.time() * 1000), flag=0, properties=properties_to_string(props))
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body,
                                          version=409)
        response = table.dispatch(ctx, request)
        assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
        if transactional:
            f = response.ext_fields
            end = EndTransactionRequestHeader("bench_pg", int(f["queueOffset"]), int(f["msgId"][-16:], 16),
                                              MessageSysFlag.TRANSACTION_COMMIT_TYPE, False, key, key)
            request = RemotingCommand.request(RequestCode.END_TRANSACTION, end.to_ext_fields(), version=409)
            ended = table.dispatch(ctx, request)
            assert ended.code == ResponseCode.SUCCESS, (ended.code, ended.remark)


def metrics_cost(messages: int, rounds: int) -> None:
    from prometheus_client.process_collector import ProcessCollector
    from twisted.internet.defer import Deferred

    from rocketmq_tx.metrics.core import render

    root = tempfile.mkdtemp(prefix="txpath-")
    try:
        controller, table = start(root, True)
        ids, body = UniqueKeyGenerator(), os.urandom(1024)
        run(table, 3000, False, ids, body)  # warm-up, and every row made
        metrics, observer = controller.metrics, table.observer
        best: dict[bool, list[float]] = {False: [], True: []}
        for k in range(rounds):
            for on in ((True, False) if k % 2 == 0 else (False, True)):
                controller.metrics, table.observer = (metrics, observer) if on else (None, None)
                for _ in range(3):
                    t0 = time.process_time()
                    run(table, messages, False, ids, body)
                    best[on].append((time.process_time() - t0) / messages * 1e6)
        controller.metrics, table.observer = metrics, observer
        off, on = min(best[False]), min(best[True])
        print(f"plain send, metrics off {off:.1f} µs, on {on:.1f} µs: +{on - off:.1f} µs ({on / off - 1:+.1%}); "
              f"minimum of {rounds} interleaved rounds of 3 x {messages:,}")
        collector, scrapes = ProcessCollector(registry=None), []
        for _ in range(20):
            t0 = time.process_time()
            families = metrics.collect()
            if isinstance(families, Deferred):
                got: list = []
                families.addCallback(got.append)
                while not got:
                    controller.reactor.advance(0.01)
                families = got[0]
            render(families, collector)
            scrapes.append((time.process_time() - t0) * 1000)
        print(f"one scrape (collect + render): {statistics.median(scrapes):.2f} ms of CPU (median of 20)")
        controller.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _instructions_child(on: bool, messages: int) -> None:
    """One callgrind run of --metrics-instructions: warm up, then *messages* plain sends."""
    root = tempfile.mkdtemp(prefix="txpath-")
    controller, table = start(root, True)
    ids, body = UniqueKeyGenerator(), b"x" * 1024
    run(table, 3000, False, ids, body)  # warm-up with counting on: every row made
    if not on:
        controller.metrics, table.observer = None, None
    run(table, messages, False, ids, body)
    shutil.rmtree(root, ignore_errors=True)
    os._exit(0)  # no shutdown: its work would not be the same in both modes


def _own_instructions(path: str) -> dict[str, int]:
    """Each function's own (exclusive) instructions in a callgrind file, by name."""
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", "--inclusive=no", path],
                          check=True, capture_output=True, text=True).stdout
    own: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r" \([\d,]+x\)", "", m.group(2).split(" [")[0])
            name = re.sub(r"'\d+$", "", name.rsplit(":", 1)[-1])
            own[name] = own.get(name, 0) + int(m.group(1).replace(",", ""))
    return own


def metrics_instructions(messages: int, top: int = 12) -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        sys.exit("--metrics-instructions needs valgrind (its callgrind tool and callgrind_annotate)")
    out = tempfile.mkdtemp(prefix="txpath-cg-")
    small, large = 2000, 2000 + messages
    try:
        runs = {}
        for on in (True, False):
            for n in (small, large):
                path = os.path.join(out, f"cg.{'on' if on else 'off'}.{n}")
                # a fixed hash seed: the same dict probes in every run
                runs[on, n] = path, subprocess.Popen(
                    ["valgrind", "--tool=callgrind", f"--callgrind-out-file={path}", sys.executable,
                     os.path.abspath(__file__), "--instructions-child", "on" if on else "off", "--messages", str(n)],
                    env={**os.environ, "PYTHONHASHSEED": "0"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                    text=True)
        totals, own = {}, {}
        for key, (path, proc) in runs.items():
            _, err = proc.communicate()
            m = re.search(r"Collected : (\d+)", err)
            if proc.returncode != 0 or m is None:
                sys.exit(f"callgrind run {key} failed:\n{err[-2000:]}")
            totals[key] = int(m.group(1))
            own[key] = _own_instructions(path)
        per = {on: (totals[on, large] - totals[on, small]) / messages for on in (True, False)}
        print(f"plain send, metrics off {per[False]:,.0f} instructions, on {per[True]:,.0f}: "
              f"+{per[True] - per[False]:,.0f} ({per[True] / per[False] - 1:+.2%}); callgrind, "
              f"(runs of {large:,} - runs of {small:,}) / {messages:,}")
        names = set().union(*own.values())
        delta = {name: ((own[True, large].get(name, 0) - own[True, small].get(name, 0))
                        - (own[False, large].get(name, 0) - own[False, small].get(name, 0))) / messages
                 for name in names}
        print("functions whose own instructions per send grow most with counting on:")
        for name in sorted(delta, key=delta.get, reverse=True)[:top]:
            print(f"  {delta[name]:+8,.0f}  {name}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, help="per round (default 20,000; --metrics-cost: 2,000)")
    parser.add_argument("--rounds", type=int, help="default 5 (--metrics-cost: 8)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--metrics", action="store_true", help="the broker with metricsExporterType=PROM")
    parser.add_argument("--profile-plain", action="store_true", help="--profile a plain round instead")
    parser.add_argument("--callees", type=lambda text: [n for n in text.split(",") if n], default=[],
                        help="--profile: also what these functions (comma-separated pstats patterns) call")
    parser.add_argument("--metrics-cost", action="store_true",
                        help="issue #24: plain sends with PROM counting on and off in turn, in one broker")
    parser.add_argument("--metrics-instructions", action="store_true",
                        help="issue #24: the same cost in instructions per send (valgrind's callgrind)")
    parser.add_argument("--instructions-child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.instructions_child:
        _instructions_child(args.instructions_child == "on", args.messages)
        return
    if args.metrics_instructions:
        metrics_instructions(args.messages or 4000)
        return
    if args.metrics_cost:
        metrics_cost(args.messages or 2000, args.rounds or 8)
        return
    args.messages, args.rounds = args.messages or 20_000, args.rounds or 5
    root = tempfile.mkdtemp(prefix="txpath-")
    try:
        controller, table = start(root, args.metrics)
        ids, body = UniqueKeyGenerator(), os.urandom(1024)
        run(table, 2000, False, ids, body)  # warm-up: files created, topic auto-created
        run(table, 2000, True, ids, body)
        figures: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.rounds):
            for transactional in (False, True):
                t0 = time.process_time()
                run(table, args.messages, transactional, ids, body)
                figures[transactional].append((time.process_time() - t0) / args.messages * 1e6)
        plain, tx = statistics.median(figures[False]), statistics.median(figures[True])
        print(f"plain send {plain:.1f} µs, transactional (half + commit) {tx:.1f} µs of CPU per message "
              f"(median of {args.rounds} rounds of {args.messages:,}); plain / transactional = {plain / tx:.3f}")
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(run, table, args.messages, not args.profile_plain, ids, body)
            stats = pstats.Stats(profile)
            stats.sort_stats("tottime").print_stats(int(os.environ.get("NSTATS", "25")))
            for name in args.callees:
                stats.print_callees(name)
        controller.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
