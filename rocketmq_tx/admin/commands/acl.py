# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""ACL 1.0 accounts: updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr,
clusterAclConfigVersion."""

from __future__ import annotations

import argparse
import datetime

from rocketmq_tx.admin.commands.common import (
    all_broker_addrs,
    each_broker,
    java_object_text,
    master_addrs,
    one_target,
    text_arg,
)
from rocketmq_tx.admin.output import (
    Output,
    java_bool,
)
from rocketmq_tx.admin.registry import Session, command, opt
from rocketmq_tx.remoting.headers.acl import CreateAccessConfigRequestHeader


@command("updateAclConfig", "Update acl config yaml file in broker",
         opt("-b", "--brokerAddr", type=text_arg, help="update acl config file to which broker"),
         opt("-c", "--clusterName", type=text_arg, help="update acl config file to which cluster"),
         opt("-a", "--accessKey", type=text_arg, required=True, help="set accessKey in acl config file"),
         opt("-s", "--secretKey", type=text_arg, required=True, help="set secretKey in acl config file"),
         opt("-w", "--whiteRemoteAddress", type=text_arg, help="set white ip Address for account in acl config file"),
         opt("-i", "--defaultTopicPerm", type=text_arg, help="set default topicPerm in acl config file"),
         opt("-u", "--defaultGroupPerm", type=text_arg, help="set default GroupPerm in acl config file"),
         opt("-t", "--topicPerms", type=text_arg, help="set topicPerms list,eg: topicA=DENY,topicD=SUB"),
         opt("-g", "--groupPerms", type=text_arg, help="set groupPerms list,eg: groupD=DENY,groupD=SUB"),
         opt("-m", "--admin", type=java_bool, default=False, help="set admin flag in acl config file"))
def update_acl_config(session: Session, args: argparse.Namespace) -> Output:
    # the header Java's createAndUpdatePlainAccessConfig sends (perm lists joined by commas, as given)
    header = CreateAccessConfigRequestHeader(
        access_key=args.accessKey, secret_key=args.secretKey, white_remote_address=args.whiteRemoteAddress,
        admin=args.admin, default_topic_perm=args.defaultTopicPerm, default_group_perm=args.defaultGroupPerm,
        topic_perms=args.topicPerms, group_perms=args.groupPerms)
    addrs = all_broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output()
    each_broker(out, addrs, lambda addr: session.admin.create_and_update_plain_access_config(addr, header),
                "create or update plain access config to %s success.")
    account = {"accessKey": args.accessKey, "whiteRemoteAddress": args.whiteRemoteAddress, "admin": args.admin,
               "defaultTopicPerm": args.defaultTopicPerm, "defaultGroupPerm": args.defaultGroupPerm,
               "topicPerms": args.topicPerms.split(",") if args.topicPerms else None,
               "groupPerms": args.groupPerms.split(",") if args.groupPerms else None}
    out.printf("%s", java_object_text("PlainAccessConfig", account))  # the secret is never printed
    out.data = {"brokers": addrs, "account": account}
    return out


@command("deleteAclConfig", "Delete Acl Config Account in broker",
         opt("-b", "--brokerAddr", type=text_arg, help="delete acl config account from which broker"),
         opt("-c", "--clusterName", type=text_arg, help="delete acl config account from which cluster"),
         opt("-a", "--accessKey", type=text_arg, required=True,
             help="set accessKey in acl config file for deleting which account"))
def delete_acl_config(session: Session, args: argparse.Namespace) -> Output:
    addrs = all_broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data={"brokers": addrs, "accessKey": args.accessKey})
    each_broker(out, addrs, lambda addr: session.admin.delete_plain_access_config(addr, args.accessKey),
                "delete plain access config account from %s success.")
    out.printf("account's accesskey is:%s", args.accessKey)
    return out


@command("updateGlobalWhiteAddr", "Update global white address for acl Config File in broker",
         opt("-b", "--brokerAddr", type=text_arg, help="update global white address to which broker"),
         opt("-c", "--clusterName", type=text_arg, help="update global white address to which cluster"),
         opt("-g", "--globalWhiteRemoteAddresses", type=text_arg, required=True,
             help="set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*"),
         opt("-p", "--aclFileFullPath", type=text_arg,
             help="update global white address of specified acl file,eg: /xxx/plain_test.yml"))
def update_global_white_addr(session: Session, args: argparse.Namespace) -> Output:
    addrs = all_broker_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data={"brokers": addrs, "globalWhiteRemoteAddresses": args.globalWhiteRemoteAddresses})
    each_broker(out, addrs, lambda addr: session.admin.update_global_white_addrs_config(
        addr, args.globalWhiteRemoteAddresses, args.aclFileFullPath),
        "update global white remote addresses to %s success.")
    return out


@command("clusterAclConfigVersion", "List all of acl config version information in cluster",
         opt("-b", "--brokerAddr", type=text_arg, help="query acl config version for which broker"),
         opt("-c", "--clusterName", type=text_arg, help="query acl config version for specified cluster"))
def cluster_acl_config_version(session: Session, args: argparse.Namespace) -> Output:
    one_target(args.brokerAddr, args.clusterName)
    addrs = master_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data=[])
    out.printf("%-16s %-22s %-22s %-20s %-22s %-22s", "#Cluster Name", "#Broker Name", "#Broker Addr",
               "#AclFilePath", "#AclConfigVersionNum", "#AclLastUpdateTime")
    for _addr, info in each_broker(out, addrs, session.admin.examine_broker_cluster_acl_version_info):
        for path, version in info.all_acl_config_data_version.items():
            counter, stamp = version.get("counter", 0), int(version.get("timestamp") or 0)
            out.data.append({"cluster": info.cluster_name, "brokerName": info.broker_name,
                             "brokerAddr": info.broker_addr, "aclFilePath": path, "counter": counter,
                             "timestamp": stamp})
            when = datetime.datetime.fromtimestamp(stamp / 1000).strftime("%Y-%m-%d %H:%M:%S")
            out.printf("%-16s  %-22s  %-22s  %-20s  %-22s  %-22s", info.cluster_name, info.broker_name,
                       info.broker_addr, path, counter, when)
    return out
