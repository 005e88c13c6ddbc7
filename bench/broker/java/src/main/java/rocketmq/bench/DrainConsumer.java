package rocketmq.bench;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * How fast the official push consumer drains a backlog: a new group reads a topic from its
 * first offset (default settings otherwise: 20 threads, batches of 1, pulls of 32) until
 * count messages arrived. The clock starts at the first message, so start-up and the first
 * rebalance are not counted.
 *
 * <p>Usage: DrainConsumer namesrvAddr topic group count timeoutSeconds
 *
 * <p>Prints one JSON line: received, seconds, rate.
 */
public final class DrainConsumer {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        long count = Long.parseLong(args[3]);
        long timeoutMs = (long) (Double.parseDouble(args[4]) * 1000);

        AtomicLong received = new AtomicLong();
        AtomicLong first = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName(Long.toString(System.nanoTime()));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            first.compareAndSet(0, System.nanoTime());
            if (received.addAndGet(msgs.size()) >= count) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        done.await(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
        long end = System.nanoTime();
        consumer.shutdown();
        double seconds = first.get() == 0 ? Double.NaN : (end - first.get()) / 1e9;
        System.out.println(String.format(java.util.Locale.ROOT,
            "{\"received\": %d, \"seconds\": %.3f, \"rate\": %.1f}", received.get(), seconds,
            received.get() / seconds));
        System.exit(0);
    }
}
