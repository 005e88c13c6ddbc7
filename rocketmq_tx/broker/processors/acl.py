# -*- test-case-name: rocketmq_tx.broker.test.test_acl -*-
"""
ACL 1.0 on the broker: the check of every request (:class:`AclServerHook`, Java's server
RPC hook) and the ACL admin codes 50-53 (:class:`AclConfigProcessor`, the ACL part of
Java's ``AdminBrokerProcessor``).

With ``aclEnable=true`` :func:`~rocketmq_tx.broker.processors.processor_table` installs
the hook as the table's ``before_request``: every request, on both ports, is checked
after its processor is found and before it runs, as Java's ``doBeforeRpcHooks``. A
refusal is answered as Java 4.9 answers an exception from a hook: SYSTEM_ERROR (1) with
``exceptionSimpleDesc`` as remark (see :mod:`rocketmq_tx.acl.errors`), serialized as JSON
(Java builds that response without the request's serialization); a oneway request gets
nothing. Each refusal is logged once per account and reason.

GET_BROKER_CLUSTER_ACL_CONFIG (54) is not answered (REQUEST_CODE_NOT_SUPPORTED, from
the default processor), as in 4.9.8, which removed it: it returned every secret key.
"""

from __future__ import annotations

from twisted.logger import Logger

from rocketmq_tx.acl import AclError, PlainAccessConfig, PlainPermissionManager
from rocketmq_tx.acl.signing import ACCESS_KEY
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketmq_tx.remoting.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)

__all__ = ["AclServerHook", "AclConfigProcessor", "java_split"]

log = Logger()


def java_split(text: str | None, separator: str = ",") -> list[str] | None:
    """Java ``UtilAll.split``: ``String.split`` (trailing empty parts dropped; ``""`` is
    ``[""]``), ``None`` for ``None``."""
    if text is None:
        return None
    parts = text.split(separator)
    if text == "":
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _resource_perms(text: str | None) -> list[str | None] | None:
    # java_split's parts in a list of PlainAccessConfig's element type (a YAML entry may be null)
    parts = java_split(text)
    return None if parts is None else list(parts)


class AclServerHook:
    """``hook(ctx, request)``: ``None`` to go on, or the refusal to send."""

    def __init__(self, manager: PlainPermissionManager) -> None:
        self.manager = manager

    def __call__(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | None:
        try:
            self.manager.validate(request, ctx.peer)
        except AclError as e:
            access_key = request.ext_fields.get(ACCESS_KEY)
            if self.manager.first_refusal(access_key, e.message):
                log.warn("ACL refused request code {code} from {peer} (accessKey {ak}): {reason} "
                         "(logged once per account and reason)",
                         code=request.code, peer=ctx.peer, ak=access_key, reason=e.message)
            return request.make_response(ResponseCode.SYSTEM_ERROR, e.java_desc(), serialize_type=SerializeType.JSON)
        return None


class AclConfigProcessor(HandlerProcessor):
    """UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO
    (52) and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), Java 4.9.8's answers and failure codes
    (209, 210, 211). With ACL off Java fails on its missing validator: 50, 51 and 53 get
    their failure code without a remark and 52 no answer at all; so do they here."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.handlers = {
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_access_config,
            RequestCode.DELETE_ACL_CONFIG: self.delete_access_config,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.get_broker_cluster_acl_info,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white_addrs,
        }

    @property
    def _acl(self) -> PlainPermissionManager | None:
        return getattr(self.controller, "acl", None)

    def update_access_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        acl = self._acl
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        h = CreateAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        if acl is None:
            return request.make_response(failed)
        config = PlainAccessConfig(h.access_key, h.secret_key, h.white_remote_address, h.admin, h.default_topic_perm,
                                   h.default_group_perm, _resource_perms(h.topic_perms), _resource_perms(h.group_perms))
        try:
            done = acl.update_access_config(config)
        except AclError as e:
            log.warn("UPDATE_AND_CREATE_ACL_CONFIG of accessKey {ak} refused: {reason}", ak=h.access_key,
                     reason=_masked(e.message, h.secret_key))
            return request.make_response(failed, e.message)
        if not done:
            return request.make_response(
                failed, f"The accesskey[{h.access_key}] corresponding to accessConfig has been updated failed.")
        log.info("ACL account {ak} created or updated", ak=h.access_key)
        return _written(request)

    def delete_access_config(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        acl = self._acl
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        h = DeleteAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        log.info("DeleteAccessConfig called by {peer}", peer=ctx.peer)
        if acl is None:
            return request.make_response(failed)
        try:
            done = acl.delete_access_config(h.access_key)
        except AclError as e:
            return request.make_response(failed, e.message)
        if not done:
            return request.make_response(
                failed, f"The accesskey[{h.access_key}] corresponding to accessConfig has been deleted failed.")
        log.info("ACL account {ak} deleted", ak=h.access_key)
        return _written(request)

    def get_broker_cluster_acl_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand | None:
        acl = self._acl
        if acl is None:
            log.error("GET_BROKER_CLUSTER_ACL_INFO while ACL is off: no answer (as Java's broker)")
            return None
        settings = self.controller.settings
        header = GetBrokerAclConfigResponseHeader(
            version=acl.default_version_json(),
            all_acl_file_version=acl.all_versions_json(),
            broker_name=settings["brokerName"],
            broker_addr=self.controller.broker_addr,
            cluster_name=settings["brokerClusterName"],
        )
        return request.make_response(ResponseCode.SUCCESS, ext_fields=header.to_ext_fields())

    def update_global_white_addrs(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        acl = self._acl
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        h = UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext_fields(request.ext_fields)
        if acl is None:
            return request.make_response(failed)
        try:
            done = acl.update_global_white_addrs(java_split(h.global_white_addrs), h.acl_file_full_path)
        except AclError as e:
            return request.make_response(failed, e.message)
        if not done:
            return request.make_response(
                failed, f"The globalWhiteAddresses[{h.global_white_addrs}] has been updated failed.")
        log.info("ACL global white addresses of {path} set to {addrs}", path=h.acl_file_full_path or acl.default_file,
                 addrs=h.global_white_addrs)
        return _written(request)


def _written(request: RemotingCommand) -> RemotingCommand:
    """Java writes these successes itself, without the request's serialization: JSON."""
    return request.make_response(ResponseCode.SUCCESS, serialize_type=SerializeType.JSON)


def _masked(message: str | None, secret: str | None) -> str | None:
    """*message* without the secret key (Java's refusal text shows it; our log does not)."""
    if message is None or not secret:
        return message
    return message.replace(secret, "******")
