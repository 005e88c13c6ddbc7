package rocketmq.bench;

import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One official push consumer (DefaultMQPushConsumer, its defaults: 20 consume threads, pulls
 * of 32) of a new group reading a SQL92-filtered topic from its first offset until it holds
 * {@code expected} distinct matching messages (numbered by SqlLoad's property {@code i}), or
 * the timeout. It then waits {@code settleSeconds} more for anything beyond them.
 *
 * <p>Usage: SqlScan namesrvAddr topic group expression expected timeoutSeconds settleSeconds
 *
 * <p>Prints one JSON line: received (messages delivered), distinct (distinct numbers among
 * them), not_matching (delivered messages the expression does not select: {@code a} != 0),
 * received_at_done, seconds (first message to the last expected one), seconds_from_start
 * (consumer.start() to the last expected one), first_message_s (consumer.start() to the first).
 */
public final class SqlScan {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        String expression = args[3];
        long expected = Long.parseLong(args[4]);
        long timeoutMs = (long) (Double.parseDouble(args[5]) * 1000);
        long settleMs = (long) (Double.parseDouble(args[6]) * 1000);

        AtomicLong received = new AtomicLong();
        AtomicLong notMatching = new AtomicLong();
        AtomicLong first = new AtomicLong();
        AtomicLong doneAt = new AtomicLong();
        AtomicLong receivedAtDone = new AtomicLong();
        BitSet seen = new BitSet();
        long[] distinct = new long[1];
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName(Long.toString(System.nanoTime()));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, MessageSelector.bySql(expression));
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            first.compareAndSet(0, System.nanoTime());
            for (MessageExt m : msgs) {
                received.incrementAndGet();
                if (!"0".equals(m.getUserProperty("a"))) {
                    notMatching.incrementAndGet();
                }
                String i = m.getUserProperty("i");
                if (i == null) {
                    continue;
                }
                synchronized (seen) {
                    int n = Integer.parseInt(i);
                    if (!seen.get(n)) {
                        seen.set(n);
                        if (++distinct[0] == expected) {
                            doneAt.set(System.nanoTime());
                            receivedAtDone.set(received.get());
                            done.countDown();
                        }
                    }
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long start = System.nanoTime();
        consumer.start();
        boolean complete = done.await(timeoutMs, TimeUnit.MILLISECONDS);
        long end = complete ? doneAt.get() : System.nanoTime();
        if (complete) {
            Thread.sleep(settleMs);
        }
        consumer.shutdown();
        long d;
        synchronized (seen) {
            d = distinct[0];
        }
        System.out.println(String.format(Locale.ROOT,
            "{\"complete\": %s, \"received\": %d, \"distinct\": %d, \"not_matching\": %d, \"received_at_done\": %d, "
                + "\"seconds\": %.3f, \"seconds_from_start\": %.3f, \"first_message_s\": %.3f}",
            complete, received.get(), d, notMatching.get(), receivedAtDone.get(),
            first.get() == 0 ? Double.NaN : (end - first.get()) / 1e9, (end - start) / 1e9,
            first.get() == 0 ? Double.NaN : (first.get() - start) / 1e9));
        System.exit(0);
    }
}
