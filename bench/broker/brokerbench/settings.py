"""
The broker benchmark's fixed settings: where things go, the broker.conf keys both brokers
get, every JVM's options (each taken from the official start script it names), the tools'
version and message size; and the run's log.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

#: bench/broker: the Java project, and the raw results files (gitignored)
HERE = Path(__file__).resolve().parent.parent
ROOT = HERE.parent.parent
JAVA_PROJECT = HERE / "java"
#: the stores and tx's working directories (the Java homes go to compat-tests/.work)
WORK = ROOT / "bench" / ".work"

TOOLS_VERSION = "5.5.0"
BENCH_PKG = "org.apache.rocketmq.example.benchmark"
BODY_SIZE = 1024
WARMUP = 10.0  # the tools' first report comes after 10 one-second snapshots

#: broker.conf keys given to both brokers (everything else: Java's defaults). Java's
#: defaults also for the flow-control timeouts (waitTimeMillsInSendQueue=200,
#: osPageCacheBusyTimeOutMills=1000) and the 1 GiB CommitLog files, which the compat
#: helpers otherwise relax. ``--flush`` sets flushDiskType before anything reads it.
BROKER_SETTINGS = {
    "flushDiskType": "ASYNC_FLUSH",
    "brokerRole": "ASYNC_MASTER",
    "autoCreateTopicEnable": "true",
    "waitTimeMillsInSendQueue": "200",
    "osPageCacheBusyTimeOutMills": "1000",
    "mappedFileSizeCommitLog": str(1 << 30),
    "deleteWhen": "04",
    "fileReservedTime": "48",
    "diskMaxUsedSpaceRatio": "75",
}

#: runbroker.sh (5.5.0 and 4.9.7 agree; Java >= 9 branch) minus -XX:+AlwaysPreTouch (it would
#: make RSS the 8 GiB heap and add the pre-touch to start-up; leaving it out favours Java on
#: both counts) and minus the GC log file.
BROKER_JVM = ("-server", "-Xms8g", "-Xmx8g", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
              "-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
              "-XX:-OmitStackTraceInFastThrow", "-XX:MaxDirectMemorySize=15g", "-XX:-UseLargePages")
#: runserver.sh (Java >= 9 branch) minus the GC log file.
NAMESRV_JVM = ("-server", "-Xms4g", "-Xmx4g", "-XX:MetaspaceSize=128m", "-XX:MaxMetaspaceSize=320m",
               "-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
               "-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
               "-XX:-OmitStackTraceInFastThrow", "-XX:-UseLargePages")
#: benchmark/runclass.sh (its CMS flags do not exist on Java 17: G1, the default, instead).
TOOL_JVM = ("-server", "-Xms1g", "-Xmx1g", "-Xmn256m", "-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow",
            "-XX:-UseLargePages", "-XX:+PerfDisableSharedMem")
#: benchmark/producer.sh passes this to the Producer (SEND_MESSAGE_V2 headers).
PRODUCER_PROPS = ("-Dorg.apache.rocketmq.client.sendSmartMsg=true",)


def broker_jvm(heap: str) -> tuple[str, ...]:
    """BROKER_JVM with -Xms/-Xmx set to *heap* (runbroker.sh's 8g unless --java-heap)."""
    return tuple(f"-Xms{heap}" if a.startswith("-Xms") else f"-Xmx{heap}" if a.startswith("-Xmx") else a
                 for a in BROKER_JVM)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
