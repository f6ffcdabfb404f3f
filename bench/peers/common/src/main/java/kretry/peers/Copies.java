package kretry.peers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The copies in a topic, counted by value: how many values it holds, how
 * many of them more than once, and the records beyond one a value, as a
 * read_committed consumer sees them and as read_uncommitted does (aborted
 * transactions' records included). First waits (up to -Dbench.wait_s, 90)
 * until the last stable offset of every partition reaches its high
 * watermark: no transaction is left open (a SIGKILLed producer's is
 * aborted once its transaction.timeout.ms passes).
 *   java kretry.peers.Copies  (-Dbench.bootstrap, topic, wait_s)
 */
public final class Copies {
    static KafkaConsumer<byte[], byte[]> consumer(String isolation) {
        Properties p = new Properties();
        p.put("bootstrap.servers", Bench.prop("bootstrap"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("isolation.level", isolation);
        return new KafkaConsumer<>(p);
    }

    static long sum(Map<TopicPartition, Long> m) {
        return m.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Records a value (as a string) in the topic, read to @end. */
    static Map<String, Integer> count(KafkaConsumer<byte[], byte[]> c, List<TopicPartition> tps,
            Map<TopicPartition, Long> end) {
        Map<String, Integer> seen = new HashMap<>();
        c.assign(tps);
        c.seekToBeginning(tps);
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            boolean done = true;
            for (TopicPartition tp : tps)
                done &= c.position(tp) >= end.get(tp);
            if (done)
                break;
            for (var r : c.poll(Duration.ofMillis(200)))
                seen.merge(new String(r.value()), 1, Integer::sum);
        }
        return seen;
    }

    static Bench.Json stats(Bench.Json j, String prefix, Map<String, Integer> seen) {
        long records = seen.values().stream().mapToLong(Integer::longValue).sum();
        long twice = seen.values().stream().filter(v -> v > 1).count();
        return j.put(prefix + "values", seen.size()).put(prefix + "values_twice", twice)
                .put(prefix + "records_beyond_one", records - seen.size());
    }

    public static void main(String[] a) throws Exception {
        String topic = Bench.prop("topic");
        long waitMs = Bench.longProp("wait_s", 90) * 1000;
        try (var rc = consumer("read_committed"); var ru = consumer("read_uncommitted")) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : ru.partitionsFor(topic))
                tps.add(new TopicPartition(topic, pi.partition()));
            long t0 = System.currentTimeMillis();
            Map<TopicPartition, Long> lso = rc.endOffsets(tps), hw = ru.endOffsets(tps);
            while (!lso.equals(hw) && System.currentTimeMillis() - t0 < waitMs) {
                Thread.sleep(500);
                lso = rc.endOffsets(tps);
                hw = ru.endOffsets(tps);
            }
            Bench.Json j = new Bench.Json().put("topic", topic).put("stable", lso.equals(hw))
                    .put("waited_s", (System.currentTimeMillis() - t0) / 1000.0)
                    .put("unstable_records", sum(hw) - sum(lso));
            stats(j, "committed_", count(rc, tps, lso));
            stats(j, "all_", count(ru, tps, hw));
            j.print();
        }
    }
}
