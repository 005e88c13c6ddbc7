# -*- test-case-name: rocketmq_tx.acl.test.test_signing -*-
"""
Request signatures of ACL 1.0, both ends.

What is signed: the request's ext fields sorted by key in Java's ``String`` order
(UTF-16 code units, ``TreeMap``), ``Signature`` left out, the values alone concatenated
(no keys, no separators), UTF-8 encoded, then the body's bytes. The signature is
HMAC-SHA1 of that with the secret key (UTF-8) as key, in standard Base64 with padding.

The client side is Java 4.9.4+/5.x's ``AclClientRPCHook``: ``AccessKey`` (and
``SecurityToken`` when there is one) go into the ext fields first, so they are signed
too, and ``Signature`` last. The hook runs just before the request is written, after the
custom header is in the ext fields, so every ext field is signed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rocketmq_tx.acl.errors import AclError
from rocketmq_tx.remoting import RemotingCommand

__all__ = [
    "ACCESS_KEY", "SECRET_KEY", "SIGNATURE", "SECURITY_TOKEN", "UNIQUE_MSG_QUERY_FLAG", "V4_9_3",
    "java_sorted", "content_to_sign", "fields_content", "calc_signature", "Signer", "SessionCredentials", "sign",
    "AclClientRPCHook", "credentials_from",
]

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: QUERY_MESSAGE's marker for a query by unique key.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
#: ``MQVersion.Version.V4_9_3.ordinal()``: clients up to this one did not sign
#: ``_UNIQUE_KEY_QUERY``, so a server leaves it out for them (the 5.x rule).
V4_9_3 = 399

_MASK = "******"


def _utf16_units(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def java_sorted(keys: Iterable[str]) -> list[str]:
    """*keys* in Java ``String.compareTo`` order (UTF-16 code units, not code points)."""
    keys = list(keys)
    if all(k.isascii() for k in keys):
        return sorted(keys)
    # Code-point order differs from Java's only between U+E000-U+FFFF and non-BMP text;
    # big-endian UTF-16 bytes compare exactly as Java compares chars.
    return sorted(keys, key=_utf16_units)


def content_to_sign(ext_fields: Mapping[str, str | None], body: bytes = b"",
                    exclude: Iterable[str] = ()) -> bytes:
    """
    The bytes ACL 1.0 signs: Java's ``AclUtils.combineRequestContent`` over the ext
    fields minus ``Signature`` (and minus *exclude*), then *body*.
    """
    data = fields_content(ext_fields, exclude)
    return data + bytes(body) if body else data


def _signed_keys(keys: Iterable[str], exclude: Iterable[str]) -> list[str]:
    """*keys* in Java's order without ``Signature`` and *exclude*."""
    ordered = sorted(keys)
    if not "".join(ordered).isascii():
        ordered.sort(key=_utf16_units)  # Java's order (see java_sorted)
    skip = {SIGNATURE, *exclude}
    return [k for k in ordered if k not in skip]


#: (the ext fields' keys in arrival order, *exclude*) -> a getter of the signed values in
#: signing order. A client sends the same few header shapes over and over, so the broker
#: sorts each shape once instead of on every request.
_PLANS: dict[tuple[tuple[str, ...], tuple[str, ...]], Callable[[Mapping[str, str | None]], tuple[Any, ...]]] = {}
#: Shapes remembered (a client inventing new keys only makes the cache start again), and
#: the most keys and key characters a remembered shape may have (a larger one is sorted every
#: time): the cache holds the key strings, so the bounds keep it to a few MiB whatever peers send.
MAX_PLANS = 1024
MAX_PLAN_KEYS = 64
MAX_PLAN_KEY_CHARS = 2048


def _plan(keys: tuple[str, ...], exclude: tuple[str, ...]) -> Callable[[Mapping[str, str | None]], tuple[Any, ...]]:
    signed = _signed_keys(keys, exclude)
    if len(signed) >= 2:
        getter: Callable[[Mapping[str, str | None]], tuple[Any, ...]] = operator.itemgetter(*signed)
    else:  # itemgetter of one key gives the value, not a tuple
        def getter(fields: Mapping[str, str | None], signed: list[str] = signed) -> tuple[Any, ...]:
            return tuple(fields[k] for k in signed)
    if len(keys) <= MAX_PLAN_KEYS and sum(map(len, keys)) + sum(map(len, exclude)) <= MAX_PLAN_KEY_CHARS:
        if len(_PLANS) >= MAX_PLANS:
            _PLANS.clear()
        _PLANS[keys, exclude] = getter
    return getter


def fields_content(ext_fields: Mapping[str, str | None], exclude: Iterable[str] = ()) -> bytes:
    """:func:`content_to_sign` without the body (which :meth:`Signer.verify_request` hashes
    where it lies instead of copying it)."""
    # Every request of every client goes through here on the broker: one dict lookup for
    # its shape, then the values fetched in C.
    shape = (tuple(ext_fields), exclude if isinstance(exclude, tuple) else tuple(exclude))
    getter = _PLANS.get(shape) or _plan(*shape)
    values = getter(ext_fields)
    try:
        text = "".join(values)  # a rare None raises: the slow path below
    except TypeError:  # StringBuilder.append(null) writes "null"
        text = "".join("null" if v is None else v for v in values)
    # String.getBytes(UTF_8) writes '?' for a lone surrogate, as "replace" does.
    return text.encode("utf-8", "replace")


def _key_bytes(secret_key: str) -> bytes:
    if not secret_key:
        # Java's SecretKeySpec refuses an empty key (IllegalArgumentException: Empty key).
        raise AclError("[10015:signature-failed] unable to calculate a request signature. error=Empty key")
    return secret_key.encode("utf-8", "replace")


def calc_signature(data: bytes, secret_key: str) -> str:
    """Base64(HMAC-SHA1(secret_key, data)), Java's ``AclUtils.calSignature``."""
    return base64.b64encode(hmac.new(_key_bytes(secret_key), data, hashlib.sha1).digest()).decode("ascii")


class Signer:
    """HMAC-SHA1 with one secret key, its key schedule computed once (an account's, a client's)."""

    __slots__ = ("_mac",)

    def __init__(self, secret_key: str) -> None:
        mac = hmac.new(_key_bytes(secret_key), digestmod=hashlib.sha1)
        # The OpenSSL HMAC object hmac.HMAC wraps, when there is one: the same copy, update
        # and digest without the Python wrapper (a broker checks every request with it).
        self._mac = getattr(mac, "_hmac", None) or mac

    def _b64(self, data: bytes, body: bytes = b"") -> bytes:
        mac = self._mac.copy()
        mac.update(data)
        if body:
            mac.update(body)
        return binascii.b2a_base64(mac.digest(), newline=False)

    def signature(self, data: bytes) -> str:
        return self._b64(data).decode("ascii")

    def sign_request(self, fields: bytes, body: bytes) -> str:
        """:meth:`signature` of ``fields + body`` (:func:`fields_content`, the request's body)."""
        return self._b64(fields, body).decode("ascii")

    def verify(self, data: bytes, signature: str | None) -> bool:
        """``True`` when *signature* is the signature of *data* (compared in constant time)."""
        return self.verify_request(data, b"", signature)

    def verify_request(self, fields: bytes, body: bytes, signature: str | None) -> bool:
        """:meth:`verify` of ``fields + body`` (:func:`fields_content`, the request's body)."""
        if signature is None:
            return False
        # _b64 inline: the broker verifies every request
        mac = self._mac.copy()
        mac.update(fields)
        if body:
            mac.update(body)
        return hmac.compare_digest(binascii.b2a_base64(mac.digest(), newline=False),
                                   signature.encode("utf-8", "replace"))


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """
    Java's ``SessionCredentials``: an AccessKey, its SecretKey and an optional
    SecurityToken. The secret and the token never show in ``repr`` or ``str``.
    """

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.access_key, str) or not self.access_key:
            raise ValueError("ACL credentials need a non-empty access key")
        if not isinstance(self.secret_key, str) or not self.secret_key:
            raise ValueError("ACL credentials need a non-empty secret key")
        if self.security_token is not None and not isinstance(self.security_token, str):
            raise ValueError("the security token must be text")

    def __repr__(self) -> str:
        token = None if self.security_token is None else _MASK
        return f"SessionCredentials(access_key={self.access_key!r}, secret_key={_MASK!r}, security_token={token!r})"

    __str__ = __repr__


def sign(command: RemotingCommand, access_key: str, secret_key: str, security_token: str | None = None,
         signer: Signer | None = None) -> str:
    """
    Sign *command* in place as Java's ``AclClientRPCHook.doBeforeRequest`` does: set
    ``AccessKey`` (and ``SecurityToken``), then ``Signature`` over every ext field and the
    body. Call it after the custom header is in the ext fields. Returns the signature.

    An ext field whose value is ``None`` is removed first: no server signs it the way it
    was sent (a Java client never sends one, fastjson leaving null map values out; a Java
    server given a JSON ``null`` signs the text ``"null"``; ours drops null ext fields when
    decoding), so a request carrying one could pass only one of the two brokers.
    """
    ext = command.ext_fields
    if None in ext.values():
        for key in [k for k, v in ext.items() if v is None]:
            del ext[key]
    ext[ACCESS_KEY] = access_key
    if security_token is not None:
        ext[SECURITY_TOKEN] = security_token
    if signer is None:
        signature = calc_signature(content_to_sign(ext, command.body), secret_key)
    else:
        signature = signer.sign_request(fields_content(ext), command.body)
    ext[SIGNATURE] = signature
    return signature


class AclClientRPCHook:
    """
    The client-side RPC hook: ``hook(remote_addr, request)`` signs *request* with the
    credentials. The clients call it on every request right before it is encoded.
    """

    __slots__ = ("credentials", "_signer")

    def __init__(self, credentials: SessionCredentials) -> None:
        self.credentials = credentials
        self._signer = Signer(credentials.secret_key)

    def __call__(self, remote_addr: str, request: RemotingCommand) -> None:
        c = self.credentials
        sign(request, c.access_key, c.secret_key, c.security_token, self._signer)

    def __reduce__(self) -> tuple[Any, ...]:
        return (AclClientRPCHook, (self.credentials,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AclClientRPCHook) and other.credentials == self.credentials

    def __hash__(self) -> int:
        return hash(self.credentials)

    def __repr__(self) -> str:
        return f"AclClientRPCHook({self.credentials!r})"


def credentials_from(access_key: str | None = None, secret_key: str | None = None,
                     security_token: str | None = None,
                     credentials: SessionCredentials | None = None) -> SessionCredentials | None:
    """
    The credentials a client was given, either as one object or as the three keyword
    arguments; ``None`` when none were given.

    :raises ValueError: both forms, or a key without the other.
    """
    loose = (access_key, secret_key, security_token)
    if credentials is not None:
        if any(v is not None for v in loose):
            raise ValueError("give credentials or access_key/secret_key/security_token, not both")
        return credentials
    if access_key is None and secret_key is None:
        if security_token is not None:
            raise ValueError("a security token needs an access key and a secret key")
        return None
    if access_key is None or secret_key is None:
        raise ValueError("ACL needs both access_key and secret_key")
    return SessionCredentials(access_key, secret_key, security_token)
