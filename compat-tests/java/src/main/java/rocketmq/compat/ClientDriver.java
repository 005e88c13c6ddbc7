package rocketmq.compat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * Drives a server implementing the harness echo contract ({@link Codes}) with the
 * official NettyRemotingClient.
 *
 * Usage: ClientDriver host:port JSON|ROCKETMQ|JSON,ROCKETMQ [case ...]
 *
 * Prints one JSON line per case: {"case": name, "ok": bool, "serialize": ..., "detail": {...}}.
 * A comma-separated list of serializations runs every case once per serialization, one
 * after the other, in this one JVM (cheaper than one JVM each, and unlike two drivers
 * running at once it keeps the server-wide oneway counter delta exact).
 * Exits 0 once every case has printed (a failing case is not a crash).
 */
public final class ClientDriver {
    static final long TIMEOUT_MS = 10_000;
    static final long BIG_TIMEOUT_MS = 30_000;
    static final int BIG_SIZE = 16 * 1024 * 1024 - 64 * 1024;
    static final List<String> ALL_CASES = Arrays.asList("sync", "async", "oneway", "big", "unknown", "many");

    private final NettyRemotingClient client;
    private final String addr;
    private final SerializeType serializeType;

    private ClientDriver(NettyRemotingClient client, String addr, SerializeType serializeType) {
        this.client = client;
        this.addr = addr;
        this.serializeType = serializeType;
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        if (args.length < 2) {
            Out.err("usage: ClientDriver host:port JSON|ROCKETMQ|JSON,ROCKETMQ [case ...]");
            System.exit(2);
        }
        String addr = args[0];
        List<SerializeType> serializeTypes = new ArrayList<>();
        for (String name : args[1].split(",")) {
            serializeTypes.add(SerializeType.valueOf(name.trim()));
        }
        List<String> cases = args.length > 2 ? Arrays.asList(args).subList(2, args.length) : ALL_CASES;

        // As MQClientAPIImpl does: requests carry MQVersion.CURRENT_VERSION.
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
        NettyClientConfig config = new NettyClientConfig();
        config.setClientWorkerThreads(2);
        config.setClientCallbackExecutorThreads(2);
        NettyRemotingClient client = new NettyRemotingClient(config);
        client.start();
        for (SerializeType st : serializeTypes) {
            ClientDriver driver = new ClientDriver(client, addr, st);
            for (String c : cases) {
                driver.runCase(c);
            }
        }
        // No client.shutdown(): Netty's graceful event-loop shutdown idles for ~2 s (5.x:
        // ~2.7 s of a 4 s run). Every line is printed and flushed; exiting closes the sockets.
        System.exit(0);
    }

    private void runCase(String name) {
        Map<String, Object> detail = new LinkedHashMap<>();
        boolean ok;
        try {
            switch (name) {
                case "sync":
                    ok = caseSync(detail);
                    break;
                case "async":
                    ok = caseAsync(detail);
                    break;
                case "oneway":
                    ok = caseOneway(detail);
                    break;
                case "big":
                    ok = caseBig(detail);
                    break;
                case "unknown":
                    ok = caseUnknown(detail);
                    break;
                case "many":
                    ok = caseMany(detail);
                    break;
                default:
                    detail.put("error", "no such case");
                    ok = false;
            }
        } catch (Throwable t) {
            ok = false;
            detail.put("exception", t.getClass().getName());
            detail.put("message", String.valueOf(t.getMessage()));
            StringWriter sw = new StringWriter();
            t.printStackTrace(new PrintWriter(sw));
            Out.err(sw.toString());
        }
        Out.json(Json.obj("case", name, "ok", ok, "serialize", serializeType.name(), "detail", detail));
    }

    // ------------------------------------------------------------------ helpers

    private RemotingCommand request(int code, Map<String, String> ext, byte[] body) {
        RemotingCommand request = RemotingCommand.createRequestCommand(code, null);
        if (ext != null) {
            for (Map.Entry<String, String> e : ext.entrySet()) {
                request.addExtField(e.getKey(), e.getValue());
            }
        }
        request.setBody(body);
        request.setSerializeTypeCurrentRPC(serializeType);
        return request;
    }

    static Map<String, String> syncExt() {
        Map<String, String> ext = new LinkedHashMap<>();
        ext.put("k1", "v1");
        ext.put("empty", "");
        ext.put("unicode", "h\u00e9llo \u4e16\u754c");
        return ext;
    }

    static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    static long crc(byte[] b) {
        CRC32 c = new CRC32();
        if (b != null) {
            c.update(b);
        }
        return c.getValue();
    }

    /** A map that keeps keys whose value is null (reported as JSON null). */
    static Map<String, Object> extView(HashMap<String, String> ext) {
        if (ext == null) {
            return null;
        }
        return new TreeMap<>(ext);
    }

    /**
     * Checks an echo response: code 0, the non-empty ext fields echoed exactly, body
     * equal. The "empty" key is only reported (ROCKETMQ serialization drops empty
     * strings; the caller records what came back).
     */
    private boolean checkEcho(RemotingCommand response, Map<String, String> sent, byte[] body,
        Map<String, Object> detail) {
        if (response == null) {
            detail.put("error", "no response");
            return false;
        }
        detail.put("code", response.getCode());
        detail.put("remark", response.getRemark());
        detail.put("response_serialize", response.getSerializeTypeCurrentRPC().name());
        detail.put("flag", response.getFlag());
        detail.put("version", response.getVersion());
        detail.put("language", String.valueOf(response.getLanguage()));
        detail.put("extFields", extView(response.getExtFields()));
        HashMap<String, String> got = response.getExtFields();
        List<String> mismatched = new ArrayList<>();
        for (Map.Entry<String, String> e : sent.entrySet()) {
            if (e.getValue().isEmpty()) {
                continue;
            }
            String v = got == null ? null : got.get(e.getKey());
            if (!e.getValue().equals(v)) {
                mismatched.add(e.getKey());
            }
        }
        if (sent.containsKey("empty")) {
            String state;
            if (got == null || !got.containsKey("empty")) {
                state = "absent";
            } else if (got.get("empty") == null) {
                state = "null";
            } else {
                state = got.get("empty").isEmpty() ? "empty-string" : "value:" + got.get("empty");
            }
            detail.put("empty_value", state);
        }
        byte[] rb = response.getBody();
        detail.put("body_len", rb == null ? 0 : rb.length);
        boolean bodyEqual = Arrays.equals(rb, body) || (rb == null && body != null && body.length == 0);
        detail.put("body_equal", bodyEqual);
        detail.put("mismatched_ext", mismatched);
        return response.getCode() == 0 && mismatched.isEmpty() && bodyEqual && "echo".equals(response.getRemark());
    }

    // ------------------------------------------------------------------ cases

    private boolean caseSync(Map<String, Object> detail) throws Exception {
        Map<String, String> ext = syncExt();
        byte[] body = pattern(1000, 1);
        RemotingCommand response = client.invokeSync(addr, request(Codes.ECHO, ext, body), TIMEOUT_MS);
        return checkEcho(response, ext, body, detail);
    }

    private boolean caseAsync(Map<String, Object> detail) throws Exception {
        Map<String, String> ext = syncExt();
        byte[] body = pattern(1000, 2);
        CountDownLatch latch = new CountDownLatch(1);
        AtomicReference<RemotingCommand> result = new AtomicReference<>();
        AtomicReference<String> failure = new AtomicReference<>();
        client.invokeAsync(addr, request(Codes.ECHO, ext, body), TIMEOUT_MS, responseFuture -> {
            // operationComplete(ResponseFuture) exists in 4.9.x and 5.x alike.
            result.set(responseFuture.getResponseCommand());
            if (responseFuture.getResponseCommand() == null) {
                failure.set("sendRequestOK=" + responseFuture.isSendRequestOK()
                    + " timeout=" + responseFuture.isTimeout() + " cause=" + responseFuture.getCause());
            }
            latch.countDown();
        });
        if (!latch.await(5, TimeUnit.SECONDS)) {
            detail.put("error", "callback not invoked within 5 s");
            return false;
        }
        if (failure.get() != null) {
            detail.put("error", failure.get());
            return false;
        }
        return checkEcho(result.get(), ext, body, detail);
    }

    private int sinkCount() throws Exception {
        RemotingCommand response = client.invokeSync(addr, request(Codes.SINK_COUNT, null, null), TIMEOUT_MS);
        if (response == null || response.getCode() != 0 || response.getExtFields() == null
            || response.getExtFields().get("count") == null) {
            throw new IllegalStateException("bad SINK_COUNT response: " + response);
        }
        return Integer.parseInt(response.getExtFields().get("count"));
    }

    private boolean caseOneway(Map<String, Object> detail) throws Exception {
        int before = sinkCount();
        int sent = 5;
        for (int i = 0; i < sent; i++) {
            Map<String, String> ext = new LinkedHashMap<>();
            ext.put("seq", Integer.toString(i));
            client.invokeOneway(addr, request(Codes.ONEWAY_SINK, ext, ("oneway-" + i).getBytes(StandardCharsets.UTF_8)),
                TIMEOUT_MS);
        }
        // Oneway requests are fire-and-forget: poll (bounded) until the server has seen them.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        int after = sinkCount();
        int polls = 1;
        while (after - before < sent && System.nanoTime() < deadline) {
            Thread.sleep(20);
            after = sinkCount();
            polls++;
        }
        detail.put("before", before);
        detail.put("after", after);
        detail.put("delta", after - before);
        detail.put("polls", polls);
        return after - before == sent;
    }

    private boolean caseBig(Map<String, Object> detail) throws Exception {
        byte[] body = pattern(BIG_SIZE, 3);
        Map<String, String> ext = new LinkedHashMap<>();
        ext.put("big", "yes");
        long t0 = System.nanoTime();
        RemotingCommand response = client.invokeSync(addr, request(Codes.ECHO, ext, body), BIG_TIMEOUT_MS);
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        detail.put("sent_len", body.length);
        detail.put("sent_crc32", crc(body));
        detail.put("elapsed_ms", elapsedMs);
        if (response == null) {
            detail.put("error", "no response");
            return false;
        }
        byte[] rb = response.getBody();
        detail.put("code", response.getCode());
        detail.put("body_len", rb == null ? 0 : rb.length);
        detail.put("body_crc32", crc(rb));
        detail.put("response_serialize", response.getSerializeTypeCurrentRPC().name());
        return response.getCode() == 0 && rb != null && rb.length == body.length && crc(rb) == crc(body)
            && Arrays.equals(rb, body);
    }

    private boolean caseUnknown(Map<String, Object> detail) throws Exception {
        RemotingCommand response = client.invokeSync(addr, request(Codes.UNKNOWN, null, null), TIMEOUT_MS);
        if (response == null) {
            detail.put("error", "no response");
            return false;
        }
        detail.put("code", response.getCode());
        detail.put("remark", response.getRemark());
        detail.put("response_serialize", response.getSerializeTypeCurrentRPC().name());
        detail.put("flag", response.getFlag());
        detail.put("extFields", extView(response.getExtFields()));
        detail.put("body_len", response.getBody() == null ? 0 : response.getBody().length);
        // REQUEST_CODE_NOT_SUPPORTED
        return response.getCode() == 3;
    }

    private boolean caseMany(Map<String, Object> detail) throws Exception {
        int n = 200;
        int failures = 0;
        String firstFailure = null;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            Map<String, String> ext = new LinkedHashMap<>();
            ext.put("i", Integer.toString(i));
            ext.put("key" + i, "value-" + i);
            byte[] body = ("body-" + i).getBytes(StandardCharsets.UTF_8);
            RemotingCommand response = client.invokeSync(addr, request(Codes.ECHO, ext, body), TIMEOUT_MS);
            Map<String, Object> d = new LinkedHashMap<>();
            if (!checkEcho(response, ext, body, d)) {
                failures++;
                if (firstFailure == null) {
                    firstFailure = "i=" + i + " " + Json.write(d);
                }
            } else if (response.getExtFields().size() != ext.size()) {
                failures++;
                if (firstFailure == null) {
                    firstFailure = "i=" + i + " extra ext fields " + Json.write(d);
                }
            }
        }
        detail.put("count", n);
        detail.put("failures", failures);
        detail.put("first_failure", firstFailure);
        detail.put("elapsed_ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        return failures == 0;
    }
}
