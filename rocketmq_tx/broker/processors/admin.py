# -*- test-case-name: rocketmq_tx.broker.test.test_admin -*-
"""
The broker's admin requests (Java 4.9.8's ``AdminBrokerProcessor``, one class there), by
concern, each a processor of its own in the one table
(:func:`~rocketmq_tx.broker.processors.processor_table`):

* :mod:`.admin_topics`: topics (create, delete, configs, stats, system topics);
* :mod:`.admin_groups`: subscription groups, connections, who consumes a topic, queue locks;
* :mod:`.admin_offsets`: offsets, store queries, consume stats, offset cloning;
* :mod:`.admin_config`: broker configuration, runtime info, stats data;
* :mod:`.admin_relay`: admin requests relayed to a client (reset offset, consumer status,
  running info, consume directly);
* this module: what they share (:class:`AdminProcessor`, Java's ``validateSlave`` and name
  and queue-count checks) and :class:`AdminBrokerProcessor`, store maintenance and the
  default processor of both ports.

One method per request code; each processor's :attr:`handlers` maps codes to them. Codes,
remarks and bodies are Java 4.9.8's. Codes without a handler anywhere reach the default and
get REQUEST_CODE_NOT_SUPPORTED (the transaction ones, 37 END_TRANSACTION and 323
RESUME_CHECK_HALF_MESSAGE, are :mod:`.endtransaction`'s). 5.x codes answered beyond 4.9.8's set:
GET_TOPIC_CONFIG (351), which 5.x mqadmin needs, the topic and group metadata of 5.x
(UPDATE_AND_CREATE_TOPIC_LIST 18, GET_SUBSCRIPTIONGROUP_CONFIG 352,
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST 225, QUERY_TOPICS_BY_CONSUMER 343,
QUERY_SUBSCRIPTION_BY_CONSUMER 345, topic attributes) and :mod:`.assignment`'s codes (400-402).
The ACL codes (50-53) are :mod:`.acl`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from twisted.internet import threads
from twisted.internet.defer import Deferred, maybeDeferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from rocketmq_tx.broker.controller import BrokerController
from rocketmq_tx.common.validators import validate_group
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.store.config import BrokerRole

__all__ = ["AdminProcessor", "AdminBrokerProcessor", "clean_unused_topic", "clean_expired_consume_queue", "run_sliced"]

log = Logger()

_LMQ_PREFIX = "%LMQ%"

#: Reactor time one slice of a bulk admin request may take (5.x's _LIST codes: a 16 MiB body
#: holds ~150,000 topic configs, about a second of work).
SLICE_SECONDS = 0.004

_T = TypeVar("_T")


#: admin bodies up to this size are decoded on the reactor (about a millisecond of JSON)
DECODE_ON_REACTOR_MAX = 64 * 1024


def decode_body(clock: Any, body: bytes, decode: Callable[[bytes], _T]) -> Deferred:
    """
    ``decode(body)``, in the reactor's thread pool when the body is large (a list body may be
    16 MiB: half a second of JSON and object building) and the clock has one, else here.
    Fires with the result, or fails with what *decode* raised. *decode* must touch no shared state.
    """
    pool = getattr(clock, "getThreadPool", None)
    if pool is None or len(body) <= DECODE_ON_REACTOR_MAX:
        return maybeDeferred(decode, body)
    return threads.deferToThreadPool(clock, pool(), decode, body)


#: what a decoder raises on a malformed body
DECODE_ERRORS = (ValueError, TypeError, KeyError, AttributeError)


def illegal_body(request: RemotingCommand, what: str) -> Callable[[Failure], RemotingCommand]:
    """An errback for :func:`decode_body`: a malformed body answered SYSTEM_ERROR ``illegal <what>: ...``."""
    def refuse(failure: Failure) -> RemotingCommand:
        failure.trap(*DECODE_ERRORS)
        return request.make_response(ResponseCode.SYSTEM_ERROR, f"illegal {what}: {failure.value}"[:512])
    return refuse


def run_sliced(clock: Any, items: Sequence[_T], step: Callable[[_T], Any],
               slice_seconds: float = SLICE_SECONDS, wall: Callable[[], float] = time.monotonic) -> Deferred:
    """
    Call *step* on each item in order, giving the reactor back (``callLater(0)``) whenever a
    slice has taken *slice_seconds*. Fires with the first non-``None`` value *step* returns (the
    rest are skipped), else ``None``; a short list runs to the end at once.
    """
    result: Deferred = Deferred()
    position = 0

    def run() -> None:
        nonlocal position
        deadline = wall() + slice_seconds
        try:
            while position < len(items):
                outcome = step(items[position])
                position += 1
                if outcome is not None:
                    result.callback(outcome)
                    return
                if wall() > deadline and position < len(items):
                    clock.callLater(0, run)
                    return
        except Exception:
            result.errback()
            return
        result.callback(None)

    run()
    return result


def clean_unused_topic(controller: BrokerController, keep: Iterable[str], only: str | None = None) -> int:
    """
    Java ``DefaultMessageStore.cleanUnusedTopic``: destroy the ConsumeQueues of topics not in
    *keep* (the schedule, transaction-op and LMQ topics always stay); *only* limits it to one
    topic. Returns the number of queues destroyed.
    """
    return controller.store.clean_unused_topic(keep, only)


def clean_expired_consume_queue(controller: BrokerController) -> int:
    """
    Java ``cleanExpiredConsumerQueue``: destroy the ConsumeQueues whose last entry points
    below the CommitLog's first byte (their messages are all gone).
    """
    return controller.store.clean_expired_consume_queue()


class AdminProcessor(HandlerProcessor):
    """The admin processors' common ground: the controller and Java's admin checks."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.settings = controller.settings

    @property
    def broker_name(self) -> str:
        return str(self.settings["brokerName"])

    def _slave_error(self, request: RemotingCommand) -> RemotingCommand | None:
        """Java ``validateSlave``: topics and groups are changed on the master only."""
        if self.controller.store_config.broker_role is BrokerRole.SLAVE:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         "Can't modify topic or subscription group from slave broker, "
                                         "please execute it from master broker.")
        return None

    def _queue_nums_error(self, request: RemotingCommand, *counts: int) -> RemotingCommand | None:
        """
        Queue counts within 1..``topicQueueNumsMax``. Java takes any int, and a topic of 2^31
        queues would make every per-queue answer (stats, offsets, routes) loop for minutes.
        """
        limit = self.settings["topicQueueNumsMax"]
        for count in counts:
            if not 1 <= count <= limit:
                return request.make_response(
                    ResponseCode.SYSTEM_ERROR,
                    f"queue nums {count} is illegal, allowing 1..{limit} (topicQueueNumsMax)")
        return None

    def _group_error(self, request: RemotingCommand, group: str | None) -> RemotingCommand | None:
        bad = validate_group(group)
        return None if bad is None else request.make_response(ResponseCode.SYSTEM_ERROR, bad)


class AdminBrokerProcessor(AdminProcessor):
    """
    Store maintenance (CLEAN_EXPIRED_CONSUMEQUEUE, DELETE_EXPIRED_COMMITLOG,
    CLEAN_UNUSED_TOPIC), and the default processor of both broker ports: every code no
    other processor takes gets REQUEST_CODE_NOT_SUPPORTED from it, after the table's
    ``before_request`` check (ACL), as from Java's default processor.
    """

    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers = {
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commit_log,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
        }

    def clean_expired_consume_queue(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        log.warn("invoke cleanExpiredConsumeQueue start.")
        clean_expired_consume_queue(self.controller)
        log.warn("invoke cleanExpiredConsumeQueue end.")
        return request.make_response()

    def delete_expired_commit_log(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        # As in Java, this only arms the clean-up: the periodic clean service deletes.
        log.warn("invoke deleteExpiredCommitLog start.")
        self.controller.store.execute_delete_files_manually()
        log.warn("invoke deleteExpiredCommitLog end.")
        return request.make_response()

    def clean_unused_topic(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        log.warn("invoke cleanUnusedTopic start.")
        clean_unused_topic(self.controller, self.controller.topic_config_manager.topic_config_table)
        log.warn("invoke cleanUnusedTopic end.")
        return request.make_response()
