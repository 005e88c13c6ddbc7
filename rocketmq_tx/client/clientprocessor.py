# -*- test-case-name: rocketmq_tx.client.test.test_push,rocketmq_tx.client.test.test_litepull -*-
"""
:class:`ClientRemotingProcessor` (Java's ``ClientRemotingProcessor``): the requests a broker
sends to the consumers of a client instance, one processor per instance:

* NOTIFY_CONSUMER_IDS_CHANGED (40, oneway): the named group's member rebalances now;
* RESET_CONSUMER_CLIENT_OFFSET (220, oneway): mqadmin ``resetOffsetByTime`` reaching a
  running push consumer, which moves its queues;
* GET_CONSUMER_RUNNING_INFO (307): mqadmin ``consumerStatus``, relayed by a broker;
* CHECK_TRANSACTION_STATE (39, oneway): a broker asks the transactional producer of the
  half message's ``PGROUP`` how its local transaction ended.
"""

from __future__ import annotations

from typing import Any, Protocol

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from rocketmq_tx.client.instance import MQClientInstance
from rocketmq_tx.common import fastjson
from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.message import MessageConst, MessageExt, MessageQueue
from rocketmq_tx.net.dispatch import HandlerProcessor, IRemotingContext
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode, api
from rocketmq_tx.remoting.errors import RemotingCommandError
from rocketmq_tx.remoting.headers.transaction import CheckTransactionStateRequestHeader

__all__ = ["ClientRemotingProcessor", "GroupMember", "PushMember", "TransactionMember"]

log = Logger()


class GroupMember(Protocol):
    """A consumer that shares its topics' queues with its group (push, or lite-pull subscribing)."""

    running: bool

    def rebalance(self) -> Deferred[None]: ...


class PushMember(GroupMember, Protocol):
    """A push consumer: it can also be moved and described."""

    def reset_offset(self, offsets: dict[MessageQueue, int]) -> Deferred[None]: ...

    def running_info(self) -> dict[str, Any]: ...


class TransactionMember(Protocol):
    """A transactional producer: it answers a broker's check of one of its half messages."""

    def check_transaction_state(self, ctx: IRemotingContext, header: CheckTransactionStateRequestHeader,
                                msg: MessageExt, bname: str | None = None) -> object: ...


class ClientRemotingProcessor(HandlerProcessor):
    """
    :ivar members: group -> its member on this instance.
    :ivar push_members: group -> its push consumer on this instance.
    :ivar producers: producer group -> its transactional producer on this instance.
    """

    def __init__(self) -> None:
        self.members: dict[str, GroupMember] = {}
        self.push_members: dict[str, PushMember] = {}
        self.producers: dict[str, TransactionMember] = {}
        self.handlers = {
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self.notify_consumer_ids_changed,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET: self.reset_offset,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CHECK_TRANSACTION_STATE: self.check_transaction_state,
        }

    @classmethod
    def of(cls, instance: MQClientInstance) -> ClientRemotingProcessor:
        """*instance*'s processor, registered for its codes on first use."""
        found = instance.processors.lookup(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
        if isinstance(found, cls):
            return found
        processor = cls()
        instance.processors.register_handlers(processor)
        return processor

    def add(self, group: str, member: GroupMember) -> None:
        self.members[group] = member

    def add_push(self, group: str, member: PushMember) -> None:
        self.members[group] = self.push_members[group] = member

    def add_producer(self, group: str, producer: TransactionMember) -> None:
        self.producers[group] = producer

    def remove_producer(self, group: str, producer: TransactionMember) -> None:
        if self.producers.get(group) is producer:
            del self.producers[group]

    def check_transaction_state(self, ctx: IRemotingContext, request: RemotingCommand) -> None:
        """Java ``checkTransactionState``: the half message's ``PGROUP`` picks the producer; no answer."""
        try:
            header, msg = api.parse_check_transaction_state(request)
        except (RemotingCommandError, MessageFormatError) as e:
            log.warn("checkTransactionState from {peer}: undecodable request: {error}", peer=ctx.peer, error=e)
            return
        group = msg.get_property(MessageConst.PROPERTY_PRODUCER_GROUP)
        producer = self.producers.get(group) if group is not None else None
        if producer is None:
            log.warn("checkTransactionState, no transactional producer of group {group}", group=group)
            return
        producer.check_transaction_state(ctx, header, msg, request.ext_fields.get("bname"))

    def notify_consumer_ids_changed(self, ctx: IRemotingContext, request: RemotingCommand) -> None:
        member = self.members.get(request.ext_fields.get("consumerGroup", ""))
        if member is not None and member.running:
            member.rebalance()

    def reset_offset(self, ctx: IRemotingContext, request: RemotingCommand) -> None:
        member = self.push_members.get(request.ext_fields.get("group", ""))
        if member is not None and member.running:
            offsets = api.parse_reset_offset_body(request.body)
            topic = request.ext_fields.get("topic")
            member.reset_offset({mq: off for mq, off in offsets.items() if topic is None or mq.topic == topic})

    def get_consumer_running_info(self, ctx: IRemotingContext, request: RemotingCommand) -> RemotingCommand:
        group = request.ext_fields.get("consumerGroup", "")
        member = self.push_members.get(group)
        if member is None or not member.running:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         f"The Consumer Group <{group}> not exist in this consumer")
        return request.make_response(body=fastjson.dumps(member.running_info()))
