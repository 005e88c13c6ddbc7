package rocketmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The official producer or push consumer as a peer of rocketmq-tx's client, speaking JSON lines.
 *
 * Usage:
 *   ClientPeer consume namesrvAddr topic group count timeoutSeconds [assigned]
 *     Push consumer (CONSUME_FROM_FIRST_OFFSET, tag *). Prints "READY 0" once started, then one
 *     line per message: {"topic","body","tags","keys","props","msgId","queueId","queueOffset","broker"}
 *     (body as UTF-8 text), then {"done": true, "unique": n} when count distinct bodies arrived or
 *     the timeout passed. With "assigned", also {"assigned": ["broker/queueId", ...]} whenever
 *     the queues it owns change.
 *   ClientPeer produce namesrvAddr topic count
 *     Sends count messages synchronously: body "java-i", tag TagA (even i) / TagB (odd), key "jk-i",
 *     user property idx=i. One line per send: {"i","status","msgId","offsetMsgId","broker","queueId",
 *     "queueOffset"}, then {"done": true}.
 */
public final class ClientPeer {
    private ClientPeer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        if ("consume".equals(args[0])) {
            consume(args[1], args[2], args[3], Integer.parseInt(args[4]), Long.parseLong(args[5]) * 1000L,
                args.length > 6 && "assigned".equals(args[6]));
        } else {
            produce(args[1], args[2], Integer.parseInt(args[3]));
        }
        System.exit(0);
    }

    private static void consume(String namesrv, String topic, String group, int count, long timeoutMs,
                                boolean reportAssigned) throws Exception {
        Set<String> unique = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("peer" + Long.toHexString(System.nanoTime()));
        consumer.setPollNameServerInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                unique.add(body);
                Map<String, Object> props = new TreeMap<>(m.getProperties());
                Out.json(Json.obj("topic", m.getTopic(), "body", body, "tags", m.getTags(), "keys", m.getKeys(),
                    "props", props, "msgId", m.getMsgId(), "queueId", m.getQueueId(),
                    "queueOffset", m.getQueueOffset(), "broker", m.getBrokerName()));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Out.line("READY 0");
        long deadline = System.currentTimeMillis() + timeoutMs;
        Set<String> assigned = null;
        while (unique.size() < count && System.currentTimeMillis() < deadline) {
            if (reportAssigned) {
                // the queues this member owns after its latest rebalance, printed when they change
                Set<String> now = new TreeSet<>();
                consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().forEach((mq, pq) -> {
                    if (!pq.isDropped() && mq.getTopic().equals(topic)) {
                        now.add(mq.getBrokerName() + "/" + mq.getQueueId());
                    }
                });
                if (!now.equals(assigned)) {
                    assigned = now;
                    Out.json(Json.obj("assigned", List.copyOf(now)));
                }
            }
            Thread.sleep(50);  // polling a set filled by the consumer's threads
        }
        Out.json(Json.obj("done", true, "unique", unique.size()));
        consumer.shutdown();
    }

    private static void produce(String namesrv, String topic, int count) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("PEER_PG_" + Long.toHexString(System.nanoTime()));
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("peerp" + Long.toHexString(System.nanoTime()));
        producer.start();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, i % 2 == 0 ? "TagA" : "TagB", "jk-" + i,
                ("java-" + i).getBytes(StandardCharsets.UTF_8));
            msg.putUserProperty("idx", Integer.toString(i));
            SendResult r = producer.send(msg, 10_000);
            Out.json(Json.obj("i", i, "status", r.getSendStatus(), "msgId", r.getMsgId(),
                "offsetMsgId", r.getOffsetMsgId(), "broker", r.getMessageQueue().getBrokerName(),
                "queueId", r.getMessageQueue().getQueueId(), "queueOffset", r.getQueueOffset()));
        }
        Out.json(Json.obj("done", true));
        producer.shutdown();
    }
}
