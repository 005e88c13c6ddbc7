"""
Starting rocketmq_tx servers as fresh processes for interop tests (twistd plugins, the
way an operator runs them), waiting for their "listening on" log line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import javaharness as jh

from rocketmq_tx.blocking import BlockingMQClient, BlockingPullClient
from rocketmq_tx.common.message import MessageExt
from rocketmq_tx.common.route import TopicRouteData
from rocketmq_tx.remoting import MQBrokerError
from rocketmq_tx.remoting.api import PullStatus
from rocketmq_tx.testing import twistd_argv

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
START_TIMEOUT = 60.0
#: The environment of the Python programs the tests spawn (txclient.py and its kind): this
#: checkout first on the path, so a child imports the same rocketmq_tx as the test itself.
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(HERE.parent), os.environ.get("PYTHONPATH"))
                                                         if p)}

#: Store keys for every broker the tests start: a full-size index file (5 million slots,
#: 20 million entries) is 420 MB, allocated up front, and a full-size ConsumeQueue file
#: 6 MB per queue; dozens of brokers per run would fill a CI disk.
SMALL_STORE = {
    "maxHashSlotNum": "5000",
    "maxIndexNum": "20000",
    "mappedFileSizeConsumeQueue": str(20 * 20_000),
}


def small_store_args() -> list[str]:
    """:data:`SMALL_STORE` as ``--set`` options."""
    return [arg for key, value in SMALL_STORE.items() for arg in ("--set", f"{key}={value}")]


class TxProcess:
    """A running twistd process; stdout is collected by a thread so it never blocks."""

    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.argv = argv
        self.log_path = log_path
        self._log = open(log_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     stdin=subprocess.DEVNULL, cwd=WORK)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()
        self.port: int | None = None
        #: rocketmq-standalone only: the in-process name server's port
        self.namesrv_port: int | None = None

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            self._log.flush()
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float = START_TIMEOUT, start: int = 0) -> re.Match:
        """Block until a log line matches *pattern* (a readiness wait, not a sleep)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = start
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    m = regex.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                if self.proc.poll() is not None and seen == len(self.lines):
                    raise RuntimeError(f"{self.argv} exited ({self.proc.returncode}) before {pattern!r}:\n"
                                       + "\n".join(self.lines[-30:]))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self.argv}: no {pattern!r} within {timeout}s:\n"
                                       + "\n".join(self.lines[-30:]))
                self._cond.wait(min(remaining, 0.5))

    def stop(self, grace: float = 10.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(grace)
        return self.proc.returncode


def twistd() -> list[str]:
    """The argv prefix that runs twistd under this interpreter."""
    return twistd_argv()


def start_twistd(plugin: str, args: Sequence[str], label: str | None = None) -> TxProcess:
    """``twistd -n --pidfile= <plugin> <args>``; returns once it logs its listening port."""
    WORK.mkdir(exist_ok=True)
    label = label or plugin
    log_path = WORK / f"{label}-{os.getpid()}-{time.monotonic_ns()}.log"
    proc = TxProcess([*twistd(), "-n", "--pidfile=", plugin, *args], log_path)
    try:
        if plugin == "rocketmq-standalone":
            # Two servers in one process: the name server listens first, then the broker.
            ns = proc.wait_for(r"rocketmq-namesrv listening on [^:]+:(\d+)")
            proc.namesrv_port = int(ns.group(1))
            m = proc.wait_for(r"rocketmq-broker listening on [^:]+:(\d+)")
        else:
            m = proc.wait_for(rf"{re.escape(plugin)} listening on [^:]+:(\d+)")
    except Exception:
        proc.stop()
        raise
    proc.port = int(m.group(1))
    return proc


def run_pydriver(addr: str, serialize: str, client: str, cases: Sequence[str] = (),
                 timeout: float = 180.0) -> list[str]:
    """Run pydriver.py in a fresh interpreter; returns its stdout lines."""
    out = subprocess.run([sys.executable, str(HERE / "pydriver.py"), addr, serialize, client, *cases],
                         capture_output=True, text=True, timeout=timeout, cwd=HERE)
    if out.returncode != 0:
        raise RuntimeError(f"pydriver exited {out.returncode}:\n{out.stderr[-3000:]}")
    return out.stdout.splitlines()


def child_env(**extra: str) -> dict[str, str]:
    """:data:`CHILD_ENV` with *extra* variables added (credentials, poll intervals)."""
    return {**CHILD_ENV, **extra}


def run_script(script: str, *args: str, timeout: float, env: dict[str, str] | None = None,
               cwd: Path = HERE) -> subprocess.CompletedProcess:
    """Run a compat-tests program (``txclient.py``, ``txtrace.py``...) to its end; its output captured as text."""
    return subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(cwd), env=CHILD_ENV if env is None else env)


def start_txclient(*args: str, env: dict[str, str] | None = None) -> jh.JavaProcess:
    """
    txclient.py in the background, its stdout read line by line (JavaProcess works for any
    program); its stderr goes to a file under .work, shown when it fails.
    """
    err = WORK / f"txclient-{time.monotonic_ns()}.stderr"
    err.parent.mkdir(exist_ok=True)
    argv = [sys.executable, str(HERE / "txclient.py"), *args]
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, cwd=str(HERE),
                                env=CHILD_ENV if env is None else env, start_new_session=True)
    return jh.JavaProcess(proc, argv, err)


def pull_all(client: BlockingPullClient, topic: str) -> list[MessageExt]:
    """Every message of *topic* now stored, queue by queue from offset 0 (32 a pull)."""
    messages: list[MessageExt] = []
    for mq in client.fetch_queues(topic):
        offset = 0
        while True:
            result = client.pull(mq, offset, 32)
            messages += result.msg_found_list
            if result.pull_status is not PullStatus.FOUND:
                break
            offset = result.next_begin_offset
    return messages


def wait_for_route(namesrv: str, topic: str, timeout: float = 60.0) -> TopicRouteData:
    """*topic*'s route as a client reads it from *namesrv*, once a broker has registered it."""
    deadline = time.monotonic() + timeout
    with BlockingMQClient(namesrv) as client:
        while True:
            try:
                return client.route(topic, refresh=True)
            except MQBrokerError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # waiting for the broker's registration, bounded above


def admin_cli(ns: str, *args: str, cwd: Path | None = None) -> str:
    """rocketmq-tx-admin in process: its stdout (it must succeed), run in *cwd* if given
    (consumerStatus writes files in the working directory, as mqadmin does)."""
    import contextlib
    import io

    from rocketmq_tx.admin import cli

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main([*args, "-n", ns, "--timeout", "10"])
    finally:
        os.chdir(here)
    assert status == 0, (args, err.getvalue())
    return out.getvalue()
