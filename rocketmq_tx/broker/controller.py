# -*- test-case-name: rocketmq_tx.broker.test.test_processors -*-
"""
:class:`BrokerController`: the broker's state in one object, as processors see it (Java's
``BrokerController`` without the listening and timers, which live in :mod:`.service`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.logger import Logger

from rocketmq_tx.acl import AclError, PlainPermissionManager
from rocketmq_tx.broker.broker2client import Broker2Client
from rocketmq_tx.broker.clientmanager import ConsumerManager, ProducerManager
from rocketmq_tx.broker.config import BrokerSettings, local_address
from rocketmq_tx.broker.consumeroffset import ConsumerOffsetManager
from rocketmq_tx.broker.ha import HAClient, HAService
from rocketmq_tx.broker.longpolling import PullRequestHoldService
from rocketmq_tx.broker.messagerequestmode import MessageRequestModeManager
from rocketmq_tx.broker.metrics import BrokerMetrics
from rocketmq_tx.broker.persister import MetadataPersister
from rocketmq_tx.broker.pop import PopLongPollingService, PopService
from rocketmq_tx.broker.rebalancelock import RebalanceLockManager
from rocketmq_tx.broker.schedule import ScheduleMessageService
from rocketmq_tx.broker.stats import BrokerStats, RequestsInFlight
from rocketmq_tx.broker.subscriptiongroup import SubscriptionGroupManager
from rocketmq_tx.broker.timer import DISABLED_RUNTIME_INFO, TimerMessageService, timer_disabled_hook
from rocketmq_tx.broker.topicconfig import OFFSET_MOVED_EVENT, TopicConfigManager
from rocketmq_tx.broker.topicrouteinfo import TopicRouteInfoManager
from rocketmq_tx.broker.transaction import (
    TransactionalMessageBridge,
    TransactionalMessageCheckService,
    TransactionalMessageService,
    TransactionalOpBatchService,
    TransactionCheckListener,
)
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.javatext import human_readable_byte_count
from rocketmq_tx.common.message import MessageConst, properties_to_string
from rocketmq_tx.common.route import DataVersion
from rocketmq_tx.config import exporter_type
from rocketmq_tx.remoting import RemotingCommand, RequestCode
from rocketmq_tx.store import DefaultMessageStore, MessageExtBatch, MessageExtBrokerInner, PutMessageResult
from rocketmq_tx.store.config import BrokerRole
from rocketmq_tx.store.status import AppendMessageStatus, PutMessageStatus

__all__ = ["BrokerController"]

log = Logger()

#: the requests Java runs on its send, query and EndTransaction pools (its pull pool's
#: counterpart is the pulls woken from long polling and waiting for their turn)
_POOL_BY_CODE: dict[int, str] = {
    RequestCode.SEND_MESSAGE: "send", RequestCode.SEND_MESSAGE_V2: "send", RequestCode.SEND_BATCH_MESSAGE: "send",
    RequestCode.CONSUMER_SEND_MSG_BACK: "send",
    RequestCode.QUERY_MESSAGE: "query", RequestCode.VIEW_MESSAGE_BY_ID: "query",
    RequestCode.END_TRANSACTION: "endTransaction",
}


class BrokerController:
    """
    :param settings: the broker configuration.
    :param reactor: time and ``callFromThread`` (a ``MemoryReactorClock`` in tests).
    :param store: the message store (built from *settings* when not given).
    :ivar registrar: set by the service: the :class:`~rocketmq_tx.broker.registration.BrokerRegistrar`
        behind :meth:`register_increment` and :meth:`register_all` (``None``: nobody to tell).
    :ivar persister: writes the metadata files off the reactor; managers mark them dirty.
    :ivar notify_consumer_ids_changed: set by the service: tells a group's clients.
    """

    def __init__(self, settings: BrokerSettings, reactor: Any, store: DefaultMessageStore | None = None) -> None:
        self.settings = settings
        self.reactor = reactor
        #: SYNC_FLUSH puts waiting for their group commit, by its future
        self._flush_waiters: dict[Any, list[tuple[PutMessageResult, Deferred]]] = {}
        if not settings["brokerIP1"]:
            settings["brokerIP1"] = local_address()
        if not settings["brokerIP2"]:
            settings["brokerIP2"] = settings["brokerIP1"]
        self.broker_addr = f"{settings['brokerIP1']}:{settings['listenPort']}"
        if store is None:
            store_config = settings.message_store_config(
                store_host=(settings["brokerIP1"], settings["listenPort"]))
            store = DefaultMessageStore(store_config, now=reactor.seconds)
        self.store = store
        self.store_config = store.config
        config_dir = self.store_config.config_dir
        self.registrar: Any = None
        self.notify_consumer_ids_changed: Callable[[Hashable, str], object] = lambda channel, group: None
        self.topic_config_manager = TopicConfigManager(os.path.join(config_dir, "topics.json"), settings,
                                                       on_created=lambda tc: self.on_topic_created(tc),
                                                       timer_topic=self.store_config.timer_wheel_enable)
        self.subscription_group_manager = SubscriptionGroupManager(
            os.path.join(config_dir, "subscriptionGroup.json"), settings["autoCreateSubscriptionGroup"])
        self.consumer_offset_manager = ConsumerOffsetManager(os.path.join(config_dir, "consumerOffset.json"))
        #: 5.x QUERY_ASSIGNMENT's view of topic routes; the broker service gives it the name servers.
        self.topic_route_info_manager = TopicRouteInfoManager(None, self.now_ms)
        self.message_request_mode_manager = MessageRequestModeManager(
            os.path.join(config_dir, "messageRequestMode.json"))
        self.consumer_manager = ConsumerManager(self._consumer_ids_changed, self.now_ms,
                                                settings["channelExpiredTimeout"])
        self.producer_manager = ProducerManager(self.now_ms, settings["channelExpiredTimeout"])
        self.rebalance_lock_manager = RebalanceLockManager(self.now_ms)
        self.schedule_message_service = ScheduleMessageService(
            store, os.path.join(config_dir, "delayOffset.json"), self.now_ms)
        self.stats = BrokerStats(self.now_ms)
        #: the Prometheus figures (``metricsExporterType=PROM``), else ``None``: nothing is counted
        self.metrics: BrokerMetrics | None = None
        if exporter_type(settings["metricsExporterType"]) == "PROM":
            self.metrics = BrokerMetrics(self)
        #: by pool name: the requests answered later and still waiting (see :meth:`track_request`)
        self.requests_in_flight = {pool: RequestsInFlight(self.now_ms) for pool in ("send", "query", "endTransaction")}
        #: 5.x timer messages (Java creates its TimerMessageStore only with timerWheelEnable;
        #: without it the put hook still refuses timer messages, as Java's does)
        self.timer_message_service: TimerMessageService | None = None
        # A slave keeps no timer store: its master delivers (Java 4.9 has none; 5.x's slave keeps
        # one for a takeover, which is not built here).
        if self.store_config.timer_wheel_enable and self.store_config.broker_role is not BrokerRole.SLAVE:
            self.timer_message_service = TimerMessageService(store, reactor)
        else:
            store.timer_hook = timer_disabled_hook
        #: ACL 1.0 rules (``aclEnable``), loaded by :meth:`load`; ``None`` with ACL off.
        self.acl: PlainPermissionManager | None = None
        if settings["aclEnable"]:
            self.acl = PlainPermissionManager(settings["rocketmqHome"], settings["rocketmq.acl.plain.file"],
                                              now_ms=self.now_ms, strict=settings["aclStrict"])
        self.persister = p = MetadataPersister(reactor)
        for name, manager in (("topics", self.topic_config_manager),
                              ("subscriptionGroup", self.subscription_group_manager),
                              ("messageRequestMode", self.message_request_mode_manager)):
            manager.on_dirty = p.add(name, manager.file, manager.snapshot)
        # Written on the service's timers and at shutdown (as Java), not on every commit.
        p.add("consumerOffset", self.consumer_offset_manager.file, self.consumer_offset_manager.snapshot)
        p.add("delayOffset", self.schedule_message_service.file, self.schedule_message_service.snapshot)
        self.pull_request_hold_service = PullRequestHoldService(
            reactor, self._execute_held_pull, settings["maxHeldPullsPerConnection"], settings["maxHeldPulls"])
        self.execute_held_pull: Callable[[Any], Any] | None = None  # set by the pull processor
        # POP consumption (5.x): checkpoints and revival, and the POPs waiting for messages.
        self.pop_service = PopService(self)
        # Java writes it every 10 s (the broker service marks it) and at shutdown.
        p.add("consumerOrderInfo", self.pop_service.order_info.file,
              lambda: self.pop_service.order_info.snapshot(self.now_ms()))
        self.pop_long_polling = PopLongPollingService(
            reactor, self._execute_held_pop, settings["maxHeldPullsPerConnection"], settings["maxHeldPulls"])
        self.execute_held_pop: Callable[[Any], Any] | None = None  # set by the POP processor
        self.boot_timestamp = self.now_ms()
        #: Java ``Configuration``'s DataVersion: bumped by UPDATE_BROKER_CONFIG, shown by GET_BROKER_CONFIG.
        self.config_data_version = DataVersion(0, self.boot_timestamp)
        # Transactions (Java's TransactionalMessageService, its check listener and service);
        # the broker service runs the check every transactionCheckInterval.
        self.broker2client = Broker2Client(self)
        self.transactional_message_bridge = TransactionalMessageBridge(self)
        self.transactional_op_batch_service = TransactionalOpBatchService(
            self.transactional_message_bridge, settings, reactor, self.now_ms)
        self.transactional_message_service = TransactionalMessageService(
            self.transactional_message_bridge, self.now_ms, self.store_config.file_reserved_time,
            self.transactional_op_batch_service)
        self.transactional_message_check_listener = TransactionCheckListener(self, self.broker2client)
        self.transactional_message_check_service = TransactionalMessageCheckService(
            self.transactional_message_service, self.transactional_message_check_listener, settings, reactor)
        # Replication (Java's HAService): a master pushes to its slaves, a slave pulls from its master.
        self.is_slave = self.store_config.broker_role is BrokerRole.SLAVE
        self.ha_service: HAService | None = None if self.is_slave else HAService(store, reactor)
        self.ha_client: HAClient | None = HAClient(store, reactor) if self.is_slave else None
        #: the HA port once bound (the service sets it); published as haServerAddr
        self.ha_listen_port: int | None = None
        #: a slave's view of its master's broker address (the name server's masterAddr)
        self.on_master_addr: Callable[[str | None], object] = lambda addr: None
        self._arrivals: list[tuple[str, int, int, int]] = []
        self._arrivals_scheduled = False
        store.message_arriving_listener = self._message_arriving

    def now_ms(self) -> int:
        return int(self.reactor.seconds() * 1000)

    def listening_on(self, port: int) -> None:
        """The main port is bound (it may have been 0): publish and stamp the real one."""
        self.broker_addr = f"{self.settings['brokerIP1']}:{port}"
        self.store.set_store_host(self.settings["brokerIP1"], port)

    # ------------------------------------------------------------------ lifecycle

    def load(self) -> bool:
        """Config files, then the store (Java ``initialize``)."""
        if self.acl is not None:
            # Java 4.9 starts without ACL when its files do not load (its service loader
            # swallows the error); refusing to start is the safe way.
            try:
                self.acl.load()
            except AclError as e:
                log.error("aclEnable=true but the ACL files cannot be loaded: {error}", error=e)
                return False
        ok = (self.topic_config_manager.load() and self.subscription_group_manager.load()
              and self.consumer_offset_manager.load())
        if not ok:
            log.error("a broker config file under {dir} is unreadable", dir=self.store_config.config_dir)
            return False
        if not self.message_request_mode_manager.load():
            # Java's QueryAssignmentProcessor ignores this failure too: the modes start empty.
            log.error("{file} is unreadable; message request modes start empty",
                      file=self.message_request_mode_manager.file.path)
        if not self.pop_service.order_info.load():
            # Java's ConfigManager starts with an empty table too; FIFO queues are then unblocked.
            log.error("{file} is unreadable; FIFO POP queues start unblocked",
                      file=self.pop_service.order_info.file.path)
        if not self.store.load():
            log.error("the message store at {dir} cannot be loaded", dir=self.store_config.store_path_root_dir)
            return False
        if self.timer_message_service is not None and not self.timer_message_service.load():
            log.error("the timer store under {dir} cannot be loaded", dir=self.store_config.store_path_root_dir)
            return False
        if not self.schedule_message_service.load():
            return False
        self.pop_service.load()
        return True

    def start(self) -> None:
        self.store.start()

    def shutdown(self) -> None:
        if self.ha_service is not None:
            self.ha_service.fail_waits()
        self.transactional_message_check_service.stop()
        self.transactional_op_batch_service.stop()  # before the store closes: pending op messages written
        self.pull_request_hold_service.shutdown()
        self.pop_long_polling.shutdown()
        self.persister.mark_dirty("consumerOffset")
        self.persister.mark_dirty("delayOffset")
        self.persister.mark_dirty("consumerOrderInfo")
        # Everything still dirty, here and now: a clean stop loses nothing acknowledged.
        self.persister.flush_sync(stop=True)
        if self.timer_message_service is not None:
            self.timer_message_service.shutdown()
        self.store.shutdown()

    # ------------------------------------------------------------------ name servers

    def register_increment(self, topic_configs: Any) -> None:
        """Announce these created or changed topics to the name servers, alone (Java
        ``registerIncrementBrokerData``); coalesced, at most one registration in flight each."""
        if self.registrar is not None:
            self.registrar.register_increment(topic_configs)

    def register_all(self) -> Any:
        """Send the whole topic table to the name servers soon (Java ``registerBrokerAll``);
        fires with ``{addr: response or None}``."""
        if self.registrar is None:
            return succeed({})
        return self.registrar.register_all()

    def ha_server_addr(self) -> str:
        """What REGISTER_BROKER publishes as haServerAddr: brokerIP2 and the HA port."""
        port = self.ha_listen_port
        if port is None:
            port = self.store_config.ha_listen_port or int(self.broker_addr.rsplit(":", 1)[1]) + 1
        return f"{self.settings['brokerIP2']}:{port}"

    def on_register_result(self, response: Any) -> None:
        """
        A name server's REGISTER_BROKER answer (Java ``registerBrokerAll``'s use of it): a slave
        without haMasterAddress replicates from the haServerAddr it names, and synchronises
        its metadata from masterAddr.
        """
        if not self.is_slave:
            return
        fields = getattr(response, "ext_fields", None) or {}
        ha_addr = fields.get("haServerAddr")
        if self.ha_client is not None and ha_addr and not self.store_config.ha_master_address:
            self.ha_client.update_master_address(ha_addr)
        self.on_master_addr(fields.get("masterAddr") or None)

    def on_topic_created(self, tc: Any) -> None:
        """A topic was created or changed (an increment); ``None``: every topic changed (the
        broker's permission), so the whole table goes."""
        if tc is None:
            self.register_all()
        else:
            self.register_increment([tc])

    def when_registered(self, topic: str) -> Deferred | None:
        """
        ``None`` when no registration carrying *topic* is waiting or in flight; else a
        Deferred that fires with ``None`` once the name servers have answered it, or it
        failed, or ``registerBrokerTimeoutMills`` passed (Java's ``registerBrokerAll`` waits
        as long for its name servers). A send that created its topic answers after it.
        """
        if self.registrar is None:
            return None
        registered = self.registrar.when_registered(topic)
        if registered is None:
            return None
        done: Deferred = Deferred()

        def settle(_: Any = None) -> None:
            if call.active():
                call.cancel()
            if not done.called:
                done.callback(None)

        call = self.reactor.callLater(self.settings["registerBrokerTimeoutMills"] / 1000.0, settle)
        registered.addBoth(settle)
        return done

    # ------------------------------------------------------------------ puts

    def put_message(self, msg: MessageExtBrokerInner, stats: bool = True) -> PutMessageResult | Deferred:
        """
        Store one message; a Deferred when SYNC_FLUSH or SYNC_MASTER must wait for the disk or
        a slave. *stats*: count it in the topic's put figures (Java counts sends and send-backs;
        not the messages the broker writes on its own: committed and op messages, OffsetMovedEvents).
        """
        seconds = self.reactor.seconds
        begin = seconds()
        result = self.store.async_put_message(msg)
        append = result.append_result
        if result.flush_future is None and append is not None and result.status is PutMessageStatus.PUT_OK \
                and append.status is AppendMessageStatus.PUT_OK and not (
                    msg.wait_store_msg_ok and self.store_config.broker_role is BrokerRole.SYNC_MASTER):
            # _settle and _timed with nothing to wait for (neither the disk nor a slave),
            # inlined: a transactional message takes three puts.
            if stats:
                self.stats.put(msg.topic, append.msg_num, append.wrote_bytes)
            ha = self.ha_service
            if ha is not None:
                ha.wakeup_all()
            self.store.store_stats_service.put_time(int(seconds() * 1000) - int(begin * 1000), True)
            return result
        return self._timed(self._settle(result, msg.topic if stats else None, msg.wait_store_msg_ok), begin)

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult | Deferred:
        begin = self.reactor.seconds()
        return self._timed(self._settle(self.store.async_put_messages(batch), batch.topic, batch.wait_store_msg_ok),
                           begin)

    def _timed(self, settled: PutMessageResult | Deferred, begin: float) -> PutMessageResult | Deferred:
        # Java's put latency runs from the append request to the result, the flush and
        # replica waits included: a put answered later is timed when its answer comes.
        # (__class__, not isinstance: Deferred's ABC check costs more than the timing.)
        if settled.__class__ is not PutMessageResult:
            return settled.addCallback(self._put_timed, begin)  # type: ignore[union-attr]
        # put_time, inlined: this runs once per put
        elapsed_ms = int(self.reactor.seconds() * 1000) - int(begin * 1000)
        ok = settled.status is PutMessageStatus.PUT_OK
        if ok or settled.append_result is not None:
            self.store.store_stats_service.put_time(elapsed_ms, ok)
        return settled

    def _put_timed(self, result: PutMessageResult, begin: float) -> PutMessageResult:
        self.put_time(result, begin)
        return result

    def put_time(self, result: PutMessageResult, begin: float) -> None:
        """Count a put that began at *begin* (reactor seconds) and is settled now in the store's
        latency figures (putMessageEntireTimeMax, putMessageDistributeTime)."""
        elapsed_ms = int(self.reactor.seconds() * 1000) - int(begin * 1000)
        # the store's note_put_time, inlined (a put that never reached the CommitLog is not timed)
        ok = result.status is PutMessageStatus.PUT_OK
        if ok or result.append_result is not None:
            self.store.store_stats_service.put_time(elapsed_ms, ok)

    def track_request(self, request: RemotingCommand, answer: Deferred) -> None:
        """A request whose answer comes later: counted in its pool's queue figures until then."""
        pool = _POOL_BY_CODE.get(request.code)
        if pool is not None:
            self.requests_in_flight[pool].track(answer)

    def _settle(self, result: PutMessageResult, topic: str | None, wait: bool = True) -> PutMessageResult | Deferred:
        """*topic*: the put figures to count it in (``None``: none)."""
        replica: Deferred | None = None
        append = result.append_result
        if result.is_ok() and append is not None:
            if topic is not None:
                self.stats.put(topic, append.msg_num, append.wrote_bytes)
            ha = self.ha_service
            if ha is not None:
                ha.wakeup_all()
                if wait and self.store_config.broker_role is BrokerRole.SYNC_MASTER:
                    # Java's CommitLog.submitReplicaRequest: wait for a slave's ack, unless none
                    # is connected or the one there is too far behind
                    end = append.wrote_offset + append.wrote_bytes
                    if ha.is_slave_ok(end):
                        replica = ha.wait_for_slave(end, self.store_config.slave_timeout / 1000.0)
                    elif result.flush_future is None:
                        result.status = PutMessageStatus.SLAVE_NOT_AVAILABLE
                        return result
                    else:
                        replica = succeed(PutMessageStatus.SLAVE_NOT_AVAILABLE)
        flushed = self._settle_flush(result)
        if replica is None:
            return flushed
        # Java's thenCombine: the flush's status, then the replica's when it is not PUT_OK
        return defer_both(flushed, replica, result)

    def _settle_flush(self, result: PutMessageResult) -> PutMessageResult | Deferred:
        future = result.flush_future
        if future is None:
            return result
        result.flush_future = None
        d: Deferred = Deferred()
        # The puts of one group commit share its future: one hop to the reactor per commit
        # completes all of them.
        waiters = self._flush_waiters.get(future)
        if waiters is None:
            waiters = self._flush_waiters[future] = []
            future.add_done_callback(self._flushed)
        waiters.append((result, d))
        return d

    def _flushed(self, future: Any) -> None:
        """In the flush thread (or at once, for a done future): back to the reactor."""
        self.reactor.callFromThread(self._fire_flushed, future)

    def _fire_flushed(self, future: Any) -> None:
        try:
            status = future.result()
        except Exception:  # the flush thread failed: report it like a timeout
            status = PutMessageStatus.FLUSH_DISK_TIMEOUT
        waiters = self._flush_waiters.pop(future, ())
        if self.metrics is not None and waiters:
            self.metrics.group_commit(len(waiters))
        for result, d in waiters:
            result.status = status
            d.callback(result)

    def _message_arriving(self, topic: str, queue_id: int, max_offset: int, tags_code: int) -> None:
        # Runs under the store's put lock: record only, wake the parked pulls next turn.
        # With nothing parked there is nobody to wake (a pull parks only after reading the
        # store on this same thread), so the per-message path stays a single check.
        if not self.pull_request_hold_service.table and not self.pop_long_polling.table:
            return
        self._arrivals.append((topic, queue_id, max_offset, tags_code))
        if not self._arrivals_scheduled:
            self._arrivals_scheduled = True
            self.reactor.callLater(0, self._flush_arrivals)

    def _flush_arrivals(self) -> None:
        self._arrivals_scheduled = False
        arrivals, self._arrivals = self._arrivals, []
        hold = self.pull_request_hold_service
        pops = self.pop_long_polling
        for topic, queue_id, max_offset, tags_code in arrivals:
            if hold.table:
                hold.notify_message_arriving(topic, queue_id, max_offset, tags_code)
            if pops.table:
                pops.notify_message_arriving(topic)

    def log_offset_moved(self, group: str, topic: str, queue_id: int, requested: int, new_offset: int) -> None:
        """A pull answered PULL_OFFSET_MOVED: log it and, as Java's master does
        (``generateOffsetMovedEvent``), store an OffsetMovedEvent in OFFSET_MOVED_EVENT."""
        log.warn("PULL_OFFSET_MOVED: group {group} topic {topic} queue {queue} requested offset {requested}, "
                 "new offset {new}", group=group, topic=topic, queue=queue_id, requested=requested, new=new_offset)
        try:
            event = {"consumerGroup": group,
                     "messageQueue": {"brokerName": self.settings["brokerName"], "queueId": queue_id, "topic": topic},
                     "offsetNew": new_offset, "offsetRequest": requested}
            props = {MessageConst.PROPERTY_TAGS: group, MessageConst.PROPERTY_KEYS: group,
                     MessageConst.PROPERTY_DELAY_TIME_LEVEL: "0"}
            ip, _, port = self.broker_addr.rpartition(":")
            host = (ip, int(port))
            msg = MessageExtBrokerInner(
                OFFSET_MOVED_EVENT, fastjson.dumps(event), properties_to_string(props).encode(), 0, 0, 0,
                self.now_ms(), host, host, 0, property_map=props)
            self.put_message(msg, stats=False)
        except Exception:  # Java logs and goes on: the pull's answer does not depend on it
            log.failure("cannot store the OffsetMovedEvent")

    def _execute_held_pull(self, pr: Any) -> Any:
        assert self.execute_held_pull is not None
        return self.execute_held_pull(pr)

    def _execute_held_pop(self, pr: Any) -> Any:
        assert self.execute_held_pop is not None
        return self.execute_held_pop(pr)

    # ------------------------------------------------------------------ clients

    def _consumer_ids_changed(self, event: str, group: str, payload: Any) -> None:
        if event == "CHANGE" and self.settings["notifyConsumerIdsChangedEnable"]:
            for channel in payload or ():
                self.notify_consumer_ids_changed(channel, group)
        elif event == "UNREGISTER":
            # Java drops the group's filter data; there is nothing else to clean here.
            pass

    def channel_closed(self, channel: Hashable) -> None:
        self.pull_request_hold_service.drop_channel(channel)
        self.pop_long_polling.drop_channel(channel)
        self.producer_manager.do_channel_close_event(channel)
        self.consumer_manager.do_channel_close_event(channel)

    def scan_not_active_channels(self, close: Callable[[Hashable], object]) -> None:
        self.producer_manager.scan_not_active_channel(close)
        self.consumer_manager.scan_not_active_channel(close)

    def runtime_info(self) -> dict[str, str]:
        """
        GET_BROKER_RUNTIME_INFO's table (the keys mqadmin brokerStatus prints): Java 4.9's
        ``prepareRuntimeInfo`` over the store's ``getRuntimeInfo``, every figure measured here
        (docs/operations.md says what each one counts where we have no thread pools).
        """
        store = self.store
        stats = self.stats
        info = store.get_runtime_info()
        now = self.now_ms()
        boot = store.store_stats_service.boot_timestamp
        info["bootTimestamp"] = str(boot)
        info["runtime"] = _runtime_text(now - boot)
        info.update(self.schedule_message_service.runtime_info())
        timer = self.timer_message_service
        info.update(timer.runtime_info() if timer is not None else DISABLED_RUNTIME_INFO)
        send, query, end_tx = (self.requests_in_flight[p] for p in ("send", "query", "endTransaction"))
        pulls = self.pull_request_hold_service
        info.update({
            "brokerVersionDesc": "V4_9_8",
            "brokerVersion": "409",
            "msgPutTotalYesterdayMorning": str(stats.put_total_yesterday_morning),
            "msgPutTotalTodayMorning": str(stats.put_total_today_morning),
            "msgPutTotalTodayNow": str(stats.put_total),
            "msgGetTotalYesterdayMorning": str(stats.get_total_yesterday_morning),
            "msgGetTotalTodayMorning": str(stats.get_total_today_morning),
            "msgGetTotalTodayNow": str(stats.get_total),
            "sendThreadPoolQueueSize": str(send.size()),
            "sendThreadPoolQueueCapacity": str(self.settings["sendThreadPoolQueueCapacity"]),
            "pullThreadPoolQueueSize": str(pulls.waking()),
            "pullThreadPoolQueueCapacity": str(self.settings["pullThreadPoolQueueCapacity"]),
            "queryThreadPoolQueueSize": str(query.size()),
            "queryThreadPoolQueueCapacity": str(self.settings["queryThreadPoolQueueCapacity"]),
            "EndTransactionQueueSize": str(end_tx.size()),
            "EndTransactionThreadPoolQueueCapacity": str(self.settings["endTransactionPoolQueueCapacity"]),
            "dispatchBehindBytes": str(store.dispatch_behind_bytes()),
            "pageCacheLockTimeMills": str(store.lock_time_mills()),
            "sendThreadPoolQueueHeadWaitTimeMills": str(send.head_wait_ms()),
            "pullThreadPoolQueueHeadWaitTimeMills": str(pulls.waking_head_wait_ms()),
            "queryThreadPoolQueueHeadWaitTimeMills": str(query.head_wait_ms()),
            "earliestMessageTimeStamp": str(store.get_earliest_message_time()),
            "startAcceptSendRequestTimeStamp": str(self.settings["startAcceptSendRequestTimeStamp"]),
            # no transient store pool: Java then answers Integer.MAX_VALUE (and no remainHowManyDataToCommit)
            "remainTransientStoreBufferNumbs": "2147483647",
            "remainHowManyDataToFlush": human_readable_byte_count(store.remain_how_many_data_to_flush()),
        })
        capacity = _dir_capacity(self.store_config.store_path_root_dir)
        if capacity is not None:
            info["commitLogDirCapacity"] = capacity
        return info


def defer_both(flushed: PutMessageResult | Deferred, replica: Deferred, result: PutMessageResult) -> Deferred:
    """The put's result once both its flush and its replication are settled."""
    if flushed.__class__ is PutMessageResult:
        # Nothing to wait for on the disk (ASYNC_FLUSH): the replica's own Deferred, without
        # the chained one below, which costs a SYNC_MASTER put several microseconds more.
        return replica.addCallback(_replica_status, result)
    return flushed.addCallback(lambda _: replica.addCallback(_replica_status, result))  # type: ignore[union-attr]


def _replica_status(status: PutMessageStatus, result: PutMessageResult) -> PutMessageResult:
    # Java's thenCombine: the flush's status stands unless the replication's is not PUT_OK
    if status is not PutMessageStatus.PUT_OK:
        result.status = status
    return result


def _runtime_text(ms: int) -> str:
    seconds = ms // 1000
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"


def _dir_capacity(path: str) -> str | None:
    """Java's ``commitLogDirCapacity`` of the store's root directory (4.9: the space available to
    the broker as Free); ``None`` when it does not exist."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return (f"Total : {human_readable_byte_count(st.f_blocks * st.f_frsize)}, "
            f"Free : {human_readable_byte_count(st.f_bavail * st.f_frsize)}.")
