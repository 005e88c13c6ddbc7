package rocketmq.compat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * Times the official Java codec in-process, as a yardstick for the Python codec.
 *
 * Cases (one JSON line each: {"case": ..., "us_per_op": ..., ...}):
 *   send_v2_json / send_v2_rocketmq: build the SEND_MESSAGE_V2 request of the vectors with a
 *     1 KiB body, fastEncodeHeader + body into a ByteBuf (what NettyEncoder does), then
 *     RemotingCommand.decode of the frame (length prefix stripped, as NettyDecoder does) and
 *     decodeCommandCustomHeader(SendMessageRequestHeaderV2.class).
 *   pull_32x1k_json / pull_32x1k_rocketmq: a PULL_MESSAGE response whose body is 32 CommitLog
 *     records of 1 KiB: frame encode + decode + header decode + MessageDecoder.decodes(body).
 *
 * Usage: CodecBench [iterations] [warmup]   (defaults 200000 / 200000)
 */
public final class CodecBench {
    private CodecBench() {
    }

    /** Defeats dead-code elimination. */
    static volatile long sink;

    interface Op {
        long run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));

        byte[] sendBody = new byte[1024];
        new Random(7).nextBytes(sendBody);
        byte[] pullBody = pullBody(32, 1024);

        for (SerializeType st : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
            ByteBuf buf = Unpooled.buffer(4096);
            Op send = () -> {
                RemotingCommand request = Proto.sendMessageV2(sendBody);
                request.setSerializeTypeCurrentRPC(st);
                buf.clear();
                request.fastEncodeHeader(buf);
                buf.writeBytes(sendBody);
                buf.skipBytes(4);
                RemotingCommand decoded = RemotingCommand.decode(buf);
                Object header = Proto.decodeSendV2(decoded);
                return decoded.getBody().length + (header == null ? 0 : 1);
            };
            bench("send_v2_" + st.name().toLowerCase(), send, warmup, iterations, st, 1024);
        }

        int pullIterations = Math.max(1, iterations / 8);
        int pullWarmup = Math.max(1, warmup / 8);
        for (SerializeType st : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
            ByteBuf buf = Unpooled.buffer(pullBody.length + 1024);
            Op pull = () -> {
                RemotingCommand response = Proto.pullResponse(pullBody, 32);
                response.setOpaque(7);
                response.markResponseType();
                response.setSerializeTypeCurrentRPC(st);
                buf.clear();
                response.fastEncodeHeader(buf);
                buf.writeBytes(pullBody);
                buf.skipBytes(4);
                RemotingCommand decoded = RemotingCommand.decode(buf);
                Object header = Proto.decodePullResponseHeader(decoded);
                List<MessageExt> msgs = MessageDecoder.decodes(ByteBuffer.wrap(decoded.getBody()));
                if (msgs.size() != 32) {
                    throw new IllegalStateException("decoded " + msgs.size() + " messages");
                }
                return msgs.get(31).getQueueOffset() + (header == null ? 0 : 1);
            };
            bench("pull_32x1k_" + st.name().toLowerCase(), pull, pullWarmup, pullIterations, st, pullBody.length);
        }
        System.exit(0);
    }

    static void bench(String name, Op op, int warmup, int iterations, SerializeType st, int bodyBytes)
        throws Exception {
        long acc = 0;
        for (int i = 0; i < warmup; i++) {
            acc += op.run();
        }
        // Best of 3 measured rounds (less noise from GC and the other core's load).
        double best = Double.MAX_VALUE;
        double[] rounds = new double[3];
        for (int r = 0; r < rounds.length; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                acc += op.run();
            }
            long dt = System.nanoTime() - t0;
            rounds[r] = dt / 1000.0 / iterations;
            best = Math.min(best, rounds[r]);
        }
        sink = acc;
        Map<String, Object> line = Json.obj(
            "case", name,
            "us_per_op", round(best),
            "rounds_us_per_op", new Object[] {round(rounds[0]), round(rounds[1]), round(rounds[2])},
            "iterations", iterations,
            "warmup", warmup,
            "serialize", st.name(),
            "body_bytes", bodyBytes,
            "rocketmq", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION),
            "java", System.getProperty("java.version"));
        Out.json(line);
    }

    static double round(double v) {
        return Math.round(v * 1000.0) / 1000.0;
    }

    /** n CommitLog records with bodySize-byte bodies, as the broker stores them. */
    static byte[] pullBody(int n, int bodySize) throws Exception {
        InetSocketAddress born = new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 50000);
        InetSocketAddress store = new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 10911);
        Random rnd = new Random(11);
        ByteBuffer all = ByteBuffer.allocate(n * (bodySize + 512));
        long offset = 0;
        for (int i = 0; i < n; i++) {
            byte[] body = new byte[bodySize];
            rnd.nextBytes(body);
            MessageExt m = new MessageExt();
            m.setTopic("TopicTest");
            m.setQueueId(0);
            m.setQueueOffset(i);
            m.setCommitLogOffset(offset);
            m.setBornTimestamp(1700000000000L + i);
            m.setBornHost(born);
            m.setStoreTimestamp(1700000000100L + i);
            m.setStoreHost(store);
            Map<String, String> p = new HashMap<>();
            p.put(MessageConst.PROPERTY_TAGS, "TagA");
            p.put(MessageConst.PROPERTY_KEYS, "key-" + i);
            p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, String.format("7F00000100002A9F%016X", i));
            p.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
            MessageAccessor.setProperties(m, p);
            m.setBody(body);
            m.setBodyCRC(UtilAll.crc32(body));
            byte[] rec = MessageDecoder.encode(m, false);
            all.put(rec);
            offset += rec.length;
        }
        byte[] out = new byte[all.position()];
        all.flip();
        all.get(out);
        return out;
    }
}
