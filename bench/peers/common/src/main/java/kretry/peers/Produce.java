package kretry.peers;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The input producer, shaped as kretry_bench's (bench/bench_io.c): N
 * messages, values of -Dbench.value_bytes (100) starting with the message's
 * number (15 digits),
 * key i mod keys, headers trace-id and content-type; or, with
 * -Dbench.values=kill, tests/it_kill.c's values "n-i" (keyed the same).
 * -Dbench.rate=R paces it (a batch every 10 ms on an absolute clock). Exits
 * once every message is acknowledged (acks=all, idempotent). -Dbench.map=PATH
 * also writes "i partition offset" a line for each message, as acknowledged
 * (the kill scenario names what a side left unhandled by its coordinates).
 *   java kretry.peers.Produce  (-Dbench.bootstrap, topic, messages, keys,
 *                               key_digits, rate, values, value_bytes, map)
 */
public final class Produce {
    public static void main(String[] a) throws Exception {
        String topic = Bench.prop("topic");
        long n = Bench.longProp("messages", 0);
        long keys = Bench.longProp("keys", 10000);
        int digits = (int) Bench.longProp("key_digits", 5);
        long rate = Bench.longProp("rate", 0);
        boolean kill = Bench.prop("values", "bench").equals("kill");
        int vlen = (int) Bench.longProp("value_bytes", 100);
        Properties p = new Properties();
        p.put("bootstrap.servers", Bench.prop("bootstrap"));
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        p.put("batch.size", "262144");
        String map = Bench.prop("map", "");
        StringBuilder mapped = new StringBuilder();
        try (var prod = new KafkaProducer<byte[], byte[]>(p)) {
            List<Future<RecordMetadata>> pending = new ArrayList<>();
            long first = 0; // the message number of pending's first entry
            long t0 = System.nanoTime(), perTick = Math.max(1, rate / 100);
            for (long i = 0; i < n; i++) {
                if (rate > 0 && i % perTick == 0) {
                    long due = t0 + (i / perTick) * 10_000_000L;
                    long wait = due - System.nanoTime();
                    if (wait > 0)
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                ProducerRecord<byte[], byte[]> r;
                if (kill) {
                    byte[] v = Bench.utf8("n-" + i);
                    r = new ProducerRecord<>(topic, v, v);
                } else {
                    String num = String.format("%015d", i);
                    byte[] v = new byte[vlen];
                    java.util.Arrays.fill(v, (byte) 'x');
                    System.arraycopy(Bench.utf8(num), 0, v, 0, 15);
                    byte[] k = Bench.utf8(String.format("key-%0" + digits + "d", i % keys));
                    r = new ProducerRecord<>(topic, k, v);
                    r.headers().add(new RecordHeader("trace-id", Bench.utf8("t-" + i)));
                    r.headers().add(new RecordHeader("content-type", Bench.utf8("application/octet-stream")));
                }
                pending.add(prod.send(r));
                if (pending.size() >= 50000) {
                    settle(pending, first, map.isEmpty() ? null : mapped);
                    first = i + 1;
                }
            }
            prod.flush();
            settle(pending, first, map.isEmpty() ? null : mapped);
        }
        if (!map.isEmpty())
            java.nio.file.Files.writeString(java.nio.file.Path.of(map), mapped);
    }

    /** Waits for every acknowledgement in pending (message numbers from
     * first on), noting each one's coordinates in mapped unless null. */
    static void settle(List<Future<RecordMetadata>> pending, long first, StringBuilder mapped)
            throws Exception {
        long i = first;
        for (var f : pending) {
            RecordMetadata m = f.get();
            if (mapped != null)
                mapped.append(i).append(' ').append(m.partition()).append(' ')
                        .append(m.offset()).append('\n');
            i++;
        }
        pending.clear();
    }
}
