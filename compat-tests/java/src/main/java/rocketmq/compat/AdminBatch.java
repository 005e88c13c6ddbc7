package rocketmq.compat;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Many mqadmin commands in one JVM: the official MQAdminStartup.main0, once per command,
 * with System.out and System.err captured per command (mqadmin's JVM start-up costs more
 * than most commands).
 *
 * Usage: AdminBatch, then one command per stdin line, its arguments separated by TAB
 * (exactly what would follow "mqadmin"). For each command it prints one JSON line
 * {"args": [...], "out": "...", "err": "..."}; {"done": true} after stdin closes.
 * The logging configuration of ROCKETMQ_HOME/conf/logback_tools.xml applies as for mqadmin.
 */
public final class AdminBatch {
    private AdminBatch() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream realErr = System.err;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] cmd = line.split("\t");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(outStream);
            System.setErr(errStream);
            try {
                MQAdminStartup.main0(cmd, null);
            } catch (Throwable t) {
                t.printStackTrace(errStream);
            } finally {
                System.setOut(realErr);
                System.setErr(realErr);
            }
            outStream.flush();
            errStream.flush();
            Out.json(Json.obj("args", Arrays.asList(cmd), "out", out.toString(StandardCharsets.UTF_8),
                "err", err.toString(StandardCharsets.UTF_8)));
        }
        Out.json(Json.obj("done", true));
        System.exit(0);
    }
}
