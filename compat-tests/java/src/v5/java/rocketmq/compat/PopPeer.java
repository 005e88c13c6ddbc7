package rocketmq.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.impl.ClientRemotingProcessor;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;

/**
 * The 5.x remoting client's POP calls (MQClientAPIImpl.popMessageAsync, ackMessageAsync,
 * batchAckMessageAsync, changeInvisibleTimeAsync) for test_pop_interop.py: one command per
 * stdin line, TAB-separated; one JSON line per command.
 *
 *   pop ADDR BROKER TOPIC GROUP MAX INVISIBLE_MS POLL_MS [order]
 *       {"op","status","restNum","msgs":[{"body","topic","queueId","queueOffset","reconsumeTimes",
 *        "extraInfo","firstPopTime","storeTimestamp"}]}; extraInfo is the POP_CK the client built or received;
 *       "order" pops with order=true (FIFO), reconsumeTimes then from orderCountInfo
 *   ack ADDR TOPIC GROUP QUEUE_ID OFFSET EXTRA_INFO     {"op","status"} (the topic sent is the
 *       real one, ExtraInfoUtil.getRealTopic, as the push consumer sends it)
 *   batchack ADDR TOPIC GROUP EXTRA_INFO[,EXTRA_INFO...] {"op","status"}
 *   change ADDR BROKER TOPIC GROUP QUEUE_ID OFFSET EXTRA_INFO INVISIBLE_MS
 *       {"op","status","extraInfo","popTime"}
 */
public final class PopPeer {
    private static final long TIMEOUT = 30_000;
    private static MQClientAPIImpl api;

    private PopPeer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        NettyClientConfig netty = new NettyClientConfig();
        api = new MQClientAPIImpl(netty, new ClientRemotingProcessor(null), null, new ClientConfig());
        api.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Out.json(Json.obj("ready", true));
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
                out = Json.obj("op", a[0], "error", t.getClass().getName() + ": " + t.getMessage());
            }
            Out.json(out);
        }
        api.shutdown();
        Out.json(Json.obj("done", true));
        System.exit(0);
    }

    private static Map<String, Object> run(String[] a) throws Exception {
        switch (a[0]) {
            case "pop": {
                PopMessageRequestHeader h = new PopMessageRequestHeader();
                h.setTopic(a[3]);
                h.setConsumerGroup(a[4]);
                h.setQueueId(-1);
                h.setMaxMsgNums(Integer.parseInt(a[5]));
                h.setInvisibleTime(Long.parseLong(a[6]));
                h.setPollTime(Long.parseLong(a[7]));
                h.setBornTime(System.currentTimeMillis());
                h.setInitMode(ConsumeInitMode.MAX);
                h.setExpType("TAG");
                h.setExp("*");
                if (a.length > 8 && "order".equals(a[8])) {
                    h.setOrder(true);
                }
                CompletableFuture<Object> f = new CompletableFuture<>();
                api.popMessageAsync(a[2], a[1], h, TIMEOUT + Long.parseLong(a[7]), new PopCallback() {
                    @Override
                    public void onSuccess(PopResult r) {
                        f.complete(r);
                    }

                    @Override
                    public void onException(Throwable e) {
                        f.complete(e);
                    }
                });
                Object r = f.get(2 * TIMEOUT + Long.parseLong(a[7]), TimeUnit.MILLISECONDS);
                if (r instanceof Throwable) {
                    Throwable t = (Throwable) r;
                    return Json.obj("op", "pop", "error", t.getClass().getName() + ": " + t.getMessage());
                }
                PopResult pr = (PopResult) r;
                List<Object> msgs = new ArrayList<>();
                if (pr.getMsgFoundList() != null) {
                    for (MessageExt m : pr.getMsgFoundList()) {
                        msgs.add(Json.obj("body", new String(m.getBody(), StandardCharsets.UTF_8),
                            "topic", m.getTopic(), "queueId", m.getQueueId(), "queueOffset", m.getQueueOffset(),
                            "reconsumeTimes", m.getReconsumeTimes(),
                            "extraInfo", m.getProperty(MessageConst.PROPERTY_POP_CK),
                            "firstPopTime", m.getProperty(MessageConst.PROPERTY_FIRST_POP_TIME),
                            "storeTimestamp", m.getStoreTimestamp()));
                    }
                }
                return Json.obj("op", "pop", "status", pr.getPopStatus().name(), "restNum", pr.getRestNum(),
                    "msgs", msgs);
            }
            case "ack": {
                String[] info = ExtraInfoUtil.split(a[6]);
                AckMessageRequestHeader h = new AckMessageRequestHeader();
                h.setTopic(ExtraInfoUtil.getRealTopic(info, a[2], a[3]));
                h.setConsumerGroup(a[3]);
                h.setQueueId(Integer.parseInt(a[4]));
                h.setOffset(Long.parseLong(a[5]));
                h.setExtraInfo(a[6]);
                CompletableFuture<Object> f = new CompletableFuture<>();
                api.ackMessageAsync(a[1], TIMEOUT, callback(f), h);
                return ackAnswer("ack", f);
            }
            case "batchack": {
                CompletableFuture<Object> f = new CompletableFuture<>();
                api.batchAckMessageAsync(a[1], TIMEOUT, callback(f), a[2], a[3], Arrays.asList(a[4].split(",")));
                return ackAnswer("batchack", f);
            }
            case "change": {
                String[] info = ExtraInfoUtil.split(a[7]);
                ChangeInvisibleTimeRequestHeader h = new ChangeInvisibleTimeRequestHeader();
                h.setTopic(ExtraInfoUtil.getRealTopic(info, a[3], a[4]));
                h.setConsumerGroup(a[4]);
                h.setQueueId(Integer.parseInt(a[5]));
                h.setOffset(Long.parseLong(a[6]));
                h.setExtraInfo(a[7]);
                h.setInvisibleTime(Long.parseLong(a[8]));
                CompletableFuture<Object> f = new CompletableFuture<>();
                api.changeInvisibleTimeAsync(a[2], a[1], h, TIMEOUT, callback(f));
                Object r = f.get(2 * TIMEOUT, TimeUnit.MILLISECONDS);
                if (r instanceof Throwable) {
                    Throwable t = (Throwable) r;
                    return Json.obj("op", "change", "error", t.getClass().getName() + ": " + t.getMessage());
                }
                AckResult ar = (AckResult) r;
                return Json.obj("op", "change", "status", ar.getStatus().name(), "extraInfo", ar.getExtraInfo(),
                    "popTime", ar.getPopTime());
            }
            default:
                throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    private static AckCallback callback(CompletableFuture<Object> f) {
        return new AckCallback() {
            @Override
            public void onSuccess(AckResult r) {
                f.complete(r);
            }

            @Override
            public void onException(Throwable e) {
                f.complete(e);
            }
        };
    }

    private static Map<String, Object> ackAnswer(String op, CompletableFuture<Object> f) throws Exception {
        Object r = f.get(2 * TIMEOUT, TimeUnit.MILLISECONDS);
        if (r instanceof Throwable) {
            Throwable t = (Throwable) r;
            return Json.obj("op", op, "error", t.getClass().getName() + ": " + t.getMessage());
        }
        return Json.obj("op", op, "status", ((AckResult) r).getStatus().name());
    }
}
