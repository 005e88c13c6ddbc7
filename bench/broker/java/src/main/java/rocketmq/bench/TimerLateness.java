package rocketmq.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Timer-message delivery lateness on the official 5.5.0 client: a push consumer (new group,
 * from the last offset) is started and proven to receive (a plain probe message must arrive
 * first); then count messages are sent, one thread at a steady rate over spreadSeconds, each
 * with {@link Message#setDeliverTimeMs} (TIMER_DELIVER_MS) = its scheduled send time +
 * delaySeconds, so that the delivery times are spread evenly over spreadSeconds as well and
 * the broker holds about rate x delaySeconds timers at any time. For every message received,
 * lateness = the consumer's wall clock at the listener - its deliver time (same host, same
 * clock). A negative lateness is an early delivery: both brokers round the deliver time down
 * to their timerPrecisionMs (an exact multiple one tick further), so early by less than one
 * tick is by design; earlyBeyondTick counts what is earlier still.
 *
 * <p>Usage: TimerLateness namesrvAddr topic group count spreadSeconds delaySeconds bodySize precisionMs
 *
 * <p>Prints one JSON line.
 */
public final class TimerLateness {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        int count = Integer.parseInt(args[3]);
        double spread = Double.parseDouble(args[4]);
        double delay = Double.parseDouble(args[5]);
        byte[] body = new byte[Integer.parseInt(args[6])];
        long precisionMs = Long.parseLong(args[7]);
        Arrays.fill(body, (byte) 'a');

        long[] lateness = new long[count];
        AtomicInteger received = new AtomicInteger();
        LongAdder duplicates = new LongAdder();
        LongAdder foreign = new LongAdder();
        ConcurrentHashMap<Integer, Boolean> seen = new ConcurrentHashMap<>();
        CountDownLatch probe = new CountDownLatch(1);
        CountDownLatch all = new CountDownLatch(count);
        String probeKey = "probe-" + System.nanoTime();

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("timer-consumer-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                if (probeKey.equals(m.getKeys())) {
                    probe.countDown();
                    continue;
                }
                String i = m.getUserProperty("i");
                String d = m.getUserProperty("d");
                if (i == null || d == null) {
                    foreign.increment();
                    continue;
                }
                int n = Integer.parseInt(i);
                if (seen.putIfAbsent(n, Boolean.TRUE) != null) {
                    duplicates.increment();
                    continue;
                }
                lateness[n] = now - Long.parseLong(d);
                received.incrementAndGet();
                all.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("bench_timer_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("timer-producer-" + System.nanoTime());
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();

        // the consumer must be pulling before the first timer is due: resend the probe until it arrives
        long probeStart = System.nanoTime();
        while (true) {
            Message p = new Message(topic, body);
            p.setKeys(probeKey);
            producer.send(p);
            if (probe.await(2, TimeUnit.SECONDS)) {
                break;
            }
            if (System.nanoTime() - probeStart > 120_000_000_000L) {
                throw new IllegalStateException("the consumer received no probe message in 120 s");
            }
        }
        double probeSeconds = (System.nanoTime() - probeStart) / 1e9;

        long sendFailed = 0;
        long sendStartMs = System.currentTimeMillis();
        long startNs = System.nanoTime();
        double stepNs = spread * 1e9 / count;
        long maxBehindNs = 0;
        for (int n = 0; n < count; n++) {
            long dueNs = startNs + (long) (n * stepNs);
            long now;
            while ((now = System.nanoTime()) < dueNs) {
                long waitNs = dueNs - now;
                if (waitNs > 2_000_000) {
                    Thread.sleep(waitNs / 1_000_000 - 1);
                } else {
                    Thread.onSpinWait();
                }
            }
            maxBehindNs = Math.max(maxBehindNs, now - dueNs);
            long deliverMs = sendStartMs + (long) (n * stepNs / 1e6) + (long) (delay * 1000);
            Message m = new Message(topic, body);
            m.putUserProperty("i", Integer.toString(n));
            m.putUserProperty("d", Long.toString(deliverMs));
            m.setDeliverTimeMs(deliverMs);
            boolean ok = false;
            try {
                ok = producer.send(m).getSendStatus() == SendStatus.SEND_OK;
            } catch (Exception e) {
                ok = false;
            }
            if (!ok) {
                sendFailed++;
                all.countDown();
            }
        }
        double sendSeconds = (System.nanoTime() - startNs) / 1e9;
        all.await((long) ((delay + 60) * 1000), TimeUnit.MILLISECONDS);
        producer.shutdown();
        consumer.shutdown();

        int got = received.get();
        long[] late = new long[got];
        int k = 0;
        for (int n = 0; n < count && k < got; n++) {
            if (seen.containsKey(n)) {
                late[k++] = lateness[n];
            }
        }
        late = Arrays.copyOf(late, k);
        Arrays.sort(late);
        long early = 0;
        long earlyBeyondTick = 0;
        double sum = 0;
        for (long v : late) {
            sum += v;
            if (v < 0) {
                early++;
            }
            if (v < -precisionMs) {
                earlyBeyondTick++;
            }
        }
        System.out.println(String.format(Locale.ROOT,
            "{\"sent\": %d, \"send_failed\": %d, \"received\": %d, \"duplicates\": %d, \"foreign\": %d, "
                + "\"missing\": %d, \"send_seconds\": %.3f, \"send_rate\": %.1f, \"sender_max_behind_ms\": %.1f, "
                + "\"probe_seconds\": %.3f, \"lateness_min_ms\": %d, \"lateness_p50_ms\": %d, "
                + "\"lateness_p90_ms\": %d, \"lateness_p99_ms\": %d, \"lateness_max_ms\": %d, "
                + "\"lateness_avg_ms\": %.1f, \"early\": %d, \"early_beyond_tick\": %d, \"count\": %d, "
                + "\"spread_s\": %.1f, \"delay_s\": %.1f, \"precision_ms\": %d}",
            count - sendFailed, sendFailed, got, duplicates.sum(), foreign.sum(), count - sendFailed - got,
            sendSeconds, (count - sendFailed) / sendSeconds, maxBehindNs / 1e6, probeSeconds,
            pct(late, 0), pct(late, 0.50), pct(late, 0.90), pct(late, 0.99), pct(late, 1.0),
            k == 0 ? Double.NaN : sum / k, early, earlyBeyondTick, count, spread, delay, precisionMs));
        System.exit(0);
    }

    private static long pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return Long.MIN_VALUE;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }
}
