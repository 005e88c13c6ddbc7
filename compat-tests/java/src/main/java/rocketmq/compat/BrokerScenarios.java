package rocketmq.compat;

import java.nio.charset.StandardCharsets;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The official producer and consumers against a broker, one scenario per run.
 *
 * Usage: BrokerScenarios SCENARIO NAMESRV TOPIC GROUP [args...]
 *
 * Each scenario prints exactly one JSON line with what it observed (sends, deliveries,
 * queue ownership, ...); the Python test decides what is right. See test_broker_interop.py
 * for the scenarios and their arguments.
 */
public final class BrokerScenarios {
    private static final long WAIT_MS = 60_000;

    private static String namesrv;
    private static String bigBody = "";
    private static byte[] hugeBody = new byte[0];
    private static final String SUFFIX = Long.toHexString(System.nanoTime());
    private static final List<String> ERRORS = new CopyOnWriteArrayList<>();

    private BrokerScenarios() {
    }

    public static void main(String[] args) {
        Quiet.init();
        try {
            run(args);
        } catch (Throwable t) {
            // the clients' non-daemon threads would keep the JVM alive: exit, loudly
            t.printStackTrace();
            System.exit(2);
        }
        System.exit(0);
    }

    private static void run(String[] args) throws Exception {
        // Rebalance (and, for orderly consumers, the retry of a refused LOCK_BATCH_MQ) every
        // second instead of every 20 s, to keep the scenarios short.
        System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
        System.setProperty("rocketmq.client.localOffsetStoreDir",
            System.getProperty("java.io.tmpdir") + "/compat-offsets-" + SUFFIX);
        String scenario = args[0];
        namesrv = args[1];
        String topic = args[2];
        String group = args[3];
        Map<String, Object> out;
        switch (scenario) {
            case "produce":
                out = produce(topic);
                break;
            case "cluster":
                out = cluster(topic, group, Integer.parseInt(args[4]), false);
                break;
            case "broadcast":
                out = cluster(topic, group, Integer.parseInt(args[4]), true);
                break;
            case "orderly":
                out = orderly(topic, group, Integer.parseInt(args[4]), Integer.parseInt(args[5]));
                break;
            case "tags":
                out = tags(topic, group, Integer.parseInt(args[4]));
                break;
            case "from_where":
                out = fromWhere(topic, group, Integer.parseInt(args[4]));
                break;
            case "retry_dlq":
                out = retryDlq(topic, group, Integer.parseInt(args[4]));
                break;
            case "orderly_dlq":
                out = orderlyDlq(topic, group, Integer.parseInt(args[4]));
                break;
            case "delay":
                out = delay(topic, group, Integer.parseInt(args[4]));
                break;
            case "send":
                out = sendOnly(topic, args[4], Integer.parseInt(args[5]));
                break;
            case "consume":
                out = consumeUntil(topic, group, args[4], Integer.parseInt(args[5]));
                break;
            case "live":
                out = live(topic, group, Integer.parseInt(args[4]));
                break;
            case "victim":
                out = victim(topic, group);
                break;
            case "survivor":
                out = survivor(topic, group, Integer.parseInt(args[4]));
                break;
            case "litepull":
                out = litePull(topic, group);
                break;
            default:
                throw new IllegalArgumentException("unknown scenario " + scenario);
        }
        out.put("errors", new ArrayList<>(ERRORS));
        Out.json(out);
    }

    // ------------------------------------------------------------------ helpers

    private static DefaultMQProducer producer() throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("PG_" + SUFFIX);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName("p" + SUFFIX);
        p.setSendMsgTimeout(10_000);
        p.setDefaultTopicQueueNums(4);
        p.setRetryTimesWhenSendFailed(0);
        p.setRetryTimesWhenSendAsyncFailed(0);
        p.start();
        return p;
    }

    private static DefaultMQPushConsumer push(String group, String instance, String topic, String expr,
                                              ConsumeFromWhere where) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(instance + SUFFIX);
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(1000);
        c.setPersistConsumerOffsetInterval(1000);
        c.setConsumeFromWhere(where);
        c.subscribe(topic, expr);
        return c;
    }

    private static Message msg(String topic, String tags, String keys, String body) {
        return new Message(topic, tags, keys, body.getBytes(StandardCharsets.UTF_8));
    }

    private static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    private static boolean waitUntil(BooleanSupplier cond, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                return false;
            }
            Thread.sleep(50);  // polling state filled by the client's threads, bounded above
        }
        return true;
    }

    /** Waits until no new element arrived in list for quietMs (bounded by 10 s). */
    private static void quiet(List<?> list, long quietMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 10_000;
        int n = list.size();
        long since = System.currentTimeMillis();
        while (System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
            if (list.size() != n) {
                n = list.size();
                since = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - since >= quietMs) {
                return;
            }
        }
    }

    private static Set<Integer> owned(DefaultMQPushConsumer c, String topic) {
        Set<Integer> ids = new TreeSet<>();
        for (Map.Entry<MessageQueue, ProcessQueue> e
            : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()) {
            if (e.getKey().getTopic().equals(topic) && !e.getValue().isDropped()) {
                ids.add(e.getKey().getQueueId());
            }
        }
        return ids;
    }

    private static Set<Integer> locked(DefaultMQPushConsumer c, String topic) {
        Set<Integer> ids = new TreeSet<>();
        for (Map.Entry<MessageQueue, ProcessQueue> e
            : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()) {
            if (e.getKey().getTopic().equals(topic) && !e.getValue().isDropped() && e.getValue().isLocked()) {
                ids.add(e.getKey().getQueueId());
            }
        }
        return ids;
    }

    private static Map<String, Object> delivery(int who, MessageExt m) {
        return Json.obj("who", who, "body", body(m), "topic", m.getTopic(), "tags", m.getTags(), "keys", m.getKeys(),
            "queueId", m.getQueueId(), "queueOffset", m.getQueueOffset(), "msgId", m.getMsgId(),
            "reconsumeTimes", m.getReconsumeTimes(), "at", System.currentTimeMillis(),
            "storeTimestamp", m.getStoreTimestamp(), "bornTimestamp", m.getBornTimestamp());
    }

    private static Map<String, Object> stored(MessageExt m) {
        Map<String, Object> d = Json.obj("body", body(m), "topic", m.getTopic(), "tags", m.getTags(),
            "keys", m.getKeys(), "queueId", m.getQueueId(), "queueOffset", m.getQueueOffset(),
            "msgId", m.getMsgId(),
            "offsetMsgId", m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : null,
            "commitLogOffset", m.getCommitLogOffset(),
            "storeHost", String.valueOf(m.getStoreHost()), "reconsumeTimes", m.getReconsumeTimes(),
            "delayTimeLevel", m.getDelayTimeLevel(), "sysFlag", m.getSysFlag(), "bodyFull", body(m),
            "bodyLen", m.getBody().length, "bodyHash", java.util.Arrays.hashCode(m.getBody()));
        d.put("properties", new TreeMap<>(m.getProperties()));
        return d;
    }

    private static Map<String, Object> result(String kind, String body, SendResult r) {
        Map<String, Object> d = Json.obj("kind", kind, "body", body, "status", r.getSendStatus().name(),
            "msgId", r.getMsgId(), "offsetMsgId", r.getOffsetMsgId(), "queueId", r.getMessageQueue().getQueueId(),
            "brokerName", r.getMessageQueue().getBrokerName(), "queueOffset", r.getQueueOffset());
        List<Object> decoded = new ArrayList<>();
        if (r.getOffsetMsgId() != null) {
            for (String id : r.getOffsetMsgId().split(",")) {
                try {
                    MessageId mid = MessageDecoder.decodeMessageId(id);
                    decoded.add(Json.obj("address", String.valueOf(mid.getAddress()), "offset", mid.getOffset()));
                } catch (Exception e) {
                    decoded.add(Json.obj("error", e.toString()));
                }
            }
        }
        d.put("decoded", decoded);
        return d;
    }

    private static void error(String what, Throwable e) {
        ERRORS.add(what + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
    }

    /** Every message of topic, by pulling each queue from offset 0. */
    private static List<Map<String, Object>> pullAll(String topic, String expr) throws Exception {
        DefaultMQPullConsumer pc = new DefaultMQPullConsumer("PULL_" + SUFFIX);
        pc.setNamesrvAddr(namesrv);
        pc.setInstanceName("pull" + SUFFIX);
        pc.start();
        List<Map<String, Object>> all = new ArrayList<>();
        try {
            List<MessageQueue> mqs = new ArrayList<>(pc.fetchSubscribeMessageQueues(topic));
            Collections.sort(mqs);
            for (MessageQueue mq : mqs) {
                long offset = 0;
                while (true) {
                    PullResult pr = pc.pull(mq, expr, offset, 32);
                    if (pr.getPullStatus() != PullStatus.FOUND) {
                        break;
                    }
                    for (MessageExt m : pr.getMsgFoundList()) {
                        all.add(stored(m));
                    }
                    offset = pr.getNextBeginOffset();
                }
            }
        } finally {
            pc.shutdown();
        }
        return all;
    }

    private static MessageListenerConcurrently recorder(int who, List<Map<String, Object>> sink) {
        return (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                sink.add(delivery(who, m));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    private static Set<String> bodies(List<Map<String, Object>> deliveries, int who) {
        Set<String> s = new TreeSet<>();
        for (Map<String, Object> d : deliveries) {
            if (who < 0 || ((Integer) d.get("who")) == who) {
                s.add((String) d.get("body"));
            }
        }
        return s;
    }

    private static List<String> names(String prefix, int n) {
        List<String> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            l.add(prefix + i);
        }
        return l;
    }

    private static List<Map<String, Object>> sendAll(DefaultMQProducer p, String topic, List<String> bodies,
                                                     String tags) {
        List<Map<String, Object>> results = new ArrayList<>();
        for (String b : bodies) {
            long t0 = System.nanoTime();
            try {
                Map<String, Object> r = result("sync", b, p.send(msg(topic, tags, "k-" + b, b)));
                r.put("ms", (System.nanoTime() - t0) / 1_000_000);
                results.add(r);
            } catch (Exception e) {
                error("send " + b, e);
            }
        }
        return results;
    }

    /** Sends until the topic exists (auto-created from TBW102) and every queue is routable. */
    private static void createTopic(DefaultMQProducer p, String topic) throws Exception {
        p.send(msg(topic, "warm", "warm", "warm-up"));
        waitUntil(() -> {
            try {
                return p.fetchPublishMessageQueues(topic).size() == 4;
            } catch (Exception e) {
                return false;
            }
        }, WAIT_MS);
    }

    // ------------------------------------------------------------------ scenarios

    /** sync, async, oneway, ordered (selector) and batch sends; then every stored message. */
    private static Map<String, Object> produce(String topic) throws Exception {
        DefaultMQProducer p = producer();
        List<Map<String, Object>> results = new ArrayList<>();
        for (String b : names("sync-", 6)) {
            try {
                results.add(result("sync", b, p.send(msg(topic, "TagA", "k-" + b, b))));
            } catch (Exception e) {
                error("sync " + b, e);
            }
        }
        List<String> async = names("async-", 6);
        CountDownLatch latch = new CountDownLatch(async.size());
        List<Map<String, Object>> asyncResults = new CopyOnWriteArrayList<>();
        for (String b : async) {
            p.send(msg(topic, "TagB", "k-" + b, b), new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    asyncResults.add(result("async", b, r));
                    latch.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    error("async " + b, e);
                    latch.countDown();
                }
            });
        }
        if (!latch.await(30, TimeUnit.SECONDS)) {
            ERRORS.add("async callbacks missing");
        }
        results.addAll(asyncResults);
        for (String b : names("oneway-", 4)) {
            p.sendOneway(msg(topic, "TagC", "k-" + b, b));
        }
        for (int i = 0; i < 8; i++) {
            String b = "ord-" + i;
            try {
                SendResult r = p.send(msg(topic, "TagO", "k-" + b, b),
                    (mqs, m, arg) -> mqs.get((Integer) arg % 2), i);
                results.add(result("ordered", b, r));
            } catch (Exception e) {
                error("ordered " + b, e);
            }
        }
        // compressed by the producer (body over compressMsgBodyOverHowmuch, 4 KiB), and non-ASCII
        StringBuilder big = new StringBuilder("big-");
        for (int i = 0; big.length() < 20_000; i++) {
            big.append(i).append(',');
        }
        bigBody = big.toString();
        try {
            results.add(result("sync", "big", p.send(msg(topic, "TagE", "k-big", bigBody))));
            Message u = msg(topic, "TagE", "k-uni", "uni-h\u00e9llo-\u4e16\u754c");
            u.putUserProperty("prop", "v\u00e4rde \u4e16");
            results.add(result("sync", "uni-h\u00e9llo-\u4e16\u754c", p.send(u)));
        } catch (Exception e) {
            error("big/unicode", e);
        }
        // 3 MiB that do not compress: one message larger than a pull's transfer limits
        byte[] huge = new byte[3 << 20];
        new java.util.Random(42).nextBytes(huge);
        System.arraycopy("huge-".getBytes(StandardCharsets.UTF_8), 0, huge, 0, 5);
        hugeBody = huge;
        try {
            results.add(result("sync", "huge", p.send(new Message(topic, "TagE", "k-huge", huge))));
        } catch (Exception e) {
            error("huge", e);
        }
        List<Message> batch = new ArrayList<>();
        for (String b : names("batch-", 5)) {
            batch.add(msg(topic, "TagD", "k-" + b, b));
        }
        try {
            results.add(result("batch", "batch-*", p.send(batch)));
        } catch (Exception e) {
            error("batch", e);
        }
        p.shutdown();
        List<Map<String, Object>> stored = pullAll(topic, "*");
        for (Map<String, Object> m : stored) {
            if (((String) m.get("body")).startsWith("huge-")) {
                m.put("body", "huge");
                m.put("bigIntact", ((Integer) m.get("bodyLen")) == hugeBody.length
                    && ((Integer) m.get("bodyHash")) == java.util.Arrays.hashCode(hugeBody));
            }
            if (((String) m.get("body")).startsWith("big-")) {
                m.put("body", "big");
                m.put("bigIntact", bigBody.equals(m.get("bodyFull")));
            }
            m.remove("bodyFull");
        }
        return Json.obj("sends", results, "stored", stored);
    }

    /** Two push consumers in one group (clustering) or broadcasting. */
    private static Map<String, Object> cluster(String topic, String group, int n, boolean broadcast)
        throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c0 = push(group, "c0", topic, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        DefaultMQPushConsumer c1 = push(group, "c1", topic, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        if (broadcast) {
            ModelCompat.broadcasting(c0);
            ModelCompat.broadcasting(c1);
        }
        c0.registerMessageListener(recorder(0, got));
        c1.registerMessageListener(recorder(1, got));
        c0.start();
        c1.start();
        boolean stable = waitUntil(() -> {
            Set<Integer> a = owned(c0, topic);
            Set<Integer> b = owned(c1, topic);
            if (broadcast) {
                return a.size() == 4 && b.size() == 4;
            }
            Set<Integer> both = new TreeSet<>(a);
            both.retainAll(b);
            // AllocateMessageQueueAveragely: two queues each
            return a.size() == 2 && b.size() == 2 && both.isEmpty();
        }, WAIT_MS);
        Map<String, Object> ownership = Json.obj("0", new ArrayList<>(owned(c0, topic)),
            "1", new ArrayList<>(owned(c1, topic)));
        List<String> expected = names("m-", n);
        List<Map<String, Object>> sends = sendAll(p, topic, expected, "TagA");
        waitUntil(() -> broadcast ? bodies(got, 0).containsAll(expected) && bodies(got, 1).containsAll(expected)
            : bodies(got, -1).containsAll(expected), WAIT_MS);
        quiet(got, 1000);
        Map<String, Object> out = Json.obj("stable", stable, "ownership", ownership, "sends", sends,
            "deliveries", new ArrayList<>(got));
        if (!broadcast) {
            // consumer 1 leaves (UNREGISTER_CLIENT): consumer 0 takes every queue over
            got.clear();
            c1.shutdown();
            long left = System.currentTimeMillis();
            boolean takeover = waitUntil(() -> owned(c0, topic).size() == 4, WAIT_MS);
            out.put("takeover", takeover);
            out.put("takeoverMs", System.currentTimeMillis() - left);
            List<String> after = names("after-", 12);
            sendAll(p, topic, after, "TagA");
            waitUntil(() -> bodies(got, 0).containsAll(after), WAIT_MS);
            quiet(got, 500);
            out.put("after", new ArrayList<>(got));
        } else {
            c1.shutdown();
        }
        c0.shutdown();
        p.shutdown();
        return out;
    }

    /** MessageListenerOrderly, two consumers; keys*perKey messages, key k to queue k % 4. */
    private static Map<String, Object> orderly(String topic, String group, int keys, int perKey) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer[] cs = new DefaultMQPushConsumer[2];
        for (int i = 0; i < 2; i++) {
            final int who = i;
            cs[i] = push(group, "o" + i, topic, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            cs[i].registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    got.add(delivery(who, m));
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
            cs[i].start();
        }
        boolean stable = waitUntil(() -> {
            Set<Integer> a = locked(cs[0], topic);
            Set<Integer> b = locked(cs[1], topic);
            Set<Integer> both = new TreeSet<>(a);
            both.retainAll(b);
            return a.size() == 2 && b.size() == 2 && both.isEmpty();
        }, WAIT_MS);
        Map<String, Object> locks = Json.obj("0", new ArrayList<>(locked(cs[0], topic)),
            "1", new ArrayList<>(locked(cs[1], topic)));
        List<Map<String, Object>> sends = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        for (int s = 0; s < perKey; s++) {
            for (int k = 0; k < keys; k++) {
                String b = "o-" + k + "-" + s;
                expected.add(b);
                try {
                    SendResult r = p.send(msg(topic, "TagA", "key" + k, b),
                        (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), k);
                    sends.add(result("ordered", b, r));
                } catch (Exception e) {
                    error("ordered " + b, e);
                }
            }
        }
        waitUntil(() -> bodies(got, -1).containsAll(expected), WAIT_MS);
        quiet(got, 1000);
        Map<String, Object> out = Json.obj("stable", stable, "locked", locks, "sends", sends,
            "deliveries", new ArrayList<>(got));
        // consumer 1 leaves (UNLOCK_BATCH_MQ, UNREGISTER_CLIENT): consumer 0 locks every queue
        got.clear();
        cs[1].shutdown();
        boolean takeover = waitUntil(() -> locked(cs[0], topic).size() == 4, WAIT_MS);
        out.put("takeover", takeover);
        List<String> after = new ArrayList<>();
        for (int s = perKey; s < perKey + 3; s++) {
            for (int k = 0; k < keys; k++) {
                String b = "o-" + k + "-" + s;
                after.add(b);
                try {
                    p.send(msg(topic, "TagA", "key" + k, b), (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), k);
                } catch (Exception e) {
                    error("ordered " + b, e);
                }
            }
        }
        waitUntil(() -> bodies(got, 0).containsAll(after), WAIT_MS);
        quiet(got, 500);
        out.put("after", new ArrayList<>(got));
        cs[0].shutdown();
        p.shutdown();
        return out;
    }

    /** TagA, TagB, TagC interleaved; the consumer subscribes "TagA || TagB". */
    private static Map<String, Object> tags(String topic, String group, int n) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = push(group, "t", topic, "TagA || TagB", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.registerMessageListener(recorder(0, got));
        c.start();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            for (String t : new String[] {"TagA", "TagB", "TagC"}) {
                String b = t + "-" + i;
                if (!t.equals("TagC")) {
                    expected.add(b);
                }
                try {
                    p.send(msg(topic, t, "k-" + b, b));
                } catch (Exception e) {
                    error("send " + b, e);
                }
            }
        }
        waitUntil(() -> bodies(got, -1).containsAll(expected), WAIT_MS);
        quiet(got, 1000);
        // What the broker returns for the expression (the client filters again by tag).
        List<Map<String, Object>> pulled = pullAll(topic, "TagA || TagB");
        Map<String, Object> out = Json.obj("deliveries", new ArrayList<>(got), "pulled", pulled);
        c.shutdown();
        p.shutdown();
        return out;
    }

    /** n old messages, then one new group per ConsumeFromWhere, then n new messages. */
    private static Map<String, Object> fromWhere(String topic, String group, int n) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        sendAll(p, topic, names("old-", n), "TagA");
        ConsumeFromWhere[] wheres = {ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP};
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        List<DefaultMQPushConsumer> cs = new ArrayList<>();
        for (int i = 0; i < wheres.length; i++) {
            DefaultMQPushConsumer c = push(group + "_" + wheres[i].name(), "w" + i, topic, "*", wheres[i]);
            if (wheres[i] == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP) {
                c.setConsumeTimestamp(new SimpleDateFormat("yyyyMMddHHmmss").format(new Date()));
            }
            c.registerMessageListener(recorder(i, got));
            c.start();
            cs.add(c);
        }
        waitUntil(() -> {
            for (DefaultMQPushConsumer c : cs) {
                if (owned(c, topic).size() != 4) {
                    return false;
                }
            }
            return true;
        }, WAIT_MS);
        List<String> expected = names("new-", n);
        sendAll(p, topic, expected, "TagA");
        waitUntil(() -> bodies(got, 0).containsAll(expected) && bodies(got, 1).containsAll(expected)
            && bodies(got, 2).containsAll(expected), WAIT_MS);
        quiet(got, 1000);
        Map<String, Object> out = Json.obj("wheres", wheres, "deliveries", new ArrayList<>(got));
        for (DefaultMQPushConsumer c : cs) {
            c.shutdown();
        }
        p.shutdown();
        return out;
    }

    /** Always RECONSUME_LATER with maxReconsumeTimes; then read %DLQ%group. */
    private static Map<String, Object> retryDlq(String topic, String group, int maxReconsume) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = push(group, "r", topic, "TagR", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setMaxReconsumeTimes(maxReconsume);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                Map<String, Object> d = delivery(0, m);
                d.put("properties", new TreeMap<>(m.getProperties()));
                got.add(d);
            }
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        c.start();
        Message m = msg(topic, "TagR", "dlq-key", "doomed");
        m.putUserProperty("custom", "yes");
        SendResult sent = p.send(m);
        Map<String, Object> sendResult = result("sync", "doomed", sent);
        waitUntil(() -> got.size() >= maxReconsume + 1, WAIT_MS);
        String dlq = "%DLQ%" + group;
        List<Map<String, Object>> inDlq = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 30_000;
        while (inDlq.isEmpty() && System.currentTimeMillis() < deadline) {
            try {
                inDlq = pullAll(dlq, "*");
            } catch (Exception e) {
                // the DLQ topic reaches the name server asynchronously
            }
            if (inDlq.isEmpty()) {
                Thread.sleep(200);
            }
        }
        quiet(got, 1000);
        Map<String, Object> out = Json.obj("sent", sendResult, "deliveries", new ArrayList<>(got), "dlq", inDlq);
        c.shutdown();
        p.shutdown();
        return out;
    }

    /**
     * MessageListenerOrderly always answering SUSPEND_CURRENT_QUEUE_A_MOMENT: the client retries
     * locally, then its internal producer sends the message to %RETRY%group with RECONSUME_TIME
     * at the maximum, which the broker must divert to %DLQ%group (handleRetryAndDLQ).
     */
    private static Map<String, Object> orderlyDlq(String topic, String group, int maxReconsume) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = push(group, "od", topic, "TagR", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setMaxReconsumeTimes(maxReconsume);
        c.setSuspendCurrentQueueTimeMillis(100);
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.add(delivery(0, m));
            }
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
        });
        c.start();
        SendResult sent = p.send(msg(topic, "TagR", "odlq-key", "stuck"));
        Map<String, Object> sendResult = result("sync", "stuck", sent);
        waitUntil(() -> got.size() >= maxReconsume + 1, WAIT_MS);
        String dlq = "%DLQ%" + group;
        List<Map<String, Object>> inDlq = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 30_000;
        while (inDlq.isEmpty() && System.currentTimeMillis() < deadline) {
            try {
                inDlq = pullAll(dlq, "*");
            } catch (Exception e) {
                // the DLQ topic reaches the name server asynchronously
            }
            if (inDlq.isEmpty()) {
                Thread.sleep(200);
            }
        }
        // and the queue moves on: a second message is delivered
        List<Map<String, Object>> retry = new ArrayList<>();
        try {
            retry = pullAll("%RETRY%" + group, "*");
        } catch (Exception e) {
            // no retry topic: nothing went there
        }
        quiet(got, 500);
        Map<String, Object> out = Json.obj("sent", sendResult, "deliveries", new ArrayList<>(got), "dlq", inDlq,
            "retry", retry);
        c.shutdown();
        p.shutdown();
        return out;
    }

    /** One message with delayTimeLevel=level; when does a running consumer get it? */
    private static Map<String, Object> delay(String topic, String group, int level) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = push(group, "d", topic, "TagL", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.registerMessageListener(recorder(0, got));
        c.start();
        waitUntil(() -> owned(c, topic).size() == 4, WAIT_MS);
        // a plain message first: the consumer is pulling by the time the delayed one is sent
        p.send(msg(topic, "TagL", "plain", "plain"));
        waitUntil(() -> bodies(got, -1).contains("plain"), WAIT_MS);
        Message m = msg(topic, "TagL", "delayed", "delayed");
        m.setDelayTimeLevel(level);
        long before = System.currentTimeMillis();
        SendResult r = p.send(m);
        waitUntil(() -> bodies(got, -1).contains("delayed"), WAIT_MS);
        // a level past the last one is clamped to the last (18: 1 s on the test broker)
        Message clamped = msg(topic, "TagL", "clamped", "clamped");
        clamped.setDelayTimeLevel(99);
        long clampedAt = System.currentTimeMillis();
        SendResult rc = p.send(clamped);
        waitUntil(() -> bodies(got, -1).contains("clamped"), WAIT_MS);
        Map<String, Object> out = Json.obj("sentAt", before, "sent", result("sync", "delayed", r),
            "clampedAt", clampedAt, "clamped", result("sync", "clamped", rc), "deliveries", new ArrayList<>(got));
        c.shutdown();
        p.shutdown();
        return out;
    }

    private static Map<String, Object> sendOnly(String topic, String prefix, int n) throws Exception {
        long t0 = System.nanoTime();
        DefaultMQProducer p = producer();
        long started = (System.nanoTime() - t0) / 1_000_000;
        List<Map<String, Object>> results = sendAll(p, topic, names(prefix, n), "TagA");
        long sent = (System.nanoTime() - t0) / 1_000_000;
        p.shutdown();
        return Json.obj("sends", results, "startMs", started, "sentMs", sent,
            "shutdownMs", (System.nanoTime() - t0) / 1_000_000);
    }

    /** A push consumer of group until it has every body prefix0..prefix(n-1); all deliveries. */
    private static Map<String, Object> consumeUntil(String topic, String group, String prefix, int n)
        throws Exception {
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = push(group, "u", topic, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.registerMessageListener(recorder(0, got));
        c.start();
        List<String> expected = names(prefix, n);
        boolean all = waitUntil(() -> bodies(got, -1).containsAll(expected), WAIT_MS);
        quiet(got, 1000);
        c.shutdown();  // persists the offsets to the broker
        return Json.obj("complete", all, "deliveries", new ArrayList<>(got));
    }

    /**
     * A producer and a push consumer that live through a broker restart: l1-* are sent and
     * consumed, then "PHASE1" is printed and the driver waits for a line on stdin (the test
     * restarts the broker meanwhile); then l2-* are sent (each retried until SEND_OK, the
     * clients reconnect on their own) and consumed.
     */
    private static Map<String, Object> live(String topic, String group, int n) throws Exception {
        DefaultMQProducer p = producer();
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = push(group, "live", topic, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.registerMessageListener(recorder(0, got));
        List<String> first = names("l1-", n);
        sendAll(p, topic, first, "TagA");
        c.start();
        boolean phase1 = waitUntil(() -> bodies(got, -1).containsAll(first), WAIT_MS);
        quiet(got, 500);
        Out.line("PHASE1 " + phase1);
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        List<String> second = names("l2-", n);
        int failures = 0;
        long restarted = System.currentTimeMillis();
        for (String b : second) {
            long deadline = System.currentTimeMillis() + 30_000;
            while (true) {
                try {
                    p.send(msg(topic, "TagA", "k-" + b, b));
                    break;
                } catch (Exception e) {
                    failures++;
                    if (System.currentTimeMillis() > deadline) {
                        error("send " + b, e);
                        break;
                    }
                    Thread.sleep(200);
                }
            }
        }
        long resentMs = System.currentTimeMillis() - restarted;
        boolean phase2 = waitUntil(() -> bodies(got, -1).containsAll(second), WAIT_MS);
        quiet(got, 1000);
        Map<String, Object> out = Json.obj("phase1", phase1, "phase2", phase2, "sendFailures", failures,
            "resentMs", resentMs, "consumedMs", System.currentTimeMillis() - restarted,
            "deliveries", new ArrayList<>(got));
        c.shutdown();
        p.shutdown();
        return out;
    }

    /** A push consumer that prints "OWNS n" once it owns queues, then waits to be killed. */
    private static Map<String, Object> victim(String topic, String group) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        p.shutdown();
        DefaultMQPushConsumer c = push(group, "victim", topic, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.registerMessageListener(recorder(0, new CopyOnWriteArrayList<>()));
        c.start();
        waitUntil(() -> owned(c, topic).size() == 4, WAIT_MS);
        Out.line("OWNS " + owned(c, topic).size());
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        c.shutdown();
        return Json.obj();
    }

    /**
     * Joins the victim's group, prints "SPLIT" once the queues are shared, then (the test
     * kills the victim with SIGKILL) waits until it owns every queue and consumes n messages.
     */
    private static Map<String, Object> survivor(String topic, String group, int n) throws Exception {
        List<Map<String, Object>> got = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = push(group, "survivor", topic, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.registerMessageListener(recorder(1, got));
        c.start();
        boolean split = waitUntil(() -> owned(c, topic).size() == 2, WAIT_MS);
        Out.line("SPLIT " + split);
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        long killed = System.currentTimeMillis();
        boolean all = waitUntil(() -> owned(c, topic).size() == 4, WAIT_MS);
        long takeoverMs = System.currentTimeMillis() - killed;
        DefaultMQProducer p = producer();
        List<String> expected = names("s-", n);
        sendAll(p, topic, expected, "TagA");
        waitUntil(() -> bodies(got, -1).containsAll(expected), WAIT_MS);
        quiet(got, 500);
        Map<String, Object> out = Json.obj("split", split, "takeover", all, "takeoverMs", takeoverMs,
            "deliveries", new ArrayList<>(got));
        c.shutdown();
        p.shutdown();
        return out;
    }

    /** DefaultLitePullConsumer: assign, seek, poll, commitSync; a second one resumes. */
    private static Map<String, Object> litePull(String topic, String group) throws Exception {
        DefaultMQProducer p = producer();
        createTopic(p, topic);
        List<Map<String, Object>> first = sendAll(p, topic, names("lp-", 8), "TagA");
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("lp1" + SUFFIX);
        c.setAutoCommit(false);
        c.setPollTimeoutMillis(500);
        c.start();
        List<MessageQueue> mqs = new ArrayList<>(c.fetchMessageQueues(topic));
        Collections.sort(mqs);
        c.assign(mqs);
        List<Map<String, Object>> polled = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 30_000;
        while (polled.size() < 9 && System.currentTimeMillis() < deadline) {  // warm-up + 8
            for (MessageExt m : c.poll()) {
                polled.add(delivery(0, m));
            }
        }
        // rewind queue 0 to offset 1 once everything is read (seeking while the first pulls
        // are in flight races in the client itself)
        MessageQueue q0 = mqs.get(0);
        long inQ0 = polled.stream().filter(d -> ((Integer) d.get("queueId")) == 0).count();
        c.seek(q0, 1);
        List<Map<String, Object>> sought = new ArrayList<>();
        deadline = System.currentTimeMillis() + 30_000;
        while (sought.size() < inQ0 - 1 && System.currentTimeMillis() < deadline) {
            for (MessageExt m : c.poll()) {
                sought.add(delivery(0, m));
            }
        }
        c.commitSync();
        Map<String, Object> committed = new LinkedHashMap<>();
        for (MessageQueue mq : mqs) {
            try {
                committed.put(String.valueOf(mq.getQueueId()), c.committed(mq));
            } catch (Exception e) {
                error("committed", e);
            }
        }
        c.shutdown();
        List<Map<String, Object>> second = sendAll(p, topic, names("lp2-", 4), "TagA");
        DefaultLitePullConsumer c2 = new DefaultLitePullConsumer(group);
        c2.setNamesrvAddr(namesrv);
        c2.setInstanceName("lp2" + SUFFIX);
        c2.setAutoCommit(false);
        c2.setPollTimeoutMillis(500);
        c2.start();
        c2.assign(mqs);
        List<Map<String, Object>> resumed = new ArrayList<>();
        deadline = System.currentTimeMillis() + 30_000;
        while (resumed.size() < 4 && System.currentTimeMillis() < deadline) {
            for (MessageExt m : c2.poll()) {
                resumed.add(delivery(1, m));
            }
        }
        // and a bit longer, to see anything re-delivered
        for (int i = 0; i < 2; i++) {
            for (MessageExt m : c2.poll()) {
                resumed.add(delivery(1, m));
            }
        }
        Map<String, Object> committed2 = new HashMap<>();
        c2.commitSync();
        for (MessageQueue mq : mqs) {
            try {
                committed2.put(String.valueOf(mq.getQueueId()), c2.committed(mq));
            } catch (Exception e) {
                error("committed2", e);
            }
        }
        c2.shutdown();
        p.shutdown();
        List<Object> queueIds = new ArrayList<>();
        for (MessageQueue mq : mqs) {
            queueIds.add(mq.getQueueId());
        }
        return Json.obj("queues", queueIds, "sends", first, "sends2", second, "polled", polled, "sought", sought,
            "committed", committed, "resumed", resumed, "committed2", committed2);
    }
}
