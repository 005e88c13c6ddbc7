package rocketmq.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * Two brokers measured in one JVM, taking turns in short windows: the same loop as
 * SendLatency (DefaultMQProducer, sync sends of one fixed body from N threads) with one
 * producer per name server, every thread sending to the window's target. Windows go A B B A
 * A B B A ..., so a drift of the machine during the run falls on both alike, and the JVM and
 * both brokers stay warm the whole time (the separate runs of run.py --metrics each start a
 * JVM and a broker, and their spread is larger than a few percent).
 *
 * <p>A send counts for the window and target it started in, and only if it ends in the same
 * window: the sends a switch cuts across count for neither.
 *
 * <p>Usage: PairedSend namesrvA namesrvB topic threads bodySize warmupSeconds windowSeconds windows
 *
 * <p>Prints "windows start" and "windows end" around the measured windows (the bench reads
 * the brokers' CPU there), then one JSON line: windows (target, sends, seconds, each), and per target its sends,
 * p50_ms and p99_ms over its windows.
 */
public final class PairedSend {
    private static volatile int target;
    private static volatile int window = -1;
    private static volatile boolean done;

    public static void main(String[] args) throws Exception {
        System.setProperty(RemotingCommand.SERIALIZE_TYPE_PROPERTY, SerializeType.ROCKETMQ.name());
        String[] namesrv = {args[0], args[1]};
        String topic = args[2];
        int threads = Integer.parseInt(args[3]);
        int size = Integer.parseInt(args[4]);
        double warmup = Double.parseDouble(args[5]);
        double windowSeconds = Double.parseDouble(args[6]);
        int windows = Integer.parseInt(args[7]);
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'a');

        DefaultMQProducer[] producers = new DefaultMQProducer[2];
        for (int i = 0; i < 2; i++) {
            producers[i] = new DefaultMQProducer("bench_paired_producer_" + i);
            producers[i].setNamesrvAddr(namesrv[i]);
            producers[i].setInstanceName("paired-" + i + "-" + System.currentTimeMillis());
            producers[i].setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
            producers[i].start();
        }

        LongAdder[] sends = new LongAdder[windows];
        for (int w = 0; w < windows; w++) {
            sends[w] = new LongAdder();
        }
        // per thread, per target: latencies (ns) of the counted sends
        long[][][] samples = new long[threads][2][];
        int[][] counts = new int[threads][2];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            workers[t] = new Thread(() -> {
                long[][] mine = {new long[1 << 16], new long[1 << 16]};
                int[] n = {0, 0};
                while (!done) {
                    int w = window;
                    int to = target;
                    long t0 = System.nanoTime();
                    try {
                        producers[to].send(new Message(topic, body));
                    } catch (Exception e) {
                        continue;
                    }
                    long rt = System.nanoTime() - t0;
                    if (w >= 0 && w == window) {
                        sends[w].increment();
                        if (n[to] == mine[to].length) {
                            mine[to] = Arrays.copyOf(mine[to], n[to] * 2);
                        }
                        mine[to][n[to]++] = rt;
                    }
                }
                samples[id] = mine;
                counts[id] = n;
            }, "paired-" + t);
            workers[t].start();
        }

        // warm-up: both targets, a second each in turn, not counted
        long warmEnd = System.nanoTime() + (long) (warmup * 1e9);
        while (System.nanoTime() < warmEnd) {
            target = 1 - target;
            Thread.sleep(1000);
        }
        System.out.println("windows start");
        int[] order = new int[windows];
        double[] seconds = new double[windows];
        for (int w = 0; w < windows; w++) {
            order[w] = ((w + 1) / 2) % 2; // A B B A A B B A ...
            target = order[w];
            long start = System.nanoTime();
            window = w;
            Thread.sleep((long) (windowSeconds * 1000));
            window = -1;
            seconds[w] = (System.nanoTime() - start) / 1e9;
        }
        System.out.println("windows end");
        done = true;
        for (Thread worker : workers) {
            worker.join();
        }
        for (DefaultMQProducer p : producers) {
            p.shutdown();
        }

        List<String> parts = new ArrayList<>();
        for (int w = 0; w < windows; w++) {
            parts.add(String.format(Locale.ROOT, "{\"target\": \"%s\", \"sends\": %d, \"seconds\": %.3f}",
                order[w] == 0 ? "a" : "b", sends[w].sum(), seconds[w]));
        }
        StringBuilder out = new StringBuilder("{\"windows\": [").append(String.join(", ", parts)).append("]");
        for (int to = 0; to < 2; to++) {
            int total = 0;
            for (int t = 0; t < threads; t++) {
                total += counts[t][to];
            }
            long[] all = new long[total];
            int at = 0;
            for (int t = 0; t < threads; t++) {
                System.arraycopy(samples[t][to], 0, all, at, counts[t][to]);
                at += counts[t][to];
            }
            Arrays.sort(all);
            out.append(String.format(Locale.ROOT, ", \"%s\": {\"sends\": %d, \"p50_ms\": %.3f, \"p99_ms\": %.3f}",
                to == 0 ? "a" : "b", total, SendLatency.pct(all, 0.50), SendLatency.pct(all, 0.99)));
        }
        System.out.println(out.append("}"));
        System.exit(0);
    }
}
