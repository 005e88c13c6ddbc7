# -*- test-case-name: rocketmq_tx.broker.test.test_acl -*-
"""
Headers of the ACL 1.0 admin requests (codes 50-53), Java 4.9.8's field names.

Java's header decoding only logs a missing field, even a ``@CFNotNull`` one, so none is
required here: the broker answers a missing access key with the same refusal Java gives.
"""

from __future__ import annotations

from rocketmq_tx.remoting.header import CommandCustomHeader, custom_header, wire

__all__ = [
    "CreateAccessConfigRequestHeader",
    "DeleteAccessConfigRequestHeader",
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
    "GetBrokerAclConfigResponseHeader",
]


@custom_header
class CreateAccessConfigRequestHeader(CommandCustomHeader):
    """``CreateAccessConfigRequestHeader`` (UPDATE_AND_CREATE_ACL_CONFIG, 50); the perms
    are comma-separated ``name=PERM`` lists."""

    access_key: str | None = wire("accessKey")
    secret_key: str | None = wire("secretKey")
    white_remote_address: str | None = wire("whiteRemoteAddress")
    admin: bool = wire("admin", default=False)
    default_topic_perm: str | None = wire("defaultTopicPerm")
    default_group_perm: str | None = wire("defaultGroupPerm")
    topic_perms: str | None = wire("topicPerms")
    group_perms: str | None = wire("groupPerms")

    def __repr__(self) -> str:
        secret = None if self.secret_key is None else "******"
        return f"CreateAccessConfigRequestHeader(access_key={self.access_key!r}, secret_key={secret!r}, ...)"


@custom_header
class DeleteAccessConfigRequestHeader(CommandCustomHeader):
    """``DeleteAccessConfigRequestHeader`` (DELETE_ACL_CONFIG, 51)."""

    access_key: str | None = wire("accessKey")


@custom_header
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandCustomHeader):
    """``UpdateGlobalWhiteAddrsConfigRequestHeader`` (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, 53):
    comma-separated patterns, and the file (empty: the plain file)."""

    global_white_addrs: str | None = wire("globalWhiteAddrs")
    acl_file_full_path: str | None = wire("aclFileFullPath")


@custom_header
class GetBrokerAclConfigResponseHeader(CommandCustomHeader):
    """``GetBrokerAclConfigResponseHeader`` (GET_BROKER_CLUSTER_ACL_INFO, 52): the plain
    file's DataVersion as JSON, every file's (``{path: DataVersion}``), and who answers."""

    version: str | None = wire("version")
    all_acl_file_version: str | None = wire("allAclFileVersion")
    broker_name: str | None = wire("brokerName")
    broker_addr: str | None = wire("brokerAddr")
    cluster_name: str | None = wire("clusterName")
