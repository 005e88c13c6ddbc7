package rocketmq.compat;

import io.netty.channel.ChannelHandlerContext;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.netty.NettyRemotingServer;
import org.apache.rocketmq.remoting.netty.NettyRequestProcessor;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * An official NettyRemotingServer implementing the harness echo contract
 * (see {@link Codes}). Prints {@code READY <port>} once listening, then runs
 * until stdin reaches EOF or the process gets SIGTERM.
 *
 * Usage: EchoServer [--port N]   (default 0 = ephemeral)
 */
public final class EchoServer {
    private EchoServer() {
    }

    public static void main(String[] args) throws Exception {
        Quiet.init();
        int port = 0;
        for (int i = 0; i < args.length; i++) {
            if ("--port".equals(args[i]) && i + 1 < args.length) {
                port = Integer.parseInt(args[++i]);
            } else {
                Out.err("usage: EchoServer [--port N]");
                System.exit(2);
            }
        }

        // As BrokerStartup/NamesrvStartup do: responses carry MQVersion.CURRENT_VERSION.
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
        NettyServerConfig config = new NettyServerConfig();
        config.setListenPort(port);
        config.setServerWorkerThreads(2);
        config.setServerSelectorThreads(1);
        config.setServerCallbackExecutorThreads(1);
        // 5.x has NettyServerConfig.setBindAddress; 4.9.x always binds the wildcard address.
        String bound = bindLoopback(config);

        NettyRemotingServer server = new NettyRemotingServer(config);
        AtomicInteger sinkCount = new AtomicInteger();
        // One thread for everything: requests of one connection are processed in arrival
        // order, so a SINK_COUNT sent after N oneways sees all of them.
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "echo-processor");
            t.setDaemon(true);
            return t;
        });
        // A second executor for ECHO so a big echo doesn't stall the sink counter.
        ExecutorService echoExecutor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "echo-worker");
            t.setDaemon(true);
            return t;
        });

        server.registerProcessor(Codes.ECHO, new NettyRequestProcessor() {
            @Override
            public RemotingCommand processRequest(ChannelHandlerContext ctx, RemotingCommand request) {
                RemotingCommand response = RemotingCommand.createResponseCommand(0, "echo");
                if (request.getExtFields() != null) {
                    response.setExtFields(new HashMap<>(request.getExtFields()));
                }
                response.setBody(request.getBody());
                return response;
            }

            @Override
            public boolean rejectRequest() {
                return false;
            }
        }, echoExecutor);

        server.registerProcessor(Codes.ONEWAY_SINK, new NettyRequestProcessor() {
            @Override
            public RemotingCommand processRequest(ChannelHandlerContext ctx, RemotingCommand request) {
                sinkCount.incrementAndGet();
                return null;
            }

            @Override
            public boolean rejectRequest() {
                return false;
            }
        }, executor);

        server.registerProcessor(Codes.SINK_COUNT, new NettyRequestProcessor() {
            @Override
            public RemotingCommand processRequest(ChannelHandlerContext ctx, RemotingCommand request) {
                RemotingCommand response = RemotingCommand.createResponseCommand(0, null);
                response.addExtField("count", Integer.toString(sinkCount.get()));
                return response;
            }

            @Override
            public boolean rejectRequest() {
                return false;
            }
        }, executor);

        server.start();
        int actualPort = server.localListenPort();

        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.countDown();
            try {
                server.shutdown();
            } catch (Throwable ignored) {
                // shutting down anyway
            }
        }, "echo-shutdown"));

        Out.err("EchoServer listening on " + bound + ":" + actualPort);
        Out.line("READY " + actualPort);

        Thread stdinWatcher = new Thread(() -> {
            try {
                InputStream in = System.in;
                byte[] buf = new byte[256];
                while (in.read(buf) >= 0) {
                    // ignore input; we only care about EOF
                }
            } catch (Exception ignored) {
                // treat like EOF
            }
            stop.countDown();
        }, "stdin-watcher");
        stdinWatcher.setDaemon(true);
        stdinWatcher.start();

        stop.await();
        // exit() runs the shutdown hook, which stops the server.
        System.exit(0);
    }

    private static String bindLoopback(NettyServerConfig config) {
        try {
            Method m = config.getClass().getMethod("setBindAddress", String.class);
            m.invoke(config, "127.0.0.1");
            return "127.0.0.1";
        } catch (NoSuchMethodException e) {
            return "0.0.0.0";
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }
}
