# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig: the cluster's brokers and their settings."""

from __future__ import annotations

import argparse
import contextlib
import time

from rocketmq_tx.admin.commands.common import (
    each_broker,
    master_addrs,
    text_arg,
)
from rocketmq_tx.admin.output import (
    Output,
    jformat,
)
from rocketmq_tx.admin.registry import Session, command, opt


def _cluster_more_stats(session: Session) -> Output:
    """clusterList -m: messages in and out yesterday and today, per broker, from its runtime figures."""
    info = session.admin.examine_broker_cluster_info()
    out = Output(data=[])
    out.printf("%-16s  %-32s %14s %14s %14s %14s", "#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
               "#InTotalToday", "#OutTotalToday")
    for cluster in sorted(info.cluster_addr_table):
        for name in sorted(info.cluster_addr_table[cluster]):
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for bid in sorted(data.broker_addrs):
                figures = [0, 0, 0, 0]
                with contextlib.suppress(Exception):  # as Java: a broker that does not answer shows zeros
                    t = {k: int(v) for k, v in session.admin.fetch_broker_runtime_stats(
                        data.broker_addrs[bid]).items() if k.startswith(("msgPutTotal", "msgGetTotal"))}
                    figures = [t["msgPutTotalTodayMorning"] - t["msgPutTotalYesterdayMorning"],
                               t["msgGetTotalTodayMorning"] - t["msgGetTotalYesterdayMorning"],
                               t["msgPutTotalTodayNow"] - t["msgPutTotalTodayMorning"],
                               t["msgGetTotalTodayNow"] - t["msgGetTotalTodayMorning"]]
                out.data.append({"cluster": cluster, "brokerName": name, "brokerId": bid, "inTotalYest": figures[0],
                                 "outTotalYest": figures[1], "inTotalToday": figures[2], "outTotalToday": figures[3]})
                out.printf("%-16s  %-32s %14d %14d %14d %14d", cluster, name, *figures)
    return out


@command("clusterList", "List all of clusters",
         opt("-m", "--moreStats", action="store_true", help="Print more stats"))
def cluster_list(session: Session, args: argparse.Namespace) -> Output:
    if args.moreStats:
        return _cluster_more_stats(session)
    info = session.admin.examine_broker_cluster_info()
    out = Output(data=[])
    out.printf("%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s", "#Cluster Name", "#Broker Name", "#BID",
               "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")
    for cluster in sorted(info.cluster_addr_table):
        for name in sorted(info.cluster_addr_table[cluster]):
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for bid in sorted(data.broker_addrs):
                addr = data.broker_addrs[bid]
                try:
                    stats = session.admin.fetch_broker_runtime_stats(addr)
                except Exception:  # a broker that does not answer still gets its row, as in Java
                    stats = {}
                put_tps = float((stats.get("putTps") or "0").split(" ")[0] or 0)
                get_tps = float((stats.get("getTransferedTps") or "0").split(" ")[0] or 0)
                earliest = stats.get("earliestMessageTimeStamp")
                hours = (time.time() * 1000 - int(earliest)) / 3_600_000 if earliest else 0.0
                space = float(stats.get("commitLogDiskRatio") or 0.0)
                row = {"cluster": cluster, "brokerName": name, "brokerId": bid, "addr": addr,
                       "version": stats.get("brokerVersionDesc", ""), "inTps": put_tps, "outTps": get_tps,
                       "pageCacheLockTimeMills": stats.get("pageCacheLockTimeMills", ""), "hours": hours,
                       "commitLogDiskRatio": space}
                out.data.append(row)
                out.printf("%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s", cluster, name, bid, addr,
                           row["version"],
                           jformat("%9.2f(%s,%sms)", put_tps, stats.get("sendThreadPoolQueueSize", ""),
                                   stats.get("sendThreadPoolQueueHeadWaitTimeMills", "")),
                           jformat("%9.2f(%s,%sms)", get_tps, stats.get("pullThreadPoolQueueSize", ""),
                                   stats.get("pullThreadPoolQueueHeadWaitTimeMills", "")),
                           row["pageCacheLockTimeMills"], jformat("%2.2f", hours), jformat("%.4f", space))
    return out


@command("brokerStatus", "Fetch broker runtime status data",
         opt("-b", "--brokerAddr", type=text_arg, help="Broker address"),
         opt("-c", "--clusterName", type=text_arg, help="which cluster"))
def broker_status(session: Session, args: argparse.Namespace) -> Output:
    addrs = master_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data={})
    for addr, table in each_broker(out, addrs, session.admin.fetch_broker_runtime_stats):
        out.data[addr] = dict(sorted(table.items()))
        for key, value in sorted(table.items()):
            if args.clusterName and not args.brokerAddr:
                out.printf("%-24s %-32s: %s", addr, key, value)
            else:
                out.printf("%-32s: %s", key, value)
    return out


@command("getBrokerConfig", "Get broker config by cluster or special broker!",
         opt("-b", "--brokerAddr", type=text_arg, help="get which broker"),
         opt("-c", "--clusterName", type=text_arg, help="get which cluster"))
def get_broker_config(session: Session, args: argparse.Namespace) -> Output:
    out = Output(data={})
    addrs = master_addrs(session, args.brokerAddr, args.clusterName)
    for addr, config in each_broker(out, addrs, session.admin.get_broker_config):
        out.data[addr] = config
        out.printf("============%s============", addr)
        for key, value in sorted(config.items()):
            out.printf("%-50s=  %s", key, value)
        out.printf("")
    return out


@command("updateBrokerConfig", "Update broker's config",
         opt("-b", "--brokerAddr", type=text_arg, help="update which broker"),
         opt("-c", "--clusterName", type=text_arg, help="update which cluster"),
         opt("-k", "--key", type=text_arg, required=True, help="config key"),
         opt("-v", "--value", type=text_arg, required=True, help="config value"))
def update_broker_config(session: Session, args: argparse.Namespace) -> Output:
    addrs = master_addrs(session, args.brokerAddr, args.clusterName)
    out = Output(data=addrs)
    each_broker(out, addrs, lambda addr: session.admin.update_broker_config(addr, {args.key: args.value}),
                "update broker config success, %s")
    return out
