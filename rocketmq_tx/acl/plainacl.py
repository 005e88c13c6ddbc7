# -*- test-case-name: rocketmq_tx.acl.test.test_plainacl -*-
"""
``plain_acl.yml``, Java's format, read and written.

::

    globalWhiteRemoteAddresses:      # peers allowed without credentials
    - 10.10.103.*
    accounts:
    - accessKey: RocketMQ            # more than 6 characters
      secretKey: '12345678'          # more than 6 characters
      whiteRemoteAddress: 192.168.0.*  # peers of this account skip the signature check
      admin: false
      defaultTopicPerm: DENY         # for topics not in topicPerms (missing: DENY)
      defaultGroupPerm: SUB          # for groups not in groupPerms (missing: DENY)
      topicPerms: [topicA=DENY, topicB=PUB|SUB]
      groupPerms: [groupA=DENY, groupB=PUB|SUB]
    dataVersion:                     # written by the broker on every admin update
    - counter: 1
      timestamp: 1700000000000

Java reads the YAML with SnakeYAML and converts it with fastjson; the conversions that
matter are kept: scalars where text is expected become text (``12345678`` is the secret
``"12345678"``), ``admin`` takes what fastjson's ``castToBoolean`` takes, and a bean key
matches its field ignoring case, ``_`` and ``-`` (fastjson's smart match). A file Java
would fail to load is refused as a whole (:class:`AclError`): not a mapping, a list that
is not a list, an account without an access key or secret key of more than 6 characters,
a ``name=PERM`` entry that is not two parts, an address pattern Java refuses. An empty
file (or one with only comments, or ``{}``) has no data and is skipped, as in Java.

Writing keeps the document as read (key order, unknown keys; comments are lost, as with
Java's writer) and replaces the file atomically, so a Java broker reading it mid-write
never sees half a file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from rocketmq_tx.acl.address import RemoteAddressStrategy, remote_address_strategy
from rocketmq_tx.acl.errors import AclError
from rocketmq_tx.acl.permission import parse_perm, parse_resource_perms
from rocketmq_tx.acl.signing import Signer
from rocketmq_tx.common.route import DataVersion

__all__ = [
    "PlainAccessConfig", "Account", "AclFile", "load_yaml", "dump_yaml", "parse_acl_file", "build_account",
    "check_keys", "write_atomic", "GLOBAL_WHITE_ADDRS", "ACCOUNTS", "DATA_VERSION",
]

GLOBAL_WHITE_ADDRS = "globalWhiteRemoteAddresses"
ACCOUNTS = "accounts"
DATA_VERSION = "dataVersion"
#: ``AclConstants.ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``: keys must be longer.
KEY_MIN_LENGTH = 6

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_MASK = "******"


def _java_length(text: str) -> int:
    """Java ``String.length``: UTF-16 code units."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass
class PlainAccessConfig:
    """Java's ``PlainAccessConfig``: one account as written (and as admin code 50 sends it)."""

    access_key: str | None = None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str | None] | None = None
    group_perms: list[str | None] | None = None

    def __repr__(self) -> str:
        secret = None if self.secret_key is None else _MASK
        return (f"PlainAccessConfig(access_key={self.access_key!r}, secret_key={secret!r}, "
                f"white_remote_address={self.white_remote_address!r}, admin={self.admin!r}, "
                f"default_topic_perm={self.default_topic_perm!r}, default_group_perm={self.default_group_perm!r}, "
                f"topic_perms={self.topic_perms!r}, group_perms={self.group_perms!r})")

    @classmethod
    def from_yaml(cls, item: Any, where: str) -> PlainAccessConfig:
        """fastjson's bean conversion of one ``accounts`` entry.

        :raises AclError: the entry is not a mapping or a field has an unusable type.
        """
        if not isinstance(item, dict):
            raise AclError(f"{where}: an account must be a mapping, got {_kind(item)}")
        config = cls()
        for key, value in item.items():
            name = _FIELDS.get(key) if isinstance(key, str) else None
            if name is None and isinstance(key, str):
                name = _SMART_FIELDS.get(key.lower().replace("_", "").replace("-", ""))
            if name is None:
                continue  # fastjson ignores unknown keys
            label = f"{where}.{key}"
            if name == "admin":
                config.admin = _boolean(value, label)
            elif name in ("topic_perms", "group_perms"):
                setattr(config, name, _text_list(value, label))
            else:
                setattr(config, name, _text(value, label))
        return config


_FIELDS = {
    "accessKey": "access_key", "secretKey": "secret_key", "whiteRemoteAddress": "white_remote_address",
    "admin": "admin", "defaultTopicPerm": "default_topic_perm", "defaultGroupPerm": "default_group_perm",
    "topicPerms": "topic_perms", "groupPerms": "group_perms",
}
_SMART_FIELDS = {k.lower(): v for k, v in _FIELDS.items()}


_KINDS: dict[type, str] = {dict: "a mapping", list: "a list", str: "text"}


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)


def _text(value: Any, where: str) -> str | None:
    """A scalar where Java wants a ``String``: what fastjson's ``castToString`` gives."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise AclError(f"{where}: expected text, got {_kind(value)}")


def _text_list(value: Any, where: str) -> list[str | None] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise AclError(f"{where}: expected a list, got {_kind(value)}")
    return [_text(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _boolean(value: Any, where: str) -> bool:
    """fastjson ``castToBoolean`` into a primitive ``boolean`` (missing is false)."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value == 1
    if isinstance(value, str):
        if value.lower() == "true" or value in ("1", "Y", "T"):
            return True
        if value.lower() == "false" or value in ("0", "N", "F"):
            return False
    raise AclError(f"{where}: expected true or false, got {value!r}")


def check_keys(config: PlainAccessConfig, mask: bool = False) -> None:
    """
    Java ``checkPlainAccessConfig``: both keys present and longer than 6 characters.

    :param mask: hide the secret key in the message (Java's message shows it; ours goes
        to logs only when the keys come from a file).
    :raises AclError: with Java's message.
    """
    ak, sk = config.access_key, config.secret_key
    if ak is None or sk is None or _java_length(ak) <= KEY_MIN_LENGTH or _java_length(sk) <= KEY_MIN_LENGTH:
        shown = _MASK if mask and sk is not None else sk
        raise AclError(f"The accessKey={ak} and secretKey={shown} cannot be null and length should longer than 6")


@dataclass(frozen=True, eq=False)
class Account:
    """One account ready for requests (Java's ``PlainAccessResource`` built from a config).

    :ivar perms: ``resource -> bits`` from ``topicPerms`` and ``groupPerms`` (groups under
        their retry topic); ``None`` when the account has neither, which for an admin
        means everything is allowed.
    """

    access_key: str
    secret_key: str = field(repr=False)
    white: RemoteAddressStrategy
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    perms: dict[str, int] | None
    signer: Signer = field(repr=False)
    file: str = ""


def build_account(config: PlainAccessConfig, file: str = "", mask: bool = False) -> Account:
    """Java ``buildPlainAccessResource``.

    :raises AclError: keys too short, a permission entry or the address pattern refused.
    """
    check_keys(config, mask)
    assert config.access_key is not None and config.secret_key is not None
    perms: dict[str, int] = {}
    parse_resource_perms(perms, False, config.group_perms)
    parse_resource_perms(perms, True, config.topic_perms)
    return Account(
        access_key=config.access_key,
        secret_key=config.secret_key,
        white=remote_address_strategy(config.white_remote_address),
        admin=config.admin,
        default_topic_perm=parse_perm(config.default_topic_perm),
        default_group_perm=parse_perm(config.default_group_perm),
        perms=perms if (config.group_perms or config.topic_perms) else None,
        signer=Signer(config.secret_key),
        file=file,
    )


@dataclass
class AclFile:
    """One parsed file with data.

    :ivar accounts: in file order; an access key repeated within the file keeps its first
        entry (the later ones are in :attr:`repeated`).
    """

    path: str
    global_white: list[RemoteAddressStrategy]
    global_white_text: list[str | None]
    accounts: list[Account]
    data_version: DataVersion
    repeated: list[str] = field(default_factory=list)


def load_yaml(data: bytes | str) -> Any:
    """YAML 1.1 as SnakeYAML reads it, safe types only.

    :raises AclError: the text is not YAML.
    """
    try:
        return yaml.load(data, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        raise AclError(f"not YAML: {e}".replace("\n", " ")) from None


def dump_yaml(doc: Any) -> str:
    """Block-style YAML like SnakeYAML's ``dumpAsMap``, keys in the document's order."""
    return yaml.dump(doc, Dumper=_Dumper, default_flow_style=False, sort_keys=False, allow_unicode=True)


def _data_version(value: Any, where: str, now_ms: int) -> DataVersion:
    if value is None:
        return DataVersion(0, now_ms)
    if not isinstance(value, list):
        raise AclError(f"{where}: expected a list, got {_kind(value)}")
    if not value:
        return DataVersion(0, now_ms)
    first = value[0]
    if first is None:
        return DataVersion(0, now_ms)
    if not isinstance(first, dict):
        raise AclError(f"{where}[0]: expected a mapping, got {_kind(first)}")
    try:
        counter = first.get("counter")
        timestamp = first.get("timestamp")
        return DataVersion(0 if counter is None else int(counter), now_ms if timestamp is None else int(timestamp))
    except (TypeError, ValueError):
        raise AclError(f"{where}[0]: counter and timestamp must be numbers") from None


def parse_acl_file(path: str, data: bytes | str, now_ms: Callable[[], int]) -> AclFile | None:
    """
    Parse and check one file (Java ``PlainPermissionManager.load`` for one file).
    Returns ``None`` for a file without data. Secrets never appear in the messages.

    :raises AclError: the whole file is refused; the message names the place.
    """
    doc = load_yaml(data)
    if doc is None or doc == {}:
        return None
    if not isinstance(doc, dict):
        raise AclError(f"the document must be a mapping, got {_kind(doc)}")
    white_raw = doc.get(GLOBAL_WHITE_ADDRS)
    white_text: list[str | None] = []
    if white_raw is not None:
        if not isinstance(white_raw, list):
            raise AclError(f"{GLOBAL_WHITE_ADDRS}: expected a list, got {_kind(white_raw)}")
        white_text = [_text(v, f"{GLOBAL_WHITE_ADDRS}[{i}]") for i, v in enumerate(white_raw)]
    white = []
    for i, pattern in enumerate(white_text):
        try:
            white.append(remote_address_strategy(pattern))
        except AclError as e:
            raise AclError(f"{GLOBAL_WHITE_ADDRS}[{i}] {pattern!r}: {e}") from None
    accounts_raw = doc.get(ACCOUNTS)
    accounts: list[Account] = []
    repeated: list[str] = []
    if accounts_raw is not None:
        if not isinstance(accounts_raw, list):
            raise AclError(f"{ACCOUNTS}: expected a list, got {_kind(accounts_raw)}")
        seen: set[str] = set()
        for i, item in enumerate(accounts_raw):
            where = f"{ACCOUNTS}[{i}]"
            config = PlainAccessConfig.from_yaml(item, where)
            try:
                account = build_account(config, path, mask=True)
            except AclError as e:
                raise AclError(f"{where} (accessKey={config.access_key}): {e}") from None
            if account.access_key in seen:
                repeated.append(account.access_key)
                continue
            seen.add(account.access_key)
            accounts.append(account)
    version = _data_version(doc.get(DATA_VERSION), DATA_VERSION, now_ms())
    return AclFile(path, white, white_text, accounts, version, repeated)


def write_atomic(path: str, text: str) -> None:
    """
    Replace *path* with *text*: a temporary file in the same directory, flushed to disk,
    renamed over the old one (which keeps its permission bits), then the directory synced.

    :raises OSError: the file cannot be written; the old one is untouched.
    """
    directory = os.path.dirname(path) or "."
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
