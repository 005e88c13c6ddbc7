"""
The broker's cost of ACL 1.0 in process (issue #19): CPU per SEND_MESSAGE_V2 checked by the
broker's own hook, and the whole send path with ACL on and off, without the network.

    python bench/aclpath.py [--messages 20000] [--rounds 5] [--profile [--profile-what hook|plain]]

A broker controller (``aclEnable=true``, ASYNC_FLUSH) on a temp store whose
``conf/plain_acl.yml`` has the bench account (``bench/broker``'s: PUB|SUB by default). The
requests are what the Java 5.5.0 benchmark Producer sends (``sendSmartMsg``: the V2 header
``a`` .. ``n`` with the fields it sets, 1 KiB bodies, UNIQ_KEY/WAIT/TAGS), each with its own
unique key so every signature differs, and signed as Java's ``AclClientRPCHook`` signs
(:func:`rocketmq_tx.acl.signing.sign`).
Prints the median µs of process CPU per message (over ``--rounds``) of:

* ``hook``: :class:`~rocketmq_tx.broker.processors.acl.AclServerHook` alone, on decoded requests;
* ``in the path``: the same hook's own CPU time (``thread_time_ns`` around it, less that of an
  empty hook timed alike) while the whole path runs, its caches as cold as in a live broker;
* ``plain`` / ``acl``: a frame (JSON header, as Java's client sends it) decoded, dispatched
  through the processor table (the hook installed or not; unsigned frames without ACL), and
  the answer encoded: the broker's per-message path minus the sockets and the reactor.

``acl - plain`` is the broker's in-process increase per message; compare it with the hook alone
and with the end-to-end figures of ``bench/broker/run.py --acl``. ``--profile`` adds a
cProfile of one round (``--profile-what``: ``acl`` (default), ``hook`` or ``plain``). Run it on
two commits, same machine, to compare.
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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from txpath import _Ctx, _Reactor  # noqa: E402

from rocketmq_tx.acl.signing import sign  # noqa: E402
from rocketmq_tx.broker.config import BrokerSettings  # noqa: E402
from rocketmq_tx.broker.controller import BrokerController  # noqa: E402
from rocketmq_tx.broker.processors import processor_table  # noqa: E402
from rocketmq_tx.common.message import properties_to_string  # noqa: E402
from rocketmq_tx.common.msgid import UniqueKeyGenerator  # noqa: E402
from rocketmq_tx.net.dispatch import ProcessorTable  # noqa: E402
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode  # noqa: E402
from rocketmq_tx.remoting.framing import decode_frame, encode_command  # noqa: E402
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeader  # noqa: E402

TOPIC = "BenchAcl"
ACCESS_KEY = "benchUser01"
SECRET_KEY = "benchSecret1"
ACL_YML = (f"accounts:\n- accessKey: {ACCESS_KEY}\n  secretKey: {SECRET_KEY}\n  admin: false\n"
           "  defaultTopicPerm: PUB|SUB\n  defaultGroupPerm: PUB|SUB\n")
#: MQVersion.CURRENT_VERSION of the 5.5.0 client
CLIENT_VERSION = 503


def start(root: str) -> tuple[BrokerController, ProcessorTable]:
    (Path(root) / "conf").mkdir()
    (Path(root) / "conf" / "plain_acl.yml").write_text(ACL_YML)
    settings = BrokerSettings({"brokerIP1": "127.0.0.1", "brokerName": "broker-a", "aclEnable": "true",
                               "rocketmqHome": root})
    assert not settings.update_from_properties({"storePathRootDir": os.path.join(root, "store")})
    controller = BrokerController(settings, _Reactor())
    assert controller.load()
    controller.start()
    return controller, processor_table(controller)


def requests(n: int, signed: bool, ids: UniqueKeyGenerator, body: bytes) -> list[RemotingCommand]:
    out = []
    for i in range(n):
        props = {"UNIQ_KEY": ids.create_uniq_id(), "WAIT": "true", "TAGS": "TagA"}
        header = SendMessageRequestHeader(
            producer_group="bench_acl_pg", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4,
            queue_id=i % 4, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
            properties=properties_to_string(props), reconsume_times=0, unit_mode=False, batch=False,
            broker_name="broker-a")
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body,
                                          version=CLIENT_VERSION)
        if signed:
            sign(request, ACCESS_KEY, SECRET_KEY)
        out.append(request)
    return out


def frames(batch: list[RemotingCommand]) -> list[bytes]:
    return [encode_command(r)[4:] for r in batch]  # without the length prefix, as decode_frame takes them


def run_path(table: ProcessorTable, payloads: list[bytes]) -> None:
    ctx = _Ctx()
    for payload in payloads:
        request = decode_frame(payload)
        response = table.dispatch(ctx, request)
        assert response is not None and response.code == ResponseCode.SUCCESS, (response.code, response.remark)
        response.opaque = request.opaque
        encode_command(response)


def run_hook(hook: Callable[[_Ctx, RemotingCommand], RemotingCommand | None], batch: list[RemotingCommand]) -> None:
    ctx = _Ctx()
    for request in batch:
        refusal = hook(ctx, request)
        assert refusal is None, refusal.remark


class _TimedHook:
    def __init__(self, hook: Callable[[_Ctx, RemotingCommand], RemotingCommand | None]) -> None:
        self.hook = hook
        self.ns = 0

    def __call__(self, ctx: _Ctx, request: RemotingCommand) -> RemotingCommand | None:
        t0 = time.thread_time_ns()
        refusal = self.hook(ctx, request)
        self.ns += time.thread_time_ns() - t0
        return refusal


def cpu_us(fn: Callable[[], None], n: int) -> float:
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--profile-what", choices=("acl", "hook", "plain"), default="acl")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="aclpath-")
    try:
        controller, table = start(root)
        hook = table.before_request
        assert hook is not None, "aclEnable=true did not install the ACL hook"
        ids, body, n = UniqueKeyGenerator(), os.urandom(1024), args.messages
        plain_frames = frames(requests(n, False, ids, body))
        acl_frames = frames(requests(n, True, ids, body))
        # the hook sees decoded requests, as the table hands them over
        decoded = [decode_frame(p) for p in acl_frames]

        def plain() -> None:
            table.before_request = None
            run_path(table, plain_frames)

        def acl() -> None:
            table.before_request = hook
            run_path(table, acl_frames)

        def hook_only() -> None:
            run_hook(hook, decoded)

        def hook_in_path() -> float:
            """ns per message in the hook, less the timer's own cost (an empty hook's)."""
            spent = []
            for inner in (hook, lambda ctx, request: None):
                timed = _TimedHook(inner)
                table.before_request = timed
                run_path(table, acl_frames)
                spent.append(timed.ns)
            return (spent[0] - spent[1]) / n

        plain()  # warm-up: files created, topic auto-created
        acl()
        figures: dict[str, list[float]] = {"hook": [], "in_path": [], "plain": [], "acl": []}
        for _ in range(args.rounds):
            figures["hook"].append(cpu_us(hook_only, n))
            figures["in_path"].append(hook_in_path() / 1e3)
            figures["plain"].append(cpu_us(plain, n))
            figures["acl"].append(cpu_us(acl, n))
        m = {k: statistics.median(v) for k, v in figures.items()}
        print(f"CPU µs per SEND_MESSAGE_V2 (median of {args.rounds} rounds of {n:,}; 1 KiB, signed as the Java "
              f"client signs):\n"
              f"  ACL hook alone           {m['hook']:6.2f}   in the path {m['in_path']:6.2f}\n"
              f"  decode+dispatch+encode   plain {m['plain']:6.2f}   ACL {m['acl']:6.2f}   "
              f"ACL - plain {m['acl'] - m['plain']:5.2f}   plain / ACL {m['plain'] / m['acl']:.3f}")
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall({"acl": acl, "plain": plain, "hook": hook_only}[args.profile_what])
            pstats.Stats(profile).sort_stats("tottime").print_stats(int(os.environ.get("NSTATS", "25")))
        controller.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
