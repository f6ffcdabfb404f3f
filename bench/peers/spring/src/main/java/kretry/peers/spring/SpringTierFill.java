package kretry.peers.spring;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Properties;
import kretry.peers.Bench;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * tier_mem's input for Spring: N copies written straight into SOURCE-retry as
 * Spring's recoverer writes them (retry_topic-attempts 2 as a 4-byte int,
 * retry_topic-original-timestamp and retry_topic-backoff-timestamp as
 * BigInteger bytes, the back-off due in an hour), the bench's 100-byte values,
 * keys and two user headers. Routing 1,000,000 through Spring itself would
 * take most of an hour at its retry-hop rate (bench/README.md "peers").
 */
public final class SpringTierFill {
    public static void main(String[] a) throws Exception {
        String topic = Bench.prop("topic") + "-retry";
        long n = Bench.longProp("messages", 0);
        Properties p = new Properties();
        p.put("bootstrap.servers", Bench.prop("bootstrap"));
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("linger.ms", "5");
        p.put("batch.size", "262144");
        long now = System.currentTimeMillis();
        byte[] due = BigInteger.valueOf(now + 3_600_000).toByteArray();
        byte[] orig = BigInteger.valueOf(now).toByteArray();
        byte[] attempts = ByteBuffer.allocate(4).putInt(2).array();
        try (var prod = new KafkaProducer<byte[], byte[]>(p)) {
            for (long i = 0; i < n; i++) {
                byte[] v = new byte[100];
                Arrays.fill(v, (byte) 'x');
                System.arraycopy(Bench.utf8(String.format("%015d", i)), 0, v, 0, 15);
                var r = new ProducerRecord<>(topic, Bench.utf8(String.format("key-%05d", i % 10000)), v);
                r.headers().add("trace-id", Bench.utf8("t-" + i)).add("content-type",
                        Bench.utf8("application/octet-stream"));
                r.headers().add("retry_topic-original-timestamp", orig).add("retry_topic-attempts", attempts)
                        .add("retry_topic-backoff-timestamp", due);
                prod.send(r);
            }
            prod.flush();
        }
    }
}
