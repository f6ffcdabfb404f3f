package kretry.peers.spring;

import java.io.FileOutputStream;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import kretry.peers.Bench;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.kafka.event.ConsumerPartitionPausedEvent;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConsumerAwareRebalanceListener;
import org.springframework.kafka.listener.DefaultAfterRollbackProcessor;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.retrytopic.RetryTopicConfiguration;
import org.springframework.kafka.retrytopic.RetryTopicConfigurationBuilder;
import org.springframework.kafka.retrytopic.RetryTopicConfigurationSupport;
import org.springframework.kafka.support.ProducerListener;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.scheduling.TaskScheduler;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Spring Kafka as its users run it, without Spring Boot: an annotation
 * context with @EnableKafka and non-blocking retries (a RetryTopicConfiguration
 * bean: the programmatic form of @RetryableTopic). One retry topic
 * (SOURCE-retry, fixed back-off, maxAttempts 2: one retry) and a DLT
 * (SOURCE-dlt), created by the harness (8 partitions, as kretry's). The client
 * settings are Spring's and the Java client's defaults except what
 * kretry_bench sets on both its sides: auto.offset.reset=earliest and
 * fetch.max.wait.ms=10.
 *
 * Scenarios (-Dbench.scenario): delay (RETRY, then OK on the retry topic; the
 * lateness is handling time - retry_topic-backoff-timestamp, which Spring sets
 * to the failure time + the back-off), retry_hop (the same through a
 * no-back-off retry topic), dead_letter (a not-retryable exception: straight
 * to the DLT; done when the DLT copies are acknowledged), parallel (no
 * retries; bench_work_us(offset) of sleep; -Dbench.concurrency containers),
 * kill (tests/it_worker.c's handler, OK lines appended to -Dbench.out),
 * tier_mem (a retry topic already holding copies not due for an hour).
 * happy: OK at once, except -Dbench.fail_pct percent of the messages (by
 * partition and offset, Bench.fails), which fail their first attempt and are
 * retried as in retry_hop (non-blocking: through the no-back-off retry topic;
 * blocking: redelivered in place, back-off 0).
 * -Dbench.warmup=W (retry_hop, dead_letter, happy): the input holds W + messages;
 * the window opens once the first W are done, in the same JVM, and closes
 * after -Dbench.messages more: a discarded warm-up.
 *
 * -Dbench.mode=blocking: Spring's blocking retries instead, as its reference
 * sets them up ("DefaultErrorHandler" and "Publishing Dead-letter Records"):
 * a DefaultErrorHandler on the container factory with a FixedBackOff (the
 * retry delay, one retry) and a DeadLetterPublishingRecoverer writing to
 * SOURCE-dlt (same partition), Permanent not retryable; no retry topic. A
 * failed record is redelivered in place after the back-off, its partition
 * held meanwhile; a record's first failure is remembered in memory (per
 * process, as the handler's first attempt), so its redelivery succeeds.
 * With -Dbench.txn=true, in Spring's Kafka transactions: a
 * KafkaTransactionManager on the container (transactionIdPrefix fixed by
 * the group) and a DefaultAfterRollbackProcessor with the same back-off and
 * recoverer and commitRecovered, instead of the error handler.
 */
public final class SpringSide {
    static final class Transient extends RuntimeException {
        Transient(String m) {
            super(m);
        }
    }

    static final class Permanent extends RuntimeException {
        Permanent(String m) {
            super(m);
        }
    }

    static String scenario, topic;
    static boolean blocking;
    /** -Dbench.txn=true (blocking only): Spring's Kafka transactions. */
    static boolean txn;
    /** blocking: records (topic/partition@offset) that failed once, and when (us). */
    static final Map<String, Long> failedAt = new ConcurrentHashMap<>();
    static long[] behindUs;
    static final AtomicInteger behind = new AtomicInteger();
    static long n;
    /** Completions discarded before the measured window opens (-Dbench.warmup). */
    static long warmup;
    static final Bench.Window window = new Bench.Window();
    static final CountDownLatch done = new CountDownLatch(1);
    static final AtomicInteger completed = new AtomicInteger();
    static final AtomicLong sleptUs = new AtomicLong();
    static long[] lateUs;
    static final AtomicInteger late = new AtomicInteger();
    static final Set<String> assigned = ConcurrentHashMap.newKeySet();
    static volatile boolean ready;
    static final Set<String> paused = ConcurrentHashMap.newKeySet();
    static FileOutputStream killOut;
    static final String pid = Long.toString(ProcessHandle.current().pid());

    /**
     * One message done. With a warm-up the window opens once the first
     * @warmup messages are done (the JVM's JIT, the client's buffers and
     * the group's assignment warmed by them) and closes after @n more.
     */
    static void complete() {
        long c = completed.incrementAndGet();
        if (warmup > 0 && c == warmup)
            window.open();
        if (c == warmup + n) {
            window.close();
            done.countDown();
        }
    }

    /** The listener: one method for the source and its retry topic. */
    public static class Listener {
        @KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}",
                concurrency = "${bench.concurrency:1}")
        public void on(ConsumerRecord<byte[], byte[]> r) throws Exception {
            if (warmup == 0)
                window.open();
            String id = r.topic() + "/" + r.partition() + "@" + r.offset();
            boolean retried = blocking ? failedAt.containsKey(id) : r.topic().endsWith("-retry");
            try {
                handle(r, id, retried);
            } catch (Transient e) {
                if (blocking) // its redelivery is the retry
                    failedAt.putIfAbsent(id, Bench.nowUs());
                throw e;
            }
        }

        void handle(ConsumerRecord<byte[], byte[]> r, String id, boolean retried) throws Exception {
            switch (scenario) {
                case "delay" -> {
                    if (!retried)
                        throw new Transient("retry me");
                    long now = Bench.nowUs();
                    long dueUs;
                    if (blocking) { // Spring's own due time: failure + back-off
                        dueUs = failedAt.get(id) + Bench.longProp("delay_ms", 0) * 1000;
                        int b = behind.getAndIncrement(); // and behind the input's own due time
                        if (b < behindUs.length)
                            behindUs[b] = now - (r.timestamp() + Bench.longProp("delay_ms", 0)) * 1000;
                    } else {
                        Header h = r.headers().lastHeader("retry_topic-backoff-timestamp");
                        dueUs = new BigInteger(h.value()).longValue() * 1000;
                    }
                    int i = late.getAndIncrement();
                    if (i < lateUs.length)
                        lateUs[i] = now - dueUs;
                    complete();
                }
                case "retry_hop" -> {
                    if (!retried)
                        throw new Transient("retry me");
                    complete();
                }
                case "happy" -> { // -Dbench.fail_pct percent fail once
                    if (!retried && Bench.fails(Bench.longProp("fail_pct", 0), r.partition(), r.offset()))
                        throw new Transient("retry me");
                    complete();
                }
                case "dead_letter" -> throw new Permanent("fail me");
                case "parallel" -> {
                    long t = System.nanoTime();
                    LockSupport.parkNanos(Bench.workUs(r.offset()) * 1000);
                    sleptUs.addAndGet((System.nanoTime() - t) / 1000);
                    complete();
                }
                case "kill" -> {
                    String v = new String(r.value());
                    int i = Integer.parseInt(v.substring(2));
                    LockSupport.parkNanos(2_000_000);
                    if (i % 11 == 0)
                        throw new Permanent("n-" + i);
                    if (i % 7 == 0 && !retried)
                        throw new Transient("n-" + i);
                    killOut.write(Bench.utf8(pid + " " + i + "\n"));
                }
                case "tier_mem" -> throw new IllegalStateException("nothing may be due");
                default -> throw new IllegalArgumentException(scenario);
            }
        }

        public void dlt(ConsumerRecord<byte[], byte[]> r) {
            // the DLT's own listener: counted by the producer listener instead
        }
    }

    @Configuration
    @EnableKafka
    public static class Config extends RetryTopicConfigurationSupport {
        // Spring's own error handling for the retry topics: nothing customised
        // (DefaultErrorHandler with seek after error and commitRecovered, as
        // the reference's "Non-Blocking Retries" sets them up).

        @Bean
        public Listener listener() {
            return new Listener();
        }

        /** tier_mem: the retry topic's partitions paused for their back-off. */
        @Bean
        public ApplicationListener<ConsumerPartitionPausedEvent> pausedListener() {
            return e -> paused.add(e.getPartition().toString());
        }

        @Bean
        public TaskScheduler taskScheduler() {
            ThreadPoolTaskScheduler s = new ThreadPoolTaskScheduler();
            s.setPoolSize(2);
            return s;
        }

        @Bean
        public DefaultKafkaConsumerFactory<byte[], byte[]> consumerFactory() {
            Map<String, Object> p = new HashMap<>();
            p.put("bootstrap.servers", Bench.prop("bootstrap"));
            p.put("key.deserializer", ByteArrayDeserializer.class);
            p.put("value.deserializer", ByteArrayDeserializer.class);
            p.put("auto.offset.reset", "earliest");
            p.put("fetch.max.wait.ms", 10);
            // tier_mem's second Spring side: fetches sized to the heap
            String mpfb = System.getProperty("bench.max_partition_fetch_bytes");
            if (mpfb != null)
                p.put("max.partition.fetch.bytes", Integer.parseInt(mpfb));
            if (scenario.equals("kill")) { // it_worker's session settings
                p.put("session.timeout.ms", 3000);
                p.put("heartbeat.interval.ms", 300);
            }
            return new DefaultKafkaConsumerFactory<>(p);
        }

        @Bean
        public ConcurrentKafkaListenerContainerFactory<byte[], byte[]> kafkaListenerContainerFactory(
                DefaultKafkaConsumerFactory<byte[], byte[]> cf, KafkaTemplate<byte[], byte[]> t) {
            var f = new ConcurrentKafkaListenerContainerFactory<byte[], byte[]>();
            f.setConsumerFactory(cf);
            if (blocking) {
                // blocking retries as the reference gives them: the error
                // handler's back-off, then the recoverer (SOURCE-dlt here,
                // where Spring's default would be SOURCE.DLT)
                var dlpr = new DeadLetterPublishingRecoverer(t,
                        (rec, ex) -> new TopicPartition(rec.topic() + "-dlt", rec.partition()));
                var backOff = new FixedBackOff(Long.parseLong(Bench.prop("delay_ms", "0")), 1);
                if (txn) {
                    // transactions as the reference sets them up ("Transactions",
                    // "After-rollback Processor"): a KafkaTransactionManager on
                    // the container, a failed record's transaction rolled back,
                    // then the after-rollback processor's back-off and the
                    // recoverer, whose copy and the record's offset go in a new
                    // transaction (commitRecovered)
                    f.getContainerProperties().setKafkaAwareTransactionManager(
                            new KafkaTransactionManager<>(t.getProducerFactory()));
                    var arp = new DefaultAfterRollbackProcessor<byte[], byte[]>(dlpr, backOff, t, true);
                    arp.addNotRetryableExceptions(Permanent.class);
                    f.setAfterRollbackProcessor(arp);
                } else {
                    var eh = new DefaultErrorHandler(dlpr, backOff);
                    eh.addNotRetryableExceptions(Permanent.class);
                    f.setCommonErrorHandler(eh);
                }
            }
            // one consumer a partition (-Dbench.concurrency = the partition
            // count), for the main and the retry-topic containers alike
            f.setConcurrency(Integer.parseInt(Bench.prop("concurrency", "1")));
            f.getContainerProperties().setConsumerRebalanceListener(new ConsumerAwareRebalanceListener() {
                @Override
                public void onPartitionsAssigned(Consumer<?, ?> c, Collection<TopicPartition> parts) {
                    for (TopicPartition tp : parts)
                        assigned.add(tp.topic());
                    boolean all = assigned.contains(topic)
                            && (!(scenario.equals("delay") || scenario.equals("tier_mem")) || blocking
                                    || assigned.contains(topic + "-retry"));
                    if (all && !ready) {
                        ready = true;
                        System.err.println("spring: ready");
                    }
                }
            });
            return f;
        }

        @Bean
        public KafkaTemplate<byte[], byte[]> kafkaTemplate() {
            Map<String, Object> p = new HashMap<>();
            p.put("bootstrap.servers", Bench.prop("bootstrap"));
            p.put("key.serializer", ByteArraySerializer.class);
            p.put("value.serializer", ByteArraySerializer.class);
            var pf = new DefaultKafkaProducerFactory<byte[], byte[]>(p);
            if (txn) // fixed by the group: a restarted instance fences a killed one
                pf.setTransactionIdPrefix("bench-tx-" + Bench.prop("group") + "-");
            KafkaTemplate<byte[], byte[]> t = new KafkaTemplate<>(pf);
            t.setProducerListener(new ProducerListener<>() {
                @Override
                public void onSuccess(org.apache.kafka.clients.producer.ProducerRecord<byte[], byte[]> r,
                        org.apache.kafka.clients.producer.RecordMetadata md) {
                    if (scenario.equals("dead_letter") && r.topic().endsWith("-dlt"))
                        complete();
                }
            });
            return t;
        }

        @Bean
        public @Nullable RetryTopicConfiguration retryTopics(KafkaTemplate<byte[], byte[]> t) {
            if (scenario.equals("parallel") || blocking)
                return null;
            var b = RetryTopicConfigurationBuilder.newInstance().maxAttempts(2).doNotAutoCreateRetryTopics()
                    .notRetryOn(Permanent.class).dltHandlerMethod("listener", "dlt").includeTopic(topic);
            long delay = Long.parseLong(Bench.prop("delay_ms", "0"));
            if (delay > 0)
                b.fixedBackOff(delay).useSingleTopicForSameIntervals();
            else
                b.noBackoff();
            return b.create(t);
        }
    }

    public static void run(String sc) throws Exception {
        scenario = sc;
        blocking = Bench.prop("mode", "nonblocking").equals("blocking");
        txn = blocking && Bench.prop("txn", "false").equals("true");
        topic = Bench.prop("topic");
        n = Bench.longProp("messages", 0);
        warmup = Bench.longProp("warmup", 0);
        if (sc.equals("delay")) {
            lateUs = new long[(int) n];
            behindUs = new long[(int) n];
        }
        if (sc.equals("kill"))
            killOut = new FileOutputStream(Bench.prop("out"), true);
        if (sc.equals("parallel") && System.getProperty("bench.concurrency") == null)
            System.setProperty("bench.concurrency", "1");
        var ctx = new AnnotationConfigApplicationContext(Config.class);
        long timeout = Bench.longProp("timeout_s", 600);
        if (sc.equals("kill")) { // runs until SIGKILLed or SIGTERMed
            Runtime.getRuntime().addShutdownHook(new Thread(ctx::close));
            Thread.sleep(Long.MAX_VALUE);
        }
        if (sc.equals("tier_mem")) {
            tierMem(Bench.longProp("paused", 0));
            ctx.close();
            System.exit(0);
        }
        boolean ok = done.await(timeout, TimeUnit.SECONDS);
        Bench.Json j;
        if (!ok)
            j = new Bench.Json().put("peer", "spring").put("scenario", sc)
                    .put("error", completed.get() + " of " + (warmup + n) + " done (timed out)");
        else if (sc.equals("delay")) {
            j = Bench.lateness("spring", lateUs, Math.min(late.get(), lateUs.length)).put("concurrency", Bench.prop("concurrency", "1"));
            j.put("secs", window.secs());
            if (blocking) // behind the input's due time (produced + back-off)
                Bench.behindInput(j, behindUs, Math.min(behind.get(), behindUs.length));
        } else {
            j = Bench.throughput("spring", sc, n, window).put("concurrency", Bench.prop("concurrency", "1"))
                    .put("mode", blocking ? "blocking" : "nonblocking").put("warmup_messages", warmup)
                    .put("transactions", txn);
            if (sc.equals("parallel"))
                j.put("slept_us", (double) sleptUs.get() / n);
        }
        j.print();
        ctx.close();
        System.exit(ok ? 0 : 1);
    }

    /**
     * tier_mem: once every retry partition holding copies is paused (or, on
     * the empty topics, once assigned), this JVM's memory as Bench.memory
     * settles and reads it.
     */
    static void tierMem(long expectPaused) throws Exception {
        long deadline = System.currentTimeMillis() + 600_000;
        while ((!ready || paused.size() < expectPaused) && System.currentTimeMillis() < deadline)
            Thread.sleep(100);
        boolean held = paused.size() >= expectPaused;
        Bench.memory(new Bench.Json().put("peer", "spring").put("scenario", "tier_mem").put("paused", paused.size())
                .put("held", held)).print();
    }
}
