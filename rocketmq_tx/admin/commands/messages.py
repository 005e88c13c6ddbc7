# -*- test-case-name: rocketmq_tx.admin.test.test_cli -*-
"""Messages: queryMsgById / ByUniqueKey / ByKey / ByOffset, printMsg, sendMessage,
consumeMessage, and resetOffsetByTime."""

from __future__ import annotations

import argparse
import time

from rocketmq_tx.admin.commands.common import (
    DEFAULT_CONSUME_COUNT,
    MAX_CONSUME_COUNT,
    TOOLS_CONSUMER_GROUP,
    int_arg,
    message_facts,
    parse_timestamp,
    print_message,
    queue_text,
    text_arg,
)
from rocketmq_tx.admin.output import (
    Output,
    front_at_least,
    java_bool,
)
from rocketmq_tx.admin.registry import CommandError, Session, command, opt
from rocketmq_tx.common.message import Message, MessageQueue
from rocketmq_tx.remoting.api import PullStatus


@command("queryMsgById", "Query Message by Id",
         opt("-i", "--msgId", type=text_arg, required=True, help="Message Id (offsetMsgId; several: comma-separated)"))
def query_msg_by_id(session: Session, args: argparse.Namespace) -> Output:
    out = Output(data=[])
    for msg_id in (m.strip() for m in args.msgId.split(",") if m.strip()):
        msg = session.admin.view_message(msg_id)
        out.data.append(message_facts(msg))
        print_message(out, msg)
    return out


@command("queryMsgByUniqueKey", "Query Message by Unique key",
         opt("-i", "--msgId", type=text_arg, required=True, help="Message Id"),
         opt("-t", "--topic", type=text_arg, required=True, help="The topic of msg"))
def query_msg_by_unique_key(session: Session, args: argparse.Namespace) -> Output:
    msg = session.admin.query_message_by_uniq_key(args.topic, args.msgId)
    out = Output(data=message_facts(msg))
    print_message(out, msg)
    return out


@command("queryMsgByKey", "Query Message by Key",
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"),
         opt("-k", "--msgKey", type=text_arg, required=True, help="Message Key"))
def query_msg_by_key(session: Session, args: argparse.Namespace) -> Output:
    result = session.admin.query_message(args.topic, args.msgKey, 64)
    out = Output(data=[])
    out.printf("%-50s %4s %40s", "#Message ID", "#QID", "#Offset")
    for msg in result.message_list:
        msg_id = msg.get_property("UNIQ_KEY") or msg.offset_msg_id
        out.data.append({"msgId": msg_id, "queueId": msg.queue_id, "queueOffset": msg.queue_offset})
        out.printf("%-50s %4d %40d", msg_id, msg.queue_id, msg.queue_offset)
    return out


@command("queryMsgByOffset", "Query Message by offset",
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"),
         opt("-b", "--brokerName", type=text_arg, required=True, help="Broker Name"),
         opt("-i", "--queueId", type=int_arg, required=True, help="Queue Id"),
         opt("-o", "--offset", type=int_arg, required=True, help="Queue Offset"))
def query_msg_by_offset(session: Session, args: argparse.Namespace) -> Output:
    mq = MessageQueue(args.topic, args.brokerName, args.queueId)
    result = session.pull_client(TOOLS_CONSUMER_GROUP).pull(mq, args.offset, 1)
    out = Output(data=None)
    # Java prints nothing when the offset holds no message
    if result.pull_status is PullStatus.FOUND and result.msg_found_list:
        out.data = message_facts(result.msg_found_list[0])
        print_message(out, result.msg_found_list[0])
    return out


@command("printMsg", "Print Message Detail",
         opt("-t", "--topic", type=text_arg, required=True, help="topic name"),
         opt("-c", "--charsetName", type=text_arg, default="UTF-8", help="CharsetName(eg: UTF-8,GBK)"),
         opt("-s", "--subExpression", type=text_arg, default="*", help="Subscribe Expression(eg: TagA || TagB)"),
         opt("-b", "--beginTimestamp", type=parse_timestamp,
             help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-e", "--endTimestamp", type=parse_timestamp,
             help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-d", "--printBody", type=java_bool, default=True, help="print body"))
def print_msg(session: Session, args: argparse.Namespace) -> Output:
    try:
        "".encode(args.charsetName)
    except LookupError:
        raise CommandError(f"unknown charset {args.charsetName}") from None
    client = session.pull_client(TOOLS_CONSUMER_GROUP)
    out = Output(data=[])
    progress = session.progress("printMsg")
    queues = sorted(client.fetch_queues(args.topic), key=lambda q: (q.broker_name, q.queue_id))
    for i, mq in enumerate(queues, 1):
        low = client.min_offset(mq) if args.beginTimestamp is None else client.search_offset(mq, args.beginTimestamp)
        high = client.max_offset(mq) if args.endTimestamp is None else client.search_offset(mq, args.endTimestamp)
        out.printf("minOffset=%s, maxOffset=%s, %s", low, high, queue_text(mq))
        offset = low
        while offset < high:
            if len(out.data) >= MAX_CONSUME_COUNT:
                raise CommandError(f"more than {MAX_CONSUME_COUNT} messages: narrow the range with -b/-e")
            progress.update(f"queue {i}/{len(queues)}, {len(out.data)} messages")
            result = client.pull(mq, offset, 32, args.subExpression)
            stuck = result.next_begin_offset <= offset  # a broker that does not move on ends the queue
            offset = result.next_begin_offset
            if result.pull_status is PullStatus.FOUND:
                for msg in result.msg_found_list:
                    facts = message_facts(msg)
                    body = msg.body.decode(args.charsetName, "replace") if args.printBody else "NOT PRINT BODY"
                    facts["body"] = body
                    out.data.append(facts)
                    out.printf("MSGID: %s %s BODY: %s", facts["msgId"], queue_text(mq), body)
            elif result.pull_status is PullStatus.NO_MATCHED_MSG:
                out.printf("%s no matched msg. status=%s, offset=%s", queue_text(mq), result.pull_status.name, offset)
            if stuck or result.pull_status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
                out.printf("%s print msg finished. status=%s, offset=%s", queue_text(mq), result.pull_status.name,
                           offset)
                break
        out.printf("--------------------------------------------------------")
    progress.finish()
    return out


@command("sendMessage", "Send a message",
         opt("-t", "--topic", type=text_arg, required=True, help="Topic name"),
         opt("-p", "--body", type=text_arg, required=True, help="UTF-8 string format of the message body"),
         opt("-k", "--key", type=text_arg, help="Message keys"),
         opt("-c", "--tags", type=text_arg, help="Message tags"),
         opt("-b", "--broker", type=text_arg, help="Send message to target broker"),
         opt("-i", "--qid", type=int_arg, help="Send message to target queue"))
def send_message(session: Session, args: argparse.Namespace) -> Output:
    if args.qid is not None and not args.broker:
        raise CommandError("Broker name must be set if the queue is chosen!")
    msg = Message(args.topic, args.body.encode("utf-8"))
    if args.tags:
        msg.put_property("TAGS", args.tags)
    if args.key:
        msg.put_property("KEYS", args.key)
    # Java names the tool's producer group after the current time.
    producer = session.producer(str(int(time.time() * 1000)))
    queue = MessageQueue(args.topic, args.broker, args.qid) if args.qid is not None and args.qid > -1 else None
    result = producer.send(msg, queue=queue)
    out = Output(data={"brokerName": result.message_queue.broker_name, "queueId": result.message_queue.queue_id,
                       "sendStatus": result.send_status.name, "msgId": result.msg_id,
                       "offsetMsgId": result.offset_msg_id, "queueOffset": result.queue_offset})
    out.printf("%-32s  %-4s  %-20s    %s", "#Broker Name", "#QID", "#Send Result", "#MsgId")
    out.printf("%-32s  %-4s  %-20s    %s", result.message_queue.broker_name, result.message_queue.queue_id,
               result.send_status.name, result.msg_id)
    return out


@command("consumeMessage", "Consume message",
         opt("-t", "--topic", type=text_arg, required=True, help="Topic name"),
         opt("-b", "--brokerName", type=text_arg, help="Broker name"),
         opt("-i", "--queueId", type=int_arg, help="Queue Id"),
         opt("-o", "--offset", type=int_arg, help="Queue offset"),
         opt("-g", "--consumerGroup", type=text_arg, default=TOOLS_CONSUMER_GROUP, help="Consumer group name"),
         opt("-s", "--beginTimestamp", type=parse_timestamp,
             help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-e", "--endTimestamp", type=parse_timestamp,
             help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
         opt("-c", "--MessageNumber", type=int_arg, default=DEFAULT_CONSUME_COUNT,
             help="Number of message to be consumed"))
def consume_message(session: Session, args: argparse.Namespace) -> Output:
    count = args.MessageNumber
    if not 0 < count <= MAX_CONSUME_COUNT:
        raise CommandError(f"-c MessageNumber must be within 1..{MAX_CONSUME_COUNT}")
    client = session.pull_client(args.consumerGroup)
    queues = client.fetch_queues(args.topic)
    if args.brokerName:
        queues = [q for q in queues if q.broker_name == args.brokerName]
    if args.queueId is not None:
        queues = [q for q in queues if q.queue_id == args.queueId]
    if not queues:
        raise CommandError(f"no queue of topic {args.topic} matches the -b/-i given")
    out = Output(data=[])
    end_ms = args.endTimestamp
    progress = session.progress("consumeMessage")
    for mq in sorted(queues, key=lambda q: (q.broker_name, q.queue_id)):
        if args.offset is not None:
            offset = args.offset
        elif args.beginTimestamp is not None:
            offset = client.search_offset(mq, args.beginTimestamp)
        else:
            offset = client.min_offset(mq)
        max_offset = client.max_offset(mq)
        while offset < max_offset and len(out.data) < count:
            progress.update(f"{len(out.data)}/{count} messages")
            result = client.pull(mq, offset, min(32, count - len(out.data)))
            if result.pull_status is not PullStatus.FOUND or result.next_begin_offset <= offset:
                break
            offset = result.next_begin_offset
            for msg in result.msg_found_list:
                if end_ms is not None and msg.store_timestamp > end_ms:
                    offset = max_offset  # this queue is past the end time
                    break
                out.data.append(message_facts(msg))
                out.printf("MSGID: %s %s BODY: %s", out.data[-1]["msgId"], queue_text(mq), out.data[-1]["body"])
        if len(out.data) >= count:
            break
    progress.finish()
    out.printf("Consumed %d message(s)", len(out.data))
    return out


@command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).",
         opt("-g", "--group", type=text_arg, required=True, help="set the consumer group"),
         opt("-t", "--topic", type=text_arg, required=True, help="set the topic"),
         opt("-s", "--timestamp", type=parse_timestamp, required=True,
             help="set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"))
def reset_offset_by_time(session: Session, args: argparse.Namespace) -> Output:
    offsets = session.admin.reset_offset_new(args.topic, args.group, args.timestamp)
    out = Output(data=[])
    out.printf("rollback consumer offset by specified group[%s], topic[%s], force[%s], timestamp(long)[%s]",
               args.group, args.topic, "true", args.timestamp)
    out.printf("%-40s  %-40s  %-40s", "#brokerName", "#queueId", "#offset")
    for mq, offset in sorted(offsets.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)):
        out.data.append({"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": offset})
        out.printf("%-40s  %-40d  %-40d", front_at_least(mq.broker_name, 32), mq.queue_id, offset)
    return out
