"""Build and run the Java side of the interop harness (compat-tests/java).

The Maven project is built once per version key ("4" -> RocketMQ 4.9.8, "5" -> 5.5.0)
and the resulting classpath (classes dir + dependency jars) is cached for the session.
A build is also skipped when a previous session already built the same sources (a
stamp of pom.xml and src/ is kept next to the classes); set COMPAT_FORCE_BUILD=1 to
rebuild regardless.

Java programs write machine-readable lines to stdout; their logs go to stderr, which
is captured to a file per process (see JavaProcess.stderr_path).

A missing ``java``/``mvn`` or a failed build skips the compat tests on a developer
machine, but fails them under CI (``CI=true``; :func:`rocketmq_tx.testing.in_ci`): CI must never go
green by skipping.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

import pytest

from rocketmq_tx.testing import in_ci  # the one "under CI" rule (re-exported: jh.in_ci)

HERE = Path(__file__).resolve().parent
JAVA_PROJECT = HERE / "java"
POM = JAVA_PROJECT / "pom.xml"
VECTORS_DIR = HERE / "vectors"

#: version key -> RocketMQ version the build uses
VERSIONS = {"4": "4.9.8", "5": "5.5.0"}
#: RocketMQ version -> version key
VERSION_KEYS = {v: k for k, v in VERSIONS.items()}
#: Maven profile per version key (the default build is 4.9.8)
PROFILES = {"4": [], "5": ["-Procketmq5"]}

JAVA_PACKAGE = "rocketmq.compat"
DEFAULT_JVM_ARGS = ("-Xmx512m", "-XX:+UseSerialGC")
#: for short-lived JVMs (mqadmin, the peers that run a batch of commands): the client
#: compiler alone starts them faster
FAST_START = ("-XX:TieredStopAtLevel=1",)
READY_RE = r"READY (\d+)"

BUILD_TIMEOUT = float(os.environ.get("COMPAT_BUILD_TIMEOUT", "1500"))
START_TIMEOUT = 60.0
STOP_GRACE = 10.0


class HarnessError(RuntimeError):
    """The Java side could not be built or could not be run."""


class JavaToolMissing(HarnessError):
    pass


class JavaBuildError(HarnessError):
    pass


class JavaStartError(HarnessError):
    pass


class JavaRunError(HarnessError):
    pass


def unavailable(reason: str) -> NoReturn:
    """Skip (developer machine) or fail (CI=true) because the Java side is unusable."""
    if in_ci():
        pytest.fail(f"Java compat harness unavailable in CI: {reason}", pytrace=False)
    pytest.skip(f"Java compat harness unavailable: {reason}")


def build_dir(key: str) -> Path:
    return JAVA_PROJECT / f"target-{key}"


def _require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise JavaToolMissing(f"`{name}` not found on PATH")
    return path


# --------------------------------------------------------------------------- build

_build_cache: dict[str, object] = {}  # key -> classpath str, or the HarnessError it failed with
_build_lock = threading.Lock()


def _source_stamp(key: str) -> str:
    h = hashlib.sha256()
    h.update(f"key={key}\n".encode())
    files = [POM] + sorted(p for p in (JAVA_PROJECT / "src").rglob("*") if p.is_file())
    for p in files:
        h.update(str(p.relative_to(JAVA_PROJECT)).encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _read_classpath(key: str) -> str | None:
    bdir = build_dir(key)
    cp_file = bdir / "classpath.txt"
    classes = bdir / "classes"
    if not cp_file.is_file() or not classes.is_dir():
        return None
    deps = cp_file.read_text().strip()
    entries = [e for e in deps.split(os.pathsep) if e]
    if not entries or not all(os.path.exists(e) for e in entries):
        return None
    return os.pathsep.join([str(classes)] + entries)


def _mvn_build(key: str) -> str:
    bdir = build_dir(key)
    bdir.mkdir(parents=True, exist_ok=True)
    stamp_file = bdir / ".harness-stamp"
    stamp = _source_stamp(key)
    force = os.environ.get("COMPAT_FORCE_BUILD", "") not in ("", "0")

    if not force and stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        cp = _read_classpath(key)
        if cp is not None:
            return cp

    mvn = _require_tool("mvn")
    _require_tool("java")
    cmd = [
        mvn, "-q", "-B", "-f", str(POM), *PROFILES[key],
        "package", "dependency:build-classpath",
        f"-Dmdep.outputFile={bdir / 'classpath.txt'}",
        "-DskipTests",
    ]
    log_path = bdir / "build.log"
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=BUILD_TIMEOUT, cwd=str(JAVA_PROJECT))
        except subprocess.TimeoutExpired:
            raise JavaBuildError(f"maven build for RocketMQ {VERSIONS[key]} timed out after "
                                 f"{BUILD_TIMEOUT:.0f}s (log: {log_path})") from None
    if proc.returncode != 0:
        tail = _tail(log_path, 40)
        raise JavaBuildError(f"maven build for RocketMQ {VERSIONS[key]} failed (exit {proc.returncode}): "
                             f"{' '.join(cmd)}\n--- {log_path} (tail) ---\n{tail}")
    cp = _read_classpath(key)
    if cp is None:
        raise JavaBuildError(f"maven build for RocketMQ {VERSIONS[key]} produced no usable classpath in {bdir}")
    stamp_file.write_text(stamp + "\n")
    (bdir / "build-seconds.txt").write_text(f"{time.monotonic() - t0:.1f}\n")
    return cp


def build(key: str) -> str:
    """Build the Java project for version key "4" or "5"; return the classpath string.

    Cached per process: a second call (same session) is free, and a failed build is not
    retried. Raises HarnessError subclasses; see build_or_skip for the pytest flavour.
    """
    if key in VERSION_KEYS:  # accept "4.9.8"/"5.5.0" too
        key = VERSION_KEYS[key]
    if key not in VERSIONS:
        raise ValueError(f"unknown version key {key!r}; expected one of {sorted(VERSIONS)}")
    with _build_lock:
        cached = _build_cache.get(key)
        if isinstance(cached, str):
            return cached
        if isinstance(cached, HarnessError):
            raise cached
        bdir = build_dir(key)
        bdir.mkdir(parents=True, exist_ok=True)
        try:
            # Serialise concurrent sessions (e.g. xdist workers) building the same tree.
            with open(bdir / ".build.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    cp = _mvn_build(key)
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        except HarnessError as e:
            _build_cache[key] = e
            raise
        _build_cache[key] = cp
        return cp


def build_or_skip(key: str) -> str:
    """build(), turning harness problems into skip (or failure when CI=true)."""
    try:
        _require_tool("java")
        return build(key)
    except HarnessError as e:
        unavailable(str(e))
        raise  # unreachable: unavailable() always raises


# --------------------------------------------------------------------------- running

def java_command(classpath: str, main: str, args: Sequence[str] = (),
                 jvm_args: Sequence[str] = DEFAULT_JVM_ARGS) -> list[str]:
    java = _require_tool("java")
    if "." not in main:
        main = f"{JAVA_PACKAGE}.{main}"
    return [java, *jvm_args, "-cp", classpath, main, *map(str, args)]


def _tail(path: Path, n: int) -> str:
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "<no output captured>"
    return "\n".join(lines[-n:])


class JavaProcess:
    """A running Java program with its stdout read line by line in the background."""

    def __init__(self, proc: subprocess.Popen, argv: list[str], stderr_path: Path, stdin_eof_exits: bool = True):
        self.proc = proc
        #: the harness programs (EchoServer, peers) exit when stdin closes; the official servers
        #: (name server, broker, proxy) ignore it, and stop() sends them SIGTERM at once
        self.stdin_eof_exits = stdin_eof_exits
        self.argv = argv
        self.stderr_path = stderr_path
        self.port: int | None = None
        self.ready_match: re.Match | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read_stdout, name=f"java-stdout-{proc.pid}", daemon=True)
        self._reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in self.proc.stdout:
                self._lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put(None)  # EOF marker

    @property
    def pid(self) -> int:
        return self.proc.pid

    def readline(self, timeout: float) -> str | None:
        """Next stdout line; None at EOF. Raises TimeoutError if none arrives in time."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no stdout line from {self.argv[-1]} within {timeout}s") from None
        if line is None:
            self._lines.put(None)  # keep reporting EOF
        return line

    def lines(self, timeout: float = 30.0) -> Iterator[str]:
        """Remaining stdout lines until EOF (each must arrive within ``timeout``)."""
        while True:
            line = self.readline(timeout)
            if line is None:
                return
            yield line

    def wait_for(self, pattern: str, timeout: float) -> re.Match:
        """Read stdout until a line matches ``pattern`` (a readiness wait, never a sleep)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JavaStartError(self._describe(f"no line matching {pattern!r} within {timeout:.0f}s", seen))
            try:
                line = self.readline(min(remaining, 0.5))
            except TimeoutError:
                if self.proc.poll() is not None and self._lines.empty():
                    raise JavaStartError(self._describe(
                        f"exited with {self.proc.returncode} before printing {pattern!r}", seen)) from None
                continue
            if line is None:
                self.proc.wait(timeout=STOP_GRACE)
                raise JavaStartError(self._describe(
                    f"stdout closed (exit {self.proc.returncode}) before a line matching {pattern!r}", seen))
            m = rx.search(line)
            if m:
                return m
            seen.append(line)

    def _describe(self, what: str, seen: list[str]) -> str:
        return (f"{' '.join(self.argv[-3:])}: {what}\n--- stdout so far ---\n" + "\n".join(seen[-20:])
                + f"\n--- stderr ({self.stderr_path}) tail ---\n" + _tail(self.stderr_path, 40))

    def stderr_tail(self, n: int = 40) -> str:
        return _tail(self.stderr_path, n)

    def stop(self, grace: float = STOP_GRACE) -> int | None:
        """Close stdin (EchoServer exits on EOF), then SIGTERM, then SIGKILL after
        ``grace`` seconds. Idempotent. The stderr log is deleted after a clean exit."""
        proc = self.proc
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                if proc.stdin:
                    proc.stdin.close()
            try:
                proc.wait(timeout=2.0 if self.stdin_eof_exits else 0)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    proc.wait(timeout=grace)
        return self._reap(proc.returncode in (0, -signal.SIGTERM, 128 + signal.SIGTERM))

    def discard(self) -> int | None:
        """SIGKILL at once, for a server whose store nobody reads afterwards (a fixture's teardown):
        a graceful stop costs 3-15 s per server JVM (a broker's shutdown hook joins its service
        threads one after another) and proves nothing there. Idempotent; after stop() it changes
        nothing. Its stderr log goes as after a clean stop when the process was still running (it
        had not failed)."""
        proc = self.proc
        running = proc.poll() is None
        if running:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=STOP_GRACE)
        return self._reap(running or proc.returncode in (0, -signal.SIGTERM, 128 + signal.SIGTERM))

    def _reap(self, clean: bool) -> int | None:
        proc = self.proc
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream:
                    stream.close()
        self._reader.join(timeout=2)
        if clean:
            with contextlib.suppress(OSError):
                self.stderr_path.unlink()
        return proc.returncode

    def __enter__(self) -> JavaProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _stderr_file(main: str) -> Path:
    fd, path = tempfile.mkstemp(prefix=f"compat-{main.rsplit('.', 1)[-1]}-", suffix=".stderr.log")
    os.close(fd)
    return Path(path)


def spawn_java(classpath: str, main: str, args: Sequence[str] = (),
               jvm_args: Sequence[str] = DEFAULT_JVM_ARGS) -> JavaProcess:
    """Start a Java program without waiting for anything."""
    argv = java_command(classpath, main, args, jvm_args)
    stderr_path = _stderr_file(main)
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                cwd=str(JAVA_PROJECT), start_new_session=True)
    return JavaProcess(proc, argv, stderr_path)


def start_java(classpath: str, main: str, args: Sequence[str] = (), ready: str = READY_RE,
               timeout: float = START_TIMEOUT, jvm_args: Sequence[str] = DEFAULT_JVM_ARGS) -> JavaProcess:
    """Start a Java server program and wait until it prints a line matching ``ready``.

    If the pattern has a group, its first group is parsed as the port. The program's
    stdin stays open (EchoServer exits when it closes); stop() always terminates it.
    """
    jp = spawn_java(classpath, main, args, jvm_args)
    try:
        m = jp.wait_for(ready, timeout)
    except BaseException:
        jp.stop()
        raise
    jp.ready_match = m
    if m.groups() and m.group(1) and m.group(1).isdigit():
        jp.port = int(m.group(1))
    return jp


def run_java(classpath: str, main: str, args: Sequence[str] = (), timeout: float = 120.0,
             jvm_args: Sequence[str] = DEFAULT_JVM_ARGS, check: bool = True) -> list[str]:
    """Run a Java program to completion and return its stdout lines."""
    return collect(spawn_java(classpath, main, args, jvm_args), timeout=timeout, check=check)


def collect(jp: JavaProcess, timeout: float = 120.0, check: bool = True) -> list[str]:
    """Wait for a spawned program to finish; return its stdout lines (stops it on timeout)."""
    deadline = time.monotonic() + timeout
    out: list[str] = []
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JavaRunError(jp._describe(f"did not finish within {timeout:.0f}s", out))
            try:
                line = jp.readline(remaining)
            except TimeoutError:
                continue
            if line is None:
                break
            out.append(line)
        try:
            jp.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise JavaRunError(jp._describe("closed stdout but did not exit", out)) from None
    finally:
        jp.stop()
    if check and jp.proc.returncode != 0:
        raise JavaRunError(jp._describe(f"exited with {jp.proc.returncode}", out))
    return out


def run_peer_batch(classpath: str, main: str, commands: Sequence[Sequence[str]], timeout: float) -> list[dict]:
    """
    Run a batch peer (AclPeer, Sql92Peer: one tab-separated command a line on stdin, one JSON
    answer a line on stdout, then ``{"done": true}``) in one fast-starting JVM; its answers.
    """
    text = "".join("\t".join(c) + "\n" for c in commands)
    argv = java_command(classpath, main, jvm_args=(*DEFAULT_JVM_ARGS, *FAST_START))
    err = HERE / ".work" / f"{main}-{time.monotonic_ns()}.stderr"
    err.parent.mkdir(exist_ok=True)
    with open(err, "wb") as stderr:
        out = subprocess.run(argv, input=text.encode(), stdout=subprocess.PIPE, stderr=stderr, timeout=timeout,
                             cwd=str(JAVA_PROJECT))
    lines = [json.loads(line) for line in out.stdout.decode().splitlines() if line.startswith("{")]
    assert lines and lines[-1] == {"done": True} and len(lines) == len(commands) + 1, \
        (out.returncode, out.stdout.decode()[-2000:], _tail(err, 40))
    err.unlink()
    return lines[:-1]


def stderr_summary(text: str, keep: int = 20) -> str:
    """The last *keep* lines of a Java tool's stderr, without stack frames and WARN lines (for a failure message)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("at ") and " WARN " not in line]
    return "\n".join(lines[-keep:])


def run_java_parallel(jobs: Iterable[tuple[str, str, Sequence[str]]], timeout: float = 120.0,
                      jvm_args: Sequence[str] = DEFAULT_JVM_ARGS) -> list[list[str]]:
    """Run several (classpath, main, args) programs at once; return their stdout lines in order.

    Caution: ClientDriver's oneway case measures a server-wide counter, so two drivers
    against the same server at once can see each other's oneways. Use one driver with
    "JSON,ROCKETMQ" instead.
    """
    procs = [spawn_java(cp, main, args, jvm_args) for cp, main, args in jobs]
    results: list[list[str]] = []
    try:
        for jp in procs:
            results.append(collect(jp, timeout=timeout))
    finally:
        for jp in procs:
            jp.stop()
    return results


def stop_together(*stops: Callable[[], object]) -> None:
    """Run several stop callables at once (each JVM spends seconds stopping, and a teardown's
    processes need no order when no store is reused); every one runs even if another raises,
    and the first error is raised after all have finished."""
    if not stops:
        return
    with concurrent.futures.ThreadPoolExecutor(len(stops)) as pool:
        futures = [pool.submit(stop) for stop in stops]
    for future in futures:
        future.result()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
