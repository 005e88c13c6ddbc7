"""
ACL 1.0, as Java RocketMQ 4.9 does it (``plain_acl.yml``, signed requests), without
Twisted: the broker checks requests with it and every client signs with it.

| module | concept |
|---|---|
| :mod:`.signing` | the signed content, HMAC-SHA1 signatures, :class:`SessionCredentials`, the client hook |
| :mod:`.permission` | permission bits and strings, ``name=PERM`` entries |
| :mod:`.address` | remote address patterns (white lists) |
| :mod:`.plainacl` | the ``plain_acl.yml`` format: reading, checking, atomic writing |
| :mod:`.resources` | what each request code needs |
| :mod:`.manager` | :class:`PlainPermissionManager`: rules in force, request checks, reloads, admin updates |

See ``docs/security.md``.
"""

from rocketmq_tx.acl.errors import AclError
from rocketmq_tx.acl.manager import DEFAULT_PLAIN_FILE, WATCH_INTERVAL, PlainPermissionManager
from rocketmq_tx.acl.plainacl import PlainAccessConfig
from rocketmq_tx.acl.signing import AclClientRPCHook, SessionCredentials, credentials_from, sign

__all__ = [
    "AclError", "PlainPermissionManager", "PlainAccessConfig", "SessionCredentials", "AclClientRPCHook",
    "credentials_from", "sign", "WATCH_INTERVAL", "DEFAULT_PLAIN_FILE",
]
