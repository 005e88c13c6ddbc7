"""Helpers for the broker tests: small stores in temp dirs, a memory reactor, a fake connection."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

from twisted.internet.testing import MemoryReactorClock

from rocketmq_tx.broker.config import BrokerSettings
from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode
from rocketmq_tx.remoting.api import ConsumerData, HeartbeatData, SubscriptionData

#: 2023-11-14 22:13:20 UTC, in seconds: where the memory reactor's clock starts.
T0 = 1_700_000_000

#: Store keys that keep a test store small (1 MiB CommitLog files, 300-entry queues,
#: a tiny index) so a test creates its files in milliseconds.
SMALL_STORE = {
    "mappedFileSizeCommitLog": "1048576",
    "mappedFileSizeConsumeQueue": "6000",
    "maxHashSlotNum": "64",
    "maxIndexNum": "256",
}


class FakeReactor(MemoryReactorClock):
    """A memory reactor whose ``callFromThread`` runs the call at once (the store's flush
    futures complete on the test's own thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.advance(T0)
        self.from_thread: list[Callable[..., Any]] = []

    def callFromThread(self, f: Callable[..., Any], *args: Any, **kw: Any) -> None:
        self.from_thread.append(f)
        f(*args, **kw)


class Ctx:
    """A stand-in connection: processors need its identity and ``peer``."""

    def __init__(self, peer: str = "127.0.0.1:5555") -> None:
        self.peer = peer
        self.oneways: list[RemotingCommand] = []

    def send_oneway(self, request: RemotingCommand) -> None:
        self.oneways.append(request)

    def __repr__(self) -> str:
        return f"<Ctx {self.peer}>"


def broker_settings(case: Any, root: str | None = None, **keys: Any) -> BrokerSettings:
    """Settings for a broker whose store lives in a fresh temp dir; *keys* are Java keys
    (values as text or typed, like a broker.conf)."""
    if root is None:
        root = case.mktemp()
        case.addCleanup(shutil.rmtree, root, True)
    settings = BrokerSettings({"brokerIP1": "127.0.0.1", "brokerName": "broker-a"})
    props = {"storePathRootDir": root, **SMALL_STORE}
    props.update({k: (("true" if v else "false") if isinstance(v, bool) else str(v)) for k, v in keys.items()})
    unknown = settings.update_from_properties(props)
    assert not unknown, unknown
    return settings


def make_controller(case: Any, reactor: FakeReactor | None = None, root: str | None = None,
                    **keys: Any) -> BrokerController:
    """A loaded, started controller; shut down when the test ends."""
    controller = BrokerController(broker_settings(case, root, **keys), reactor or FakeReactor())
    assert controller.load()
    controller.start()

    def shutdown() -> None:
        if not controller.store.shutdown_flag:
            controller.shutdown()
    case.addCleanup(shutdown)
    return controller


def heartbeat(client_id: str = "client-1", producers: tuple[str, ...] = (),
              consumers: dict[str, dict[str, str]] | None = None,
              message_model: str = "CLUSTERING") -> RemotingCommand:
    """HEART_BEAT with the given producer groups and ``{group: {topic: expression}}`` consumers."""
    data = HeartbeatData(client_id, list(producers), [
        ConsumerData(group, "CONSUME_PASSIVELY", message_model, "CONSUME_FROM_LAST_OFFSET",
                     [SubscriptionData.build(topic, expr, sub_version=1) for topic, expr in subs.items()])
        for group, subs in (consumers or {}).items()])
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=fastjson.dumps(data.to_json()))
