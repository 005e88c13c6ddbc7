package rocketmq.compat;

import com.alibaba.fastjson.serializer.SerializerFeature;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * Writes byte vectors produced by the official RocketMQ 4.9.8 encoders, each with a
 * JSON sidecar describing what Java decodes from it. See compat-tests/vectors/README.md.
 *
 * Usage: VectorCapture outdir
 */
public final class VectorCapture {
    static final long STORE_TS = 1700000000456L;
    static final long BORN_TS = 1700000000123L;

    private final File outDir;
    private final List<String> written = new ArrayList<>();

    private VectorCapture(File outDir) {
        this.outDir = outDir;
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        if (args.length != 1) {
            Out.err("usage: VectorCapture outdir");
            System.exit(2);
        }
        // What MQClientAPIImpl / NamesrvStartup / BrokerStartup do at startup: every
        // RemotingCommand they create carries this version.
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
        File out = new File(args[0]);
        if (!out.isDirectory() && !out.mkdirs()) {
            throw new IOException("cannot create " + out);
        }
        VectorCapture vc = new VectorCapture(out);
        vc.sendMessageV2();
        vc.pullResponseBody();
        vc.routeResponses();
        for (String name : vc.written) {
            Out.line("WROTE " + name);
        }
        Out.line("DONE " + vc.written.size());
    }

    // ---------------------------------------------------------------- helpers

    static String javaVersion() {
        // "V4_9_8" -> "4.9.8"
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION).substring(1).replace('_', '.');
    }

    private void write(String name, byte[] data) throws IOException {
        Files.write(new File(outDir, name).toPath(), data);
        written.add(name);
    }

    private void sidecar(String name, Map<String, Object> content) throws IOException {
        write(name, (pretty(content) + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /** One top-level key per line so the sidecars diff nicely. */
    static String pretty(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder("{\n");
        int i = 0;
        for (Map.Entry<String, Object> e : m.entrySet()) {
            sb.append("  ").append(Json.write(e.getKey())).append(": ").append(Json.write(e.getValue()));
            sb.append(++i < m.size() ? ",\n" : "\n");
        }
        return sb.append("}").toString();
    }

    static byte[] toArray(ByteBuffer bb) {
        byte[] b = new byte[bb.remaining()];
        bb.duplicate().get(b);
        return b;
    }

    static byte[] toArray(ByteBuf buf) {
        byte[] b = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), b);
        return b;
    }

    /** Java's view of a full frame (4-byte length prefix included). */
    static Map<String, Object> decodeFrame(byte[] frame) throws Exception {
        ByteBuffer bb = ByteBuffer.wrap(frame);
        int total = bb.getInt();
        int headerWord = bb.getInt(4);
        RemotingCommand cmd = RemotingCommand.decode(ByteBuffer.wrap(frame, 4, frame.length - 4).slice());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("frame_length_field", total);
        m.put("header_length", headerWord & 0xFFFFFF);
        m.put("serialize_byte", (headerWord >>> 24) & 0xFF);
        m.put("code", cmd.getCode());
        m.put("language", cmd.getLanguage().name());
        m.put("version", cmd.getVersion());
        m.put("opaque", cmd.getOpaque());
        m.put("flag", cmd.getFlag());
        m.put("remark", cmd.getRemark());
        m.put("serialize", cmd.getSerializeTypeCurrentRPC().name());
        m.put("extFields", cmd.getExtFields() == null ? null : new TreeMap<>(cmd.getExtFields()));
        m.put("body_len", cmd.getBody() == null ? 0 : cmd.getBody().length);
        return m;
    }

    static String headerText(byte[] frame) {
        int headerLen = ByteBuffer.wrap(frame).getInt(4) & 0xFFFFFF;
        return new String(frame, 8, headerLen, StandardCharsets.UTF_8);
    }

    // ---------------------------------------------------------------- SEND_MESSAGE_V2

    private void sendMessageV2() throws Exception {
        byte[] body = "Hello RocketMQ 0".getBytes(StandardCharsets.US_ASCII);
        for (SerializeType st : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
            String base = "send_message_v2_" + st.name().toLowerCase();

            // (1) RemotingCommand.encode(): makeCustomHeaderToNet() + header serializer.
            RemotingCommand request = Proto.sendMessageV2(body);
            request.setOpaque(42);
            request.setSerializeTypeCurrentRPC(st);
            byte[] frame = toArray(request.encode());
            write(base + ".bin", frame);

            // (2) What NettyEncoder actually puts on the wire: fastEncodeHeader() + body.
            // For ROCKETMQ + a FastCodesHeader (SendMessageRequestHeaderV2 is one) the header
            // fields are written by the header's own encode(ByteBuf) in declaration order
            // (a..n) instead of HashMap order. A fresh command is required: encode() above
            // filled extFields, which fastEncodeHeader would write a second time.
            RemotingCommand wireRequest = Proto.sendMessageV2(body);
            wireRequest.setOpaque(42);
            wireRequest.setSerializeTypeCurrentRPC(st);
            ByteBuf buf = Unpooled.buffer();
            wireRequest.fastEncodeHeader(buf);
            buf.writeBytes(body);
            byte[] wire = toArray(buf);
            write(base + "_wire.bin", wire);

            Map<String, Object> decoded = decodeFrame(frame);
            @SuppressWarnings("unchecked")
            Map<String, String> ext = (Map<String, String>) decoded.get("extFields");
            Map<String, Object> sc = new LinkedHashMap<>();
            sc.put("java_version", javaVersion());
            sc.put("file", base + ".bin");
            sc.put("code", Proto.SEND_MESSAGE_V2);
            sc.put("serialize", st.name());
            sc.put("opaque", 42);
            sc.put("version", MQVersion.CURRENT_VERSION);
            sc.put("version_desc", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
            sc.put("language", "JAVA");
            sc.put("flag", 0);
            sc.put("extFields", ext);
            sc.put("properties_decoded", new TreeMap<>(MessageDecoder.string2messageProperties(ext.get("i"))));
            sc.put("body_hex", Json.hex(body));
            sc.put("frame_len", frame.length);
            if (st == SerializeType.JSON) {
                sc.put("header_json", headerText(frame));
            }
            sc.put("java_decoded", decoded);
            sc.put("wire_file", base + "_wire.bin");
            sc.put("wire_equals_encode", Arrays.equals(frame, wire));
            sc.put("wire_java_decoded", decodeFrame(wire));
            if (st == SerializeType.JSON) {
                sc.put("wire_header_json", headerText(wire));
            }
            sc.put("how", "RemotingCommand.createRequestCommand(310, SendMessageRequestHeaderV2."
                + "createSendMessageRequestHeaderV2(filled SendMessageRequestHeader)); setOpaque(42); "
                + "setSerializeTypeCurrentRPC(" + st.name() + "); setBody(16 bytes); " + base + ".bin = encode() "
                + "(4-byte length prefix included); " + base + "_wire.bin = fastEncodeHeader(ByteBuf)+body on a "
                + "fresh identical command, i.e. what NettyEncoder sends. System property rocketmq.remoting.version="
                + MQVersion.CURRENT_VERSION + " (MQVersion.CURRENT_VERSION) as MQClientAPIImpl sets it.");
            sidecar(base + ".json", sc);
        }
    }

    // ---------------------------------------------------------------- PULL_MESSAGE body

    static MessageExt record(String topic, int queueId, long queueOffset, long commitLogOffset,
        InetSocketAddress bornHost, InetSocketAddress storeHost, Map<String, String> props, byte[] storedBody,
        int sysFlag) {
        MessageExt m = new MessageExt();
        m.setTopic(topic);
        m.setFlag(0);
        m.setQueueId(queueId);
        m.setQueueOffset(queueOffset);
        m.setCommitLogOffset(commitLogOffset);
        m.setSysFlag(sysFlag);
        m.setBornTimestamp(BORN_TS + queueOffset);
        m.setBornHost(bornHost);
        m.setStoreTimestamp(STORE_TS + queueOffset);
        m.setStoreHost(storeHost);
        m.setReconsumeTimes(0);
        m.setPreparedTransactionOffset(0);
        MessageAccessor.setProperties(m, new HashMap<>(props));
        m.setBody(storedBody);
        // As CommitLog does: CRC of the body as stored (i.e. compressed if compressed),
        // UtilAll.crc32 masks the CRC32 to 31 bits.
        m.setBodyCRC(UtilAll.crc32(storedBody));
        return m;
    }

    static Map<String, String> props(String tags, String keys, String uniq) {
        Map<String, String> p = new HashMap<>();
        p.put(MessageConst.PROPERTY_TAGS, tags);
        p.put(MessageConst.PROPERTY_KEYS, keys);
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniq);
        p.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        // SendMessageProcessor adds the cluster name before storing.
        p.put(MessageConst.PROPERTY_CLUSTER, "DefaultCluster");
        return p;
    }

    private void pullResponseBody() throws Exception {
        InetSocketAddress store = new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 10911);
        List<byte[]> records = new ArrayList<>();
        List<String> notes = new ArrayList<>();

        // (a) plain IPv4 record.
        MessageExt a = record("TopicTest", 0, 0, 0,
            new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 50000), store,
            props("TagA", "k1", "7F00000100002A9F0000000000000001"),
            "msg-0".getBytes(StandardCharsets.US_ASCII), 0);
        records.add(MessageDecoder.encode(a, false));
        notes.add("plain IPv4 record");

        // (b) 5000-byte body compressed the way DefaultMQProducer does it in 4.9.8
        // (zlib, level 5; sysFlag COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE). encode(msg, true)
        // would also compress, but it takes BODYCRC from the object, so the stored body is
        // compressed here first and its CRC computed over the compressed bytes, exactly as
        // the broker's CommitLog does for a compressed message it received.
        byte[] big = new byte[5000];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) ('a' + (i % 26));
        }
        byte[] compressed = CompressorFactory.getCompressor(CompressionType.ZLIB).compress(big, 5);
        int compressedFlag = MessageSysFlag.COMPRESSED_FLAG | CompressionType.ZLIB.getCompressionFlag();
        long offB = records.get(0).length;
        MessageExt b = record("TopicTest", 0, 1, offB,
            new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 50000), store,
            props("TagB", "k2", "7F00000100002A9F0000000000000002"), compressed, compressedFlag);
        records.add(MessageDecoder.encode(b, false));
        notes.add("zlib-compressed 5000-byte body (sysFlag COMPRESSED_FLAG|COMPRESSION_ZLIB_TYPE)");

        // (c) IPv6 born host (sysFlag BORNHOST_V6_FLAG): 16-byte address + port.
        long offC = offB + records.get(1).length;
        MessageExt c = record("TopicTest", 0, 2, offC,
            new InetSocketAddress(InetAddress.getByName("::1"), 50001), store,
            props("TagC", "k3", "7F00000100002A9F0000000000000003"),
            "msg-2 ipv6".getBytes(StandardCharsets.US_ASCII), MessageSysFlag.BORNHOST_V6_FLAG);
        records.add(MessageDecoder.encode(c, false));
        notes.add("IPv6 born host [::1]:50001 (sysFlag BORNHOST_V6_FLAG)");

        int total = 0;
        for (byte[] r : records) {
            total += r.length;
        }
        ByteBuffer all = ByteBuffer.allocate(total);
        for (byte[] r : records) {
            all.put(r);
        }
        byte[] body = all.array();
        write("pull_response_body.bin", body);

        // Java's view: decode the bytes back. decodes() = clientDecode: decompresses bodies.
        List<MessageExt> decoded = MessageDecoder.decodes(ByteBuffer.wrap(body));
        // Second pass without decompression to get the body exactly as stored.
        ByteBuffer raw = ByteBuffer.wrap(body);
        List<MessageExt> stored = new ArrayList<>();
        while (raw.hasRemaining()) {
            stored.add(MessageDecoder.decode(raw, true, false, true));
        }
        List<Object> out = new ArrayList<>();
        int pos = 0;
        for (int i = 0; i < decoded.size(); i++) {
            MessageExt m = decoded.get(i);
            MessageExt s = stored.get(i);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("note", notes.get(i));
            r.put("record_offset", pos);
            r.put("storeSize", m.getStoreSize());
            r.put("magic", "0xdaa320a7");
            r.put("topic", m.getTopic());
            r.put("flag", m.getFlag());
            r.put("queueId", m.getQueueId());
            r.put("queueOffset", m.getQueueOffset());
            r.put("commitLogOffset", m.getCommitLogOffset());
            r.put("sysFlag", m.getSysFlag());
            r.put("bornTimestamp", m.getBornTimestamp());
            r.put("bornHost", hostString((InetSocketAddress) m.getBornHost()));
            r.put("storeTimestamp", m.getStoreTimestamp());
            r.put("storeHost", hostString((InetSocketAddress) m.getStoreHost()));
            r.put("reconsumeTimes", m.getReconsumeTimes());
            r.put("preparedTransactionOffset", m.getPreparedTransactionOffset());
            r.put("bodyCRC", m.getBodyCRC());
            r.put("bodyCRC_recomputed", UtilAll.crc32(s.getBody()));
            r.put("body_hex", Json.hex(s.getBody()));
            r.put("body_len_stored", s.getBody().length);
            r.put("body_decompressed_hex", Json.hex(m.getBody()));
            r.put("body_len_decompressed", m.getBody().length);
            r.put("properties", new TreeMap<>(m.getProperties()));
            r.put("properties_string_hex",
                Json.hex(MessageDecoder.messageProperties2String(m.getProperties()).getBytes(StandardCharsets.UTF_8)));
            r.put("offsetMsgId", MessageDecoder.createMessageId(m.getStoreHost(), m.getCommitLogOffset()));
            r.put("decoder_offsetMsgId", ((MessageClientExt) m).getOffsetMsgId());
            r.put("msgId", m.getMsgId());
            out.add(r);
            pos += m.getStoreSize();
        }
        Map<String, Object> sc = new LinkedHashMap<>();
        sc.put("java_version", javaVersion());
        sc.put("file", "pull_response_body.bin");
        sc.put("total_len", body.length);
        sc.put("record_count", decoded.size());
        sc.put("records", out);
        sc.put("how", "MessageExt objects filled as the broker stores them (BODYCRC = UtilAll.crc32(stored body), "
            + "CLUSTER property added), each encoded with MessageDecoder.encode(msg, false) and concatenated; "
            + "the fields above come from decoding the file back with MessageDecoder.decodes(ByteBuffer) "
            + "(body_decompressed_hex) and MessageDecoder.decode(buf, true, false, true) (body_hex, as stored). "
            + "msgId is the client view (UNIQ_KEY), offsetMsgId = MessageDecoder.createMessageId(storeHost, "
            + "commitLogOffset).");
        sidecar("pull_response_body.json", sc);
    }

    static String hostString(InetSocketAddress a) {
        InetAddress ad = a.getAddress();
        String h = ad.getHostAddress();
        if (h.contains(":")) {
            h = "[" + h + "]";
        }
        return h + ":" + a.getPort();
    }

    // ---------------------------------------------------------------- GET_ROUTEINFO_BY_TOPIC

    static TopicRouteData routeData() {
        TopicRouteData route = new TopicRouteData();
        List<QueueData> queues = new ArrayList<>();
        for (String broker : new String[] {"broker-a", "broker-b"}) {
            QueueData q = new QueueData();
            q.setBrokerName(broker);
            q.setReadQueueNums(4);
            q.setWriteQueueNums(4);
            q.setPerm(6);
            q.setTopicSysFlag(0);
            queues.add(q);
        }
        route.setQueueDatas(queues);
        List<BrokerData> brokers = new ArrayList<>();
        HashMap<Long, String> a = new HashMap<>();
        a.put(0L, "127.0.0.1:10911");
        a.put(1L, "127.0.0.1:10921");
        brokers.add(new BrokerData("DefaultCluster", "broker-a", a));
        HashMap<Long, String> b = new HashMap<>();
        b.put(0L, "127.0.0.1:10931");
        brokers.add(new BrokerData("DefaultCluster", "broker-b", b));
        route.setBrokerDatas(brokers);
        route.setFilterServerTable(new HashMap<>());
        return route;
    }

    static Map<String, Object> routeView(TopicRouteData r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("orderTopicConf", r.getOrderTopicConf());
        List<Object> qs = new ArrayList<>();
        for (QueueData q : r.getQueueDatas()) {
            qs.add(Json.obj("brokerName", q.getBrokerName(), "readQueueNums", q.getReadQueueNums(),
                "writeQueueNums", q.getWriteQueueNums(), "perm", q.getPerm(), "topicSysFlag", q.getTopicSysFlag()));
        }
        m.put("queueDatas", qs);
        List<Object> bs = new ArrayList<>();
        for (BrokerData bd : r.getBrokerDatas()) {
            Map<String, Object> addrs = new TreeMap<>();
            for (Map.Entry<Long, String> e : bd.getBrokerAddrs().entrySet()) {
                addrs.put(Long.toString(e.getKey()), e.getValue());
            }
            bs.add(Json.obj("cluster", bd.getCluster(), "brokerName", bd.getBrokerName(), "brokerAddrs", addrs));
        }
        m.put("brokerDatas", bs);
        m.put("filterServerTable", r.getFilterServerTable());
        return m;
    }

    private void routeResponses() throws Exception {
        String[][] variants = {
            {"legacy", "TopicRouteData.encode() = RemotingSerializable.encode(obj) (fastjson defaults: "
                + "unquoted numeric map keys), what namesrv sends to requests with version < V4_9_4 and "
                + "acceptStandardJsonOnly unset"},
            {"standard", "TopicRouteData.encode(BrowserCompatible, QuoteFieldNames, SkipTransientField, "
                + "MapSortField), what the 4.9.x namesrv sends when request version >= V4_9_4.ordinal() "
                + "or acceptStandardJsonOnly=true"},
        };
        for (String[] v : variants) {
            TopicRouteData route = routeData();
            byte[] body;
            if ("legacy".equals(v[0])) {
                body = route.encode();
            } else {
                body = route.encode(SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
                    SerializerFeature.SkipTransientField, SerializerFeature.MapSortField);
            }
            // As DefaultRequestProcessor.getRouteInfoByTopic + NettyRemotingAbstract do it.
            RemotingCommand response = RemotingCommand.createResponseCommand(null);
            response.setBody(body);
            response.setCode(0);
            response.setRemark(null);
            response.setOpaque(43);
            response.markResponseType();
            response.setSerializeTypeCurrentRPC(SerializeType.JSON);
            byte[] frame = toArray(response.encode());
            String name = "route_response_" + v[0];
            write(name + ".bin", frame);

            TopicRouteData back = RemotingSerializable.decode(body, TopicRouteData.class);
            Map<String, Object> sc = new LinkedHashMap<>();
            sc.put("java_version", javaVersion());
            sc.put("file", name + ".bin");
            sc.put("code", 0);
            sc.put("serialize", "JSON");
            sc.put("opaque", 43);
            sc.put("flag", 1);
            sc.put("version", MQVersion.CURRENT_VERSION);
            sc.put("header_json", headerText(frame));
            sc.put("java_decoded", decodeFrame(frame));
            sc.put("body_text", new String(body, StandardCharsets.UTF_8));
            sc.put("route", routeView(back));
            sc.put("route_equals_original", routeView(back).equals(routeView(route)));
            sc.put("how", v[1] + "; frame = RemotingCommand.createResponseCommand(null) with code 0, remark null, "
                + "opaque 43, markResponseType(), JSON header, encode() (4-byte length prefix included).");
            sidecar(name + ".json", sc);
        }
    }
}
