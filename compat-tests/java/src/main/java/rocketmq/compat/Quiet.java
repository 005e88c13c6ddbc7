package rocketmq.compat;

import java.io.PrintStream;

/**
 * Keeps RocketMQ's logging away from stdout.
 *
 * 4.9.x logs through slf4j + logback 1.2 (system property logback.configurationFile);
 * 5.x logs through a shaded logback that reads rmq.logback.configurationFile and would
 * otherwise pick up rmq.broker.logback.xml / rmq.client.logback.xml from the RocketMQ jars
 * (which log to the console). Both are pointed at compat-logback.xml (WARN and above, to
 * stderr). Must run before any RocketMQ class is loaded, i.e. first thing in main().
 * Finally System.out itself is redirected to stderr so that stray println calls inside
 * libraries cannot corrupt our line protocol (our own output goes through {@link Out}).
 */
public final class Quiet {
    private Quiet() {
    }

    public static void init() {
        setIfAbsent("logback.configurationFile", "compat-logback.xml");
        setIfAbsent("rmq.logback.configurationFile", "compat-logback.xml");
        // 4.9 client logger: route through slf4j (so the config above applies) instead of
        // its own file appender under ~/logs.
        setIfAbsent("rocketmq.client.logUseSlf4j", "true");
        // Netty's leak detector etc. also go through slf4j; nothing else to do.
        PrintStream err = System.err;
        System.setOut(err);
    }

    private static void setIfAbsent(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }
}
