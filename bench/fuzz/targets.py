"""
Fuzz targets: each takes the fuzzer's bytes and returns, or raises on a bug.

A bug is any exception other than the ones the decoder under test declares (each target
lists them next to the call), a disagreement between two implementations of one format
(the C accelerator and its Python twin, a stream fed whole and in pieces), or a broken
invariant checked after the decode (a decoded header re-encodes to itself, recovery keeps
every record before the damage). Hangs and memory are the fuzzer's to watch
(``-timeout``, ``-rss_limit_mb``).

Importable without atheris: ``fuzz.py`` drives these with atheris (coverage-guided), and
``rocketmq_tx/test/test_fuzz_targets.py`` replays :func:`seeds` and fixed random inputs
through them in CI. The inputs are read with :class:`Input`, so a seed file of a target
is the same bytes for both.
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rocketmq_tx.common import fastjson
from rocketmq_tx.common._batch import decode_batch, encode_batch
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import Message, MessageExt, MessageQueue
from rocketmq_tx.common.messagecodec import decode_message, decode_messages, encode_message
from rocketmq_tx.common.native import speedups
from rocketmq_tx.common.route import DataVersion, TopicConfig, TopicRouteData
from rocketmq_tx.remoting import (
    FrameDecoder,
    LocalProtocolError,
    MQBrokerError,
    RemoteProtocolError,
    RemotingCommand,
    RemotingCommandError,
    SerializeType,
    adminapi,
    adminbodies,
    api,
    encode_command,
)
from rocketmq_tx.remoting import headers as header_modules
from rocketmq_tx.remoting.bodies import ClusterInfo, RegisterBrokerBody, TopicList
from rocketmq_tx.remoting.header import CommandCustomHeader
from rocketmq_tx.remoting.serialization import (
    _decode_rocketmq_header,
    _encode_rocketmq_header,
    decode_json_header,
    encode_json_header,
)
from rocketmq_tx.store.commitlog import (
    _validate_record,
    check_message_and_return_size,
    iter_batch,
)

__all__ = ["TARGETS", "Input", "seeds"]

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "compat-tests" / "vectors"

#: What a JSON body decoder (``from_json`` of a fastjson value) may raise for a value of
#: the wrong shape: its callers catch exactly these (adminapi ``_decoded``, HEART_BEAT).
SHAPE_ERRORS = (ValueError, TypeError, KeyError, AttributeError)


class Bug(AssertionError):
    """An invariant a decoder must keep did not hold."""


class Input:
    """The fuzzer's bytes read as a few control values, then the payload (like FuzzedDataProvider)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def u16(self) -> int:
        return self.byte() << 8 | self.byte()

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def text(self) -> str:
        """A length-prefixed (one byte) UTF-8 string, damaged bytes replaced."""
        return self.take(self.byte()).decode("utf-8", "replace")

    def rest(self) -> bytes:
        out = self.data[self.pos:]
        self.pos = len(self.data)
        return out


TARGETS: dict[str, Callable[[bytes], None]] = {}


def target(fn: Callable[[bytes], None]) -> Callable[[bytes], None]:
    TARGETS[fn.__name__.removeprefix("fuzz_")] = fn
    return fn


# ----------------------------------------------------------------------------- frames

_FRAME_LIMITS = (16 * 1024 * 1024, 64, 4096, 1 << 20)


def _feed_all(decoder: FrameDecoder, chunks: list[bytes]) -> tuple[list[RemotingCommand], type | None]:
    out: list[RemotingCommand] = []
    for chunk in chunks:
        try:
            out += decoder.feed(chunk)
        except RemoteProtocolError as e:  # declared: the stream is not RocketMQ frames
            if decoder.error is not e:
                raise Bug(f"raised {e!r} but remembers {decoder.error!r}") from None
            return out, type(e)
        if decoder.buffered > decoder.max_frame_length:
            raise Bug(f"buffers {decoder.buffered} bytes, more than a frame")
        if decoder.error is not None:
            # Good frames before bad bytes came out; the next feed must raise the same error.
            try:
                decoder.feed(b"")
            except RemoteProtocolError as e:
                if e is not decoder.error:
                    raise Bug("a later feed raised another error") from None
            else:
                raise Bug("a later feed did not raise the remembered error")
            return out, type(decoder.error)
    return out, None


@target
def fuzz_frame(data: bytes) -> None:
    """FrameDecoder.feed: the same commands and error whether the stream comes whole or in pieces."""
    inp = Input(data)
    limit = _FRAME_LIMITS[inp.byte() & 3]
    cuts = sorted(inp.u16() for _ in range(inp.byte() & 15))
    stream = inp.rest()
    whole = _feed_all(FrameDecoder(limit), [stream])
    bounds = [0] + [c for c in cuts if c < len(stream)] + [len(stream)]
    pieces = _feed_all(FrameDecoder(limit), [stream[a:b] for a, b in zip(bounds, bounds[1:])])
    if whole != pieces:
        raise Bug(f"whole stream gave {whole!r}, pieces {pieces!r}")
    for cmd in whole[0]:
        _check_command(cmd)


def frame_seed(stream: bytes, cuts: tuple[int, ...] = (), limit: int = 0) -> bytes:
    return bytes([limit, len(cuts)]) + b"".join(struct.pack(">H", c) for c in cuts) + stream


# ----------------------------------------------------------------------------- headers

def _check_command(cmd: RemotingCommand) -> None:
    for name in ("code", "language", "version", "opaque", "flag"):
        if not isinstance(getattr(cmd, name), int) or isinstance(getattr(cmd, name), bool):
            raise Bug(f"{name} is {getattr(cmd, name)!r}")
    if cmd.remark is not None and type(cmd.remark) is not str:
        raise Bug(f"remark is {cmd.remark!r}")
    if not all(type(k) is str and type(v) is str for k, v in cmd.ext_fields.items()):
        raise Bug(f"ext fields not all strings: {cmd.ext_fields!r}")
    # Every string must be writable again (to a response, the store, a log): no lone surrogates.
    for text in (cmd.remark or "", *cmd.ext_fields, *cmd.ext_fields.values()):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise Bug(f"{text!r} cannot be encoded as UTF-8") from None


@target
def fuzz_json_header(data: bytes) -> None:
    """The JSON header: RemoteProtocolError or a command that encodes back to itself."""
    try:
        cmd = decode_json_header(data, b"")  # declared: RemoteProtocolError
    except RemoteProtocolError:
        return
    _check_command(cmd)
    try:
        again = encode_json_header(cmd)  # declared: LocalProtocolError (e.g. a number past 64 bits)
    except LocalProtocolError:
        return
    if decode_json_header(again, b"") != cmd:
        raise Bug(f"{cmd!r} does not survive encode/decode: {again!r}")


def _outcome(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except RemoteProtocolError as e:  # declared by both implementations
        return "error", type(e)


@target
def fuzz_rocketmq_header(data: bytes) -> None:
    """The ROCKETMQ binary header: the Python twin and the C decoder agree; a decoded header re-encodes."""
    py = _outcome(_decode_rocketmq_header, data, b"body")
    if speedups is not None:
        c = _outcome(speedups.decode_rocketmq_header, data, b"body")
        if c != py:
            raise Bug(f"C decoder gave {c!r}, Python {py!r}")
    if py[0] != "ok":
        return
    cmd = py[1]
    _check_command(cmd)
    try:
        again = _encode_rocketmq_header(cmd)  # declared: LocalProtocolError
    except LocalProtocolError:
        return
    if speedups is not None and speedups.encode_rocketmq_header(cmd) != again:
        raise Bug(f"C and Python encoders differ for {cmd!r}")
    if _decode_rocketmq_header(again, b"body") != cmd:
        raise Bug(f"{cmd!r} does not survive encode/decode")


# ----------------------------------------------------------------------------- bodies

def _response(inp: Input) -> RemotingCommand:
    """A response whose code, ext fields (known keys) and body come from the input."""
    code = (0, 0, 0, 1, 10, 11, 12, 17, 19, 20, 21, 22, 24, 25, 206)[inp.byte() % 15]
    keys = ("queueId", "queueOffset", "msgId", "transactionId", "MSG_REGION", "TRACE_ON", "offset",
            "timestamp", "nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId",
            "indexLastUpdateTimestamp")
    ext = {keys[inp.byte() % len(keys)]: inp.text() for _ in range(inp.byte() & 7)}
    return RemotingCommand(code=code, ext_fields=ext, body=inp.rest(), flag=1)


MQ = MessageQueue("TopicTest", "broker-a", 0)


def _json_decoder(fn: Callable[[Any], Any]) -> Callable[[Input], Any]:
    def decode(inp: Input) -> Any:
        return fn(fastjson.loads(inp.rest()))
    decode.__name__ = getattr(fn, "__qualname__", repr(fn))
    return decode


def _header_decoder(cls: type[CommandCustomHeader]) -> Callable[[Input], Any]:
    def decode(inp: Input) -> Any:
        keys = [key for _name, key, _kind, _required in cls._wire_fields] or ["k"]
        ext = {keys[inp.byte() % len(keys)]: inp.text() for _ in range(inp.byte() & 15)}
        return cls.from_ext_fields(ext)
    decode.__name__ = cls.__name__
    return decode


def _custom_headers() -> list[type[CommandCustomHeader]]:
    import importlib
    import pkgutil
    found: dict[str, type[CommandCustomHeader]] = {}
    for info in pkgutil.iter_modules(header_modules.__path__):
        module = importlib.import_module(f"{header_modules.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, CommandCustomHeader) and value._wire_fields:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


def _body_decoders() -> list[tuple[str, Callable[[Input], Any], tuple[type[BaseException], ...]]]:
    """Every body decoder with the errors it declares, in a fixed order (the selector byte indexes it)."""
    out: list[tuple[str, Callable[[Input], Any], tuple[type[BaseException], ...]]] = [
        ("fastjson.loads", lambda inp: fastjson.loads(inp.rest()), (ValueError,)),
        ("RegisterBrokerBody.decode(json)", lambda inp: RegisterBrokerBody.decode(inp.rest(), False),
         (RemotingCommandError,)),
        ("RegisterBrokerBody.decode(zlib)", lambda inp: RegisterBrokerBody.decode(inp.rest(), True),
         (RemotingCommandError,)),
        # The compressed form without zlib around it: the fuzzer reaches the layout directly.
        ("RegisterBrokerBody.decode(inflated)", lambda inp: RegisterBrokerBody.decode(zlib.compress(inp.rest(), 1),
                                                                                      True), (RemotingCommandError,)),
        ("TopicList", _json_decoder(TopicList.from_json), SHAPE_ERRORS),
        ("ClusterInfo", _json_decoder(ClusterInfo.from_json), SHAPE_ERRORS),
        ("TopicRouteData", _json_decoder(TopicRouteData.from_json), SHAPE_ERRORS),
        ("DataVersion", _json_decoder(DataVersion.from_json), SHAPE_ERRORS),
        ("TopicConfig.decode_line", lambda inp: TopicConfig.decode_line(inp.rest().decode("utf-8", "replace")),
         (ValueError,)),
        ("HeartbeatData", _json_decoder(api.HeartbeatData.from_json), SHAPE_ERRORS),
        ("SubscriptionData.from_json", _json_decoder(api.SubscriptionData.from_json), SHAPE_ERRORS),
        ("SubscriptionData.build", lambda inp: api.SubscriptionData.build(
            "T", inp.rest().decode("utf-8", "replace"), sub_version=1), (api.MQClientError,)),
        ("parse_route_response", lambda inp: api.parse_route_response(_response(inp)), (MQBrokerError,)),
        ("parse_send_response", lambda inp: api.parse_send_response(_response(inp), MQ, "U"), (MQBrokerError,)),
        ("parse_pull_response", lambda inp: api.parse_pull_response(
            _response(inp), MQ, api.SubscriptionData.build("TopicTest", "TagA || TagB", sub_version=1)),
         (MQBrokerError, MessageFormatError)),
        ("parse_consumer_list_response", lambda inp: api.parse_consumer_list_response(_response(inp)),
         (MQBrokerError,)),
        ("parse_query_consumer_offset_response",
         lambda inp: api.parse_query_consumer_offset_response(_response(inp)), (MQBrokerError,)),
        ("parse_offset_response", lambda inp: api.parse_offset_response(_response(inp)), (MQBrokerError,)),
        ("parse_earliest_msg_storetime_response",
         lambda inp: api.parse_earliest_msg_storetime_response(_response(inp)), (MQBrokerError,)),
        ("parse_lock_batch_response", lambda inp: api.parse_lock_batch_response(_response(inp)), (MQBrokerError,)),
        ("parse_messages_response", lambda inp: api.parse_messages_response(_response(inp)),
         (MQBrokerError, MessageFormatError)),
        ("parse_reset_offset_body", lambda inp: api.parse_reset_offset_body(inp.rest()), (RemotingCommandError,)),
        ("decode_batch", lambda inp: decode_batch(inp.rest(), "T"), (MessageFormatError,)),
        ("decode_messages", lambda inp: decode_messages(inp.rest(), check_crc=True), (MessageFormatError,)),
        ("iter_batch", lambda inp: list(iter_batch(inp.take(inp.byte()), inp.rest())), (MessageFormatError,)),
    ]
    for name in sorted(n for n in adminapi.__all__ if n.startswith("parse_")):
        fn = getattr(adminapi, name)
        out.append((name, lambda inp, fn=fn: fn(_response(inp)), (MQBrokerError, MessageFormatError)))
    for name in sorted(adminbodies.__all__):
        value = getattr(adminbodies, name)
        if isinstance(value, type) and hasattr(value, "from_json"):
            out.append((f"adminbodies.{name}", _json_decoder(value.from_json), SHAPE_ERRORS))
    out.append(("message_queue_from_json", _json_decoder(adminbodies.message_queue_from_json), SHAPE_ERRORS))
    out.append(("message_queue_from_key", _json_decoder(adminbodies.message_queue_from_key), SHAPE_ERRORS))
    for cls in _custom_headers():
        out.append((f"header {cls.__name__}", _header_decoder(cls), (RemotingCommandError,)))
    return out


BODY_DECODERS = _body_decoders()


@target
def fuzz_bodies(data: bytes) -> None:
    """Every body decoder (the first byte picks one): only its declared errors."""
    inp = Input(data)
    name, decode, declared = BODY_DECODERS[inp.u16() % len(BODY_DECODERS)]
    try:
        decode(inp)
    except declared:
        pass
    except Exception as e:
        raise Bug(f"{name} raised {type(e).__name__}: {e}") from e


def body_seed(name: str, payload: bytes) -> bytes:
    index = next(i for i, (n, _d, _e) in enumerate(BODY_DECODERS) if n == name)
    return struct.pack(">H", index) + payload


def response_seed(name: str, code_index: int, ext: dict[str, str], body: bytes) -> bytes:
    keys = ("queueId", "queueOffset", "msgId", "transactionId", "MSG_REGION", "TRACE_ON", "offset",
            "timestamp", "nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId",
            "indexLastUpdateTimestamp")
    out = bytes([code_index, len(ext)])
    for k, v in ext.items():
        raw = v.encode()
        out += bytes([keys.index(k), len(raw)]) + raw
    return body_seed(name, out + body)


# ----------------------------------------------------------------------------- records

@target
def fuzz_records(data: bytes) -> None:
    """
    CommitLog records as recovery and the readers see them: the C validate_record agrees
    with its twin at every offset; decode_message and check_message_and_return_size keep
    to their errors and agree on which records are valid.
    """
    inp = Input(data)
    check_crc = bool(inp.byte() & 1)
    buf = inp.rest()
    offsets = range(0, min(len(buf), 64))
    for offset in offsets:
        py = _validate_record(buf, offset, check_crc, {})
        if speedups is not None:
            c = speedups.validate_record(buf, offset, check_crc, {})
            if tuple(c) != tuple(py):
                raise Bug(f"validate_record at {offset}: C {c!r}, Python {py!r}")
        request, size = check_message_and_return_size(buf, offset, check_crc=check_crc, delay_levels={1: 1000})
        try:
            msg, end = decode_message(buf, offset, read_body=False, check_crc=check_crc)
        except MessageFormatError:  # declared
            msg = None
        if size > 0 and (msg is None or end != offset + size):
            raise Bug(f"record at {offset} valid for recovery ({size}) but decode_message says {msg!r}")
        if py[0] > 0 and py[0] != size:
            raise Bug(f"validate_record says {py[0]} bytes at {offset}, check_message_and_return_size {size}")
        if not offset and len(buf) > 4096:
            break


# ----------------------------------------------------------------------------- recovery

class _Recovery:
    """A small store written once; each input damages a copy of it and recovers."""

    MESSAGES = 24

    def __init__(self) -> None:
        from rocketmq_tx.store.test.util import Clock, message, open_store

        self.clock = Clock()
        self.open_store = open_store
        self.message = message
        self.parent = tempfile.mkdtemp(prefix="rocketmq-fuzz-recovery-")
        atexit.register(shutil.rmtree, self.parent, True)
        self.template = os.path.join(self.parent, "template")
        store = open_store(self.template, self.clock)
        self.bodies = []
        self.ends = []
        for i in range(self.MESSAGES):
            body = b"m%03d" % i * (1 + i % 7)
            self.bodies.append(body)
            r = store.put_message(message(body=body, queue_id=i % 2, keys=f"k{i}", uniq=f"U{i}", tags="TagA"))
            self.ends.append(r.append_result.wrote_offset + r.append_result.wrote_bytes)
            self.clock.advance(0.01)
        self.end = store.commit_log.get_max_offset()
        store.shutdown()
        self.commitlog = os.path.join("commitlog", f"{0:020d}")
        self.work = os.path.join(self.parent, "work")

    def run(self, data: bytes) -> None:
        inp = Input(data)
        mode = inp.byte()
        crashed = bool(mode & 1)
        # Bit 1: the damage starts at a record boundary (the k-th record's end), where a
        # well-formed fake record is taken as one.
        position = self.ends[inp.u16() % len(self.ends)] if mode & 2 else inp.u16() % (self.end + 64)
        damage = inp.rest()
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.copytree(self.template, self.work)
        if crashed:  # as if killed: the abort marker stays
            open(os.path.join(self.work, "abort"), "w").close()
        with open(os.path.join(self.work, self.commitlog), "r+b") as fh:
            size = fh.seek(0, 2)
            fh.seek(position)
            fh.write(damage[:max(0, size - position)])
        before = set(os.listdir(self.parent))
        store = self.open_store(self.work, self.clock)
        try:
            # Records after the damage may be lost, or kept if still well formed (BODYCRC
            # covers the body only), and queue entries of the old records there may point
            # into the new bytes (as in Java, recovery trusts queue entries below the valid
            # end); every record before the damage must be read back, in order.
            kept = sum(1 for e in self.ends if e <= position)
            for queue_id in (0, 1):
                got: list[bytes] = []
                offset = store.get_min_offset_in_queue("TopicTest", queue_id)
                while True:
                    g = store.get_message("g", "TopicTest", queue_id, offset, 1)
                    if g.status.name != "FOUND":
                        break
                    try:
                        got += [m.body for m in decode_messages(g.body(), decompress_body=False)]
                    except MessageFormatError:  # declared; only past the damage (checked below)
                        break
                    offset = g.next_begin_offset
                want = self.bodies[queue_id:kept:2]
                if got[:len(want)] != want:
                    raise Bug(f"damage at {position}: queue {queue_id} lost records before it: {got!r}")
            r = store.put_message(self.message(body=b"after"))
            if r.status.name != "PUT_OK":
                raise Bug(f"put after recovery: {r.status}")
        finally:
            store.shutdown()
        if set(os.listdir(self.parent)) != before:
            raise Bug(f"recovery wrote outside the store: {set(os.listdir(self.parent)) - before}")


_recovery: _Recovery | None = None


def _the_recovery() -> _Recovery:
    global _recovery
    if _recovery is None:
        _recovery = _Recovery()
    return _recovery


@target
def fuzz_recovery(data: bytes) -> None:
    """Damage the CommitLog's tail (after a crash or a clean stop) and recover: no error, nothing before the
    damage lost."""
    _the_recovery().run(data)


def recovery_seed(crashed: bool, position: int, damage: bytes, *, boundary: bool = False) -> bytes:
    return bytes([int(crashed) | boundary << 1]) + struct.pack(">H", position) + damage


# ----------------------------------------------------------------------------- seeds

def _vector(name: str) -> bytes:
    return (VECTORS / name).read_bytes()


def _sample_commands() -> list[RemotingCommand]:
    cmds = [RemotingCommand.request(310, {"a": "1", "topic": "TopicTest"}, b"Hello", serialize_type=kind)
            for kind in SerializeType]
    cmds.append(RemotingCommand(code=0, flag=1, opaque=9, remark="r\u00e9", ext_fields={"k\u00e9": "v"}, body=b""))
    cmds.append(RemotingCommand(code=-1, flag=3, opaque=-(2 ** 31), version=32767, language=12,
                                serialize_type=SerializeType.ROCKETMQ))
    return cmds


def _records(topic: str = "TopicTest", start: int = 0) -> bytes:
    """Three records (the second with an empty body, whose BODYCRC 0 any mutation keeps valid)."""
    msgs = []
    for i, (body, flag) in enumerate(((b"hello", 0), (b"", 0), (b"x" * 300, 3))):
        msg = MessageExt(topic, body, flag, {"TAGS": "TagA", "KEYS": f"k{i}", "UNIQ_KEY": f"U{i}"},
                         queue_id=i % 2, queue_offset=12 + i, commit_log_offset=start, born_timestamp=1,
                         born_host=("10.0.0.1", 5), store_timestamp=2, store_host=("10.0.0.2", 10911),
                         body_crc=zlib.crc32(body) & 0x7FFFFFFF)
        record = encode_message(msg)
        msgs.append(record)
        start += len(record)
    return b"".join(msgs)


def seeds(name: str) -> Iterator[bytes]:
    """The seed inputs of target *name*: Java's captured vectors and our encoders' output."""
    frames = [_vector(v) for v in ("send_message_v2_json.bin", "send_message_v2_rocketmq.bin",
                                   "route_response_legacy.bin", "route_response_standard.bin")]
    frames += [encode_command(c) for c in _sample_commands()]
    if name == "frame":
        for f in frames:
            yield frame_seed(f)
            yield frame_seed(f + f, (3, 9, len(f)), limit=3)
        yield frame_seed(frames[0] + b"\x7f\xff\xff\xff", (4,))
    elif name in ("json_header", "rocketmq_header"):
        kind = 0 if name == "json_header" else 1
        for f in frames:
            if f[4] == kind:
                yield f[8:8 + int.from_bytes(f[5:8], "big")]
        if kind == 0:
            yield b"{code:1,flag:0,opaque:2L,extFields:{'a':1,b:[1,2]},language:'PYTHON'}"
            yield b"{code:1,flag:0,opaque:2,remark:'\\ud83d\\ude00',extFields:{'a':{b:'\\u0041'}}}"
            yield b'{"code":1,"flag":0,"opaque":2,"extFields":{{"k":1}:"v"}}'
    elif name == "bodies":
        topics = {f"T{i}": TopicConfig(f"T{i}", 4, 4) for i in range(3)}
        reg = RegisterBrokerBody(DataVersion(1, 2), topics, ["10.0.0.1:1"])
        yield body_seed("RegisterBrokerBody.decode(json)", reg.encode(False))
        yield body_seed("RegisterBrokerBody.decode(zlib)", reg.encode(True))
        yield body_seed("RegisterBrokerBody.decode(inflated)", zlib.decompress(reg.encode(True)))
        for vector in ("route_response_legacy.bin", "route_response_standard.bin"):
            f = _vector(vector)
            body = f[8 + int.from_bytes(f[5:8], "big"):]
            yield body_seed("TopicRouteData", body)
            yield body_seed("fastjson.loads", body)
            yield response_seed("parse_route_response", 0, {}, body)
        yield response_seed("parse_pull_response", 0, {"nextBeginOffset": "4", "minOffset": "0", "maxOffset": "9",
                                                        "suggestWhichBrokerId": "0"}, _vector("pull_response_body.bin"))
        yield response_seed("parse_send_response", 0, {"queueId": "1", "queueOffset": "7", "msgId": "ABC"}, b"")
        yield body_seed("decode_messages", _vector("pull_response_body.bin") + _records())
        yield body_seed("decode_batch", encode_batch([Message("T", b"a", 0, {"TAGS": "x"}), Message("T", b"", 1, {})]))
        yield body_seed("SubscriptionData.build", b"TagA || TagB||TagA ||")
        hb = api.HeartbeatData("c1", ["pg"], [api.ConsumerData(
            "cg", subscriptions=[api.SubscriptionData.build("T", "A||B", sub_version=3)])])
        yield body_seed("HeartbeatData", fastjson.dumps(hb.to_json()))
        lock = adminbodies.LockBatchRequestBody("cg", "c1", [MQ])
        yield body_seed("adminbodies.LockBatchRequestBody", fastjson.dumps(lock.to_json()))
        yield response_seed("parse_lock_batch_response", 0, {}, fastjson.dumps(
            adminbodies.LockBatchResponseBody([MQ]).to_json()))
        yield body_seed("parse_reset_offset_body", b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12}}')
        yield body_seed("fastjson.loads", b"{0:'a',1L:[1,2,{x:1}],'s':\"\\u0041\\x41\"}")
        yield body_seed("ClusterInfo", b'{"brokerAddrTable":{"b":{"brokerAddrs":{0:"a:1"},"brokerName":"b",'
                                       b'"cluster":"c"}},"clusterAddrTable":{"c":["b"]}}')
    elif name == "records":
        yield b"\x01" + _vector("pull_response_body.bin")
        yield b"\x00" + _records()
        yield b"\x01" + _records()[:40]
    elif name == "recovery":
        yield recovery_seed(True, 0xFFFF, b"")
        yield recovery_seed(False, 0xFFFF, b"")
        yield recovery_seed(True, 200, bytes(64))
        yield recovery_seed(True, 300, _records())
        yield recovery_seed(False, 120, _vector("pull_response_body.bin"))
        # Well-formed records after the 12th of the template's 24, one with a topic that
        # would be a path outside the store.
        at = _the_recovery().ends[11]
        for crashed in (True, False):
            yield recovery_seed(crashed, 11, _records(start=at), boundary=True)
            yield recovery_seed(crashed, 11, _records("../../xyz", start=at), boundary=True)


def mutations(seed: bytes, rng: random.Random, count: int) -> Iterator[bytes]:
    """*count* copies of *seed* with a few bytes flipped, inserted or cut (for the CI replay)."""
    for _ in range(count):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(4)
            pos = rng.randrange(len(data) + 1)
            if op == 0 and pos < len(data):
                data[pos] = rng.randrange(256)
            elif op == 1:
                data[pos:pos] = bytes([rng.randrange(256)])
            elif op == 2 and pos < len(data):
                del data[pos]
            else:
                data[pos:pos] = rng.choice((b"\x7f\xff\xff\xff", b"\x00\x00\x00\x00", b"\xff\xff", b"{", b"[", b'"'))
        yield bytes(data)
