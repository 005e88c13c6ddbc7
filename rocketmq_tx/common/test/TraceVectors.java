// The trace vectors of test_trace.py, printed by the official TraceDataEncoder (RocketMQ 4.9.8):
//   java -cp "compat-tests/java/target-4/classes:$(cat compat-tests/java/target-4/classpath.txt)" \
//        rocketmq_tx/common/test/TraceVectors.java
// One line per record kind: name, the UTF-8 record text in hex, the sorted keys. compat-tests/test_trace_client.py
// runs it and compares with our encoder.
import org.apache.rocketmq.client.trace.*;
import org.apache.rocketmq.common.message.MessageType;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.AccessChannel;
import java.util.*;

public class TraceVectors {
    static void show(String name, TraceContext ctx) {
        TraceTransferBean b = TraceDataEncoder.encoderFromContextBean(ctx);
        StringBuilder hex = new StringBuilder();
        for (byte x : b.getTransData().getBytes(java.nio.charset.StandardCharsets.UTF_8)) hex.append(String.format("%02x", x));
        System.out.println(name + " " + hex + " " + String.join(",", new TreeSet<>(b.getTransKey())));
    }
    public static void main(String[] a) {
        TraceContext pub = new TraceContext();
        pub.setTraceType(TraceType.Pub); pub.setTimeStamp(1700000000123L); pub.setRegionId("DefaultRegion");
        pub.setGroupName("PG"); pub.setCostTime(7); pub.setSuccess(true);
        TraceBean b = new TraceBean(); b.setTopic("T"); b.setMsgId("C0A8000100002A9F0000000000000001");
        b.setTags("TagA"); b.setKeys("k1 k2"); b.setStoreHost("127.0.0.1:10911"); b.setBodyLength(5);
        b.setMsgType(MessageType.Normal_Msg); b.setOffsetMsgId("7F00000100002A9F0000000000000000");
        pub.setTraceBeans(new ArrayList<>(Arrays.asList(b)));
        show("pub", pub);
        TraceContext pub2 = new TraceContext();
        pub2.setTraceType(TraceType.Pub); pub2.setTimeStamp(1700000000456L); pub2.setRegionId("DefaultRegion");
        pub2.setGroupName("PG"); pub2.setCostTime(0); pub2.setSuccess(false);
        TraceBean b2 = new TraceBean(); b2.setTopic("T"); b2.setMsgId("ID2"); b2.setTags(null); b2.setKeys(null);
        b2.setStoreHost("127.0.0.1:10911"); b2.setBodyLength(3); b2.setMsgType(MessageType.Trans_Msg_Half);
        b2.setOffsetMsgId("OFF2");
        pub2.setTraceBeans(new ArrayList<>(Arrays.asList(b2)));
        show("pubnull", pub2);
        TraceContext sb = new TraceContext();
        sb.setTraceType(TraceType.SubBefore); sb.setTimeStamp(1700000001000L); sb.setRegionId("DefaultRegion");
        sb.setGroupName("CG"); sb.setRequestId("REQ1");
        TraceBean s1 = new TraceBean(); s1.setMsgId("M1"); s1.setRetryTimes(0); s1.setKeys("k1");
        TraceBean s2 = new TraceBean(); s2.setMsgId("M2"); s2.setRetryTimes(2); s2.setKeys(null);
        sb.setTraceBeans(new ArrayList<>(Arrays.asList(s1, s2)));
        show("subbefore", sb);
        TraceContext sa = new TraceContext();
        sa.setTraceType(TraceType.SubAfter); sa.setTimeStamp(1700000001050L); sa.setRegionId("DefaultRegion");
        sa.setGroupName("CG"); sa.setRequestId("REQ1"); sa.setCostTime(25); sa.setSuccess(false);
        sa.setContextCode(4); sa.setAccessChannel(AccessChannel.LOCAL);
        sa.setTraceBeans(new ArrayList<>(Arrays.asList(s1, s2)));
        show("subafter", sa);
        TraceContext et = new TraceContext();
        et.setTraceType(TraceType.EndTransaction); et.setTimeStamp(1700000002000L); et.setRegionId("DefaultRegion");
        et.setGroupName("TXG");
        TraceBean e = new TraceBean(); e.setTopic("T"); e.setMsgId("M3"); e.setTags("TagA"); e.setKeys("k3");
        e.setStoreHost("127.0.0.1:10911"); e.setMsgType(MessageType.Trans_msg_Commit); e.setTransactionId("M3");
        e.setTransactionState(LocalTransactionState.COMMIT_MESSAGE); e.setFromTransactionCheck(true);
        et.setTraceBeans(new ArrayList<>(Arrays.asList(e)));
        show("endtx", et);
    }
}
