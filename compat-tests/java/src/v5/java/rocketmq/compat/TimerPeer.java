package rocketmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Timer messages of RocketMQ 5.x with the official 5.x client (5.x only: Message.setDeliverTimeMs and
 * friends do not exist in 4.9).
 *
 * Usage:
 *   TimerPeer produce namesrvAddr topic group spec...
 *     spec = body:deliver:EPOCH_MS | body:sec:SECONDS | body:ms:MILLIS (setDeliverTimeMs, setDelayTimeSec,
 *     setDelayTimeMs). One line per send: {"body","status","queueId","sendMs"} or {"body","error","sendMs"},
 *     then {"done": true}.
 *   TimerPeer consume namesrvAddr topic group count timeoutSeconds
 *     Push consumer from the first offset; prints "READY 0", then per message {"body","recvMs","storeMs",
 *     "bornMs","queueId","props"}; then {"done": true} after count messages or the timeout.
 */
public final class TimerPeer {
    private TimerPeer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        if ("consume".equals(args[0])) {
            consume(args[1], args[2], args[3], Integer.parseInt(args[4]), Long.parseLong(args[5]) * 1000L);
        } else {
            String[] specs = new String[args.length - 4];
            System.arraycopy(args, 4, specs, 0, specs.length);
            produce(args[1], args[2], args[3], specs);
        }
        System.exit(0);
    }

    private static void produce(String namesrv, String topic, String group, String[] specs) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("timer" + Long.toHexString(System.nanoTime()));
        producer.setSendMsgTimeout(15000);
        producer.start();
        try {
            for (String spec : specs) {
                String[] p = spec.split(":", 3);
                Message msg = new Message(topic, "TagT", p[0].getBytes(StandardCharsets.UTF_8));
                long value = Long.parseLong(p[2]);
                if ("deliver".equals(p[1])) {
                    msg.setDeliverTimeMs(value);
                } else if ("sec".equals(p[1])) {
                    msg.setDelayTimeSec(value);
                } else {
                    msg.setDelayTimeMs(value);
                }
                long sendMs = System.currentTimeMillis();
                try {
                    SendResult r = producer.send(msg);
                    Out.json(Json.obj("body", p[0], "status", r.getSendStatus().name(),
                        "queueId", r.getMessageQueue().getQueueId(), "sendMs", sendMs));
                } catch (Exception e) {
                    Out.json(Json.obj("body", p[0], "error", String.valueOf(e.getMessage()), "sendMs", sendMs));
                }
            }
        } finally {
            producer.shutdown();
        }
        Out.json(Json.obj("done", true));
    }

    private static void consume(String namesrv, String topic, String group, int count, long timeoutMs)
        throws Exception {
        java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("timerc" + Long.toHexString(System.nanoTime()));
        consumer.setPollNameServerInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                Out.json(Json.obj("body", new String(m.getBody(), StandardCharsets.UTF_8), "recvMs", now,
                    "storeMs", m.getStoreTimestamp(), "bornMs", m.getBornTimestamp(), "queueId", m.getQueueId(),
                    "props", new TreeMap<>(m.getProperties())));
                seen.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Out.line("READY 0");
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (seen.get() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        consumer.shutdown();
        Out.json(Json.obj("done", true));
    }
}
