package rocketmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The official DefaultMQProducer and DefaultMQPushConsumer, end to end through whatever
 * name server and broker they are pointed at.
 *
 * Usage: ProduceConsume namesrvAddr topic count [timeoutSeconds]
 *
 * Starts a push consumer (CONSUME_FROM_FIRST_OFFSET, tag *), sends count messages
 * synchronously (keys k&lt;i&gt;, tag TagA, body msg-&lt;i&gt;), waits until every body has
 * been consumed or the timeout passes, and prints one JSON line:
 * {"sent": n, "send_ok": n, "received": n, "unique": n, "missing": [...], "brokers": [...]}.
 */
public final class ProduceConsume {
    private ProduceConsume() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        long timeoutMs = (args.length > 3 ? Long.parseLong(args[3]) : 60) * 1000L;
        String suffix = Long.toHexString(System.nanoTime());

        Set<String> unique = ConcurrentHashMap.newKeySet();
        AtomicInteger received = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("CG_" + suffix);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("c" + suffix);
        consumer.setPollNameServerInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                received.incrementAndGet();
                unique.add(new String(m.getBody(), StandardCharsets.UTF_8));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("PG_" + suffix);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("p" + suffix);
        producer.start();
        int ok = 0;
        Set<String> brokers = new TreeSet<>();
        List<String> errors = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagA", "k" + i, ("msg-" + i).getBytes(StandardCharsets.UTF_8));
            try {
                SendResult r = producer.send(msg, 10_000);
                if (r.getSendStatus() == SendStatus.SEND_OK) {
                    ok++;
                    brokers.add(r.getMessageQueue().getBrokerName());
                }
            } catch (Exception e) {
                if (errors.size() < 5) {
                    errors.add(e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
        }
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (unique.size() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);  // polling a counter filled by the consumer's threads
        }
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < count && missing.size() < 20; i++) {
            if (!unique.contains("msg-" + i)) {
                missing.add("msg-" + i);
            }
        }
        Map<String, Object> out = Json.obj("sent", count, "send_ok", ok, "received", received.get(),
            "unique", unique.size(), "missing", missing, "brokers", new ArrayList<>(brokers), "errors", errors);
        Out.json(out);
        producer.shutdown();
        consumer.shutdown();
        System.exit(0);
    }
}
