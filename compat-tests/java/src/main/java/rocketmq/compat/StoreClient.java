package rocketmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Drives a broker through the official client, for the store compatibility tests.
 *
 * <pre>
 * StoreClient produce NAMESRV TOPIC COUNT   sends COUNT messages round-robin over the queues
 *                                           (tags, keys, a user property), one batch of 3 to
 *                                           queue 0 and one DELAY level 4 message; prints one
 *                                           "sent" line per message
 * StoreClient consume NAMESRV TOPIC         pulls every queue of TOPIC from offset 0; one "msg"
 *                                           line per message
 * StoreClient view NAMESRV TOPIC ID...      viewMessage(offsetMsgId) for each id
 * StoreClient query NAMESRV TOPIC KEY...    queryMessage(topic, key) for each key
 * </pre>
 * Every line is a JSON object; the last one is {"event":"done"}.
 */
public final class StoreClient {
    private StoreClient() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        String mode = args[0];
        String namesrv = args[1];
        String topic = args[2];
        switch (mode) {
            case "produce":
                produce(namesrv, topic, Integer.parseInt(args[3]));
                break;
            case "consume":
            case "view":
            case "query":
                DefaultMQPullConsumer consumer = new DefaultMQPullConsumer("compat_store_cg");
                consumer.setNamesrvAddr(namesrv);
                consumer.start();
                try {
                    waitForRoute(consumer, topic);
                    if (mode.equals("consume")) {
                        consume(consumer, topic);
                    } else if (mode.equals("view")) {
                        for (int i = 3; i < args.length; i++) {
                            print("view", consumer.viewMessage(topic, args[i]));
                        }
                    } else {
                        for (int i = 3; i < args.length; i++) {
                            QueryResult q = consumer.queryMessage(topic, args[i], 32, 0, Long.MAX_VALUE);
                            for (MessageExt m : q.getMessageList()) {
                                Map<String, Object> line = describe("query", m);
                                line.put("key", args[i]);
                                Out.json(line);
                            }
                        }
                    }
                } finally {
                    consumer.shutdown();
                }
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
        Out.json(Json.obj("event", "done"));
        System.exit(0);
    }

    private static void produce(String namesrv, String topic, int count) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("compat_store_pg");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(15000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        try {
            Proto.createTopic(producer, topic, 4);
            List<MessageQueue> queues = null;
            long deadline = System.currentTimeMillis() + 30000;
            while (queues == null) {  // until the broker has registered the new topic
                try {
                    queues = new ArrayList<>(producer.fetchPublishMessageQueues(topic));
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                    Thread.sleep(200);
                }
            }
            queues.sort(Comparator.comparingInt(MessageQueue::getQueueId));
            for (int i = 0; i < count; i++) {
                Message m = new Message(topic, "Tag" + (i % 3), "key-" + i, ("body-" + i).getBytes(StandardCharsets.UTF_8));
                m.putUserProperty("idx", Integer.toString(i));
                SendResult r = producer.send(m, queues.get(i % queues.size()));
                sent(r, m, "single");
            }
            List<Message> batch = new ArrayList<>();
            for (int j = 0; j < 3; j++) {
                Message m = new Message(topic, "TagB", "batch-" + j, ("batch-body-" + j).getBytes(StandardCharsets.UTF_8));
                batch.add(m);
            }
            SendResult r = producer.send(batch, queues.get(0));
            String[] ids = r.getMsgId().split(",");
            String[] offsetIds = r.getOffsetMsgId().split(",");
            for (int j = 0; j < batch.size(); j++) {
                Out.json(Json.obj("event", "sent", "kind", "batch", "status", r.getSendStatus().toString(),
                    "msgId", ids[j], "offsetMsgId", offsetIds[j], "queueId", r.getMessageQueue().getQueueId(),
                    "queueOffset", r.getQueueOffset() + j, "keys", batch.get(j).getKeys(),
                    "body", new String(batch.get(j).getBody(), StandardCharsets.UTF_8)));
            }
            Message delayed = new Message(topic, "TagD", "delay-key", "delayed-body".getBytes(StandardCharsets.UTF_8));
            delayed.setDelayTimeLevel(4);
            sent(producer.send(delayed, queues.get(1)), delayed, "delay");
        } finally {
            producer.shutdown();
        }
    }

    private static void sent(SendResult r, Message m, String kind) {
        Out.json(Json.obj("event", "sent", "kind", kind, "status", r.getSendStatus().toString(),
            "msgId", r.getMsgId(), "offsetMsgId", r.getOffsetMsgId(),
            "queueId", r.getMessageQueue().getQueueId(), "queueOffset", r.getQueueOffset(),
            "keys", m.getKeys(), "body", new String(m.getBody(), StandardCharsets.UTF_8)));
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send failed: " + r);
        }
    }

    /** A broker may print "boot success" before it has registered its topics with the namesrv. */
    private static List<MessageQueue> waitForRoute(DefaultMQPullConsumer consumer, String topic) throws Exception {
        long deadline = System.currentTimeMillis() + 60000;
        while (true) {
            try {
                return new ArrayList<>(consumer.fetchSubscribeMessageQueues(topic));
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private static void consume(DefaultMQPullConsumer consumer, String topic) throws Exception {
        List<MessageQueue> queues = waitForRoute(consumer, topic);
        queues.sort(Comparator.comparingInt(MessageQueue::getQueueId));
        for (MessageQueue mq : queues) {
            long offset = 0;
            while (true) {
                PullResult pr = consumer.pull(mq, "*", offset, 32);
                if (pr.getPullStatus() != PullStatus.FOUND) {
                    consumer.updateConsumeOffset(mq, offset);
                    consumer.getDefaultMQPullConsumerImpl().getOffsetStore().persist(mq);
                    Out.json(Json.obj("event", "end", "queueId", mq.getQueueId(),
                        "status", pr.getPullStatus().toString(), "nextBeginOffset", pr.getNextBeginOffset(),
                        "maxOffset", pr.getMaxOffset(), "minOffset", pr.getMinOffset()));
                    break;
                }
                for (MessageExt m : pr.getMsgFoundList()) {
                    print("msg", m);
                }
                offset = pr.getNextBeginOffset();
            }
        }
    }

    private static Map<String, Object> describe(String event, MessageExt m) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        line.put("msgId", m.getMsgId());
        line.put("offsetMsgId", MessageDecoder.createMessageId(m.getStoreHost(), m.getCommitLogOffset()));
        line.put("topic", m.getTopic());
        line.put("queueId", m.getQueueId());
        line.put("queueOffset", m.getQueueOffset());
        line.put("commitLogOffset", m.getCommitLogOffset());
        line.put("storeSize", m.getStoreSize());
        line.put("bodyCRC", m.getBodyCRC());
        line.put("tags", m.getTags());
        line.put("keys", m.getKeys());
        line.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
        line.put("storeTimestamp", m.getStoreTimestamp());
        line.put("idx", m.getUserProperty("idx"));
        return line;
    }

    private static void print(String event, MessageExt m) {
        Out.json(describe(event, m));
    }
}
