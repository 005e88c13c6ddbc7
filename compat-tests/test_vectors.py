"""
The offline tier: byte vectors captured from the Java 4.9.8 encoders (see
vectors/README.md; test_harness.py proves they still come out of VectorCapture byte for
byte). Our codec decodes each into what Java decoded it into, and re-encodes the frames
and records byte for byte. Needs no Java, so it always runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.messagecodec import decode_messages, encode_message
from rocketmq_tx.remoting import FrameDecoder, LanguageCode, SerializeType, encode_command
from rocketmq_tx.remoting.headers import SendMessageRequestHeaderV2

VECTORS = Path(__file__).resolve().parent / "vectors"


def load(name: str) -> tuple[bytes, dict]:
    return (VECTORS / f"{name}.bin").read_bytes(), json.loads((VECTORS / f"{name}.json").read_text())


def decode_one(frame: bytes):  # type: ignore[no-untyped-def]
    decoder = FrameDecoder()
    [cmd] = decoder.feed(frame)
    assert decoder.buffered == 0
    return cmd


@pytest.mark.parametrize("name", ["send_message_v2_json", "send_message_v2_rocketmq"])
def test_send_message_v2(name: str) -> None:
    """SEND_MESSAGE_V2 as a Java 4.9.8 producer encodes it, both serializations."""
    frame, meta = load(name)
    cmd = decode_one(frame)
    assert cmd.serialize_type == SerializeType[meta["serialize"]]
    assert (cmd.code, cmd.opaque, cmd.version, cmd.flag, cmd.language) == (310, 42, 409, 0, LanguageCode.JAVA)
    assert cmd.ext_fields == meta["extFields"]
    assert cmd.body.hex() == meta["body_hex"]
    header = SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields)
    assert (header.producer_group, header.topic, header.queue_id, header.born_timestamp) == ("PG", "TopicTest", 1,
                                                                                            1700000000123)
    # Re-encoded, the frame is the Java bytes exactly (fastjson's key order and escapes
    # included), and so is what NettyEncoder puts on the wire.
    assert encode_command(cmd) == frame
    assert (VECTORS / meta["wire_file"]).read_bytes() == frame


def test_pull_response_body() -> None:
    """A PULL_MESSAGE body of three records: plain, zlib-compressed, IPv6 born host."""
    body, meta = load("pull_response_body")
    messages = decode_messages(body)
    assert len(messages) == meta["record_count"] == 3
    for msg, expected in zip(messages, meta["records"]):
        assert msg.topic == expected["topic"]
        assert (msg.queue_id, msg.queue_offset, msg.commit_log_offset, msg.sys_flag, msg.flag) == (
            expected["queueId"], expected["queueOffset"], expected["commitLogOffset"], expected["sysFlag"],
            expected["flag"])
        assert (msg.born_timestamp, msg.store_timestamp, msg.reconsume_times, msg.prepared_transaction_offset) == (
            expected["bornTimestamp"], expected["storeTimestamp"], expected["reconsumeTimes"],
            expected["preparedTransactionOffset"])
        assert msg.store_size == expected["storeSize"]
        assert msg.body_crc == expected["bodyCRC"]
        assert msg.body.hex() == expected["body_decompressed_hex"]
        assert msg.properties == expected["properties"]
        assert msg.offset_msg_id == expected["offsetMsgId"]
        assert msg.msg_id == expected["msgId"]
        assert f"{msg.store_host[0]}:{msg.store_host[1]}" == expected["storeHost"]
    born = [m.born_host for m in messages]
    assert born[0] == ("127.0.0.1", 50000) and born[2][1] == 50001 and born[2][0] in ("::1", "0:0:0:0:0:0:0:1")
    # Re-encoding the records as stored (bodies left compressed) gives the Java bytes.
    stored = decode_messages(body, decompress_body=False)
    assert b"".join(encode_message(m) for m in stored) == body


@pytest.mark.parametrize("name", ["route_response_legacy", "route_response_standard"])
def test_route_response(name: str) -> None:
    """GET_ROUTEINFO_BY_TOPIC responses: fastjson's unquoted numeric keys and the standard form read alike."""
    frame, meta = load(name)
    cmd = decode_one(frame)
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields) == (0, 43, 1, None, {})
    assert cmd.body.decode() == meta["body_text"]
    route = fastjson.loads(cmd.body)
    expected = {k: v for k, v in meta["route"].items() if v is not None}
    assert route == expected
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"}
    assert encode_command(cmd) == frame
    if name.endswith("standard"):
        # Our writer produces the standard form byte for byte from the decoded value.
        assert fastjson.dumps(route) == cmd.body
