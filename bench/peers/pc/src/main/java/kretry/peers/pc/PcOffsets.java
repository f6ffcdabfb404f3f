package kretry.peers.pc;

import io.confluent.parallelconsumer.offsets.OffsetMapCodecManager;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * A group's committed offsets, one JSON line a partition, with Parallel
 * Consumer's offset metadata decoded (the offsets beyond the committed one it
 * has not completed yet, and the highest it has seen): what a restarted
 * Parallel Consumer resumes from.
 *   java kretry.peers.pc.PcOffsets BOOTSTRAP GROUP
 */
public final class PcOffsets {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        try (Admin admin = Admin.create(p)) {
            Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets(a[1])
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            for (var e : new TreeMap<>(m.entrySet().stream().collect(java.util.stream.Collectors
                    .toMap(x -> x.getKey().partition(), x -> x.getValue()))).entrySet()) {
                OffsetAndMetadata om = e.getValue();
                StringBuilder s = new StringBuilder("{\"partition\":" + e.getKey()
                        + ",\"committed\":" + (om == null ? -1 : om.offset()));
                if (om != null && !om.metadata().isEmpty()) {
                    try {
                        var h = OffsetMapCodecManager.deserialiseIncompleteOffsetMapFromBase64(
                                om.offset(), om.metadata());
                        s.append(",\"highest_seen\":").append(h.getHighestSeenOffset().orElse(-1L))
                                .append(",\"incomplete\":").append(h.getIncompleteOffsets());
                    } catch (Exception ex) {
                        s.append(",\"metadata_error\":\"").append(ex.getClass().getSimpleName())
                                .append('"');
                    }
                }
                System.out.println(s.append('}'));
            }
        }
    }
}
