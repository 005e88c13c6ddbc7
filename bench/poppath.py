"""
The broker's POP path in process: CPU per acked message of POP_MESSAGE (batches of 32) and one
ACK_MESSAGE per message, as ``run.py --pop``'s PopBench drives it, through the broker's own
processor table, without the network (issue #22's POP throughput, the broker's share of it).

    python bench/poppath.py [--messages 64000] [--rounds 5] [--profile]

A broker controller (ASYNC_FLUSH, Java's default file sizes) on a temp store; a 4-queue topic
loaded with 1 KiB messages before each round; each round pops them all (queue -1: the broker
picks the queue, as PopBench asks) and acks every one with the extra info the 5.x client
builds. Prints the median µs of process CPU per acked message, and of the pops and the acks
apart. ``--profile`` adds a cProfile of one round. Run it on two commits, same machine, to
compare.
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

from txpath import _Ctx, start  # noqa: E402

from rocketmq_tx.common.message import properties_to_string  # noqa: E402
from rocketmq_tx.common.messagecodec import decode_messages  # noqa: E402
from rocketmq_tx.common.msgid import UniqueKeyGenerator  # noqa: E402
from rocketmq_tx.common.route import TopicConfig  # noqa: E402
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode  # noqa: E402
from rocketmq_tx.remoting import extrainfo as ei  # noqa: E402
from rocketmq_tx.remoting.headers.pop import (  # noqa: E402
    AckMessageRequestHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_tx.remoting.headers.send import SendMessageRequestHeader  # noqa: E402

TOPIC = "BenchPop"
GROUP = "bench_pop_group"
QUEUES = 4


def load(table, n: int, ids: UniqueKeyGenerator, body: bytes) -> None:
    ctx = _Ctx()
    for i in range(n):
        header = SendMessageRequestHeader(
            producer_group="bench_pg", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=QUEUES,
            queue_id=i % QUEUES, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
            properties=properties_to_string({"UNIQ_KEY": ids.create_uniq_id(), "WAIT": "true"}))
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body,
                                          version=409)
        response = table.dispatch(ctx, request)
        assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)


def consume(table, controller, n: int, times: dict[str, float]) -> None:
    """Pop and ack until *n* messages were acked; adds the CPU of each kind to *times*."""
    ctx = _Ctx()
    acked = 0
    while acked < n:
        t0 = time.process_time()
        header = PopMessageRequestHeader(GROUP, TOPIC, -1, 32, 60_000, 0, controller.now_ms(), 0)
        response = table.dispatch(ctx, RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext_fields(),
                                                               version=409))
        t1 = time.process_time()
        times["pop"] += t1 - t0
        assert response.code == ResponseCode.SUCCESS, (response.code, response.remark, acked)
        # what the 5.x client does with the answer (MQClientAPIImpl.processPopResponse): not the broker's CPU
        pop = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
        starts = ei.parse_start_offset_info(pop.start_offset_info)
        acks = []
        for msg in decode_messages(response.body):
            extra = ei.build_extra_info(starts[ei.start_offset_info_key(msg.topic, msg.queue_id)], pop.pop_time,
                                        pop.invisible_time, pop.revive_qid, msg.topic, "broker-a", msg.queue_id,
                                        msg.queue_offset)
            ack = AckMessageRequestHeader(GROUP, TOPIC, msg.queue_id, extra, msg.queue_offset)
            acks.append(RemotingCommand.request(RequestCode.ACK_MESSAGE, ack.to_ext_fields(), version=409))
        t2 = time.process_time()
        for request in acks:
            answer = table.dispatch(ctx, request)
            assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
        times["ack"] += time.process_time() - t2
        acked += len(acks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=64_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="poppath-")
    try:
        controller, table = start(root)
        controller.topic_config_manager.update_topic_config(TopicConfig(TOPIC, QUEUES, QUEUES))
        ids, body = UniqueKeyGenerator(), os.urandom(1024)
        load(table, 3200, ids, body)  # warm-up
        consume(table, controller, 3200, {"pop": 0.0, "ack": 0.0})
        pops, acks = [], []
        for _ in range(args.rounds):
            load(table, args.messages, ids, body)
            times = {"pop": 0.0, "ack": 0.0}
            consume(table, controller, args.messages, times)
            pops.append(times["pop"] / args.messages * 1e6)
            acks.append(times["ack"] / args.messages * 1e6)
        pop, ack = statistics.median(pops), statistics.median(acks)
        print(f"per acked message: {pop + ack:.1f} µs of CPU (pops {pop:.1f}, acks {ack:.1f}; "
              f"medians of {args.rounds} rounds of {args.messages:,})")
        if args.profile:
            load(table, args.messages, ids, body)
            profile = cProfile.Profile()
            profile.runcall(consume, table, controller, args.messages, {"pop": 0.0, "ack": 0.0})
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        controller.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
