# -*- test-case-name: rocketmq_tx.client.test.test_producer -*-
"""
:class:`Producer`: Java's ``DefaultMQProducer`` on Twisted. Every send returns a Deferred
of :class:`~rocketmq_tx.remoting.api.SendResult`. The sends themselves (routes, queue
choice, retries on another broker, oneway, batches) are the plans of
:class:`rocketmq_tx.remoting.sendapi.ProducerBase`, which the blocking producer runs too;
this class runs them on a :class:`~rocketmq_tx.client.instance.MQClientInstance`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from rocketmq_tx.acl import SessionCredentials
from rocketmq_tx.client.instance import InstanceUser, MQClientInstance
from rocketmq_tx.client.trace import PRODUCE, AsyncTraceDispatcher
from rocketmq_tx.common.message import Message
from rocketmq_tx.remoting.api import SendResult
from rocketmq_tx.remoting.plans import Plan
from rocketmq_tx.remoting.sendapi import MessageQueueSelector, ProducerBase
from rocketmq_tx.tlsconfig import TlsSettings

__all__ = ["Producer", "MessageQueueSelector"]


class Producer(InstanceUser, ProducerBase):
    """
    The methods of :class:`~rocketmq_tx.remoting.sendapi.ProducerBase` (``send``,
    ``send_orderly``, ``send_batch``, ``send_oneway``, ``publish_info``,
    ``fetch_publish_queues``), each returning a Deferred, and :meth:`send_callback`.

    :param group: the producer group.
    :param namesrv_addr: ``"a:9876;b:9876"`` (ignored when *instance* is given).
    :param reactor: the reactor (default: the global one).
    :param instance: share a client instance with other producers and consumers.
    :param tls: use TLS (Java's ``setUseTLS(true)``) with these ``tls.client.*`` settings.
    :param send_timeout: seconds for one send, retries included.
    :param settings: ``retry_times_when_send_failed``, ``compress_over``,
        ``max_message_size``, ``default_topic_queue_nums`` (see ``ProducerBase``).
    :param enable_msg_trace: Java's ``enableMsgTrace``: a Pub trace record per answered send,
        sent to *trace_topic* (default ``RMQ_SYS_TRACE_TOPIC``) by
        :class:`~rocketmq_tx.client.trace.AsyncTraceDispatcher`.
    :param access_key: ACL 1.0: sign every request with this AccessKey and *secret_key*
        (and *security_token*, if any); or give one ``credentials``
        (:class:`~rocketmq_tx.acl.SessionCredentials`). With a shared *instance*, give them
        to the instance.
    """

    def __init__(self, group: str, namesrv_addr: str = "", reactor: Any = None, *,
                 instance: MQClientInstance | None = None, tls: TlsSettings | None = None,
                 send_timeout: float = 3.0, access_key: str | None = None, secret_key: str | None = None,
                 security_token: str | None = None, credentials: SessionCredentials | None = None,
                 enable_msg_trace: bool = False, trace_topic: str | None = None, **settings: Any) -> None:
        InstanceUser.__init__(self, namesrv_addr, reactor, instance=instance, timeout=send_timeout, tls=tls,
                              access_key=access_key, secret_key=secret_key, security_token=security_token,
                              credentials=credentials)
        ProducerBase.__init__(self, group, self.instance.route_table, send_timeout=send_timeout, **settings)
        self.trace_dispatcher = AsyncTraceDispatcher(self.instance, group, PRODUCE, trace_topic) \
            if enable_msg_trace else None
        if self.trace_dispatcher is not None:
            self.send_trace = self.trace_dispatcher.on_send

    def _run(self, plan: Plan[Any]) -> Deferred:
        return self.instance.run(plan)

    def start(self) -> None:
        """Register the group with the client instance (and start it if it is ours)."""
        self.instance.register_producer(self.group)
        if self.trace_dispatcher is not None:
            self.trace_dispatcher.start()
        InstanceUser.start(self)

    def stop(self) -> Deferred:
        """Unregister (after sending the trace records waiting); stops and closes the instance if it is ours."""
        if self.trace_dispatcher is None:
            self.instance.unregister_producer(self.group)
            return InstanceUser.stop(self)

        def stopped(_: object) -> Deferred:
            self.instance.unregister_producer(self.group)
            return InstanceUser.stop(self)

        return self.trace_dispatcher.stop().addBoth(stopped)

    def send_callback(self, msg: Message, on_success: Callable[[SendResult], object],
                      on_exception: Callable[[BaseException], object], **kwargs: Any) -> None:
        """Java's ``send(msg, SendCallback)``: exactly one of the callbacks is called."""
        def failed(failure: Failure) -> None:
            on_exception(failure.value)

        self.send(msg, **kwargs).addCallbacks(on_success, failed)
