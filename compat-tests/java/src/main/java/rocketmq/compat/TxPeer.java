package rocketmq.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The official TransactionMQProducer (and a push consumer) for test_transaction_interop.py:
 * one command per stdin line, TAB-separated; one JSON line per command, and asynchronous
 * event lines for the broker's check-backs and for consumed messages.
 *
 *   producer NAME NAMESRV GROUP           start a TransactionMQProducer: {"op","name"}
 *   send NAME TOPIC KEY LOCAL CHECKS SIZE [IMMUNITY_S]
 *                                         sendMessageInTransaction of a SIZE-byte body with key KEY;
 *                                         the local transaction answers LOCAL (COMMIT_MESSAGE,
 *                                         ROLLBACK_MESSAGE, UNKNOW), the check-backs answer the
 *                                         comma-separated CHECKS in turn (the last one repeats):
 *                                         {"op","key","status","local","msgId","offsetMsgId","queueId",
 *                                         "queueOffset","transactionId"}
 *   plan KEY CHECKS                       new check-back answers for KEY: {"op","key"}
 *   shutdown NAME                         producer.shutdown(): {"op","name"}
 *   consume NAME NAMESRV TOPIC GROUP      a push consumer from the first offset: {"op","name"}
 *
 * Events: {"event":"check","producer","key","times","topic","answer","transactionId"} for each
 * checkLocalTransaction; {"event":"msg","consumer","key","topic","queueId","queueOffset",
 * "bodyLen","tranMsg","pgroup","sysFlag"} for each consumed message.
 */
public final class TxPeer {
    private static final Map<String, TransactionMQProducer> PRODUCERS = new ConcurrentHashMap<>();
    private static final Map<String, DefaultMQPushConsumer> CONSUMERS = new ConcurrentHashMap<>();
    private static final Map<String, List<String>> CHECK_PLANS = new ConcurrentHashMap<>();
    private static final Map<String, AtomicInteger> CHECKS_SEEN = new ConcurrentHashMap<>();

    private TxPeer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Out.json(Json.obj("ready", true));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] a = line.split("\t");
            Map<String, Object> out;
            try {
                out = run(a);
            } catch (Throwable t) {
                out = Json.obj("op", a[0], "error", t.getClass().getName() + ": " + t.getMessage());
            }
            Out.json(out);
        }
        for (TransactionMQProducer p : PRODUCERS.values()) {
            p.shutdown();
        }
        for (DefaultMQPushConsumer c : CONSUMERS.values()) {
            c.shutdown();
        }
        Out.json(Json.obj("done", true));
        System.exit(0);
    }

    private static Map<String, Object> run(String[] a) throws Exception {
        switch (a[0]) {
            case "producer":
                return producer(a[1], a[2], a[3]);
            case "send":
                return send(a);
            case "shutdown": {
                TransactionMQProducer p = PRODUCERS.remove(a[1]);
                if (p != null) {
                    p.shutdown();
                }
                return Json.obj("op", "shutdown", "name", a[1]);
            }
            case "consume":
                return consume(a[1], a[2], a[3], a[4]);
            case "plan":
                CHECK_PLANS.put(a[1], Arrays.asList(a[2].split(",")));
                CHECKS_SEEN.remove(a[1]);
                return Json.obj("op", "plan", "key", a[1]);
            default:
                throw new IllegalArgumentException("unknown op " + a[0]);
        }
    }

    private static Map<String, Object> producer(String name, String namesrv, String group) throws Exception {
        TransactionMQProducer producer = new TransactionMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("tx-" + name);
        producer.setSendMsgTimeout(10000);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.valueOf((String) arg);
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String key = msg.getKeys();
                List<String> plan = CHECK_PLANS.getOrDefault(key, List.of("UNKNOW"));
                int n = CHECKS_SEEN.computeIfAbsent(key, k -> new AtomicInteger()).getAndIncrement();
                String answer = plan.get(Math.min(n, plan.size() - 1));
                Out.json(Json.obj("event", "check", "producer", name, "key", key,
                    "times", msg.getProperty("TRANSACTION_CHECK_TIMES"), "topic", msg.getTopic(),
                    "answer", answer, "transactionId", msg.getTransactionId(), "bodyLen", msg.getBody().length));
                return LocalTransactionState.valueOf(answer);
            }
        });
        producer.start();
        PRODUCERS.put(name, producer);
        return Json.obj("op", "producer", "name", name);
    }

    private static Map<String, Object> send(String[] a) throws Exception {
        TransactionMQProducer producer = PRODUCERS.get(a[1]);
        String topic = a[2];
        String key = a[3];
        String local = a[4];
        CHECK_PLANS.put(key, Arrays.asList(a[5].split(",")));
        byte[] body = new byte[Integer.parseInt(a[6])];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) ('a' + (i * 7 + key.length()) % 26);
        }
        Message msg = new Message(topic, "TagTx", key, body);
        if (a.length > 7) {
            msg.putUserProperty("CHECK_IMMUNITY_TIME_IN_SECONDS", a[7]);
        }
        TransactionSendResult r = producer.sendMessageInTransaction(msg, local);
        return Json.obj("op", "send", "key", key, "status", r.getSendStatus().name(),
            "local", r.getLocalTransactionState().name(), "msgId", r.getMsgId(), "offsetMsgId", r.getOffsetMsgId(),
            "queueId", r.getMessageQueue().getQueueId(), "queueOffset", r.getQueueOffset(),
            "transactionId", r.getTransactionId());
    }

    private static Map<String, Object> consume(String name, String namesrv, String topic, String group)
        throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("txc-" + name);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                Out.json(Json.obj("event", "msg", "consumer", name, "key", m.getKeys(), "topic", m.getTopic(),
                    "queueId", m.getQueueId(), "queueOffset", m.getQueueOffset(), "bodyLen", m.getBody().length,
                    "tranMsg", m.getProperty("TRAN_MSG"), "pgroup", m.getProperty("PGROUP"),
                    "sysFlag", m.getSysFlag(), "msgId", m.getMsgId()));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        CONSUMERS.put(name, consumer);
        return Json.obj("op", "consume", "name", name);
    }
}
