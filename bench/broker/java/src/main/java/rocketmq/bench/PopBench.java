package rocketmq.bench;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.AckStatus;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.consumer.PopStatus;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

/**
 * POP receive + ack throughput on the official 5.5.0 remoting client, driving
 * {@link MQClientAPIImpl#popMessageAsync} and {@link MQClientAPIImpl#ackMessageAsync} directly
 * (what DefaultMQPushConsumer's POP mode and the proxy's receive path send, without their
 * consume thread pools): inflight POP_MESSAGE requests are always outstanding (each response
 * re-issues its slot at once), each pops up to batch messages from any queue of the topic
 * (queueId -1, as the 5.x proxy's receive does) from the first offset (initMode MIN), and
 * every message received is acked with its own ACK_MESSAGE (the push consumer's ackAsync:
 * topic, queueId and offset from the message's POP_CK extra info). Acks are not counted in the
 * inflight pops; beyond inflight x batch outstanding acks a pop slot waits for acks to come
 * back, so a slow ack path throttles the pops instead of piling up.
 *
 * <p>A message counts when its ack is answered OK. Only what completes in the measured window
 * (after warmupSeconds, for seconds) counts; the POP round-trip times are those of the pops
 * sent in the window. Empty pops (no message found) are counted: in a window with a backlog
 * they mean contention or an exhausted backlog, and the caller sizes the backlog to avoid the
 * latter.
 *
 * <p>The backlog's size (messages in the topic) tells when it ran out: exhausted_at_s is then the
 * time from the window's start (negative: during the warm-up) to the pop that took its last
 * message; a window it ran out in undercounts.
 *
 * <p>Usage: PopBench namesrvAddr topic group inflight batch invisibleMs pollMs warmupSeconds seconds backlog
 * [noack]
 *
 * <p>noack: no message is acked, a negative control of the "popped beyond the backlog" check
 * (with a short invisible time every message must then come back).
 *
 * <p>Prints "window start" and "window end" as the window opens and closes, then one JSON line.
 */
public final class PopBench {
    private static final long TIMEOUT_MS = 10_000;
    private static final ScheduledExecutorService RETRY = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "pop-retry");
        t.setDaemon(true);
        return t;
    });

    private final MQClientAPIImpl api;
    private final String topic;
    private final String group;
    private final String brokerName;
    private final String brokerAddr;
    private final int batch;
    private final long invisibleMs;
    private final long pollMs;
    private final long ackLimit;
    private final java.util.concurrent.atomic.AtomicInteger parkedPops = new java.util.concurrent.atomic.AtomicInteger();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private volatile long windowStart = Long.MAX_VALUE;
    private volatile long windowEnd = Long.MAX_VALUE;
    private long backlog = Long.MAX_VALUE;
    private boolean ackAll = true;
    private volatile long exhaustedAt = Long.MIN_VALUE;

    private final LongAdder pops = new LongAdder();
    private final LongAdder emptyPops = new LongAdder();
    private final LongAdder popFailed = new LongAdder();
    private final LongAdder popped = new LongAdder();
    private final LongAdder acked = new LongAdder();
    private final LongAdder ackFailed = new LongAdder();
    private final LongAdder poppedTotal = new LongAdder();
    private final LongAdder ackedTotal = new LongAdder();
    private final LongAdder ackFailedTotal = new LongAdder();
    private final LongAdder popFailedTotal = new LongAdder();
    private final LongAdder ackOutstanding = new LongAdder();
    private volatile String lastError = "";
    private final long[] popRt = new long[1 << 22];
    private final java.util.concurrent.atomic.AtomicInteger popRtCount = new java.util.concurrent.atomic.AtomicInteger();

    private PopBench(MQClientAPIImpl api, String topic, String group, String brokerName, String brokerAddr,
                     int inflight, int batch, long invisibleMs, long pollMs) {
        this.api = api;
        this.topic = topic;
        this.group = group;
        this.brokerName = brokerName;
        this.brokerAddr = brokerAddr;
        this.batch = batch;
        this.invisibleMs = invisibleMs;
        this.pollMs = pollMs;
        this.ackLimit = (long) inflight * batch;
    }

    private boolean inWindow(long t) {
        return t >= windowStart && t < windowEnd;
    }

    private void pop() {
        if (!running.get()) {
            return;
        }
        PopMessageRequestHeader h = new PopMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(topic);
        h.setQueueId(-1);
        h.setMaxMsgNums(batch);
        h.setInvisibleTime(invisibleMs);
        h.setInitMode(ConsumeInitMode.MIN);
        h.setExpType(ExpressionType.TAG);
        h.setExp("*");
        h.setOrder(false);
        h.setBrokerName(brokerName);
        long timeout = TIMEOUT_MS;
        if (pollMs > 0) {
            h.setPollTime(pollMs);
            h.setBornTime(System.currentTimeMillis());
            timeout += pollMs;
        }
        final long t0 = System.nanoTime();
        try {
            api.popMessageAsync(brokerName, brokerAddr, h, timeout, new PopCallback() {
                @Override
                public void onSuccess(PopResult result) {
                    long t1 = System.nanoTime();
                    boolean counted = inWindow(t0);
                    if (counted) {
                        pops.increment();
                        int i = popRtCount.getAndIncrement();
                        if (i < popRt.length) {
                            popRt[i] = t1 - t0;
                        }
                    }
                    List<MessageExt> msgs = result.getPopStatus() == PopStatus.FOUND ? result.getMsgFoundList() : null;
                    if (msgs == null || msgs.isEmpty()) {
                        if (counted) {
                            emptyPops.increment();
                        }
                    } else {
                        poppedTotal.add(msgs.size());
                        if (exhaustedAt == Long.MIN_VALUE && poppedTotal.sum() >= backlog) {
                            exhaustedAt = t1;
                        }
                        if (inWindow(t1)) {
                            popped.add(msgs.size());
                        }
                        for (MessageExt m : msgs) {
                            if (ackAll) {
                                ack(m);
                            }
                        }
                    }
                    nextPop();
                }

                @Override
                public void onException(Throwable e) {
                    popFailedTotal.increment();
                    if (inWindow(System.nanoTime())) {
                        popFailed.increment();
                    }
                    lastError = "pop: " + e;
                    pop();
                }
            });
        } catch (Exception e) {
            // refused before it was sent (no connection...): retried 10 ms later from the
            // scheduler, not by recursion, so a broker that stays away cannot overflow the stack
            popFailedTotal.increment();
            lastError = "pop send: " + e;
            RETRY.schedule(this::pop, 10, TimeUnit.MILLISECONDS);
        }
    }

    private void ack(MessageExt m) {
        String extraInfo = m.getProperty(MessageConst.PROPERTY_POP_CK);
        String[] parts = ExtraInfoUtil.split(extraInfo);
        AckMessageRequestHeader h = new AckMessageRequestHeader();
        h.setTopic(ExtraInfoUtil.getRealTopic(parts, m.getTopic(), group));
        h.setQueueId(ExtraInfoUtil.getQueueId(parts));
        h.setOffset(ExtraInfoUtil.getQueueOffset(parts));
        h.setConsumerGroup(group);
        h.setExtraInfo(extraInfo);
        h.setBrokerName(brokerName);
        ackOutstanding.increment();
        try {
            api.ackMessageAsync(brokerAddr, TIMEOUT_MS, new AckCallback() {
                @Override
                public void onSuccess(AckResult r) {
                    done(r != null && r.getStatus() == AckStatus.OK, r == null ? "null ack result" : "ack: " + r);
                }

                @Override
                public void onException(Throwable e) {
                    done(false, "ack: " + e);
                }
            }, h);
        } catch (Exception e) {
            done(false, "ack send: " + e);
        }
    }

    private void done(boolean ok, String error) {
        boolean counted = inWindow(System.nanoTime());
        if (ok) {
            ackedTotal.increment();
            if (counted) {
                acked.increment();
            }
        } else {
            ackFailedTotal.increment();
            if (counted) {
                ackFailed.increment();
            }
            lastError = error;
        }
        ackOutstanding.decrement();
        unpark();
    }

    /** A pop parked by nextPop goes out once the acks are back under the limit. */
    private void unpark() {
        int parked;
        while (ackOutstanding.sum() < ackLimit && (parked = parkedPops.get()) > 0) {
            if (parkedPops.compareAndSet(parked, parked - 1)) {
                pop();
            }
        }
    }

    /** Re-issues a pop slot, or parks it while ackLimit acks are outstanding (callbacks must not block). */
    private void nextPop() {
        if (ackOutstanding.sum() >= ackLimit) {
            parkedPops.incrementAndGet();
            unpark();  // the last ack may have come back in between
            return;
        }
        pop();
    }

    private static double pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        int inflight = Integer.parseInt(args[3]);
        int batch = Integer.parseInt(args[4]);
        long invisibleMs = Long.parseLong(args[5]);
        long pollMs = Long.parseLong(args[6]);
        double warmup = Double.parseDouble(args[7]);
        double seconds = Double.parseDouble(args[8]);
        long backlog = Long.parseLong(args[9]);
        // "noack": a negative control of the acks-hold check (every message must come back)
        boolean ackAll = args.length < 11 || !"noack".equals(args[10]);

        ClientConfig config = new ClientConfig();
        config.setNamesrvAddr(namesrv);
        config.setInstanceName("pop-bench-" + System.nanoTime());
        MQClientInstance instance = MQClientManager.getInstance().getOrCreateMQClientInstance(config);
        instance.start();
        MQClientAPIImpl api = instance.getMQClientAPIImpl();
        TopicRouteData route = api.getTopicRouteInfoFromNameServer(topic, TIMEOUT_MS);
        BrokerData broker = route.getBrokerDatas().get(0);
        String addr = broker.getBrokerAddrs().get(0L);

        PopBench bench = new PopBench(api, topic, group, broker.getBrokerName(), addr, inflight, batch, invisibleMs,
            pollMs);
        bench.backlog = backlog;
        bench.ackAll = ackAll;
        long start = System.nanoTime();
        bench.windowStart = start + (long) (warmup * 1e9);
        bench.windowEnd = bench.windowStart + (long) (seconds * 1e9);
        for (int i = 0; i < inflight; i++) {
            bench.pop();
        }
        // the caller samples the broker's CPU time at these two lines
        long now;
        while ((now = System.nanoTime()) < bench.windowStart) {
            Thread.sleep(Math.max(1, Math.min(20, (bench.windowStart - now) / 1_000_000)));
        }
        System.out.println("window start");
        while ((now = System.nanoTime()) < bench.windowEnd) {
            Thread.sleep(Math.max(1, Math.min(20, (bench.windowEnd - now) / 1_000_000)));
        }
        System.out.println("window end");
        bench.running.set(false);
        // let the outstanding acks finish, so that a lost ack shows as unanswered rather than hidden
        long drainEnd = System.nanoTime() + TIMEOUT_MS * 1_000_000L + 2_000_000_000L;
        while (bench.ackOutstanding.sum() > 0 && System.nanoTime() < drainEnd) {
            Thread.sleep(20);
        }
        int n = Math.min(bench.popRtCount.get(), bench.popRt.length);
        long[] rt = Arrays.copyOf(bench.popRt, n);
        Arrays.sort(rt);
        double sum = 0;
        for (long v : rt) {
            sum += v;
        }
        System.out.println(String.format(Locale.ROOT,
            "{\"acked\": %d, \"acked_per_s\": %.1f, \"popped\": %d, \"popped_per_s\": %.1f, \"pops\": %d, "
                + "\"empty_pops\": %d, \"pop_failed\": %d, \"ack_failed\": %d, \"pop_p50_ms\": %.3f, "
                + "\"pop_p99_ms\": %.3f, \"pop_max_ms\": %.3f, \"pop_avg_ms\": %.3f, \"popped_total\": %d, "
                + "\"acked_total\": %d, \"ack_failed_total\": %d, \"pop_failed_total\": %d, "
                + "\"acks_unanswered\": %d, \"inflight\": %d, \"batch\": %d, \"poll_ms\": %d, "
                + "\"invisible_ms\": %d, \"seconds\": %.3f, \"exhausted_at_s\": %s, \"last_error\": \"%s\"}",
            bench.acked.sum(), bench.acked.sum() / seconds, bench.popped.sum(), bench.popped.sum() / seconds,
            bench.pops.sum(), bench.emptyPops.sum(), bench.popFailed.sum(), bench.ackFailed.sum(),
            pct(rt, 0.50), pct(rt, 0.99), n == 0 ? Double.NaN : rt[n - 1] / 1e6, n == 0 ? Double.NaN : sum / n / 1e6,
            bench.poppedTotal.sum(), bench.ackedTotal.sum(), bench.ackFailedTotal.sum(), bench.popFailedTotal.sum(),
            bench.ackOutstanding.sum(), inflight, batch, pollMs, invisibleMs, seconds,
            bench.exhaustedAt == Long.MIN_VALUE ? "null"
                : String.format(Locale.ROOT, "%.3f", (bench.exhaustedAt - bench.windowStart) / 1e9),
            bench.lastError.replace("\\", "/").replace("\"", "'").replace("\n", " ")));
        System.exit(0);
    }
}
