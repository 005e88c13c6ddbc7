# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""The name servers: getNamesrvConfig, updateNamesrvConfig, updateKvConfig, deleteKvConfig,
wipeWritePerm, addWritePerm."""

from __future__ import annotations

import argparse

from rocketmq_tx.admin.commands.common import (
    text_arg,
)
from rocketmq_tx.admin.output import (
    Output,
)
from rocketmq_tx.admin.registry import CommandError, Session, command, opt


@command("getNamesrvConfig", "Get configs of name server.")
def get_namesrv_config(session: Session, args: argparse.Namespace) -> Output:
    configs = session.admin.get_name_server_config(session.namesrvs)
    out = Output(data=configs)
    for addr, config in configs.items():
        out.printf("============%s============", addr)
        for key, value in sorted(config.items()):
            out.printf("%-50s=  %s", key, value)
    return out


@command("updateNamesrvConfig", "Update configs of name server.",
         opt("-k", "--key", type=text_arg, required=True, help="config key"),
         opt("-v", "--value", type=text_arg, required=True, help="config value"))
def update_namesrv_config(session: Session, args: argparse.Namespace) -> Output:
    session.admin.update_name_server_config({args.key: args.value}, session.namesrvs)
    out = Output(data={"namesrvs": session.namesrvs, "key": args.key, "value": args.value})
    out.printf("update name server config success!%s", session.namesrvs)
    out.printf("%s : %s", args.key, args.value)
    return out


@command("updateKvConfig", "Create or update KV config.",
         opt("-s", "--namespace", type=text_arg, required=True, help="set the namespace"),
         opt("-k", "--key", type=text_arg, required=True, help="set the key name"),
         opt("-v", "--value", type=text_arg, required=True, help="set the key value"))
def update_kv_config(session: Session, args: argparse.Namespace) -> Output:
    session.admin.create_and_update_kv_config(args.namespace, args.key, args.value)
    out = Output(data={"namespace": args.namespace, "key": args.key, "value": args.value})
    out.printf("create or update kv config to namespace success.")
    return out


@command("deleteKvConfig", "Delete KV config.",
         opt("-s", "--namespace", type=text_arg, required=True, help="set the namespace"),
         opt("-k", "--key", type=text_arg, required=True, help="set the key name"))
def delete_kv_config(session: Session, args: argparse.Namespace) -> Output:
    session.admin.delete_kv_config(args.namespace, args.key)
    out = Output(data={"namespace": args.namespace, "key": args.key})
    out.printf("delete kv config from namespace success.")
    return out


def _write_perm(session: Session, broker_name: str, wipe: bool) -> Output:
    out = Output(data={})
    word = "wipe" if wipe else "add"
    failed = []
    for addr in session.namesrvs:
        try:
            if wipe:
                count = session.admin.wipe_write_perm_of_broker(addr, broker_name)
            else:
                count = session.admin.add_write_perm_of_broker(addr, broker_name)
        except Exception:  # Java prints "Failed" for that name server and goes on
            out.data[addr] = None
            failed.append(addr)
            out.printf("%s write perm of broker[%s] in name server[%s] Failed", word, broker_name, addr)
            continue
        out.data[addr] = count
        out.printf("%s write perm of broker[%s] in name server[%s] OK, %d", word, broker_name, addr, count)
    if failed and len(failed) == len(session.namesrvs):
        raise CommandError(f"{word} write perm of broker[{broker_name}] failed in every name server")
    return out


@command("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param",
         opt("-b", "--brokerName", type=text_arg, required=True, help="broker name"))
def wipe_write_perm(session: Session, args: argparse.Namespace) -> Output:
    return _write_perm(session, args.brokerName, wipe=True)


@command("addWritePerm", "Add write perm of broker in all name server you defined in the -n param",
         opt("-b", "--brokerName", type=text_arg, required=True, help="broker name"))
def add_write_perm(session: Session, args: argparse.Namespace) -> Output:
    return _write_perm(session, args.brokerName, wipe=False)
