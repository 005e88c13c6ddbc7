package rocketmq.bench;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * Send-latency percentiles, which the official benchmark Producer does not print: the same
 * loop as {@code org.apache.rocketmq.example.benchmark.Producer} (DefaultMQProducer, sync
 * sends of one fixed body from N threads, ROCKETMQ serialization, compression off), timing
 * every acknowledged send with System.nanoTime. Sends during the first warmupSeconds are not
 * recorded.
 *
 * <p>Usage: SendLatency namesrvAddr topic threads bodySize warmupSeconds seconds
 *
 * <p>Prints one JSON line: sends, failed, tps, p50_ms, p90_ms, p99_ms, p999_ms, max_ms, avg_ms.
 */
public final class SendLatency {
    public static void main(String[] args) throws Exception {
        System.setProperty(RemotingCommand.SERIALIZE_TYPE_PROPERTY, SerializeType.ROCKETMQ.name());
        String namesrv = args[0];
        String topic = args[1];
        int threads = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        double warmup = Double.parseDouble(args[4]);
        double seconds = Double.parseDouble(args[5]);
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'a');

        DefaultMQProducer producer = new DefaultMQProducer("bench_latency_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(Long.toString(System.currentTimeMillis()));
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();

        long start = System.nanoTime();
        long recordFrom = start + (long) (warmup * 1e9);
        long end = recordFrom + (long) (seconds * 1e9);
        long[][] samples = new long[threads][];
        int[] counts = new int[threads];
        LongAdder failed = new LongAdder();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            workers[t] = new Thread(() -> {
                long[] mine = new long[1 << 16];
                int n = 0;
                while (true) {
                    long t0 = System.nanoTime();
                    if (t0 >= end) {
                        break;
                    }
                    try {
                        producer.send(new Message(topic, body));
                    } catch (Exception e) {
                        if (t0 >= recordFrom) {
                            failed.increment();
                        }
                        continue;
                    }
                    if (t0 >= recordFrom) {
                        if (n == mine.length) {
                            mine = Arrays.copyOf(mine, n * 2);
                        }
                        mine[n++] = System.nanoTime() - t0;
                    }
                }
                samples[id] = mine;
                counts[id] = n;
            }, "latency-" + t);
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        producer.shutdown();

        int total = 0;
        for (int c : counts) {
            total += c;
        }
        long[] all = new long[total];
        int at = 0;
        double sum = 0;
        for (int t = 0; t < threads; t++) {
            System.arraycopy(samples[t], 0, all, at, counts[t]);
            at += counts[t];
        }
        Arrays.sort(all);
        for (long v : all) {
            sum += v;
        }
        System.out.println(String.format(java.util.Locale.ROOT,
            "{\"sends\": %d, \"failed\": %d, \"tps\": %.1f, \"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, "
                + "\"p999_ms\": %.3f, \"max_ms\": %.3f, \"avg_ms\": %.3f}",
            total, failed.sum(), total / seconds, pct(all, 0.50), pct(all, 0.90), pct(all, 0.99), pct(all, 0.999),
            total == 0 ? Double.NaN : all[total - 1] / 1e6, total == 0 ? Double.NaN : sum / total / 1e6));
        System.exit(0);
    }

    /** The q-quantile of a sorted array of nanosecond samples, in ms (NaN when empty). */
    static double pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }
}
