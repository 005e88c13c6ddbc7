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
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The official clients with ACL 1.0 credentials ({@code AclClientRPCHook}), for
 * test_acl_interop.py: many operations in one JVM, one per stdin line, each with its own
 * credentials and its own client instance (an MQClientInstance is shared by client id, and
 * with it the RPC hook, so every operation gets a fresh instance name).
 *
 * Each stdin line is TAB-separated: OP NAMESRV AK SK ARGS..., with AK "-" for no RPC hook
 * at all (an unsigned client). One JSON line per operation on stdout, then {"done": true}
 * when stdin closes. A refusal is reported as {"error": {"code", "remark", "class"}}, the
 * broker's response code and remark as the client exception carries them.
 *
 *   produce NS AK SK TOPIC COUNT PREFIX      sync sends of bodies PREFIX-i; stops at the first failure:
 *                                            {"op", "sent": n, "error"}
 *   push NS AK SK TOPIC GROUP COUNT TIMEOUT_S   push consumer from the first offset until COUNT distinct
 *                                            bodies or the timeout: {"op", "bodies": [...sorted]}
 *   litepull NS AK SK TOPIC GROUP COUNT TIMEOUT_S   DefaultLitePullConsumer.subscribe, poll: same output
 *   pull NS AK SK TOPIC GROUP                DefaultMQPullConsumer.pull of every queue from offset 0:
 *                                            {"op", "found": n, "error"}
 *   createTopic NS AK SK BROKER_ADDR TOPIC   DefaultMQAdminExt.createAndUpdateTopicConfig: {"op", "error"}
 */
public final class AclPeer {
    private static long seq = 0;

    private AclPeer() {
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
                out = Json.obj("op", a[0], "error", describe(t));
            }
            out.put("args", List.of(a));
            Out.json(out);
        }
        Out.json(Json.obj("done", true));
        System.exit(0);
    }

    private static RPCHook hook(String ak, String sk) {
        return "-".equals(ak) ? null : new AclClientRPCHook(new SessionCredentials(ak, sk));
    }

    private static String instance(String op) {
        seq++;
        return op + Long.toHexString(System.nanoTime()) + "x" + seq;
    }

    private static Map<String, Object> run(String[] a) throws Exception {
        String op = a[0];
        String ns = a[1];
        RPCHook hook = hook(a[2], a[3]);
        switch (op) {
            case "produce":
                return produce(ns, hook, a[4], Integer.parseInt(a[5]), a[6]);
            case "push":
                return push(ns, hook, a[4], a[5], Integer.parseInt(a[6]), Long.parseLong(a[7]) * 1000L);
            case "litepull":
                return litePull(ns, hook, a[4], a[5], Integer.parseInt(a[6]), Long.parseLong(a[7]) * 1000L);
            case "pull":
                return pull(ns, hook, a[4], a[5]);
            case "createTopic":
                return createTopic(ns, hook, a[4], a[5]);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /** The broker's answer inside a client exception: MQBrokerException, or MQClientException with a code. */
    static Map<String, Object> describe(Throwable t) {
        // The producer wraps the broker's MQBrokerException in an MQClientException of its own
        // ("Send [1] times, still failed"): the innermost broker answer is the one wanted.
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof MQBrokerException) {
                MQBrokerException e = (MQBrokerException) c;
                return Json.obj("code", e.getResponseCode(), "remark", e.getErrorMessage(), "class",
                    c.getClass().getSimpleName());
            }
        }
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof MQClientException && ((MQClientException) c).getResponseCode() > 0) {
                MQClientException e = (MQClientException) c;
                return Json.obj("code", e.getResponseCode(), "remark", e.getErrorMessage(), "class",
                    c.getClass().getSimpleName());
            }
        }
        return Json.obj("code", -1, "remark", String.valueOf(t), "class", t.getClass().getSimpleName());
    }

    private static Map<String, Object> produce(String ns, RPCHook hook, String topic, int count, String prefix)
        throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("ACL_PG_" + Long.toHexString(System.nanoTime()), hook);
        p.setNamesrvAddr(ns);
        p.setInstanceName(instance("p"));
        p.setSendMsgTimeout(10_000);
        // one attempt: a refusal (SYSTEM_ERROR) would otherwise be retried on the same broker
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        int sent = 0;
        Object error = null;
        try {
            for (int i = 0; i < count; i++) {
                SendResult r = p.send(new Message(topic, "TagA", (prefix + "-" + i).getBytes(StandardCharsets.UTF_8)));
                if (!"SEND_OK".equals(String.valueOf(r.getSendStatus()))) {
                    error = Json.obj("code", -1, "remark", String.valueOf(r.getSendStatus()), "class", "SendStatus");
                    break;
                }
                sent++;
            }
        } catch (Exception e) {
            error = describe(e);
        } finally {
            p.shutdown();
        }
        return Json.obj("op", "produce", "sent", sent, "error", error);
    }

    private static Map<String, Object> push(String ns, RPCHook hook, String topic, String group, int count,
                                            long timeoutMs) throws Exception {
        Set<String> bodies = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook,
            new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance("c"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (bodies.size() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);  // polling a set the consumer's threads fill
        }
        c.shutdown();
        return Json.obj("op", "push", "bodies", new ArrayList<>(new TreeSet<>(bodies)));
    }

    private static Map<String, Object> litePull(String ns, RPCHook hook, String topic, String group, int count,
                                                long timeoutMs) throws Exception {
        Set<String> bodies = new TreeSet<>();
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group, hook);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance("l"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(500);
        c.subscribe(topic, "*");
        c.start();
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (bodies.size() < count && System.currentTimeMillis() < deadline) {
            for (MessageExt m : c.poll(500)) {
                bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
            }
        }
        c.shutdown();
        return Json.obj("op", "litepull", "bodies", new ArrayList<>(bodies));
    }

    @SuppressWarnings("deprecation")
    private static Map<String, Object> pull(String ns, RPCHook hook, String topic, String group) throws Exception {
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(group, hook);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance("q"));
        c.start();
        int found = 0;
        Object error = null;
        try {
            List<MessageQueue> mqs = new ArrayList<>(c.fetchSubscribeMessageQueues(topic));
            Collections.sort(mqs);
            for (MessageQueue mq : mqs) {
                PullResult r = c.pull(mq, "*", 0, 32, 10_000);
                if (r.getPullStatus() == PullStatus.FOUND) {
                    found += r.getMsgFoundList().size();
                }
            }
        } catch (Exception e) {
            error = describe(e);
        } finally {
            c.shutdown();
        }
        return Json.obj("op", "pull", "found", found, "error", error);
    }

    private static Map<String, Object> createTopic(String ns, RPCHook hook, String brokerAddr, String topic)
        throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(hook, 10_000);
        admin.setNamesrvAddr(ns);
        admin.setInstanceName(instance("a"));
        admin.start();
        Object error = null;
        try {
            TopicConfig tc = new TopicConfig(topic);
            tc.setReadQueueNums(4);
            tc.setWriteQueueNums(4);
            admin.createAndUpdateTopicConfig(brokerAddr, tc);
        } catch (Exception e) {
            error = describe(e);
        } finally {
            admin.shutdown();
        }
        return Json.obj("op", "createTopic", "error", error);
    }
}
