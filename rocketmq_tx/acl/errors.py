"""
:class:`AclError`, Java's ``AclException``: a request refused by the rules, or rules
refused (a broken ``plain_acl.yml``, a bad address pattern, a bad admin update).

A Java 4.9 broker answers a refused request with SYSTEM_ERROR and the remark
``RemotingHelper.exceptionSimpleDesc(e)``: ``e.toString()`` (the class name, then
``": " + message`` when there is a message) and the first frame of the stack trace. The
frame is where the exception was constructed, so each refusal carries the frame the
4.9.8 class files report for that ``throw`` (file and line from the 4.9.8 sources).
Clients show the remark to people and tests compare it, so it is rebuilt in that exact
shape rather than naming Python code.
"""

from __future__ import annotations

__all__ = ["AclError", "JAVA_CLASS", "PARSE_FRAME", "NO_ACCESS_KEY_FRAME", "NO_ACL_CONFIG_FRAME",
           "SIGNATURE_FRAME", "NEED_ADMIN_FRAME", "DEFAULT_PERM_FRAME", "RESOURCE_PERM_FRAME"]

#: ``AclException``'s class name as ``Throwable.toString`` prints it.
JAVA_CLASS = "org.apache.rocketmq.acl.common.AclException"

_VALIDATOR = "org.apache.rocketmq.acl.plain.PlainAccessValidator"
_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"

#: ``PlainAccessValidator.parse`` wrapping whatever failed while reading the request.
PARSE_FRAME = f"{_VALIDATOR}.parse(PlainAccessValidator.java:134)"
#: ``PlainPermissionManager.validate``: no AccessKey in the request.
NO_ACCESS_KEY_FRAME = f"{_MANAGER}.validate(PlainPermissionManager.java:664)"
#: ``validate``: an AccessKey no file defines.
NO_ACL_CONFIG_FRAME = f"{_MANAGER}.validate(PlainPermissionManager.java:668)"
#: ``validate``: the signature does not match.
SIGNATURE_FRAME = f"{_MANAGER}.validate(PlainPermissionManager.java:684)"
#: ``checkPerm``: an admin-only code from an account without ``admin: true``.
NEED_ADMIN_FRAME = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:581)"
#: ``checkPerm``: the account's default topic or group permission refuses the resource.
DEFAULT_PERM_FRAME = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:606)"
#: ``checkPerm``: the account's own ``topicPerms``/``groupPerms`` entry refuses it.
RESOURCE_PERM_FRAME = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:611)"


class AclError(Exception):
    """
    :ivar message: Java's exception message (``None`` when Java's has none, e.g. a
        NullPointerException wrapped while parsing a request).
    :ivar frame: the Java stack frame of the throw, for :meth:`java_desc`; ``None`` for
        errors that never reach a client as a refusal (configuration errors).
    """

    def __init__(self, message: str | None, frame: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.frame = frame

    def __str__(self) -> str:
        return self.message or ""

    def java_desc(self) -> str:
        """The remark a Java 4.9 broker sends: ``exceptionSimpleDesc`` of the exception."""
        text = JAVA_CLASS if self.message is None else f"{JAVA_CLASS}: {self.message}"
        return text if self.frame is None else f"{text}, {self.frame}"
