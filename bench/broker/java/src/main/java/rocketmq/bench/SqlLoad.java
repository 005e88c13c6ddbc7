package rocketmq.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * The SQL92 bench's backlog: count messages, numbered i = 0 .. count-1, each with the user
 * properties {@code a} = i % 10 and {@code i} = i and no tag, sent synchronously from N
 * threads (DefaultMQProducer, as the benchmark Producer sends). A send that fails is retried
 * (up to 5 times), so that every number is stored once (a retry after a timeout may store it
 * twice; the scan counts distinct numbers).
 *
 * <p>Usage: SqlLoad namesrvAddr topic count threads bodySize
 *
 * <p>Prints one JSON line: sent, failed, retried, seconds, tps.
 */
public final class SqlLoad {
    public static void main(String[] args) throws Exception {
        System.setProperty(RemotingCommand.SERIALIZE_TYPE_PROPERTY, SerializeType.ROCKETMQ.name());
        String namesrv = args[0];
        String topic = args[1];
        long count = Long.parseLong(args[2]);
        int threads = Integer.parseInt(args[3]);
        byte[] body = new byte[Integer.parseInt(args[4])];
        Arrays.fill(body, (byte) 'a');

        DefaultMQProducer producer = new DefaultMQProducer("bench_sql92_loader");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(Long.toString(System.nanoTime()));
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();

        AtomicLong next = new AtomicLong();
        LongAdder sent = new LongAdder();
        LongAdder failed = new LongAdder();
        LongAdder retried = new LongAdder();
        long t0 = System.nanoTime();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            workers[t] = new Thread(() -> {
                long i;
                while ((i = next.getAndIncrement()) < count) {
                    Message msg = new Message(topic, body);
                    msg.putUserProperty("a", Long.toString(i % 10));
                    msg.putUserProperty("i", Long.toString(i));
                    boolean ok = false;
                    for (int attempt = 0; attempt < 5 && !ok; attempt++) {
                        if (attempt > 0) {
                            retried.increment();
                        }
                        try {
                            ok = producer.send(msg).getSendStatus() == SendStatus.SEND_OK;
                        } catch (Exception e) {
                            ok = false;
                        }
                    }
                    if (ok) {
                        sent.increment();
                    } else {
                        failed.increment();
                    }
                }
            });
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        producer.shutdown();
        System.out.println(String.format(Locale.ROOT,
            "{\"sent\": %d, \"failed\": %d, \"retried\": %d, \"seconds\": %.3f, \"tps\": %.1f}",
            sent.sum(), failed.sum(), retried.sum(), seconds, sent.sum() / seconds));
        System.exit(0);
    }
}
