package rocketmq.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The official consumers with {@code MessageSelector.bySql}, for test_sql92_interop.py:
 * one operation per stdin line (TAB-separated), one JSON line per operation on stdout,
 * {"done": true} when stdin closes. A refusal is {"error": {"code", "remark", "class"}}
 * (the broker's code and remark as the client exception carries them).
 *
 *   pull NS TOPIC GROUP SQL...      DefaultMQPullConsumer.pull(mq, bySql(SQL), offset, 32) over every
 *                                   queue from offset 0 to its max offset, once per SQL:
 *                                   {"op", "results": [{"sql", "bodies": [...sorted], "error"}]}
 *   push NS TOPIC GROUP SQL COUNT TIMEOUT_S   DefaultMQPushConsumer.subscribe(TOPIC, bySql(SQL)) from the
 *                                   first offset until COUNT distinct bodies or the timeout:
 *                                   {"op", "bodies": [...sorted], "error"} (start() refused: error)
 *   litepull NS TOPIC GROUP SQL COUNT TIMEOUT_S   DefaultLitePullConsumer.subscribe(TOPIC, bySql(SQL)): same
 */
public final class Sql92Peer {
    private static long seq = 0;

    private Sql92Peer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
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
                out = Json.obj("op", a[0], "error", AclPeer.describe(t));
            }
            Out.json(out);
        }
        Out.json(Json.obj("done", true));
        System.exit(0);
    }

    private static String instance(String op) {
        seq++;
        return op + Long.toHexString(System.nanoTime()) + "x" + seq;
    }

    /**
     * The client refuses to pull with SQL92 from a broker whose version it has not learnt
     * yet (its heartbeat's answer): route the topic and send heartbeats now, rather than
     * wait for the client's own timers, until every broker of the route has a version. One
     * heartbeat is not enough: sendHeartbeatToAllBrokerWithLock does nothing while the
     * client's own heartbeat task holds its lock.
     */
    private static void meetBrokers(ClientConfig config, String topic) throws InterruptedException {
        MQClientInstance factory = MQClientManager.getInstance().getOrCreateMQClientInstance(config);
        factory.updateTopicRouteInfoFromNameServer(topic);
        var route = factory.getTopicRouteTable().get(topic);
        if (route == null) {
            throw new IllegalStateException("no route for " + topic);
        }
        long deadline = System.currentTimeMillis() + 15_000;
        for (var broker : route.getBrokerDatas()) {
            while (true) {
                var found = factory.findBrokerAddressInSubscribe(broker.getBrokerName(), 0, false);
                if (found != null && found.getBrokerVersion() > 0) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("no heartbeat answer from " + broker.getBrokerName());
                }
                factory.sendHeartbeatToAllBrokerWithLock();
                Thread.sleep(50);
            }
        }
    }

    private static Map<String, Object> run(String[] a) throws Exception {
        switch (a[0]) {
            case "pull":
                List<String> sqls = new ArrayList<>();
                for (int i = 4; i < a.length; i++) {
                    sqls.add(a[i]);
                }
                return pull(a[1], a[2], a[3], sqls);
            case "push":
                return push(a[1], a[2], a[3], a[4], Integer.parseInt(a[5]), Long.parseLong(a[6]) * 1000L);
            case "litepull":
                return litePull(a[1], a[2], a[3], a[4], Integer.parseInt(a[5]), Long.parseLong(a[6]) * 1000L);
            default:
                throw new IllegalArgumentException("unknown op " + a[0]);
        }
    }

    @SuppressWarnings("deprecation")
    private static Map<String, Object> pull(String ns, String topic, String group, List<String> sqls)
        throws Exception {
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance("q"));
        c.start();
        List<Object> results = new ArrayList<>();
        try {
            List<MessageQueue> mqs = new ArrayList<>(c.fetchSubscribeMessageQueues(topic));
            Collections.sort(mqs);
            meetBrokers(c, topic);
            for (String sql : sqls) {
                Set<String> bodies = new TreeSet<>();
                Object error = null;
                try {
                    for (MessageQueue mq : mqs) {
                        long max = c.maxOffset(mq);
                        long offset = 0;
                        while (offset < max) {
                            PullResult r = c.pull(mq, MessageSelector.bySql(sql), offset, 32, 10_000);
                            if (r.getPullStatus() == PullStatus.FOUND) {
                                for (MessageExt m : r.getMsgFoundList()) {
                                    bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
                                }
                            } else if (r.getPullStatus() != PullStatus.NO_MATCHED_MSG) {
                                break;
                            }
                            if (r.getNextBeginOffset() <= offset) {
                                throw new IllegalStateException("next offset " + r.getNextBeginOffset()
                                    + " at " + offset + " of " + mq);
                            }
                            offset = r.getNextBeginOffset();
                        }
                    }
                } catch (Exception e) {
                    error = AclPeer.describe(e);
                }
                results.add(Json.obj("sql", sql, "bodies", new ArrayList<>(bodies), "error", error));
            }
        } finally {
            c.shutdown();
        }
        return Json.obj("op", "pull", "results", results);
    }

    private static Map<String, Object> push(String ns, String topic, String group, String sql, int count,
                                            long timeoutMs) throws Exception {
        Set<String> bodies = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance("c"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, MessageSelector.bySql(sql));
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Object error = null;
        try {
            c.start();
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (bodies.size() < count && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);  // polling a set the consumer's threads fill
            }
            Thread.sleep(500);  // anything beyond COUNT would show up now
        } catch (Exception e) {
            error = AclPeer.describe(e);
        } finally {
            c.shutdown();
        }
        return Json.obj("op", "push", "bodies", new ArrayList<>(new TreeSet<>(bodies)), "error", error);
    }

    private static Map<String, Object> litePull(String ns, String topic, String group, String sql, int count,
                                                long timeoutMs) throws Exception {
        Set<String> bodies = new TreeSet<>();
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance("l"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(500);
        c.subscribe(topic, MessageSelector.bySql(sql));
        Object error = null;
        try {
            c.start();
            meetBrokers(c, topic);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (bodies.size() < count && System.currentTimeMillis() < deadline) {
                for (MessageExt m : c.poll(500)) {
                    bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
                }
            }
            for (MessageExt m : c.poll(500)) {
                bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
            }
        } catch (Exception e) {
            error = AclPeer.describe(e);
        } finally {
            c.shutdown();
        }
        return Json.obj("op", "litepull", "bodies", new ArrayList<>(bodies), "error", error);
    }
}
