# -*- test-case-name: rocketmq_tx.remoting.test.test_serialization -*-
"""
The two header encodings: JSON (type 0) and ROCKETMQ binary (type 1).

JSON is what fastjson writes for ``RemotingCommand``: keys ``code``, ``extFields``,
``flag``, ``language`` (a name), ``opaque``, ``remark``, ``serializeTypeCurrentRPC``,
``version``, sorted, nulls omitted. We read any key order, unknown keys, a language given
as a name or a number, and fastjson's lenient syntax.

ROCKETMQ binary (``RocketMQSerializable``), big-endian::

    int16 code | int8 language | int16 version | int32 opaque | int32 flag
    int32 remarkLength | remark | int32 extLength | (int16 keyLen key int32 valLen val)*

Zero-length strings are read as absent (Java reads them as ``null``), duplicate keys keep
the last value (Java's ``HashMap.put``). ``formats.RocketMQHeader`` declares the same
layout with construct; a property test holds this hand-written code to it.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from typing import Any

import orjson

from rocketmq_tx.common import fastjson
from rocketmq_tx.common.native import speedups
from rocketmq_tx.remoting.codes import LanguageCode, SerializeType
from rocketmq_tx.remoting.command import RemotingCommand
from rocketmq_tx.remoting.errors import LocalProtocolError, RemoteProtocolError

__all__ = [
    "encode_header",
    "decode_header",
    "encode_json_header",
    "decode_json_header",
    "encode_rocketmq_header",
    "decode_rocketmq_header",
]

_orjson_loads = orjson.loads
#: the plain-shape fast path of decode_json_header (C only: its twin is the general path)
_json_command: Callable[[Any, bytes], RemotingCommand | None] | None = speedups.json_command if speedups else None
_STR = itertools.repeat(str)
_LANGUAGE_NAMES = {member.value: member.name for member in LanguageCode}
_LANGUAGE_BY_NAME = {member.name: member.value for member in LanguageCode}
_SERIALIZE_NAMES = {SerializeType.JSON: "JSON", SerializeType.ROCKETMQ: "ROCKETMQ"}

def encode_json_header(cmd: RemotingCommand) -> bytes:
    """The JSON header of *cmd*, as UTF-8."""
    header: dict[str, Any] = {"code": cmd.code}
    if cmd.ext_fields:
        header["extFields"] = cmd.ext_fields
    header["flag"] = cmd.flag
    # An unknown language number has no name; fastjson also accepts the ordinal.
    header["language"] = _LANGUAGE_NAMES.get(cmd.language, cmd.language)
    header["opaque"] = cmd.opaque
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    try:
        return orjson.dumps(header)
    except TypeError as e:
        raise LocalProtocolError(f"header not encodable as JSON: {e}") from None


def _as_int(header: dict[str, Any], key: str, default: int | None) -> int:
    value = header.get(key, default)
    if value is None:
        raise RemoteProtocolError(f"JSON header has no {key!r}")
    if isinstance(value, bool):
        raise RemoteProtocolError(f"JSON header {key!r} is not a number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RemoteProtocolError(f"JSON header {key!r} is not a number: {value!r}") from None


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, fastjson.ObjectKey):
        value = dict(value)
    return fastjson.dumps(value).decode("utf-8") if isinstance(value, (dict, list)) else str(value)


def decode_json_header(data: bytes, body: bytes) -> RemotingCommand:
    """
    Decode a JSON header.

    :raises RemoteProtocolError: not JSON, not an object, or code/flag/opaque unusable.
    """
    lenient = False
    try:
        header = _orjson_loads(data)
        if _json_command is not None:  # the shape every Java peer writes, checked and built in C
            cmd = _json_command(header, body)
            if cmd is not None:
                return cmd
    except orjson.JSONDecodeError:
        # Not strict JSON: read it the way fastjson would.
        try:
            header = fastjson.loads(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise RemoteProtocolError(f"undecodable JSON header: {e}") from None
        lenient = True
    return _json_header_command(header, lenient, body)


def _json_header_command(header: Any, lenient: bool, body: bytes) -> RemotingCommand:
    """The command of a parsed JSON header (*lenient*: parsed by :mod:`fastjson`); the
    general path, and the twin of ``_speedups.json_command``."""
    if type(header) is not dict:
        raise RemoteProtocolError("JSON header is not an object")
    get = header.get
    language = get("language", 0)
    if type(language) is str:
        language = _LANGUAGE_BY_NAME.get(language, LanguageCode.OTHER)
    elif type(language) is not int:
        language = LanguageCode.OTHER
    ext = get("extFields")
    if ext is None:
        ext_fields: dict[str, str] = {}
    elif type(ext) is dict:
        ext_fields = ext
        # Java always sends strings; anything else (fastjson leniency) is normalised. Only
        # the lenient parser gives keys that are not strings (objects as keys): their JSON text.
        if not all(map(isinstance, ext.values(), _STR)) or (lenient and not all(map(isinstance, ext, _STR))):
            ext_fields = {_as_text(k): _as_text(v) for k, v in ext.items() if v is not None}
    else:
        raise RemoteProtocolError("JSON header extFields is not an object")
    remark = get("remark")
    code = get("code")
    opaque = get("opaque")
    flag = get("flag")
    version = get("version", 0)
    if type(code) is not int or type(opaque) is not int or type(flag) is not int or type(version) is not int:
        code = _as_int(header, "code", None)
        opaque = _as_int(header, "opaque", None)
        flag = _as_int(header, "flag", None)
        version = _as_int(header, "version", 0)
    if remark is not None and type(remark) is not str:
        remark = _as_text(remark)
    # Positional: this runs for every JSON frame.
    return RemotingCommand(code, language, version, opaque, flag, remark, ext_fields, body, SerializeType.JSON)


_FIXED = struct.Struct(">hBhiii")  # code, language, version, opaque, flag, remarkLength
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_FIXED_SIZE = _FIXED.size + 4  # the fixed part plus extFieldsLength: 21 bytes
_LEN16 = [_I16.pack(n) for n in range(256)]
_LEN32 = [_I32.pack(n) for n in range(4096)]


def _encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    """
    The ROCKETMQ binary header of *cmd*.

    :raises LocalProtocolError: code or version outside int16, or a key over 32767 bytes.
    """
    if not (-0x8000 <= cmd.code <= 0x7FFF and -0x8000 <= cmd.version <= 0x7FFF):
        raise LocalProtocolError(
            f"code {cmd.code} / version {cmd.version} do not fit the ROCKETMQ header's int16; use JSON"
        )
    remark_text, ext_fields = cmd.remark, cmd.ext_fields
    if ext_fields.__class__ is not dict and not isinstance(ext_fields, dict):
        raise TypeError("ext_fields must be a dict")  # as the C version
    parts: list[bytes] = []
    append = parts.append
    try:
        remark = remark_text.encode("utf-8") if remark_text else b""
        for key, value in ext_fields.items():
            kb = key.encode("utf-8")
            vb = value.encode("utf-8")
            klen = len(kb)
            vlen = len(vb)
            if klen > 0x7FFF:
                raise LocalProtocolError(f"ext field key too long for ROCKETMQ header: {klen} bytes")
            # Table lookups instead of struct.pack: this loop runs per entry of every frame.
            append(_LEN16[klen] if klen < 256 else _I16.pack(klen))
            append(kb)
            append(_LEN32[vlen] if vlen < 4096 else _I32.pack(vlen))
            append(vb)
    except AttributeError:  # a remark, key or value without .encode: the C version's TypeError
        raise TypeError("remark, ext_fields keys and values must be str") from None
    ext = b"".join(parts)
    return b"".join(
        (
            _FIXED.pack(cmd.code, cmd.language & 0xFF, cmd.version, cmd.opaque, cmd.flag, len(remark)),
            remark,
            _I32.pack(len(ext)),
            ext,
        )
    )


def _decode_rocketmq_header(data: bytes, body: bytes) -> RemotingCommand:
    """
    Decode a ROCKETMQ binary header.

    :raises RemoteProtocolError: the lengths inside the header do not add up.
    """
    if data.__class__ is not bytes and not isinstance(data, bytes):
        raise TypeError("decode_rocketmq_header(data: bytes, body)")  # as the C version
    n = len(data)
    if n < _FIXED_SIZE:
        raise RemoteProtocolError(f"ROCKETMQ header of {n} bytes is shorter than 21")
    code, language, version, opaque, flag, remark_len = _FIXED.unpack_from(data, 0)
    pos = _FIXED.size
    if remark_len < 0 or pos + remark_len + 4 > n:
        raise RemoteProtocolError(f"ROCKETMQ header remark length {remark_len} exceeds the header")
    try:
        remark = data[pos : pos + remark_len].decode() if remark_len else None
        pos += remark_len
        (ext_len,) = _I32.unpack_from(data, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > n:
            raise RemoteProtocolError(f"ROCKETMQ header extFields length {ext_len} exceeds the header")
        ext = data[pos : pos + ext_len]
        # Byte offsets index a str only when every character is one byte: decode an ASCII
        # map once instead of every key and value separately (this loop runs per frame).
        text = ext.decode("latin-1") if ext.isascii() else None
        ext_fields: dict[str, str] = {}
        unpack16 = _I16.unpack_from
        unpack32 = _I32.unpack_from
        pos = 0
        while pos < ext_len:
            # struct.error below means a length field ran past the header.
            (klen,) = unpack16(ext, pos)
            kend = pos + 2 + klen
            (vlen,) = unpack32(ext, kend)
            vend = kend + 4 + vlen
            if klen < 0 or vlen < 0 or vend > ext_len:
                raise RemoteProtocolError("extFields entry exceeds the header")
            if klen and vlen:
                if text is not None:
                    ext_fields[text[pos + 2 : kend]] = text[kend + 4 : vend]
                else:
                    ext_fields[ext[pos + 2 : kend].decode()] = ext[kend + 4 : vend].decode()
            pos = vend
    except struct.error:
        raise RemoteProtocolError("truncated extFields entry") from None
    except UnicodeDecodeError as e:
        raise RemoteProtocolError(f"ROCKETMQ header holds invalid UTF-8: {e}") from None
    return RemotingCommand(code, language, version, opaque, flag, remark, ext_fields, body, SerializeType.ROCKETMQ)


if speedups:
    speedups._setup("SerializeType.JSON", SerializeType.JSON)
    speedups._setup("LanguageByName", _LANGUAGE_BY_NAME)
    speedups._setup("LanguageCode.OTHER", LanguageCode.OTHER)
    speedups._setup("RemoteProtocolError", RemoteProtocolError)
    speedups._setup("RemotingCommand", RemotingCommand)
    speedups._setup("SerializeType.ROCKETMQ", SerializeType.ROCKETMQ)
    speedups._setup("LocalProtocolError", LocalProtocolError)
    decode_rocketmq_header: Callable[[bytes, bytes], RemotingCommand] = speedups.decode_rocketmq_header
    encode_rocketmq_header: Callable[[RemotingCommand], bytes] = speedups.encode_rocketmq_header
else:
    decode_rocketmq_header = _decode_rocketmq_header
    encode_rocketmq_header = _encode_rocketmq_header


def encode_header(cmd: RemotingCommand) -> bytes:
    """The header of *cmd* in its own :attr:`~RemotingCommand.serialize_type`."""
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        return encode_rocketmq_header(cmd)
    return encode_json_header(cmd)


def decode_header(serialize_type: int, data: bytes, body: bytes) -> RemotingCommand:
    """
    Decode a header of the given type.

    :raises RemoteProtocolError: unknown type or undecodable header.
    """
    if serialize_type == SerializeType.JSON:
        return decode_json_header(data, body)
    if serialize_type == SerializeType.ROCKETMQ:
        return decode_rocketmq_header(data, body)
    raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
