package rocketmq.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.impl.consumer.PullAPIWrapper;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The official 4.9 producer and pull consumer for the replication tests (issue 23's "the
 * official producer sends 100k messages ... a Java consumer reads them from the slave").
 *
 * Usage:
 *   HaPeer produce namesrvAddr topic count threads bodySize
 *     DefaultMQProducer, count synchronous sends spread over threads; body "ha-&lt;i&gt;-"
 *     padded with '.' to bodySize bytes. Prints {"sent","ok","failed","statuses","error"}.
 *   HaPeer slavepull namesrvAddr topic brokerId
 *     DefaultMQPullConsumer with the broker id fixed (PullAPIWrapper's connectBrokerByUser and
 *     defaultBrokerId, the switch Java's own tools use), every queue pulled from offset 0 to its
 *     max offset (asked of the master) in batches of 32. Prints
 *     {"pulled","unique","max_index","queues","error"}: unique counts distinct "ha-&lt;i&gt;-"
 *     bodies, other bodies count in pulled only.
 */
public final class HaPeer {
    private HaPeer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        Map<String, Object> result;
        if ("produce".equals(args[0])) {
            result = produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                Integer.parseInt(args[5]));
        } else {
            result = slavePull(args[1], args[2], Long.parseLong(args[3]));
        }
        Out.json(result);
        System.exit(0);
    }

    private static String suffix() {
        return Long.toHexString(System.nanoTime());
    }

    private static Map<String, Object> produce(String namesrv, String topic, int count, int threads, int size)
        throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("HaPeerProducer" + suffix());
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("hap" + suffix());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        AtomicInteger next = new AtomicInteger();
        AtomicInteger ok = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicReference<String> error = new AtomicReference<>();
        Map<String, Integer> statuses = Collections.synchronizedMap(new TreeMap<>());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        for (int t = 0; t < threads; t++) {
            pool.submit(() -> {
                for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                    StringBuilder body = new StringBuilder("ha-").append(i).append('-');
                    while (body.length() < size) {
                        body.append('.');
                    }
                    try {
                        SendResult r = producer.send(new Message(topic, "TagA", "hk" + i,
                            body.toString().getBytes(StandardCharsets.UTF_8)));
                        statuses.merge(r.getSendStatus().name(), 1, Integer::sum);
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            ok.incrementAndGet();
                        }
                    } catch (Exception e) {
                        failed.incrementAndGet();
                        error.compareAndSet(null, e.toString());
                    }
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.HOURS);
        producer.shutdown();
        return Json.obj("sent", count, "ok", ok.get(), "failed", failed.get(), "statuses", new TreeMap<>(statuses),
            "error", error.get());
    }

    @SuppressWarnings("deprecation")
    private static Map<String, Object> slavePull(String namesrv, String topic, long brokerId) throws Exception {
        DefaultMQPullConsumer c = new DefaultMQPullConsumer("HaPeerPull" + suffix());
        c.setNamesrvAddr(namesrv);
        c.setInstanceName("happ" + suffix());
        c.start();
        PullAPIWrapper wrapper = c.getDefaultMQPullConsumerImpl().getPullAPIWrapper();
        wrapper.setConnectBrokerByUser(true);
        wrapper.setDefaultBrokerId(brokerId);
        BitSet seen = new BitSet();
        long pulled = 0;
        int maxIndex = -1;
        String error = null;
        List<String> queues = new ArrayList<>();
        try {
            List<MessageQueue> mqs = new ArrayList<>(c.fetchSubscribeMessageQueues(topic));
            Collections.sort(mqs);
            for (MessageQueue mq : mqs) {
                long max = c.maxOffset(mq);
                long offset = 0;
                while (offset < max) {
                    PullResult r = c.pull(mq, "*", offset, 32, 10_000);
                    if (r.getPullStatus() == PullStatus.FOUND) {
                        for (MessageExt m : r.getMsgFoundList()) {
                            pulled++;
                            String body = new String(m.getBody(), StandardCharsets.UTF_8);
                            if (body.startsWith("ha-")) {
                                int i = Integer.parseInt(body.substring(3, body.indexOf('-', 3)));
                                seen.set(i);
                                maxIndex = Math.max(maxIndex, i);
                            }
                        }
                    } else if (r.getNextBeginOffset() <= offset) {
                        throw new IllegalStateException(r.getPullStatus() + " at " + offset + " of " + mq);
                    }
                    offset = r.getNextBeginOffset();
                }
                queues.add(mq.getBrokerName() + "/" + mq.getQueueId() + ":" + max);
            }
        } catch (Exception e) {
            error = e.toString();
        } finally {
            c.shutdown();
        }
        return Json.obj("pulled", pulled, "unique", seen.cardinality(), "max_index", maxIndex, "queues", queues,
            "error", error);
    }
}
