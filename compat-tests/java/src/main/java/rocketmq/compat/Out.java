package rocketmq.compat;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * stdout is reserved for machine-readable lines. Every line is written in one
 * call and flushed immediately so a reader on the other end of a pipe sees it
 * at once.
 */
public final class Out {
    private static final PrintStream STDOUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);

    private Out() {
    }

    public static synchronized void line(String s) {
        STDOUT.print(s);
        STDOUT.print('\n');
        STDOUT.flush();
    }

    public static void json(Object o) {
        line(Json.write(o));
    }

    public static void err(String s) {
        System.err.println(s);
        System.err.flush();
    }
}
