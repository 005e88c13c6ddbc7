# -*- test-case-name: rocketmq_tx.acl.test.test_manager -*-
"""
:class:`PlainPermissionManager`: the rules in force, the check of every request, the
reload of the files and the updates of the ACL admin codes (Java 4.9.8's
``PlainPermissionManager`` and ``PlainAccessValidator``).

Files (4.9.3+): every ``*.yml``/``*.yaml`` under ``<home>/conf/acl/`` (sub-directories
included), then ``<home>/<rocketmq.acl.plain.file>`` (default ``conf/plain_acl.yml``;
Java joins the two as text, so even an absolute value lands under home). An access key
defined twice keeps its first definition (the directory's files, sorted, come before the
plain file); global white lists add up.

Checking a request (``validate``), in Java's order, each refusal an :class:`AclError`
with Java's message:

1. the remote host matches a global white address: allowed, nothing more is checked;
2. no ``AccessKey``: "No accessKey is configured"; unknown: "No acl config for <ak>";
3. the host matches the account's ``whiteRemoteAddress``: allowed;
4. the signature is wrong: "Check signature failed for accessKey=<ak>";
5. PUB on ``RMQ_SYS_TRACE_TOPIC``: allowed;
6. an admin-only code from a non-admin: "Need admin permission for request code=<c>,
   but accessKey=<ak> is not";
7. each resource the code needs (:mod:`.resources`) against the account's own entry, or
   its default topic/group permission: "No default permission for topic:<t>" (or
   ``group:<g>``); an admin account without any entries passes.

Reloading: the broker calls :meth:`check` every 5 s (Java's watcher interval). A file
whose size, modification time or content changed is parsed again; a file that does not
parse is refused with one log line (once per content) and its last good rules stay, as do
all others. The per-account data (the compiled address pattern, the HMAC key schedule)
is built once per load, and the signed keys' order once per header shape
(:func:`~rocketmq_tx.acl.signing.fields_content`), so a request costs a few dict lookups
and one HMAC (``bench/aclpath.py`` measures it).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_tx.acl.address import MATCH_NONE, RemoteAddressStrategy, remote_address_strategy, remote_host
from rocketmq_tx.acl.errors import (
    DEFAULT_PERM_FRAME,
    NEED_ADMIN_FRAME,
    NO_ACCESS_KEY_FRAME,
    NO_ACL_CONFIG_FRAME,
    RESOURCE_PERM_FRAME,
    SIGNATURE_FRAME,
    AclError,
)
from rocketmq_tx.acl.permission import PUB, check_permission, check_resource_perms, is_retry_topic, print_resource
from rocketmq_tx.acl.plainacl import (
    ACCOUNTS,
    DATA_VERSION,
    GLOBAL_WHITE_ADDRS,
    Account,
    AclFile,
    PlainAccessConfig,
    build_account,
    check_keys,
    dump_yaml,
    load_yaml,
    parse_acl_file,
    write_atomic,
)
from rocketmq_tx.acl.resources import ADMIN_CODES, STRICT_ADMIN_CODES, TRACE_TOPIC, needed_resources
from rocketmq_tx.acl.signing import ACCESS_KEY, SIGNATURE, UNIQUE_MSG_QUERY_FLAG, V4_9_3, fields_content
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.common.route import DataVersion
from rocketmq_tx.common.seen import FirstSeen
from rocketmq_tx.remoting import RemotingCommand

__all__ = ["PlainPermissionManager", "Rules", "WATCH_INTERVAL", "DEFAULT_PLAIN_FILE", "acl_files"]

#: Java ``AclFileWatchService.WATCH_INTERVAL``, seconds.
WATCH_INTERVAL = 5.0
#: Java's default for ``-Drocketmq.acl.plain.file``, relative to the home directory.
DEFAULT_PLAIN_FILE = "conf/plain_acl.yml"

log = logging.getLogger("rocketmq_tx.acl")

_NO_UNIQUE: tuple[str, ...] = ()
_OLD_CLIENT_EXCLUDE = (UNIQUE_MSG_QUERY_FLAG,)


def _deal(path: str) -> str:
    """Java ``MixAll.dealFilePath``: ``Paths.get(path).normalize()``."""
    normal = os.path.normpath(path)
    return "/" + normal.lstrip("/") if path.startswith("/") else normal


def acl_files(acl_dir: str, default_file: str) -> list[str]:
    """Java ``getAllAclFiles`` plus the default file: the directory's YAML files, sorted
    (Java takes them in directory order), then *default_file* when it exists."""
    found: list[str] = []

    def walk(directory: str) -> None:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        for name in names:
            path = os.path.join(directory, name)
            if name.endswith((".yml", ".yaml")):
                found.append(path)
            elif os.path.isdir(path):
                walk(path)

    walk(acl_dir)
    if os.path.exists(default_file) and default_file not in found:
        found.append(default_file)
    return found


def _java_hashmap_order(keys: list[str]) -> list[str]:
    """*keys* (inserted in this order into a fresh ``HashMap``) in the order Java iterates them."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: insertion order within a bucket


@dataclass(frozen=True)
class Rules:
    """One consistent set of rules (replaced whole on every reload)."""

    global_white: tuple[RemoteAddressStrategy, ...] = ()
    accounts: dict[str, Account] = field(default_factory=dict)
    #: file -> its DataVersion (files with data only), in load order
    versions: dict[str, DataVersion] = field(default_factory=dict)
    #: Java's deprecated single version: the plain file's
    default_version: DataVersion = field(default_factory=DataVersion)


@dataclass
class _Entry:
    stamp: tuple[int, int] | None = None
    digest: str | None = None
    parsed: AclFile | None = None


class PlainPermissionManager:
    """
    :param home: the RocketMQ home (``rocketmqHome``, Java's ``rocketmq.home.dir`` or
        ``$ROCKETMQ_HOME``).
    :param plain_file: ``rocketmq.acl.plain.file``, relative to *home*.
    :param now_ms: the clock, for data versions.
    :param strict: close 4.9.8's gaps (see :mod:`rocketmq_tx.acl.resources`).
    """

    #: Distinct refusal causes remembered for log-once (a flood of invented access keys
    #: must not grow memory).
    MAX_LOGGED_CAUSES = 4096

    def __init__(self, home: str, plain_file: str = DEFAULT_PLAIN_FILE, *,
                 now_ms: Callable[[], int] | None = None, strict: bool = True) -> None:
        self.home = home
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.strict = strict
        self.admin_codes = STRICT_ADMIN_CODES if strict else ADMIN_CODES
        self.default_file = _deal(f"{home}{os.sep}{plain_file or DEFAULT_PLAIN_FILE}")
        self.acl_dir = _deal(os.path.join(home, "conf", "acl"))
        self.rules = Rules(default_version=DataVersion(0, self.now_ms()))
        self._entries: dict[str, _Entry] = {}
        self._refused: dict[str, str | None] = {}
        self._logged = FirstSeen(self.MAX_LOGGED_CAUSES)

    # ------------------------------------------------------------ files

    def files(self) -> list[str]:
        """The ACL files in load order."""
        return acl_files(self.acl_dir, self.default_file)

    def load(self) -> None:
        """
        The first load, at start-up: the plain file is created empty if missing (as Java
        does), then every file must parse.

        :raises AclError: no home directory, or a file is refused (its path and why).
        """
        if not self.home:
            raise AclError("aclEnable=true needs rocketmqHome (or ROCKETMQ_HOME): the ACL files live under it")
        if not os.path.exists(self.default_file):
            try:
                os.makedirs(os.path.dirname(self.default_file), exist_ok=True)
                open(self.default_file, "a").close()
            except OSError as e:
                raise AclError(f"cannot create {self.default_file}: {e.strerror}") from None
        entries: dict[str, _Entry] = {}
        for path in self.files():
            entry = _Entry()
            try:
                data = self._read(path, entry)
                entry.parsed = parse_acl_file(path, data, self.now_ms)
            except AclError as e:
                raise AclError(f"{path}: {e}") from None
            except OSError as e:
                raise AclError(f"{path}: {e.strerror}") from None
            except Exception as e:  # a parser failure other than a YAML error (e.g. nesting too deep)
                raise AclError(f"{path}: {type(e).__name__}: {e}") from None
            entries[path] = entry
        self._entries = entries
        self._refused.clear()
        self._compose()

    @staticmethod
    def _read(path: str, entry: _Entry) -> bytes:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
        entry.stamp = (st.st_mtime_ns, st.st_size)
        entry.digest = hashlib.sha256(data).hexdigest()
        return data

    def check(self) -> bool:
        """
        The watcher's tick: reload what changed on disk (new, changed, removed files).
        Returns ``True`` when the rules changed.
        """
        return self._refresh(self.files(), force=())

    def reload(self, path: str | None = None) -> bool:
        """
        Read *path* (every file when ``None``) again even if it looks unchanged; a file
        that does not parse is refused with a log line and keeps its last good rules.
        Returns ``True`` when the rules changed.
        """
        listing = self.files()
        force = listing if path is None else [_deal(path)]
        return self._refresh(listing, force=force)

    def _refresh(self, listing: list[str], force: Iterable[str]) -> bool:
        forced = set(force)
        changed = False
        entries = dict(self._entries)
        for gone in set(entries) - set(listing):
            del entries[gone]
            self._refused.pop(gone, None)
            changed = True
            log.info("ACL file %s is gone; its accounts are removed", gone)
        for path in listing:
            old = entries.get(path)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if old is not None and path not in forced and old.stamp == (st.st_mtime_ns, st.st_size):
                continue
            entry = _Entry()
            try:
                data = self._read(path, entry)
            except OSError:
                continue
            if old is not None and entry.digest == old.digest and path not in forced:
                old.stamp = entry.stamp
                continue
            try:
                entry.parsed = parse_acl_file(path, data, self.now_ms)
            except Exception as e:  # AclError, or anything odd in a hostile file: never stop the watcher
                if self._refused.get(path) != entry.digest:
                    self._refused[path] = entry.digest
                    log.error("ACL file %s refused, keeping its last good rules: %s", path, e)
                # Do not parse this content again every tick; a new file contributes nothing.
                if old is not None:
                    old.stamp = entry.stamp
                else:
                    entries[path] = entry
                continue
            self._refused.pop(path, None)
            entries[path] = entry
            changed = True
            log.info("ACL file %s loaded", path)
        self._entries = entries
        if changed:
            self._compose(listing)
        return changed

    def _compose(self, listing: list[str] | None = None) -> None:
        order = [p for p in (listing if listing is not None else self.files()) if p in self._entries]
        white: list[RemoteAddressStrategy] = []
        accounts: dict[str, Account] = {}
        versions: dict[str, DataVersion] = {}
        for path in order:
            parsed = self._entries[path].parsed
            if parsed is None:
                continue
            white += parsed.global_white
            for repeated in parsed.repeated:
                log.warning("The accessKey %s is repeated in %s; its first entry is used", repeated, path)
            for account in parsed.accounts:
                if account.access_key in accounts:
                    log.warning("The accessKey %s is repeated in multiple ACL files; %s is ignored for it",
                                account.access_key, path)
                    continue
                accounts[account.access_key] = account
            versions[path] = parsed.data_version
        default_version = versions.get(self.default_file, self.rules.default_version)
        self.rules = Rules(tuple(white), accounts, versions, default_version)
        self._logged.clear()

    # ------------------------------------------------------------ requests

    def validate(self, request: RemotingCommand, peer: str) -> None:
        """
        Check *request* from *peer* (``host:port``).

        :raises AclError: refused; ``java_desc()`` is the remark Java sends.
        """
        rules = self.rules
        ext = request.ext_fields
        # Java parses first: a body that does not decode fails even for white-listed peers.
        needed = needed_resources(request, self.strict) if ext else None
        # The host only matters to white lists, which most setups do not have.
        if rules.global_white:
            host = remote_host(peer)
            for strategy in rules.global_white:
                if strategy.match(host):
                    return
        access_key = ext.get(ACCESS_KEY) if ext else None
        if access_key is None:
            raise AclError("No accessKey is configured", NO_ACCESS_KEY_FRAME)
        account = rules.accounts.get(access_key)
        if account is None:
            raise AclError(f"No acl config for {access_key}", NO_ACL_CONFIG_FRAME)
        if account.white is not MATCH_NONE and account.white.match(remote_host(peer)):
            return
        exclude = _OLD_CLIENT_EXCLUDE if request.version <= V4_9_3 else _NO_UNIQUE
        if not account.signer.verify_request(fields_content(ext, exclude), request.body, ext.get(SIGNATURE)):
            raise AclError(f"Check signature failed for accessKey={access_key}", SIGNATURE_FRAME)
        if needed and needed.get(TRACE_TOPIC) == PUB:
            return
        self.check_perm(request.code, needed, account)

    def check_perm(self, code: int, needed: dict[str, int] | None, account: Account) -> None:
        """Java ``checkPerm``: admin codes, then each needed resource.

        :raises AclError: the first refusal in Java's iteration order.
        """
        if code in self.admin_codes and not account.admin:
            raise AclError(f"Need admin permission for request code={code}, but accessKey={account.access_key} is not",
                           NEED_ADMIN_FRAME)
        if not needed:
            return
        owned = account.perms
        if owned is None and account.admin:
            return
        failed = None
        for resource, perm in needed.items():
            # _refusal's decision without building its error: this runs for every request
            mine = owned.get(resource) if owned is not None else None
            if mine is None:
                mine = account.default_group_perm if is_retry_topic(resource) else account.default_topic_perm
            if not check_permission(perm, mine):
                failed = resource
                break
        if failed is None:
            return
        if len(needed) > 1:  # several refusals: Java reports the first in HashMap order
            for resource in _java_hashmap_order(list(needed)):
                error = _refusal(resource, needed[resource], owned, account)
                if error is not None:
                    raise error
        error = _refusal(failed, needed[failed], owned, account)
        assert error is not None
        raise error

    def first_refusal(self, access_key: str | None, message: str | None) -> bool:
        """``True`` the first time this cause is seen since the rules last changed (log once)."""
        return self._logged.first((access_key, message))

    # ------------------------------------------------------------ admin codes 50-53

    def update_access_config(self, config: PlainAccessConfig) -> bool:
        """
        UPDATE_AND_CREATE_ACL_CONFIG: change an account where it is defined, or add it to
        the plain file; the file is written at once and reloaded.

        :raises AclError: refused, with Java's message.
        """
        check_keys(config)
        check_resource_perms(config.topic_perms)
        check_resource_perms(config.group_perms)
        build_account(config)  # refuse what would not load (Java builds it before writing too)
        assert config.access_key is not None
        existing = self.rules.accounts.get(config.access_key)
        if existing is not None and existing.file:
            path = existing.file
            doc = self._document(path)
            accounts = doc.get(ACCOUNTS)
            if accounts is None:
                doc[ACCOUNTS] = [_account_map(None, config)]
            else:
                accounts = _list(accounts, path)
                for i, item in enumerate(accounts):
                    if isinstance(item, dict) and item.get("accessKey") == config.access_key:
                        del accounts[i]  # Java moves the updated account to the end
                        accounts.append(_account_map(item, config))
                        break
        else:
            path = self.default_file
            if not os.path.exists(path):
                try:
                    open(path, "a").close()
                except OSError as e:
                    log.warning("cannot create %s: %s", path, e)
            doc = self._document(path)
            accounts = doc.get(ACCOUNTS)
            accounts = [] if accounts is None else _list(accounts, path)
            accounts.append(_account_map(None, config))
            doc[ACCOUNTS] = accounts
        self._write(path, doc)
        return True

    def delete_access_config(self, access_key: str | None) -> bool:
        """DELETE_ACL_CONFIG: remove the account from its file. ``False`` when unknown."""
        if not access_key:
            log.error("Parameter value accesskey is null or empty String,Please check your parameter")
            return False
        account = self.rules.accounts.get(access_key)
        if account is None or not account.file:
            return False
        path = account.file
        doc = self._document(path, missing_ok=True)
        if not doc:
            log.warning("No data found in %s when deleting access config of %s", path, access_key)
            return True
        accounts = doc.get(ACCOUNTS)
        if accounts is None:
            raise AclError(None)  # Java: NullPointerException, answered with a null remark
        accounts = _list(accounts, path)
        for i, item in enumerate(accounts):
            if isinstance(item, dict) and item.get("accessKey") == access_key:
                del accounts[i]
                doc[ACCOUNTS] = accounts
                self._write(path, doc)
                return True
        return False

    def update_global_white_addrs(self, addresses: list[str] | None, path: str | None = None) -> bool:
        """
        UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the global white list of one ACL file
        (the plain file when *path* is empty). ``False`` (with a log line) for a missing
        list or a file that is not one of the ACL files.

        Stricter than Java, which writes any existing file under home whose name does not
        end in ``.yaml`` (broker.conf included) and does not check the patterns.

        :raises AclError: a pattern is refused.
        """
        target = self.default_file if not path else _deal(path)
        if addresses is None:
            log.error("Parameter value globalWhiteAddrsList is null,Please check your parameter")
            return False
        if not os.path.isfile(target):
            log.error("Parameter value %s is not exist or is a directory, please check your parameter", target)
            return False
        if not self._is_acl_file(target):
            log.error("Parameter value %s is not an ACL configuration file under %s", target, self.home)
            return False
        for pattern in addresses:
            remote_address_strategy(pattern)
        doc = self._document(target, missing_ok=True)
        doc[GLOBAL_WHITE_ADDRS] = list(addresses)
        self._write(target, doc)
        return True

    def _is_acl_file(self, path: str) -> bool:
        if path == self.default_file:
            return True
        return path.startswith(self.acl_dir + os.sep) and path.endswith((".yml", ".yaml"))

    def default_version_json(self) -> str:
        """GET_BROKER_CLUSTER_ACL_INFO's ``version``: the plain file's DataVersion as JSON."""
        return fastjson.dumps(self.rules.default_version.to_json()).decode()

    def all_versions_json(self) -> str:
        """GET_BROKER_CLUSTER_ACL_INFO's ``allAclFileVersion``: file -> DataVersion as JSON."""
        return fastjson.dumps({path: v.to_json() for path, v in self.rules.versions.items()}).decode()

    def _document(self, path: str, missing_ok: bool = False) -> dict[str, Any]:
        try:
            with open(path, "rb") as f:
                doc = load_yaml(f.read())
        except FileNotFoundError:
            if not missing_ok:
                raise AclError(f"{path} does not exist") from None
            doc = None
        except OSError as e:
            raise AclError(f"{path}: {e.strerror}") from None
        if doc is None:
            return {}
        if not isinstance(doc, dict):
            raise AclError(f"{path}: the document is not a mapping")
        return doc

    def _write(self, path: str, doc: dict[str, Any]) -> None:
        """Java ``updateAclConfigFileVersion`` + ``writeDataObject``, atomically; then reload."""
        version = _file_version(doc.get(DATA_VERSION), self.now_ms())
        version.next_version(self.now_ms())
        doc[DATA_VERSION] = [{"counter": version.counter, "timestamp": version.timestamp}]
        try:
            write_atomic(path, dump_yaml(doc))
        except OSError as e:
            raise AclError(f"cannot write {path}: {e.strerror}") from None
        self.reload(path)


def _refusal(resource: str, perm: int, owned: dict[str, int] | None, account: Account) -> AclError | None:
    is_group = is_retry_topic(resource)
    if owned is None or resource not in owned:
        mine = account.default_group_perm if is_group else account.default_topic_perm
        if not check_permission(perm, mine):
            return AclError(f"No default permission for {print_resource(resource, is_group)}", DEFAULT_PERM_FRAME)
        return None
    if not check_permission(perm, owned[resource]):
        return AclError(f"No default permission for {print_resource(resource, is_group)}", RESOURCE_PERM_FRAME)
    return None


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise AclError(f"{path}: {ACCOUNTS} is not a list")
    return value


def _file_version(value: Any, now_ms: int) -> DataVersion:
    """The version in a document being updated (Java reads the first element)."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        try:
            return DataVersion(int(value[0].get("counter") or 0), int(value[0].get("timestamp") or now_ms))
        except (TypeError, ValueError):
            pass
    return DataVersion(0, now_ms)


def _account_map(existing: dict[str, Any] | None, config: PlainAccessConfig) -> dict[str, Any]:
    """Java ``createAclAccessConfigMap``: update *existing* in place (or a new map) with the
    fields the request has."""
    out: dict[str, Any] = existing if existing is not None else {}
    out["accessKey"] = config.access_key
    if config.secret_key:
        out["secretKey"] = config.secret_key
    if config.white_remote_address is not None:
        out["whiteRemoteAddress"] = config.white_remote_address
    out["admin"] = config.admin
    if config.default_topic_perm:
        out["defaultTopicPerm"] = config.default_topic_perm
    if config.default_group_perm:
        out["defaultGroupPerm"] = config.default_group_perm
    if config.topic_perms is not None:
        out["topicPerms"] = list(config.topic_perms)
    if config.group_perms is not None:
        out["groupPerms"] = list(config.group_perms)
    return out
