package rocketmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The official producer and push consumer with message trace on (enableMsgTrace), then the
 * trace topic read back through DefaultMQAdminExt.queryMessage(traceTopic, msgId), the query
 * that mqadmin queryMsgTraceById makes.
 *
 * Usage:
 *   TracePeer namesrvAddr topic producerGroup consumerGroup count traceTopic|- timeoutSeconds settleMs kinds
 *     traceTopic "-": the clients' default (RMQ_SYS_TRACE_TOPIC). Sends count messages
 *     synchronously (body "trace-i", tag TagT, key "tk-i"), one line per send
 *     {"event":"sent","i","status","msgId","offsetMsgId","queueId"}; consumes them with a push
 *     consumer (CONSUME_FROM_FIRST_OFFSET), one line per message {"event":"consumed","msgId","body"};
 *     waits settleMs (5.x trace dispatchers send a short batch after 5 s), then polls the trace
 *     topic until every msgId has the record kinds listed in kinds (comma-separated, e.g.
 *     "Pub,SubBefore,SubAfter"; or the timeout passes) and prints, per msgId,
 *     {"event":"trace","msgId","records":[...]}:
 *     each record decoded by TraceDataEncoder from a trace message found by key msgId, with the
 *     trace message's own topic and keys. {"event":"done"} last. The clients stay up while the
 *     trace is read, so their trace dispatchers are not cut short.
 */
public final class TracePeer {
    private TracePeer() {
    }

    public static void main(String[] args) {
        Quiet.init();
        try {
            run(args);
        } catch (Throwable t) {
            // the clients' threads would keep the JVM up: fail now, with the cause on stdout
            Out.json(Json.obj("event", "error", "error", t.getClass().getName() + ": " + t.getMessage()));
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String traceTopicArg = "-".equals(args[5]) ? null : args[5];
        String traceTopic = traceTopicArg == null ? "RMQ_SYS_TRACE_TOPIC" : traceTopicArg;
        int count = Integer.parseInt(args[4]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[6]) * 1000L;
        long settleMs = Long.parseLong(args[7]);
        List<String> expected = List.of(args[8].split(","));
        String suffix = Long.toHexString(System.nanoTime());

        // (group, enableMsgTrace, customizedTraceTopic): in 4.9.8 and 5.x alike.
        DefaultMQProducer producer = new DefaultMQProducer(args[2], true, traceTopicArg);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("tracep" + suffix);
        producer.start();
        List<String> msgIds = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagT", "tk-" + i, ("trace-" + i).getBytes(StandardCharsets.UTF_8));
            SendResult r = send(producer, msg, deadline);
            msgIds.add(r.getMsgId());
            Out.json(Json.obj("event", "sent", "i", i, "status", r.getSendStatus(), "msgId", r.getMsgId(),
                "offsetMsgId", r.getOffsetMsgId(), "queueId", r.getMessageQueue().getQueueId()));
        }

        Set<String> consumed = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[3], true, traceTopicArg);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("tracec" + suffix);
        consumer.setPollNameServerInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (consumed.add(m.getMsgId())) {
                    Out.json(Json.obj("event", "consumed", "msgId", m.getMsgId(),
                        "body", new String(m.getBody(), StandardCharsets.UTF_8)));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        while (!consumed.containsAll(msgIds) && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);  // polling a set filled by the consumer's threads
        }
        Thread.sleep(settleMs);  // let the trace dispatchers send all they would send

        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("tracea" + suffix);
        admin.start();
        for (String msgId : msgIds) {
            List<Map<String, Object>> records = new ArrayList<>();
            while (true) {
                records = query(admin, traceTopic, msgId);
                Set<String> kinds = new TreeSet<>();
                for (Map<String, Object> rec : records) {
                    kinds.add((String) rec.get("type"));
                }
                if (kinds.containsAll(expected)
                    || System.currentTimeMillis() > deadline) {
                    break;
                }
                Thread.sleep(200);  // the trace dispatchers send every 500 ms
            }
            Out.json(Json.obj("event", "trace", "msgId", msgId, "records", records));
        }
        admin.shutdown();
        consumer.shutdown();
        producer.shutdown();
        Out.json(Json.obj("event", "done"));
        System.exit(0);
    }

    /** A send retried until the deadline, as an application would: a first send on a loaded
     *  machine can time out while the topic is being created from TBW102's route. */
    private static SendResult send(DefaultMQProducer producer, Message msg, long deadline) throws Exception {
        while (true) {
            try {
                return producer.send(msg, 10_000);
            } catch (MQClientException | MQBrokerException | RemotingException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                System.err.println("send failed, retrying: " + e);
                Thread.sleep(500);
            }
        }
    }

    private static List<Map<String, Object>> query(DefaultMQAdminExt admin, String traceTopic, String msgId)
        throws Exception {
        List<Map<String, Object>> records = new ArrayList<>();
        QueryResult result;
        try {
            result = admin.queryMessage(traceTopic, msgId, 64, 0, System.currentTimeMillis());
        } catch (MQClientException e) {
            return records;  // "query message by key finished, but no message." (none yet)
        }
        for (MessageExt m : result.getMessageList()) {
            String data = new String(m.getBody(), StandardCharsets.UTF_8);
            for (TraceContext ctx : TraceDataEncoder.decoderFromTraceDataString(data)) {
                if (ctx.getTraceBeans() == null || ctx.getTraceBeans().isEmpty()
                    || !msgId.equals(ctx.getTraceBeans().get(0).getMsgId())) {
                    continue;
                }
                var bean = ctx.getTraceBeans().get(0);
                records.add(Json.obj("type", ctx.getTraceType().name(), "group", ctx.getGroupName(),
                    "topic", bean.getTopic(), "msgId", bean.getMsgId(), "keys", bean.getKeys(),
                    "tags", bean.getTags(), "success", ctx.isSuccess(), "traceTopic", m.getTopic(),
                    "traceKeys", m.getKeys(), "traceMsgId", m.getMsgId()));
            }
        }
        return records;
    }
}
