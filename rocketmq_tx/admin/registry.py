# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""
The command table of ``rocketmq-tx-admin`` and the session a command runs in.

Each command is a function registered with :func:`command`, under mqadmin's name, with
mqadmin's flags; it gets a :class:`Session` (the blocking admin and clients, made on first
use) and its parsed arguments, and returns an :class:`~rocketmq_tx.admin.output.Output`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.admin.output import Output, Progress
from rocketmq_tx.blocking.admin import BlockingAdmin
from rocketmq_tx.blocking.client import BlockingProducer, BlockingPullClient
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["Command", "COMMANDS", "command", "Session", "CommandError"]


class CommandError(Exception):
    """A command cannot go on (a missing flag combination, nothing found): its one-line message."""


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Session, argparse.Namespace], Output]


#: every command by mqadmin's name (``--help`` lists them in this order)
COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, *arguments: tuple[tuple[str, ...], dict[str, Any]]
            ) -> Callable[[Callable[[Session, argparse.Namespace], Output]],
                          Callable[[Session, argparse.Namespace], Output]]:
    """Register the decorated function as command *name*; each argument is ``(flags, add_argument kwargs)``."""
    def add(parser: argparse.ArgumentParser) -> None:
        for flags, kwargs in arguments:
            parser.add_argument(*flags, **kwargs)

    def register(run: Callable[[Session, argparse.Namespace], Output]) -> Callable[[Session, argparse.Namespace],
                                                                                   Output]:
        if name in COMMANDS:
            raise ValueError(f"command {name} registered twice")
        COMMANDS[name] = Command(name, help, add, run)
        return run
    return register


def opt(*flags: str, **kwargs: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One argument of a command, as :func:`command` takes it."""
    return flags, kwargs


@dataclass
class Session:
    """The connection settings of one run, and the clients made from them on first use."""

    namesrv_addr: str
    timeout: float = 5.0
    tls: TlsSettings | None = None
    credentials: SessionCredentials | None = None
    #: where progress of long commands is drawn (only if it is a terminal)
    progress_stream: Any = field(default_factory=lambda: sys.stderr, repr=False)
    _admin: BlockingAdmin | None = field(default=None, repr=False)
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @property
    def admin(self) -> BlockingAdmin:
        if self._admin is None:
            self._admin = BlockingAdmin(self.namesrv_addr, timeout=self.timeout, tls=self.tls,
                                        credentials=self.credentials)
            self._closers.append(self._admin.close)
        return self._admin

    @property
    def namesrvs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    def producer(self, group: str, **settings: Any) -> BlockingProducer:
        producer = BlockingProducer(group, self.namesrv_addr, send_timeout=self.timeout, tls=self.tls,
                                    credentials=self.credentials, **settings)
        self._closers.append(producer.close)
        return producer

    def pull_client(self, group: str) -> BlockingPullClient:
        client = BlockingPullClient(group, self.namesrv_addr, timeout=self.timeout, tls=self.tls,
                                    credentials=self.credentials)
        self._closers.append(client.close)
        return client

    def progress(self, what: str) -> Progress:
        return Progress(self.progress_stream, what)

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()
