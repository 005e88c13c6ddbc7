package rocketmq.compat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Load generator for name servers: GET_ROUTEINFO_BY_TOPIC (105) over N connections (one
 * NettyRemotingClient each), K requests in flight per connection, for a fixed time.
 *
 * Usage: RouteLoad host:port topicPrefix topicCount connections inflight seconds
 *
 * Prints {"requests": n, "errors": n, "seconds": s, "rps": r, "p50_us": x, "p99_us": y}.
 */
public final class RouteLoad {
    private RouteLoad() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        String addr = args[0];
        String prefix = args[1];
        int topics = Integer.parseInt(args[2]);
        int connections = Integer.parseInt(args[3]);
        int inflight = Integer.parseInt(args[4]);
        double seconds = Double.parseDouble(args[5]);
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));

        List<NettyRemotingClient> clients = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            NettyClientConfig config = new NettyClientConfig();
            config.setClientWorkerThreads(1);
            config.setClientCallbackExecutorThreads(1);
            NettyRemotingClient client = new NettyRemotingClient(config);
            client.start();
            clients.add(client);
        }
        // Warm-up: connect and let both sides' code paths settle.
        long warmEnd = System.nanoTime() + 2_000_000_000L;
        run(clients, addr, prefix, topics, inflight, warmEnd, null, null, null);

        LongAdder ok = new LongAdder();
        LongAdder errors = new LongAdder();
        long[] hist = new long[200_000];  // latency histogram in 10 µs buckets
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        run(clients, addr, prefix, topics, inflight, end, ok, errors, hist);
        double elapsed = (System.nanoTime() - start) / 1e9;
        long n = ok.sum();
        Map<String, Object> out = Json.obj("requests", n, "errors", errors.sum(), "seconds", elapsed,
            "rps", Math.round(n / elapsed), "p50_us", percentile(hist, n, 0.50), "p99_us", percentile(hist, n, 0.99));
        Out.json(out);
        System.exit(0);
    }

    static long percentile(long[] hist, long n, double q) {
        long target = (long) Math.ceil(n * q);
        long seen = 0;
        for (int i = 0; i < hist.length; i++) {
            seen += hist[i];
            if (seen >= target && target > 0) {
                return i * 10L;
            }
        }
        return -1;
    }

    static void run(List<NettyRemotingClient> clients, String addr, String prefix, int topics, int inflight,
                    long end, LongAdder ok, LongAdder errors, long[] hist) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (NettyRemotingClient client : clients) {
            for (int k = 0; k < inflight; k++) {
                Thread t = new Thread(() -> {
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    while (System.nanoTime() < end) {
                        HashMap<String, String> ext = new HashMap<>();
                        ext.put("topic", prefix + rnd.nextInt(topics));
                        RemotingCommand request = RemotingCommand.createRequestCommand(105, null);
                        request.setExtFields(ext);
                        long t0 = System.nanoTime();
                        try {
                            RemotingCommand response = client.invokeSync(addr, request, 5000);
                            if (ok != null) {
                                if (response.getCode() == 0) {
                                    ok.increment();
                                    int bucket = (int) Math.min(hist.length - 1, (System.nanoTime() - t0) / 10_000);
                                    synchronized (hist) {
                                        hist[bucket]++;
                                    }
                                } else {
                                    errors.increment();
                                }
                            }
                        } catch (Exception e) {
                            if (errors != null) {
                                errors.increment();
                            }
                        }
                    }
                });
                t.start();
                threads.add(t);
            }
        }
        for (Thread t : threads) {
            t.join();
        }
    }
}
