"""
Codec cost, rocketmq_tx against the official Java codec timed in the same run.

    python bench/codec.py [--java 4.9.8|5.5.0|none]

Cases (both header serializations):
* send_v2: a SEND_MESSAGE_V2 request with a 1 KiB body: build the command from the typed
  header, encode the frame, decode it, decode the typed header;
* pull_32x1k: a PULL_MESSAGE response whose body holds 32 records of 1 KiB: encode, decode,
  decode the response header and all 32 records.

The Java side is compat-tests/java's CodecBench (fastEncodeHeader + RemotingCommand.decode +
decodeCommandCustomHeader, MessageDecoder.decodes), JIT-warmed. Prints µs per operation and
the ratio rocketmq_tx / Java (lower is better).
"""

from __future__ import annotations

import argparse
import json
import os

from _common import best_us, javaharness, table

from rocketmq_tx.common.message import MessageExt, properties_to_string
from rocketmq_tx.common.messagecodec import decode_messages, encode_message
from rocketmq_tx.remoting import FrameDecoder, RemotingCommand, SerializeType, encode_command
from rocketmq_tx.remoting.headers import PullMessageResponseHeader, SendMessageRequestHeaderV2

PROPERTIES = properties_to_string({"KEYS": "k1 k2", "UNIQ_KEY": "0A0000010000000000000000000000AA", "WAIT": "true",
                                   "TAGS": "TagA"})


def send_case(kind: SerializeType) -> float:
    body = os.urandom(1024)
    decoder = FrameDecoder()

    def op() -> None:
        header = SendMessageRequestHeaderV2("PG", "TopicTest", "TBW102", 4, 1, 0, 1700000000123, 0,
                                            properties=PROPERTIES, reconsume_times=0, unit_mode=False, batch=False)
        frame = encode_command(RemotingCommand.request(310, header.to_ext_fields(), body, serialize_type=kind))
        [cmd] = decoder.feed(frame)
        SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields)

    return best_us(op, 20000)


def pull_body(count: int, size: int) -> bytes:
    records = []
    offset = 0
    for i in range(count):
        msg = MessageExt(topic="TopicTest", body=os.urandom(size),
                         properties={"TAGS": "TagA", "KEYS": f"k{i}", "UNIQ_KEY": f"{i:032X}",
                                     "CLUSTER": "DefaultCluster"},
                         queue_id=0, queue_offset=i, commit_log_offset=offset, born_timestamp=1700000000000 + i,
                         born_host=("127.0.0.1", 50000), store_timestamp=1700000000100 + i,
                         store_host=("127.0.0.1", 10911))
        record = encode_message(msg)
        offset += len(record)
        records.append(record)
    return b"".join(records)


def pull_case(kind: SerializeType) -> float:
    body = pull_body(32, 1024)
    decoder = FrameDecoder()

    def op() -> None:
        header = PullMessageResponseHeader(0, 32, 0, 32)
        response = RemotingCommand(code=0, opaque=7, flag=1, ext_fields=header.to_ext_fields(), body=body,
                                   serialize_type=kind)
        [cmd] = decoder.feed(encode_command(response))
        PullMessageResponseHeader.from_ext_fields(cmd.ext_fields)
        assert len(decode_messages(cmd.body)) == 32

    return best_us(op, 500)


def java_figures(version: str) -> dict[str, float]:
    classpath = javaharness.build(javaharness.VERSION_KEYS[version])
    lines = javaharness.run_java(classpath, "CodecBench", ["200000", "200000"], timeout=900,
                                 jvm_args=("-Xmx1g",))
    return {rec["case"]: rec["us_per_op"] for rec in map(json.loads, lines)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--java", default="4.9.8", help="Java peer version, or 'none'")
    args = parser.parse_args()
    ours = {}
    for kind in SerializeType:
        ours[f"send_v2_{kind.name.lower()}"] = send_case(kind)
        ours[f"pull_32x1k_{kind.name.lower()}"] = pull_case(kind)
    java = java_figures(args.java) if args.java != "none" else {}
    rows = []
    for case in ["send_v2_json", "send_v2_rocketmq", "pull_32x1k_json", "pull_32x1k_rocketmq"]:
        j = java.get(case)
        rows.append([case, f"{ours[case]:.2f}", f"{j:.2f}" if j else "-", f"{ours[case] / j:.1f}x" if j else "-"])
    print(table(["case", "rocketmq_tx µs/op", f"Java {args.java} µs/op", "ratio tx/Java"], rows))


if __name__ == "__main__":
    main()
