package rocketmq.compat;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * The official gRPC client (rocketmq-client-java 5.x) through the official proxy, for
 * test_proxy_interop.py. One flow per run; it prints exactly one JSON line, then exits 0
 * (a refusal is data: {"ok": false, "stage", "error": {"class", "message", "causes"}}).
 *
 *   send ENDPOINT TOPIC COUNT PREFIX                normal messages: body PREFIX-i, tag TagP,
 *                                                   keys PREFIX-k-i, property idx=i
 *   fifo ENDPOINT TOPIC COUNT PREFIX GROUPS         FIFO: the same, message group PREFIX-g(i % GROUPS)
 *   delay ENDPOINT TOPIC COUNT PREFIX DELAY_MS      delivery timestamp now + DELAY_MS
 *   transaction ENDPOINT TOPIC COUNT PREFIX COMMIT|ROLLBACK
 *                                                   each in its own transaction, then commit or
 *                                                   roll back; the checker answers COMMIT
 *   simple ENDPOINT TOPIC GROUP COUNT TIMEOUT_S INVISIBLE_S ack|change|none
 *                                                   SimpleConsumer.receive until COUNT distinct
 *                                                   bodies or TIMEOUT_S; ack: ack each; change:
 *                                                   changeInvisibleDuration(1 s) on the first
 *                                                   delivery and ack the redelivery; none: leave
 *   push ENDPOINT TOPIC GROUP COUNT TIMEOUT_S       PushConsumer until COUNT distinct bodies
 *
 * Send flows: {"op","ok","sent":[{"body","messageId","at"}],...}; consume flows:
 * {"op","ok","deliveries":[{"body","messageId","tag","keys","group","attempt","properties",
 * "deliveryTimestamp","receivedAt","action"}], "distinct"}.
 */
public final class ProxyPeer {
    private static final String TAG = "TagP";

    private ProxyPeer() {
    }

    public static void main(String[] args) {
        // The gRPC client's console appender and any stray print go to stderr: stdout is ours.
        PrintStream stdout = System.out;
        System.setOut(System.err);
        Map<String, Object> result;
        try {
            result = run(args);
        } catch (Throwable t) {
            result = Json.obj("op", args.length > 0 ? args[0] : "", "ok", false, "stage", "run", "error", error(t));
        }
        Out.json(result);
        stdout.flush();
        // The client's threads (gRPC, schedulers) are not all daemons: end the JVM here.
        Runtime.getRuntime().halt(0);
    }

    private static Map<String, Object> run(String[] a) throws Exception {
        String op = a[0];
        ClientConfiguration conf = ClientConfiguration.newBuilder().setEndpoints(a[1]).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
        switch (op) {
            case "send":
                return produce(op, conf, a[2], Integer.parseInt(a[3]), a[4], 0, 0L, null);
            case "fifo":
                return produce(op, conf, a[2], Integer.parseInt(a[3]), a[4], Integer.parseInt(a[5]), 0L, null);
            case "delay":
                return produce(op, conf, a[2], Integer.parseInt(a[3]), a[4], 0, Long.parseLong(a[5]), null);
            case "transaction":
                return produce(op, conf, a[2], Integer.parseInt(a[3]), a[4], 0, 0L, a[5]);
            case "simple":
                return simple(conf, a[2], a[3], Integer.parseInt(a[4]), Integer.parseInt(a[5]),
                    Integer.parseInt(a[6]), a[7]);
            case "push":
                return push(conf, a[2], a[3], Integer.parseInt(a[4]), Integer.parseInt(a[5]));
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static Map<String, Object> produce(String op, ClientConfiguration conf, String topic, int count,
        String prefix, int groups, long delayMs, String txEnd) {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        Producer producer;
        try {
            var builder = provider.newProducerBuilder().setClientConfiguration(conf).setTopics(topic);
            if (txEnd != null) {
                builder.setTransactionChecker(view -> TransactionResolution.COMMIT);
            }
            producer = builder.build();
        } catch (Throwable t) {
            return Json.obj("op", op, "ok", false, "stage", "start", "error", error(t));
        }
        List<Object> sent = new ArrayList<>();
        Map<String, Object> out = Json.obj("op", op, "ok", true, "sent", sent);
        try {
            for (int i = 0; i < count; i++) {
                MessageBuilder mb = provider.newMessageBuilder().setTopic(topic).setTag(TAG)
                    .setKeys(prefix + "-k-" + i).setBody((prefix + "-" + i).getBytes(StandardCharsets.UTF_8))
                    .addProperty("idx", Integer.toString(i));
                if (groups > 0) {
                    mb.setMessageGroup(prefix + "-g" + (i % groups));
                }
                long at = System.currentTimeMillis();
                if (delayMs > 0) {
                    mb.setDeliveryTimestamp(at + delayMs);
                }
                Message message = mb.build();
                SendReceipt receipt;
                Transaction tx = null;
                try {
                    if (txEnd != null) {
                        tx = producer.beginTransaction();
                        receipt = producer.send(message, tx);
                        if ("COMMIT".equals(txEnd)) {
                            tx.commit();
                        } else {
                            tx.rollback();
                        }
                    } else {
                        receipt = producer.send(message);
                    }
                } catch (Throwable t) {
                    out.put("ok", false);
                    out.put("stage", "send");
                    out.put("failedAt", i);
                    out.put("error", error(t));
                    break;
                }
                sent.add(Json.obj("body", prefix + "-" + i, "messageId", receipt.getMessageId().toString(), "at", at));
            }
        } finally {
            closeQuietly(producer);
        }
        return out;
    }

    private static Map<String, Object> simple(ClientConfiguration conf, String topic, String group, int count,
        int timeoutS, int invisibleS, String action) {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        SimpleConsumer consumer;
        try {
            consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(conf).setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*",
                    FilterExpressionType.TAG)))
                .setAwaitDuration(Duration.ofSeconds(5)).build();
        } catch (Throwable t) {
            return Json.obj("op", "simple", "ok", false, "stage", "start", "error", error(t));
        }
        List<Object> deliveries = new ArrayList<>();
        Map<String, Integer> seen = new LinkedHashMap<>();
        Map<String, Object> out = Json.obj("op", "simple", "ok", true, "deliveries", deliveries);
        long deadline = System.currentTimeMillis() + timeoutS * 1000L;
        try {
            while (done(seen, count, action) < count && System.currentTimeMillis() < deadline) {
                List<MessageView> views;
                try {
                    views = consumer.receive(16, Duration.ofSeconds(invisibleS));
                } catch (Throwable t) {
                    out.put("ok", false);
                    out.put("stage", "receive");
                    out.put("error", error(t));
                    break;
                }
                for (MessageView view : views) {
                    String body = body(view);
                    int n = seen.merge(body, 1, Integer::sum);
                    String did;
                    try {
                        if ("change".equals(action) && n == 1) {
                            consumer.changeInvisibleDuration(view, Duration.ofSeconds(1));
                            did = "change";
                        } else if (!"none".equals(action)) {
                            consumer.ack(view);
                            did = "ack";
                        } else {
                            did = "none";
                        }
                    } catch (Throwable t) {
                        did = "error";
                        out.put("ok", false);
                        out.put("stage", "change".equals(action) && n == 1 ? "changeInvisibleDuration" : "ack");
                        out.put("error", error(t));
                    }
                    Map<String, Object> d = view(view);
                    d.put("action", did);
                    deliveries.add(d);
                }
                if (Boolean.FALSE.equals(out.get("ok"))) {
                    break;
                }
            }
        } finally {
            closeQuietly(consumer);
        }
        out.put("distinct", seen.size());
        return out;
    }

    /** Bodies finished: for "change", those delivered twice (changed, then redelivered). */
    private static int done(Map<String, Integer> seen, int count, String action) {
        if (!"change".equals(action)) {
            return seen.size();
        }
        int n = 0;
        for (int times : seen.values()) {
            if (times >= 2) {
                n++;
            }
        }
        return n;
    }

    private static Map<String, Object> push(ClientConfiguration conf, String topic, String group, int count,
        int timeoutS) {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        List<Object> deliveries = Collections.synchronizedList(new ArrayList<>());
        Map<String, Boolean> seen = new ConcurrentHashMap<>();
        CountDownLatch enough = new CountDownLatch(1);
        PushConsumer consumer;
        try {
            consumer = provider.newPushConsumerBuilder().setClientConfiguration(conf).setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*",
                    FilterExpressionType.TAG)))
                .setMessageListener(view -> {
                    Map<String, Object> d = view(view);
                    d.put("action", "SUCCESS");
                    deliveries.add(d);
                    seen.put(body(view), true);
                    if (seen.size() >= count) {
                        enough.countDown();
                    }
                    return ConsumeResult.SUCCESS;
                }).build();
        } catch (Throwable t) {
            return Json.obj("op", "push", "ok", false, "stage", "start", "error", error(t));
        }
        try {
            enough.await(timeoutS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            closeQuietly(consumer);
        }
        synchronized (deliveries) {
            return Json.obj("op", "push", "ok", true, "deliveries", new ArrayList<>(deliveries), "distinct",
                seen.size());
        }
    }

    private static String body(MessageView view) {
        ByteBuffer buf = view.getBody().duplicate();
        byte[] bytes = new byte[buf.remaining()];
        buf.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static Map<String, Object> view(MessageView view) {
        return Json.obj("body", body(view), "messageId", view.getMessageId().toString(),
            "tag", view.getTag().orElse(null), "keys", new ArrayList<>(view.getKeys()),
            "group", view.getMessageGroup().orElse(null), "attempt", view.getDeliveryAttempt(),
            "properties", new TreeMap<>(view.getProperties()),
            "deliveryTimestamp", view.getDeliveryTimestamp().orElse(null),
            "receivedAt", System.currentTimeMillis());
    }

    private static Map<String, Object> error(Throwable t) {
        List<Object> causes = new ArrayList<>();
        for (Throwable c = t.getCause(); c != null && causes.size() < 5; c = c.getCause()) {
            causes.add(c.getClass().getName() + ": " + c.getMessage());
        }
        return Json.obj("class", t.getClass().getName(), "message", String.valueOf(t.getMessage()),
            "causes", causes);
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Throwable ignored) {
            // closing after a refusal may fail again; the refusal is what is reported
        }
    }
}
