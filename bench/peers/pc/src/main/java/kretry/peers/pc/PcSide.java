package kretry.peers.pc;

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import io.confluent.parallelconsumer.PollContext;
import java.io.FileOutputStream;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import kretry.peers.Bench;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Confluent's Parallel Consumer at its defaults (commit mode
 * PERIODIC_CONSUMER_ASYNCHRONOUS) on a KafkaConsumer with auto commit off (it
 * commits itself), auto.offset.reset=earliest and fetch.max.wait.ms=10 as
 * kretry_bench's sides.
 *
 * parallel: its README's shape, one group per ordering (-Dbench.ordering=
 * KEY, UNORDERED, PARTITION), -Dbench.concurrency threads, each call sleeping
 * bench_work_us(offset); the window is the first call to the last return.
 * kill: tests/it_worker.c's handler (2 ms; i % 7 fails once: Parallel
 * Consumer retries it in place after its retry delay; i % 11 is a permanent
 * failure, which has no dead-letter topic here, so it is skipped); OK lines
 * appended to -Dbench.out, and every call ("pid i partition offset
 * ok|retry|skip") to -Dbench.out + ".calls", for the harness's account of
 * what a run left unhandled.
 * dead_letter: every message written by the handler to SOURCE-dlt
 * (pollAndProduceMany; Parallel Consumer has no dead-letter topic of its
 * own), done once the copies are acknowledged. -Dbench.commit_mode=
 * transactional: PERIODIC_TRANSACTIONAL_PRODUCER (kill: i % 11 written to
 * SOURCE-dlt by the handler in the same transaction as its offset).
 * happy: OK at once, except -Dbench.fail_pct percent of the messages (by
 * partition and offset, Bench.fails), which fail their first attempt and are
 * retried in place after the retry delay; -Dbench.warmup messages done
 * before the window opens (a discarded warm-up in the same JVM). Once
 * partitions are assigned it says "pc: ready" on stderr.
 * delay: every message fails its first attempt and is retried in place after
 * the retry delay; the retry's lateness is its handling time - (the failure
 * time + the retry delay), Parallel Consumer's own due time, and how far
 * behind the input's due time (record timestamp + the retry delay) it is.
 * tier_mem: every message failing, held in the JVM for its retry delay (an
 * hour); see tierMem.
 */
public final class PcSide {
    static final class Transient extends RuntimeException {
        Transient(String m) {
            super(m);
        }

        Transient(String m, boolean stackless) {
            super(m, null, false, !stackless);
        }
    }

    static final AtomicBoolean ready = new AtomicBoolean();

    public static void run(String sc) throws Exception {
        String topic = Bench.prop("topic");
        long n = Bench.longProp("messages", 0);
        int conc = (int) Bench.longProp("concurrency", 16);
        Properties p = new Properties();
        p.put("bootstrap.servers", Bench.prop("bootstrap"));
        p.put("group.id", Bench.prop("group"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("fetch.max.wait.ms", "10");
        if (sc.equals("kill")) { // it_worker's session settings
            p.put("session.timeout.ms", "3000");
            p.put("heartbeat.interval.ms", "300");
        }
        var defaults = ParallelConsumerOptions.<byte[], byte[]>builder().build();
        java.time.Duration commitInterval = java.time.Duration.ofMillis(
                Bench.longProp("commit_interval_ms", defaults.getCommitInterval().toMillis()));
        java.time.Duration retryDelay = java.time.Duration.ofMillis(
                Bench.longProp("retry_delay_ms", defaults.getDefaultMessageRetryDelay().toMillis()));
        // -Dbench.commit_mode=transactional: PERIODIC_TRANSACTIONAL_PRODUCER,
        // the records the handler returns and the offsets in one transaction;
        // its producer's transactional.id is fixed by the group, so that a
        // restarted instance fences a killed one's open transaction
        boolean txn = Bench.prop("commit_mode", "consumer").equals("transactional");
        var b = ParallelConsumerOptions.<byte[], byte[]>builder()
                .ordering(ProcessingOrder.valueOf(Bench.prop("ordering", "KEY")))
                .maxConcurrency(conc)
                .commitMode(txn ? CommitMode.PERIODIC_TRANSACTIONAL_PRODUCER
                        : CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
                // -Dbench.commit_interval_ms / retry_delay_ms: absent, Parallel
                // Consumer's defaults (5 s, 1 s)
                .commitInterval(commitInterval).defaultMessageRetryDelay(retryDelay)
                .consumer(new KafkaConsumer<>(p));
        if (txn || sc.equals("dead_letter")) { // the handler's records
            Properties pp = new Properties();
            pp.put("bootstrap.servers", Bench.prop("bootstrap"));
            pp.put("key.serializer", ByteArraySerializer.class.getName());
            pp.put("value.serializer", ByteArraySerializer.class.getName());
            if (txn)
                pp.put("transactional.id", "bench-pc-" + Bench.prop("group"));
            b.producer(new KafkaProducer<>(pp));
        }
        var opts = b.build();
        var pc = ParallelStreamProcessor.createEosStreamProcessor(opts);
        // "pc: ready" on stderr once partitions are assigned: the harness
        // starts a paced input then (happy at a fixed rate)
        pc.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                if (!parts.isEmpty() && !ready.getAndSet(true))
                    System.err.println("pc: ready");
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            }
        });
        Bench.Window w = new Bench.Window();
        CountDownLatch done = new CountDownLatch(1);
        AtomicInteger completed = new AtomicInteger();
        AtomicLong slept = new AtomicLong();
        if (sc.equals("kill")) {
            FileOutputStream out = new FileOutputStream(Bench.prop("out"), true);
            FileOutputStream calls = new FileOutputStream(Bench.prop("out") + ".calls", true);
            String pid = Long.toString(ProcessHandle.current().pid());
            // i % 11: skipped (no dead-letter topic), or in the
            // transactional mode written to SOURCE-dlt by the handler
            Function<PollContext<byte[], byte[]>, String> call = ctx -> {
                int i = Integer.parseInt(new String(ctx.value()).substring(2));
                LockSupport.parkNanos(2_000_000);
                // fails its first attempt as Parallel Consumer counts them
                // (kept in memory: a restarted instance counts from 0 again)
                int failedBefore = ctx.getSingleRecord().getNumberOfFailedAttempts();
                String what = i % 11 == 0 ? (txn ? "dlt" : "skip")
                        : i % 7 == 0 && failedBefore == 0 ? "retry" : "ok";
                try {
                    calls.write(Bench.utf8(pid + " " + i + " " + ctx.getSingleConsumerRecord().partition() + " "
                            + ctx.offset() + " " + what + "\n"));
                    if (what.equals("retry"))
                        throw new Transient("n-" + i);
                    if (what.equals("ok"))
                        out.write(Bench.utf8(pid + " " + i + "\n"));
                } catch (java.io.IOException e) {
                    throw new RuntimeException(e);
                }
                return what;
            };
            if (txn)
                pc.pollAndProduceMany(ctx -> call.apply(ctx).equals("dlt")
                        ? List.of(new ProducerRecord<>(topic + "-dlt", ctx.getSingleConsumerRecord().key(), ctx.value()))
                        : List.of());
            else
                pc.poll(ctx -> call.apply(ctx));
            Runtime.getRuntime().addShutdownHook(new Thread(pc::close));
            Thread.sleep(Long.MAX_VALUE);
        }
        if (sc.equals("tier_mem")) {
            tierMem(pc, n);
            pc.close();
            System.exit(0);
        }
        long warmup = Bench.longProp("warmup", 0), failPct = Bench.longProp("fail_pct", 0);
        // delay: each retry's lateness and how far behind the input's due time
        long delayUs = retryDelay.toMillis() * 1000;
        long[] lateUs = new long[sc.equals("delay") ? (int) n : 0], behindUs = new long[lateUs.length];
        var failedAt = new ConcurrentHashMap<String, Long>();
        // one message done: the window opens once the warm-up's are and
        // closes after n more
        Runnable complete = () -> {
            int c = completed.incrementAndGet();
            if (warmup > 0 && c == warmup)
                w.open();
            if (c == warmup + n) {
                w.close();
                done.countDown();
            }
        };
        if (sc.equals("dead_letter")) {
            // every message dead-lettered by the handler: a copy to
            // SOURCE-dlt, done once the copy is acknowledged
            pc.pollAndProduceMany(ctx -> {
                if (warmup == 0)
                    w.open();
                return List.of(new ProducerRecord<>(topic + "-dlt", ctx.getSingleConsumerRecord().key(), ctx.value()));
            }, res -> complete.run());
        } else if (sc.equals("delay")) {
            pc.poll(ctx -> {
                w.open();
                var rec = ctx.getSingleConsumerRecord();
                String id = rec.partition() + "@" + rec.offset();
                long now = Bench.nowUs();
                if (ctx.getSingleRecord().getNumberOfFailedAttempts() == 0) {
                    failedAt.putIfAbsent(id, now);
                    throw new Transient("retry me");
                }
                int i = completed.getAndIncrement();
                if (i < n) {
                    lateUs[i] = now - (failedAt.get(id) + delayUs);
                    behindUs[i] = now - (rec.timestamp() * 1000 + delayUs);
                }
                if (i + 1 == n) {
                    w.close();
                    done.countDown();
                }
            });
        } else if (sc.equals("happy")) {
            pc.poll(ctx -> {
                if (warmup == 0)
                    w.open();
                var rec = ctx.getSingleConsumerRecord();
                if (ctx.getSingleRecord().getNumberOfFailedAttempts() == 0
                        && Bench.fails(failPct, rec.partition(), rec.offset()))
                    throw new Transient("retry me");
                complete.run();
            });
        } else
        pc.poll(ctx -> {
            w.open();
            long t = System.nanoTime();
            LockSupport.parkNanos(Bench.workUs(ctx.offset()) * 1000);
            slept.addAndGet((System.nanoTime() - t) / 1000);
            if (completed.incrementAndGet() == n) {
                w.close();
                done.countDown();
            }
        });
        boolean ok = done.await(Bench.longProp("timeout_s", 600), TimeUnit.SECONDS);
        int c = (int) Math.min(completed.get(), n);
        Bench.Json j = sc.equals("delay")
                ? Bench.behindInput(Bench.lateness("parallel-consumer", lateUs, c), behindUs, c).put("secs", w.secs())
                : ok ? Bench.throughput("parallel-consumer", sc, n, w)
                : new Bench.Json().put("peer", "parallel-consumer").put("scenario", sc);
        if (!ok)
            j.put("error", completed.get() + " of " + n + " done (timed out)");
        j.put("ordering", Bench.prop("ordering", "KEY")).put("concurrency", conc)
                .put("commit_interval_ms", commitInterval.toMillis()).put("retry_delay_ms", retryDelay.toMillis())
                .put("slept_us", (double) slept.get() / Math.max(1, completed.get()))
                .put("fail_pct", failPct).put("warmup_messages", warmup)
                .put("commit_mode", opts.getCommitMode().toString());
        j.print();
        pc.close();
        System.exit(ok ? 0 : 1);
    }

    /**
     * tier_mem: every message fails its first attempt and waits for its retry
     * delay (an hour) in this JVM, Parallel Consumer's own place for it. The
     * handler throws as a user's would, stack trace included (Parallel
     * Consumer keeps it as the record's failure cause); -Dbench.stackless
     * throws one without. Once it has called the handler for all n (or, on
     * the empty topics, once partitions are assigned), or made no call for
     * 20 s ("consumed" says how many it took), this JVM's memory as
     * Bench.memory reads it.
     */
    static void tierMem(ParallelStreamProcessor<byte[], byte[]> pc, long n) throws Exception {
        AtomicLong calls = new AtomicLong();
        pc.poll(ctx -> {
            calls.incrementAndGet();
            throw new Transient("waits an hour", System.getProperty("bench.stackless") != null);
        });
        long deadline = System.currentTimeMillis() + 600_000, seen = -1, since = System.currentTimeMillis();
        while (System.currentTimeMillis() < deadline && (!ready.get() || calls.get() < n)) {
            Thread.sleep(100);
            long c = calls.get();
            if (c != seen) {
                seen = c;
                since = System.currentTimeMillis();
            } else if (ready.get() && System.currentTimeMillis() - since >= 20_000)
                break; // no call for 20 s: its input stopped
        }
        Bench.memory(new Bench.Json().put("peer", "parallel-consumer").put("scenario", "tier_mem")
                .put("consumed", calls.get()).put("held", calls.get() >= n)).print();
    }
}
