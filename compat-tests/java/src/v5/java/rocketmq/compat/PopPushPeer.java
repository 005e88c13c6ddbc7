package rocketmq.compat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * DefaultMQPushConsumer of the 5.x remoting client in POP mode, for test_pop_push.py.
 *
 * Usage: PopPushPeer NAMESRV BROKER_ADDR TAG CLUSTER
 *
 * Creates three topics on BROKER_ADDR and sets their groups' request mode to POP (SET_MESSAGE_REQUEST_MODE):
 * the retry group's with mqadmin setConsumeMode -c CLUSTER (MQAdminStartup in this JVM, its stdout
 * captured), the others' with DefaultMQAdminExt.setMessageRequestMode (what setConsumeMode -b calls); sends, then runs three push consumers at once (clientRebalance=false, so the client asks
 * the broker with QUERY_ASSIGNMENT and switches to POP):
 *   ack      16 messages, every one CONSUME_SUCCESS: each delivered once, acked, never again;
 *   retry    "ok" consumed, "once" RECONSUME_LATER the first time, "never" always RECONSUME_LATER
 *            with maxReconsumeTimes=2: redelivered through changeInvisibleTime with reconsumeTimes
 *            counted, "never" acked by the client at its limit (5.x sends no POP message to a DLQ);
 *   orderly  MessageListenerOrderly with the group in POP mode (the 5.x client rebalances orderly
 *            consumers itself and pulls), 2 queues x 5 messages, per-queue order.
 * The client's POP delay table (10 s, 30 s, ... by default, not configurable) is set to 1 s through
 * reflection to keep the run short. Every delivery is recorded; once all the expected ones have
 * arrived a quiet period longer than the POP invisible time shows nothing is redelivered.
 * Prints one JSON line {"setConsumeMode": mqadmin's stdout, "deliveries": {scenario: [...]}, "timedOut"} and exits.
 */
public final class PopPushPeer {
    private static final long INVISIBLE_MS = 5000;
    private static final long QUIET_MS = INVISIBLE_MS + 4000;
    private static final long TIMEOUT_MS = 60_000;
    private static final int ACK_COUNT = 16;
    private static final int ORDER_QUEUES = 2;
    private static final int ORDER_PER_QUEUE = 5;

    private static final Map<String, List<Map<String, Object>>> DELIVERIES = new TreeMap<>();
    private static volatile long lastDelivery = System.currentTimeMillis();

    private PopPushPeer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        String namesrv = args[0];
        String addr = args[1];
        String tag = args[2];
        String cluster = args[3];
        String suffix = tag + Long.toHexString(System.nanoTime());
        DefaultMQAdminExt admin = new DefaultMQAdminExt(15000);
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("poppusha" + suffix);
        admin.start();
        String[] scenarios = {"ack", "retry", "orderly"};
        for (String s : scenarios) {
            DELIVERIES.put(s, new ArrayList<>());
            TopicConfig tc = new TopicConfig(topic(tag, s), s.equals("orderly") ? ORDER_QUEUES : 4,
                s.equals("orderly") ? ORDER_QUEUES : 4);
            admin.createAndUpdateTopicConfig(addr, tc);
            if (!"retry".equals(s)) {
                admin.setMessageRequestMode(addr, topic(tag, s), group(tag, s), MessageRequestMode.POP, 1, 15000);
            }
        }
        // the retry group through mqadmin itself, by cluster (-c: every master the name server lists)
        String cliOut = mqadmin("setConsumeMode", "-n", namesrv, "-c", cluster, "-t", topic(tag, "retry"),
            "-g", group(tag, "retry"), "-m", "POP", "-q", "1");
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        for (String s : scenarios) {  // the name server must route a new topic before clients use it
            while (true) {
                try {
                    admin.examineTopicRouteInfo(topic(tag, s));
                    break;
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                    Thread.sleep(100);
                }
            }
        }
        send(namesrv, tag, suffix);
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (String s : scenarios) {
            consumers.add(consumer(namesrv, tag, s, suffix));
        }
        boolean timedOut = false;
        while (!complete()) {
            if (System.currentTimeMillis() > deadline) {
                timedOut = true;
                break;
            }
            Thread.sleep(50);
        }
        while (!timedOut && System.currentTimeMillis() - lastDelivery < QUIET_MS
            && System.currentTimeMillis() < deadline + QUIET_MS) {
            Thread.sleep(100);
        }
        for (DefaultMQPushConsumer c : consumers) {
            c.shutdown();
        }
        admin.shutdown();
        synchronized (DELIVERIES) {
            Out.json(Json.obj("setConsumeMode", cliOut, "deliveries", DELIVERIES, "timedOut", timedOut));
        }
        System.exit(0);
    }

    private static String mqadmin(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream saved = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            MQAdminStartup.main0(args, null);
        } finally {
            System.setOut(saved);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static String topic(String tag, String scenario) {
        return "PopPush" + tag + "_" + scenario;
    }

    private static String group(String tag, String scenario) {
        return "PopPushGroup" + tag + "_" + scenario;
    }

    private static void send(String namesrv, String tag, String suffix) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("PopPushProducer" + tag);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("poppushp" + suffix);
        producer.setSendMsgTimeout(15000);
        producer.start();
        List<Message> plain = new ArrayList<>();
        for (int i = 0; i < ACK_COUNT; i++) {
            plain.add(new Message(topic(tag, "ack"), "T", ("a" + i).getBytes(StandardCharsets.UTF_8)));
        }
        for (String body : Arrays.asList("ok", "once", "never")) {
            plain.add(new Message(topic(tag, "retry"), "T", body.getBytes(StandardCharsets.UTF_8)));
        }
        for (Message m : plain) {
            check(producer.send(m));
        }
        for (int i = 0; i < ORDER_PER_QUEUE; i++) {
            for (int q = 0; q < ORDER_QUEUES; q++) {
                Message m = new Message(topic(tag, "orderly"), "T", ("q" + q + "-" + i).getBytes(StandardCharsets.UTF_8));
                final int queue = q;
                check(producer.send(m, (mqs, msg, arg) -> {
                    for (MessageQueue mq : mqs) {
                        if (mq.getQueueId() == queue) {
                            return mq;
                        }
                    }
                    throw new IllegalStateException("no queue " + queue + " in " + mqs);
                }, null));
            }
        }
        producer.shutdown();
    }

    private static void check(SendResult r) {
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send: " + r);
        }
    }

    private static DefaultMQPushConsumer consumer(String namesrv, String tag, String scenario, String suffix)
        throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group(tag, scenario));
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("poppushc" + scenario + suffix);
        c.setClientRebalance(false);
        c.setPopInvisibleTime(INVISIBLE_MS);
        c.setPopBatchNums(4);
        c.setMaxReconsumeTimes(2);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic(tag, scenario), "*");
        if ("orderly".equals(scenario)) {
            c.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                for (MessageExt m : msgs) {
                    record(scenario, m);
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                boolean later = false;
                for (MessageExt m : msgs) {
                    record(scenario, m);
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    later |= "never".equals(body) || ("once".equals(body) && m.getReconsumeTimes() == 0);
                }
                return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.setConsumeMessageBatchMaxSize(1);  // RECONSUME_LATER applies to the whole batch
        }
        // the POP delay table, indexed by reconsume times (10 s, 30 s, ...): 1 s each
        Field impl = DefaultMQPushConsumer.class.getDeclaredField("defaultMQPushConsumerImpl");
        impl.setAccessible(true);
        Field table = DefaultMQPushConsumerImpl.class.getDeclaredField("popDelayLevel");
        table.setAccessible(true);
        Arrays.fill((int[]) table.get(impl.get(c)), 1);
        c.start();
        return c;
    }

    private static void record(String scenario, MessageExt m) {
        synchronized (DELIVERIES) {
            DELIVERIES.get(scenario).add(Json.obj("body", new String(m.getBody(), StandardCharsets.UTF_8),
                "reconsumeTimes", m.getReconsumeTimes(), "topic", m.getTopic(), "queueId", m.getQueueId(),
                "popCk", m.getProperty(MessageConst.PROPERTY_POP_CK) != null, "ms", System.currentTimeMillis(),
                "msgId", m.getMsgId(), "props", new TreeMap<>(m.getProperties())));
            lastDelivery = System.currentTimeMillis();
        }
    }

    private static boolean complete() {
        synchronized (DELIVERIES) {
            // ack: every message; retry: ok once, once twice, never three times; orderly: every message
            return DELIVERIES.get("ack").size() >= ACK_COUNT && DELIVERIES.get("retry").size() >= 6
                && DELIVERIES.get("orderly").size() >= ORDER_QUEUES * ORDER_PER_QUEUE;
        }
    }
}
