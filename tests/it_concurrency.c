/*
 * handler.concurrency > 1 on the test cluster: per-key order under load,
 * what each ordering mode lets run at once, the memory bounds (messages and
 * bytes) on a hot key, the in-flight gauges, and a revocation with handlers
 * in flight.
 */
#define _GNU_SOURCE /* SCHED_BATCH */
#include "it_harness.h"

#include <malloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define KEYS 200
#define PER_KEY 20
#define PARTS 4

static void sleep_us(long us) {
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
}

/* Deterministic "random" of a message's attempt. */
static unsigned mix(int key, int seq, int attempt) {
        unsigned h = (unsigned)(key * 7919 + seq * 104729 + attempt * 1299709);
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        return h;
}

/* Handler calls running now, and the most seen at once. */
static atomic_int running, running_max;

static void enter(void) {
        int now = atomic_fetch_add(&running, 1) + 1;
        int max = atomic_load(&running_max);
        while (now > max &&
               !atomic_compare_exchange_weak(&running_max, &max, now))
                ;
}

static void leave(void) {
        atomic_fetch_sub(&running, 1);
}

typedef struct {
        atomic_int in_handler[KEYS]; /* calls of the key running now */
        atomic_int started[KEYS];    /* highest seq started, -1 none */
        atomic_int resolved[KEYS][PER_KEY];
        atomic_int ok[KEYS][PER_KEY];
        atomic_int overlaps;   /* two calls of one key at once */
        atomic_int violations; /* a call before an earlier one of its key */
        /* ordering=partition: calls of a partition (tier, partition)
         * running now, two of them at once, and a source partition's
         * offsets out of order. */
        int by_partition;
        atomic_int part_in[3][PARTS];
        atomic_llong last_offset[PARTS];
        atomic_int part_overlaps, part_order;
} key_state_t;

/* ordering=partition: one call of a partition at a time, a source
 * partition's in offset order; +1 entering, -1 leaving. */
static void partition_check(key_state_t *st, kretry_msg_t *msg, int dir) {
        int t = kretry_msg_tier(msg), p = kretry_msg_partition(msg);
        if (!st->by_partition || t < 0 || t > 2 || p < 0 || p >= PARTS)
                return;
        if (dir < 0) {
                atomic_fetch_sub(&st->part_in[t][p], 1);
                return;
        }
        if (atomic_fetch_add(&st->part_in[t][p], 1) != 0 &&
            atomic_fetch_add(&st->part_overlaps, 1) < 5)
                fprintf(stderr, "  tier %d partition %d: two calls at once\n",
                        t, p);
        int64_t off = kretry_msg_offset(msg);
        if (t == 0 && atomic_exchange(&st->last_offset[p], off) >= off &&
            atomic_fetch_add(&st->part_order, 1) < 5)
                fprintf(stderr, "  partition %d: offset %lld out of order\n", p,
                        (long long)off);
}

/* 0-3 ms of work, 10 % transient failures; asserts from inside the
 * handler that its key has no other call running and that every earlier
 * message of the key was resolved (a retry repeats its own seq). */
static kretry_action_t key_handler(kretry_msg_t *msg, void *opaque) {
        key_state_t *st = opaque;
        int key, seq;
        it_key_seq(msg, &key, &seq);
        enter();
        partition_check(st, msg, +1);
        if (atomic_fetch_add(&st->in_handler[key], 1) != 0 &&
            atomic_fetch_add(&st->overlaps, 1) < 5 && !st->by_partition)
                fprintf(stderr, "  key %d: seq %d while another runs\n", key,
                        seq);
        if (atomic_load(&st->started[key]) > seq &&
            atomic_fetch_add(&st->violations, 1) < 5 && !st->by_partition)
                fprintf(stderr, "  key %d: seq %d after %d started\n", key, seq,
                        atomic_load(&st->started[key]));
        for (int s = 0; s < seq; s++)
                if (!atomic_load(&st->resolved[key][s]) &&
                    atomic_fetch_add(&st->violations, 1) < 5 &&
                    !st->by_partition)
                        fprintf(stderr, "  key %d: seq %d before %d\n", key,
                                seq, s);
        atomic_store(&st->started[key], seq);
        unsigned h = mix(key, seq, kretry_msg_attempt(msg));
        sleep_us((long)(h % 4000));
        kretry_action_t action = KRETRY_RETRY;
        if ((h >> 16) % 100 >= 10) {
                atomic_fetch_add(&st->ok[key][seq], 1);
                atomic_store(&st->resolved[key][seq], 1);
                action = KRETRY_OK;
        }
        atomic_fetch_sub(&st->in_handler[key], 1);
        partition_check(st, msg, -1);
        leave();
        return action;
}

static int all_ok(key_state_t *st) {
        for (int k = 0; k < KEYS; k++)
                for (int s = 0; s < PER_KEY; s++)
                        if (!atomic_load(&st->ok[k][s]))
                                return 0;
        return 1;
}

/* 16 workers, 200 keys x 20 messages, 0-3 ms handlers, 10 % transient
 * failures, everything handled. @p ordering key: a key never has two calls
 * at once, its calls follow offset order across retries. partition: a
 * partition (source or tier) never has two calls at once and a source
 * partition's follow its offsets (a key's retries run beside its later
 * messages, as documented). */
static void key_order_concurrent(const char *ordering) {
        it_env_t *env = it_env_new("20ms,40ms", PARTS);
        /* Runs of 4 messages of a key, keys interleaved between runs: a
         * key's next message is often right behind it. */
        for (int s0 = 0; s0 < PER_KEY; s0 += 4)
                for (int k = 0; k < KEYS; k++)
                        for (int s = s0; s < s0 + 4 && s < PER_KEY; s++) {
                                char key[16], v[32];
                                snprintf(key, sizeof(key), "key-%d", k);
                                snprintf(v, sizeof(v), "%d:%d", k, s);
                                it_produce(env, k % PARTS, key, v, NULL);
                        }
        static key_state_t st;
        memset(&st, 0, sizeof(st));
        for (int k = 0; k < KEYS; k++)
                atomic_store(&st.started[k], -1);
        for (int p = 0; p < PARTS; p++)
                atomic_store(&st.last_offset[p], -1);
        st.by_partition = !strcmp(ordering, "partition");
        atomic_store(&running_max, 0);
        kretry_conf_t *conf =
                it_conf(env, "ordering", ordering, "handler.concurrency", "16",
                        "retry.max.attempts", "30", NULL);
        kretry_conf_set_handler(conf, key_handler, &st);
        kretry_conf_set_route_cb(conf, NULL); /* it shares the opaque */
        kretry_adapter_t *a = it_adapter(conf);
        int64_t deadline    = kt_now_ms() + 120000;
        while (!all_ok(&st) && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_ASSERT(all_ok(&st));
        if (!st.by_partition) {
                KT_ASSERT_INT_EQ(atomic_load(&st.overlaps), 0);
                KT_ASSERT_INT_EQ(atomic_load(&st.violations), 0);
        }
        KT_ASSERT_INT_EQ(atomic_load(&st.part_overlaps), 0);
        KT_ASSERT_INT_EQ(atomic_load(&st.part_order), 0);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_DLQ, 0), 0);
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0) > 0);
        KT_ASSERT(atomic_load(&running_max) > 1);
        fprintf(stderr, "  %lld handler calls, at most %d at once\n",
                (long long)kretry_adapter_counter(
                        a, KRETRY_COUNTER_HANDLER_CALLS, 0),
                atomic_load(&running_max));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void test_key_order_concurrent(void) {
        key_order_concurrent("key");
}

static void test_partition_order_concurrent(void) {
        key_order_concurrent("partition");
}

typedef struct {
        atomic_int calls;
        atomic_int part_running[PARTS], part_max[PARTS];
        atomic_int unnamed; /* calls on a thread not named kretry:worker */
        atomic_int batch;   /* calls on a thread under SCHED_BATCH */
        int sleep_ms;
} slow_state_t;

static kretry_action_t slow_handler(kretry_msg_t *msg, void *opaque) {
        slow_state_t *st = opaque;
        int p            = kretry_msg_partition(msg);
        enter();
        int now = atomic_fetch_add(&st->part_running[p], 1) + 1;
        if (now > atomic_load(&st->part_max[p]))
                atomic_store(&st->part_max[p], now);
        sleep_us(st->sleep_ms * 1000L);
        char name[16] = "";
        prctl(PR_GET_NAME, name, 0, 0, 0);
        if (strcmp(name, "kretry:worker"))
                atomic_fetch_add(&st->unnamed, 1);
        if (sched_getscheduler(0) == SCHED_BATCH)
                atomic_fetch_add(&st->batch, 1);
        atomic_fetch_sub(&st->part_running[p], 1);
        atomic_fetch_add(&st->calls, 1);
        leave();
        return KRETRY_OK;
}

/* @p max_bytes: max.inflight.bytes, NULL for its default. */
static kretry_conf_t *slow_conf(it_env_t *env,
                                slow_state_t *st,
                                const char *ordering,
                                const char *concurrency,
                                const char *max_bytes) {
        kretry_conf_t *conf = it_conf(
                env, "ordering", ordering, "handler.concurrency", concurrency,
                max_bytes ? "max.inflight.bytes" : NULL, max_bytes, NULL);
        kretry_conf_set_handler(conf, slow_handler, st);
        kretry_conf_set_route_cb(conf, NULL);
        atomic_store(&running_max, 0);
        return conf;
}

static kretry_adapter_t *slow_adapter(it_env_t *env,
                                      slow_state_t *st,
                                      const char *ordering,
                                      const char *concurrency) {
        return it_adapter(slow_conf(env, st, ordering, concurrency, NULL));
}

/* A message of key @p key whose value is "<i>" padded with 'x' to @p len
 * bytes. */
static void produce_padded(
        it_env_t *env, int32_t partition, const char *key, int i, size_t len) {
        char *v = malloc(len + 1);
        KT_REQUIRE(v != NULL);
        memset(v, 'x', len);
        v[len] = '\0';
        char n[16];
        int nl = snprintf(n, sizeof(n), "%d", i);
        memcpy(v, n, (size_t)nl < len ? (size_t)nl : len);
        it_produce(env, partition, key, v, NULL);
        free(v);
}

static void run_calls(kretry_adapter_t *a, slow_state_t *st, int n) {
        int64_t deadline = kt_now_ms() + 60000;
        while (atomic_load(&st->calls) < n && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(atomic_load(&st->calls), n);
}

/* ordering=none: messages of one key run at once, up to the concurrency,
 * and each is handled once. */
static void test_none_reaches_concurrency(void) {
        it_env_t *env = it_env_new("50ms", 1);
        for (int i = 0; i < 48; i++)
                it_produce(env, 0, "same-key", "ok", NULL);
        static slow_state_t st;
        memset(&st, 0, sizeof(st));
        st.sleep_ms         = 100;
        kretry_adapter_t *a = slow_adapter(env, &st, "none", "8");
        run_calls(a, &st, 48);
        KT_ASSERT_INT_EQ(atomic_load(&running_max), 8);
        KT_ASSERT_INT_EQ(atomic_load(&st.part_max[0]), 8);
        /* Every call ran on a worker, named for top -H and perf, under
         * SCHED_BATCH (handler.sched's default). */
        KT_ASSERT_INT_EQ(atomic_load(&st.unnamed), 0);
        KT_ASSERT_INT_EQ(atomic_load(&st.batch), 48);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 48, 10000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_HANDLER_CALLS, 0), 48);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* handler.sched=inherit: the workers keep the policy of the thread that
 * created the adapter (this one: SCHED_OTHER). */
static void test_sched_inherit(void) {
        it_env_t *env = it_env_new("50ms", 1);
        for (int i = 0; i < 8; i++)
                it_produce(env, 0, "k", "ok", NULL);
        static slow_state_t st;
        memset(&st, 0, sizeof(st));
        kretry_conf_t *conf = slow_conf(env, &st, "none", "4", NULL);
        char e[256];
        KT_ASSERT_INT_EQ(
                kretry_conf_set(conf, "handler.sched", "inherit", e, sizeof(e)),
                0);
        KT_REQUIRE(sched_getscheduler(0) == SCHED_OTHER);
        kretry_adapter_t *a = it_adapter(conf);
        run_calls(a, &st, 8);
        KT_ASSERT_INT_EQ(atomic_load(&st.unnamed), 0);
        KT_ASSERT_INT_EQ(atomic_load(&st.batch), 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

typedef struct {
        slow_state_t slow;
        atomic_int returned[PARTS], decided[PARTS];
        atomic_int early;      /* started before the previous was decided */
        atomic_int twin_early; /* the same, behind a message of its key */
} succ_state_t;

static kretry_action_t succ_handler(kretry_msg_t *msg, void *opaque) {
        succ_state_t *st = opaque;
        int p            = kretry_msg_partition(msg);
        size_t vl;
        const char *v = kretry_msg_value(msg, &vl);
        if (atomic_load(&st->returned[p]) > atomic_load(&st->decided[p])) {
                atomic_fetch_add(&st->early, 1);
                if (vl == 4 && !memcmp(v, "twin", 4))
                        atomic_fetch_add(&st->twin_early, 1);
        }
        kretry_action_t action = slow_handler(msg, &st->slow);
        atomic_fetch_add(&st->returned[p], 1);
        return action;
}

static void succ_route(const char *topic,
                       int32_t partition,
                       int64_t offset,
                       kretry_route_t route,
                       int tier,
                       const char *cls,
                       int attempt,
                       void *opaque) {
        (void)topic, (void)offset, (void)tier, (void)cls, (void)attempt;
        succ_state_t *st = opaque;
        if (route != KRETRY_ROUTE_OK)
                return;
        /* On the polling thread, deciding: the next call of the partition
         * either started already (its successor) or waits for this. */
        sleep_us(5000);
        atomic_fetch_add(&st->decided[partition], 1);
}

/* ordering=partition: one message per partition at a time, partitions in
 * parallel. A partition's next message starts as its previous one returns
 * OK, before the polling thread decided it (its successor, prepared while
 * it ran), except behind a message of its own key, whose outcome decides
 * what becomes of it. */
static void test_partition_one_at_a_time(void) {
        it_env_t *env = it_env_new("50ms", PARTS);
        for (int i = 0; i < 10 * PARTS; i++) {
                char key[16];
                /* In each partition the 6th and 7th share a key; the 7th's
                 * value is "twin". */
                if (i / PARTS == 5 || i / PARTS == 6)
                        snprintf(key, sizeof(key), "twin%d", i % PARTS);
                else
                        snprintf(key, sizeof(key), "k%d", i);
                it_produce(env, i % PARTS, key, i / PARTS == 6 ? "twin" : "ok",
                           NULL);
        }
        static succ_state_t st;
        memset(&st, 0, sizeof(st));
        st.slow.sleep_ms    = 30;
        kretry_conf_t *conf = slow_conf(env, &st.slow, "partition", "8", NULL);
        kretry_conf_set_handler(conf, succ_handler, &st);
        kretry_conf_set_route_cb(conf, succ_route);
        kretry_adapter_t *a = it_adapter(conf);
        run_calls(a, &st.slow, 10 * PARTS);
        for (int p = 0; p < PARTS; p++)
                KT_ASSERT_INT_EQ(atomic_load(&st.slow.part_max[p]), 1);
        KT_ASSERT(atomic_load(&running_max) > 1);
        KT_ASSERT(atomic_load(&running_max) <= PARTS);
        /* 30 ms calls: the successor is ready long before its turn, and
         * starts while its predecessor's decision takes 5 ms (without
         * successors: never). */
        fprintf(stderr,
                "  %d of %d calls started before the previous one "
                "was decided\n",
                atomic_load(&st.early), 10 * PARTS);
        KT_ASSERT(atomic_load(&st.early) >= 2 * PARTS);
        KT_ASSERT_INT_EQ(atomic_load(&st.twin_early), 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

#define HOT 300
#define BOUND 20
#define BIG (100 * 1024)          /* a large value */
#define BYTES_BOUND (1024 * 1024) /* max.inflight.bytes against it */

typedef struct {
        kretry_adapter_t *a;
        atomic_int calls, max_backlog, max_inflight, order_errors;
        atomic_llong max_bytes;
        long sleep_us; /* each call's */
} hot_state_t;

/* Every message of one key: each call sees the messages consumed and not
 * yet decided (its key runs one at a time, so every earlier call was
 * decided). */
static kretry_action_t hot_handler(kretry_msg_t *msg, void *opaque) {
        hot_state_t *st = opaque;
        int i           = atomic_fetch_add(&st->calls, 1);
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        char n[16];
        snprintf(n, sizeof(n), "%.*s", (int)(len < 15 ? len : 15), v);
        if (atoi(n) != i && atomic_fetch_add(&st->order_errors, 1) < 5)
                fprintf(stderr, "  call %d got message %d\n", i, atoi(n));
        int backlog = (int)(kretry_adapter_counter(st->a,
                                                   KRETRY_COUNTER_CONSUMED, 0) -
                            i);
        if (backlog > atomic_load(&st->max_backlog))
                atomic_store(&st->max_backlog, backlog);
        int inflight =
                (int)kretry_adapter_counter(st->a, KRETRY_COUNTER_INFLIGHT, 0);
        if (inflight > atomic_load(&st->max_inflight))
                atomic_store(&st->max_inflight, inflight);
        long long bytes =
                kretry_adapter_counter(st->a, KRETRY_COUNTER_INFLIGHT_BYTES, 0);
        if (bytes > atomic_load(&st->max_bytes))
                atomic_store(&st->max_bytes, bytes);
        sleep_us(st->sleep_us);
        return KRETRY_OK;
}

/* @p n messages of one key, values "<i>" padded to @p len bytes, 4
 * workers, ordering key, each call @p us long, property @p name set to
 * @p value: every message handled once, in order, and the gauges back to 0
 * once all is decided. */
static void run_hot(hot_state_t *st,
                    int n,
                    size_t len,
                    long us,
                    const char *name,
                    const char *value) {
        it_env_t *env = it_env_new("50ms", 1);
        for (int i = 0; i < n; i++)
                produce_padded(env, 0, "hot", i, len);
        memset(st, 0, sizeof(*st));
        st->sleep_us = us;
        kretry_conf_t *conf =
                it_conf(env, "ordering", "key", "handler.concurrency", "4",
                        name, value, NULL);
        kretry_conf_set_handler(conf, hot_handler, st);
        kretry_conf_set_route_cb(conf, NULL);
        st->a            = it_adapter(conf);
        int64_t deadline = kt_now_ms() + 120000;
        while (atomic_load(&st->calls) < n && kt_now_ms() < deadline)
                kretry_adapter_poll(st->a, 50);
        KT_ASSERT_INT_EQ(atomic_load(&st->calls), n);
        KT_ASSERT_INT_EQ(atomic_load(&st->order_errors), 0);
        KT_REQUIRE(it_wait_counter(st->a, KRETRY_COUNTER_OK, n, 10000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(st->a, KRETRY_COUNTER_INFLIGHT, 0), 0);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(st->a, KRETRY_COUNTER_INFLIGHT_BYTES, 0),
                0);
        kretry_adapter_destroy(st->a);
        it_env_destroy(env);
}

/* A hot key (every message the same key) waits in kretry's memory behind
 * its running message: max.inflight.messages bounds it, fetching pauses. */
static void test_hot_key_bounded(void) {
        static hot_state_t st;
        char bound[16];
        snprintf(bound, sizeof(bound), "%d", BOUND);
        run_hot(&st, HOT, 4, 1000, "max.inflight.messages", bound);
        fprintf(stderr, "  at most %d consumed and not decided (bound %d)\n",
                atomic_load(&st.max_backlog), BOUND);
        KT_ASSERT(atomic_load(&st.max_backlog) <= BOUND);
        KT_ASSERT(atomic_load(&st.max_backlog) > 1);
        /* The gauge agrees: never past the bound. */
        KT_ASSERT(atomic_load(&st.max_inflight) <= BOUND);
        KT_ASSERT(atomic_load(&st.max_inflight) > 1);
}

/* A hot key with 100 KiB values against max.inflight.bytes 1 MiB
 * (max.inflight.messages left at 1000): the bytes consumed and not decided
 * never pass the bound by more than one message. 45 messages: the test
 * cluster keeps 5 MiB per partition. */
static void test_hot_key_bytes_bounded(void) {
        static hot_state_t st;
        char bound[16];
        snprintf(bound, sizeof(bound), "%d", BYTES_BOUND);
        /* 5 ms calls: fetching 100 KiB values (slow under the
         * sanitizers) still gets ahead of them. */
        run_hot(&st, 45, BIG, 5000, "max.inflight.bytes", bound);
        long long one = BIG + 3; /* value and key "hot" */
        fprintf(stderr,
                "  at most %d messages, %lld bytes consumed and not "
                "decided (bound %d bytes)\n",
                atomic_load(&st.max_backlog),
                (long long)atomic_load(&st.max_bytes), BYTES_BOUND);
        /* Every message is as large: a lower bound of the bytes. */
        KT_ASSERT(atomic_load(&st.max_backlog) * one <= BYTES_BOUND + one);
        KT_ASSERT(atomic_load(&st.max_backlog) > 1);
        KT_ASSERT(atomic_load(&st.max_bytes) <= BYTES_BOUND + one);
        KT_ASSERT(atomic_load(&st.max_bytes) > one);
}

#define PIN_ROUNDS 60
#define PIN_COLD 15

static atomic_int pin_release;

/* The first "hot" message waits for pin_release; every other is OK. */
static kretry_action_t pin_handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        size_t len;
        const char *k = kretry_msg_key(msg, &len);
        while (len == 3 && !memcmp(k, "hot", 3) && !atomic_load(&pin_release))
                kt_nap_ms(1);
        return KRETRY_OK;
}

/* Bytes malloc hands out now (heap and mmap'd chunks). */
static long long malloc_in_use(void) {
        struct mallinfo2 mi = mallinfo2();
        return (long long)(mi.uordblks + mi.hblkhd);
}

static int all_cold_done(kretry_adapter_t *a, it_env_t *env) {
        (void)env;
        return kretry_adapter_counter(a, KRETRY_COUNTER_OK, 0) ==
                       PIN_ROUNDS * PIN_COLD &&
               kretry_adapter_counter(a, KRETRY_COUNTER_INFLIGHT, 0) ==
                       PIN_ROUNDS;
}

/* Messages waiting behind their key do not keep the Fetch responses they
 * came in allocated: 60 responses of 64 KiB, each with one message of a
 * hot key (stuck behind its first, in the handler) among 15 others that
 * are done. Held as librdkafka's messages, the 59 waiting ones pin about
 * 3.7 MiB that max.inflight.bytes never sees; copied, a few KiB. */
static void test_waiting_key_pins_nothing(void) {
        it_env_t *env       = it_env_new("50ms", 1);
        rd_kafka_conf_t *pc = kt_rdkafka_conf(env->c);
        char errstr[256];
        KT_REQUIRE(rd_kafka_conf_set(pc, "linger.ms", "1000", errstr,
                                     sizeof(errstr)) == RD_KAFKA_CONF_OK);
        rd_kafka_t *p =
                rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof(errstr));
        KT_REQUIRE(p != NULL);
        static char cold[4000];
        memset(cold, 'x', sizeof(cold));
        /* One batch a round (a flush each), which the test cluster serves
         * as one Fetch response. */
        for (int r = 0; r < PIN_ROUNDS; r++) {
                for (int c = 0; c <= PIN_COLD; c++) {
                        char key[16];
                        snprintf(key, sizeof(key), c ? "c%d-%d" : "hot", r, c);
                        KT_REQUIRE(!rd_kafka_producev(
                                p, RD_KAFKA_V_TOPIC(env->source),
                                RD_KAFKA_V_PARTITION(0),
                                RD_KAFKA_V_KEY(key, strlen(key)),
                                RD_KAFKA_V_VALUE(cold, c ? sizeof(cold) : 8),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_END));
                }
                KT_REQUIRE(rd_kafka_flush(p, 10000) == 0);
        }
        rd_kafka_destroy(p);
        atomic_store(&pin_release, 0);
        kretry_conf_t *conf =
                it_conf(env, "ordering", "key", "handler.concurrency", "2",
                        "consumer.max.partition.fetch.bytes", "65536", NULL);
        kretry_conf_set_handler(conf, pin_handler, env);
        kretry_adapter_t *a = it_adapter(conf);
        KT_REQUIRE(it_run_until(a, all_cold_done, env, 60000));
        long long waiting = malloc_in_use();
        atomic_store(&pin_release, 1);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK,
                                   PIN_ROUNDS * (PIN_COLD + 1), 20000));
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_INFLIGHT, 0),
                         0);
        long long done = malloc_in_use();
        fprintf(stderr,
                "  %d messages waiting behind their key held %lld bytes "
                "more than none\n",
                PIN_ROUNDS - 1, waiting - done);
        KT_ASSERT(waiting - done < 1024 * 1024);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A message larger than max.inflight.bytes is still taken when nothing
 * else is in flight, and then runs alone: never a deadlock. */
static void test_message_over_bytes_bound(void) {
        it_env_t *env = it_env_new("50ms", 1);
        for (int i = 0; i < 20; i++) {
                char key[16];
                snprintf(key, sizeof(key), "k%d", i);
                produce_padded(env, 0, key, i, 10 * 1024);
        }
        static slow_state_t st;
        memset(&st, 0, sizeof(st));
        st.sleep_ms = 20;
        kretry_adapter_t *a =
                it_adapter(slow_conf(env, &st, "none", "4", "1000"));
        run_calls(a, &st, 20);
        KT_ASSERT_INT_EQ(atomic_load(&running_max), 1);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 20, 10000));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* The figures of the stats documents seen: the most in flight in one, a
 * document whose bytes disagree with its messages, the last one. */
static struct {
        atomic_llong max_msgs, max_bytes, mismatched, last_msgs, last_bytes;
        atomic_int docs;
        char busiest[8192];
} seen;

static long long doc_figure(const char *json, const char *name) {
        char pat[64];
        snprintf(pat, sizeof(pat), "\"%s\":", name);
        const char *p = strstr(json, pat);
        return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Every stats message below has this many bytes of key and value. */
#define GAUGE_MSG_BYTES (1024 + 2)

static void gauge_stats(const char *json, size_t len, void *opaque) {
        (void)len, (void)opaque;
        long long msgs = doc_figure(json, "inflight");
        long long b    = doc_figure(json, "inflight_bytes");
        if (b != msgs * GAUGE_MSG_BYTES)
                atomic_fetch_add(&seen.mismatched, 1);
        if (msgs > atomic_load(&seen.max_msgs)) {
                atomic_store(&seen.max_msgs, msgs);
                atomic_store(&seen.max_bytes, b);
                snprintf(seen.busiest, sizeof(seen.busiest), "%s", json);
        }
        atomic_store(&seen.last_msgs, msgs);
        atomic_store(&seen.last_bytes, b);
        atomic_fetch_add(&seen.docs, 1);
}

/* While slow handlers run, the stats document carries the messages and
 * bytes in flight (and Prometheus text renders them); once all is decided
 * it says 0. */
static void test_stats_inflight_gauge(void) {
        it_env_t *env = it_env_new("50ms", 1);
        for (int i = 0; i < 24; i++) {
                char key[16];
                snprintf(key, sizeof(key), "k%d", i % 10);
                produce_padded(env, 0, key, i, 1024);
        }
        static slow_state_t st;
        memset(&st, 0, sizeof(st));
        memset(&seen, 0, sizeof(seen));
        st.sleep_ms         = 100;
        kretry_conf_t *conf = slow_conf(env, &st, "none", "4", NULL);
        KT_REQUIRE(kretry_conf_set(conf, "stats.interval.ms", "20", NULL, 0) ==
                   0);
        kretry_conf_set_stats_cb(conf, gauge_stats);
        kretry_adapter_t *a = it_adapter(conf);
        run_calls(a, &st, 24);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 24, 10000));
        int docs         = atomic_load(&seen.docs);
        int64_t deadline = kt_now_ms() + 10000;
        while (atomic_load(&seen.docs) < docs + 2 && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 20);
        fprintf(stderr, "  %d documents, at most %lld messages, %lld bytes\n",
                atomic_load(&seen.docs), (long long)atomic_load(&seen.max_msgs),
                (long long)atomic_load(&seen.max_bytes));
        KT_ASSERT_INT_EQ(atomic_load(&seen.mismatched), 0);
        KT_ASSERT(atomic_load(&seen.max_msgs) > 0);
        KT_ASSERT(atomic_load(&seen.max_msgs) <= 24);
        KT_ASSERT_INT_EQ(atomic_load(&seen.last_msgs), 0);
        KT_ASSERT_INT_EQ(atomic_load(&seen.last_bytes), 0);
        char prom[16384], want[128];
        KT_REQUIRE(kretry_stats_prometheus(seen.busiest, prom, sizeof(prom)) >
                   0);
        const struct {
                const char *name;
                long long v;
        } gauges[] = {{"messages", atomic_load(&seen.max_msgs)},
                      {"bytes", atomic_load(&seen.max_bytes)}};
        for (int g = 0; g < 2; g++) {
                snprintf(want, sizeof(want), "\nkretry_inflight_%s %lld\n",
                         gauges[g].name, gauges[g].v);
                if (!strstr(prom, want))
                        fprintf(stderr, "no %s in:\n%s", want, prom);
                KT_ASSERT(strstr(prom, want) != NULL);
        }
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

typedef struct {
        atomic_int released; /* a's blocked calls may return */
        atomic_int blocked;  /* a's calls started before the release */
        atomic_int ok;       /* a's calls started after it */
        atomic_int routed_retry;
        atomic_int a_after[PARTS]; /* a's calls after the release */
        atomic_int b_released;     /* b's calls may return */
        atomic_int b_calls;        /* b's calls started */
        atomic_int b_has[PARTS];   /* b was handed one of the partition */
} revoke_state_t;

/* Before the release: block, then answer RETRY (a copy to a tier, were
 * it routed). After: OK. */
static kretry_action_t revoke_handler(kretry_msg_t *msg, void *opaque) {
        revoke_state_t *st = opaque;
        if (atomic_load(&st->released)) {
                atomic_fetch_add(&st->a_after[kretry_msg_partition(msg)], 1);
                atomic_fetch_add(&st->ok, 1);
                return KRETRY_OK;
        }
        atomic_fetch_add(&st->blocked, 1);
        while (!atomic_load(&st->released))
                sleep_us(2000);
        return KRETRY_RETRY;
}

/* The member that joins: OK once the test lets it answer, so that nothing
 * of the partitions it takes is committed before the test looked. */
static kretry_action_t ok_handler(kretry_msg_t *msg, void *opaque) {
        revoke_state_t *st = opaque;
        atomic_store(&st->b_has[kretry_msg_partition(msg)], 1);
        atomic_fetch_add(&st->b_calls, 1);
        while (!atomic_load(&st->b_released))
                sleep_us(2000);
        return KRETRY_OK;
}

static void revoke_route(const char *topic,
                         int32_t partition,
                         int64_t offset,
                         kretry_route_t route,
                         int tier,
                         const char *cls,
                         int attempt,
                         void *opaque) {
        (void)topic, (void)partition, (void)offset, (void)tier, (void)cls,
                (void)attempt;
        revoke_state_t *st = opaque;
        if (route == KRETRY_ROUTE_RETRY || route == KRETRY_ROUTE_DLQ)
                atomic_fetch_add(&st->routed_retry, 1);
}

/* Committed offset @p want on source partition @p p, looked at until it
 * is or 30 s passed while @p b runs. */
static int64_t
await_committed(it_env_t *env, kretry_adapter_t *b, int p, int64_t want) {
        int64_t deadline = kt_now_ms() + 30000, got;
        while ((got = kt_committed(env->c, env->group, env->source, p)) !=
                       want &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(b, 200);
        return got;
}

/* A second member joins while the first one's handlers run past
 * revoke.timeout.ms: their results arrive after the revocation and are
 * discarded — no copy routed, nothing committed past them — and the
 * messages are handled again by their owner. With @p assignor eager every
 * partition of a is revoked; cooperative, only the half that moves to b,
 * and the answers of the half a keeps are routed as usual: @p kept_routed
 * copies. With @p ordering partition each partition's second message (its
 * own key) waits, prepared, as the successor of the blocked one: a never
 * calls one of a partition that went to b. b's calls wait until a has
 * closed: a commit on b's partitions before then is a's, of a discarded
 * result. */
static void revoke_discards_late_results(const char *assignor,
                                         int kept_routed,
                                         const char *ordering) {
        it_env_t *env = it_env_new("50ms", PARTS);
        int per       = strcmp(ordering, "partition") ? 1 : 2;
        for (int i = 0; i < per; i++)
                for (int p = 0; p < PARTS; p++)
                        it_produce(env, p, i ? "k2" : "k", "x", NULL);
        static revoke_state_t st;
        memset(&st, 0, sizeof(st));
        kretry_conf_t *c1 =
                it_conf(env, "handler.concurrency", "4", "revoke.timeout.ms",
                        "300", "consumer.partition.assignment.strategy",
                        assignor, "ordering", ordering, NULL);
        kretry_conf_set_handler(c1, revoke_handler, &st);
        kretry_conf_set_route_cb(c1, revoke_route);
        kretry_conf_t *c2 = kretry_conf_dup(c1);
        kretry_conf_set_handler(c2, ok_handler, &st);
        kretry_conf_set_route_cb(c2, NULL);
        kretry_adapter_t *a = it_adapter(c1);
        int64_t deadline    = kt_now_ms() + 30000;
        while (atomic_load(&st.blocked) < PARTS && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_REQUIRE(atomic_load(&st.blocked) == PARTS);
        kretry_adapter_t *b = it_adapter(c2);
        /* The join revokes a's partitions that move (eager: all): a waits
         * 300 ms for their handlers, then lets the revocation go on; b
         * is handed its share. What a gets back waits: its 4 workers are
         * still busy. */
        deadline = kt_now_ms() + 30000;
        while (atomic_load(&st.b_calls) < PARTS / 2 && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
        }
        KT_CHECK_MSG(atomic_load(&st.b_calls) == PARTS / 2, CU_TRUE,
                     "b, the new owner, is handed the first message of the "
                     "%d partitions that moved: %d in 30 s",
                     PARTS / 2, atomic_load(&st.b_calls));
        int moved[PARTS];
        for (int p = 0; p < PARTS; p++)
                moved[p] = atomic_load(&st.b_has[p]);
        atomic_store(&st.released, 1);
        /* a handles what it owns to the end: eager, its share again (OK);
         * cooperative, the copies of the half it kept, from its tier. */
        deadline = kt_now_ms() + 30000;
        while (atomic_load(&st.ok) < PARTS / 2 * per &&
               kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
        }
        KT_ASSERT_INT_EQ(atomic_load(&st.ok), PARTS / 2 * per);
        /* Closing drains a's producer and commits what a decided: a copy
         * made of a discarded result would be acknowledged and reported by
         * now, and an offset stored for one committed. */
        kretry_adapter_close(a);
        /* Not one of the revoked calls' RETRY answers made a copy. */
        KT_ASSERT_INT_EQ(atomic_load(&st.routed_retry), kept_routed);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0),
                         kept_routed);
        for (int p = 0; p < PARTS; p++) {
                if (!moved[p])
                        continue;
                KT_ASSERT_INT_EQ(atomic_load(&st.a_after[p]), 0);
                int64_t got = kt_committed(env->c, env->group, env->source, p);
                KT_CHECK_MSG(got == RD_KAFKA_OFFSET_INVALID, CU_FALSE,
                             "partition %d moved to b, which has not "
                             "answered: nothing committed, got offset %lld",
                             p, (long long)got);
        }
        /* b, now the owner of every partition, handles them to the end. */
        atomic_store(&st.b_released, 1);
        for (int p = 0; p < PARTS; p++) {
                int64_t got = await_committed(env, b, p, per);
                KT_CHECK_MSG(got == per, CU_FALSE,
                             "partition %d handled to the end by its owner: "
                             "expected committed %d, got %lld",
                             p, per, (long long)got);
        }
        kretry_adapter_destroy(a);
        kretry_adapter_destroy(b);
        it_env_destroy(env);
}

static void test_revoke_discards_late_results_eager(void) {
        if (kt_classic_protocol("an eager assignor"))
                revoke_discards_late_results("range,roundrobin", 0, "none");
}

static void test_revoke_discards_late_results_cooperative(void) {
        revoke_discards_late_results("cooperative-sticky", PARTS / 2, "none");
}

static void test_revoke_successors_cooperative(void) {
        revoke_discards_late_results("cooperative-sticky", PARTS / 2,
                                     "partition");
}

/* Every call RETRY after 50 ms. */
static kretry_action_t down_handler(kretry_msg_t *msg, void *opaque) {
        (void)msg, (void)opaque;
        enter();
        sleep_us(50000);
        leave();
        return KRETRY_RETRY;
}

/* The breaker, fed by the workers' results: once it opens nothing more is
 * dispatched, and the handlers already running finish and are decided.
 * With @p ordering partition (one partition: one call at a time) the
 * partition's next message, prepared as a successor, does not start
 * either. */
static void breaker_stops_dispatch(const char *ordering) {
        /* partition: its calls one after another, and no retry due (a
         * tier partition is one of its own) while they run. */
        int part      = !strcmp(ordering, "partition");
        it_env_t *env = it_env_new(part ? "10s" : "50ms", 1);
        for (int i = 0; i < 40; i++) {
                char key[16];
                snprintf(key, sizeof(key), "k%d", i);
                it_produce(env, 0, key, "x", NULL);
        }
        kretry_conf_t *conf = it_conf(
                env, "handler.concurrency", "4", "breaker.failures", "4",
                "breaker.cooldown", "4s", "ordering", ordering, NULL);
        kretry_conf_set_handler(conf, down_handler, NULL);
        kretry_conf_set_route_cb(conf, NULL);
        atomic_store(&running_max, 0);
        kretry_adapter_t *a = it_adapter(conf);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_BREAKER_OPEN, 1, 30000));
        /* A worker that took its job as the breaker opened counts its call
         * a moment later: the calls dispatched before the open are known
         * once every one of them was decided. */
        int64_t calls, deadline = kt_now_ms() + 2000;
        while ((calls = kretry_adapter_counter(a, KRETRY_COUNTER_HANDLER_CALLS,
                                               0)) !=
                       kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0) &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(a, 20);
        KT_ASSERT(calls >= 4 && calls < 40);
        /* While it is open (4 s; 1.5 s watched): the calls dispatched
         * before it opened are decided (copied to the tier), no new one. */
        int64_t until = kt_now_ms() + 1500;
        while (kt_now_ms() < until &&
               kretry_adapter_counter(a, KRETRY_COUNTER_BREAKER_OPEN, 0) == 1)
                kretry_adapter_poll(a, 20);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_BREAKER_OPEN, 0), 1);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_HANDLER_CALLS, 0),
                calls);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0),
                         calls);
        if (!part)
                KT_ASSERT(atomic_load(&running_max) > 1);
        else
                KT_ASSERT_INT_EQ(atomic_load(&running_max), 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void test_breaker_stops_dispatch(void) {
        breaker_stops_dispatch("none");
}

static void test_breaker_stops_dispatch_partition(void) {
        breaker_stops_dispatch("partition");
}

typedef struct {
        atomic_int in_key, overlaps, calls;
} version_state_t;

static kretry_action_t version_handler(kretry_msg_t *msg, void *opaque) {
        (void)msg;
        version_state_t *st = opaque;
        if (atomic_fetch_add(&st->in_key, 1) != 0)
                atomic_fetch_add(&st->overlaps, 1);
        sleep_us(5000);
        atomic_fetch_sub(&st->in_key, 1);
        atomic_fetch_add(&st->calls, 1);
        return KRETRY_OK;
}

/* ordering=none with versioning: two versions of one key never race (they
 * run one at a time, in order), so the highest one wins. */
static void test_versions_serialized_per_key(void) {
        it_env_t *env = it_env_new("50ms", 1);
        char vt[300];
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        KT_REQUIRE(kt_cluster_changelog(env->c, vt, 1) == 0);
        for (int i = 1; i <= 20; i++) {
                char v[16];
                snprintf(v, sizeof(v), "%d", i);
                rd_kafka_headers_t *h = rd_kafka_headers_new(1);
                rd_kafka_header_add(h, "version", -1, v, -1);
                it_produce(env, 0, "K", "ok", h);
        }
        static version_state_t st;
        memset(&st, 0, sizeof(st));
        kretry_conf_t *conf = it_conf(env, "handler.concurrency", "8",
                                      "versioning.header", "version", NULL);
        kretry_conf_set_handler(conf, version_handler, &st);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 20, 30000));
        KT_ASSERT_INT_EQ(atomic_load(&st.calls), 20);
        KT_ASSERT_INT_EQ(atomic_load(&st.overlaps), 0);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_STALE, 0), 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static atomic_int poll_exceeded, slow_ok, fast_ok, fast_during_slow;
static atomic_int slow_running;

static void watch_log(kretry_log_level_t level,
                      const char *fac,
                      const char *msg,
                      void *opaque) {
        (void)level, (void)fac, (void)opaque;
        if (strstr(msg, "maximum poll interval") ||
            strstr(msg, "max.poll.interval"))
                atomic_fetch_add(&poll_exceeded, 1);
}

/* "slow": 8 s, longer than max.poll.interval.ms; anything else at once. */
static kretry_action_t long_handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        if (len == 4 && !memcmp(v, "slow", 4)) {
                atomic_store(&slow_running, 1);
                sleep_us(8000000);
                atomic_store(&slow_running, 0);
                atomic_fetch_add(&slow_ok, 1);
        } else {
                /* "slow" was taken first; its worker may not have entered
                 * the call yet. Wait for it (2 s at most): a slow call that
                 * kept this key waiting would leave the count short. */
                for (int i = 0; i < 2000 && !atomic_load(&slow_running) &&
                                !atomic_load(&slow_ok);
                     i++)
                        sleep_us(1000);
                atomic_fetch_add(&fast_during_slow, atomic_load(&slow_running));
                atomic_fetch_add(&fast_ok, 1);
        }
        return KRETRY_OK;
}

/* A handler call longer than max.poll.interval.ms with concurrency > 1:
 * the polling thread never runs it, so it keeps polling, the member stays
 * in the group without the keep-alive thread, and other keys go on
 * meanwhile. */
static void test_long_handler_keeps_group(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k", "slow", NULL);
        for (int i = 0; i < 5; i++)
                it_produce(env, 0, "other", "fast", NULL);
        kretry_conf_t *conf =
                it_conf(env, "handler.concurrency", "2", "ordering", "key",
                        "consumer.max.poll.interval.ms", "6000", NULL);
        kretry_conf_set_handler(conf, long_handler, NULL);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_conf_set_log_cb(conf, watch_log, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 6, 30000));
        /* Give a kicked-out consumer the time to notice and say so. */
        int64_t end = kt_now_ms() + 500;
        while (kt_now_ms() < end)
                kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(atomic_load(&poll_exceeded), 0);
        KT_ASSERT_INT_EQ(atomic_load(&slow_ok), 1);
        KT_ASSERT_INT_EQ(atomic_load(&fast_ok), 5);
        KT_ASSERT_INT_EQ(atomic_load(&fast_during_slow), 5);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_KEEPALIVES, 0), 0);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 6);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_key_order_concurrent),
                KT_TEST(test_none_reaches_concurrency),
                KT_TEST(test_sched_inherit),
                KT_TEST(test_partition_one_at_a_time),
                KT_TEST(test_partition_order_concurrent),
                KT_TEST(test_hot_key_bounded),
                KT_TEST(test_hot_key_bytes_bounded),
                KT_TEST(test_waiting_key_pins_nothing),
                KT_TEST(test_message_over_bytes_bound),
                KT_TEST(test_stats_inflight_gauge),
                KT_TEST(test_revoke_discards_late_results_eager),
                KT_TEST(test_revoke_discards_late_results_cooperative),
                KT_TEST(test_revoke_successors_cooperative),
                KT_TEST(test_breaker_stops_dispatch),
                KT_TEST(test_breaker_stops_dispatch_partition),
                KT_TEST(test_versions_serialized_per_key),
                KT_TEST(test_long_handler_keeps_group),
                KT_END};
        return kt_main("it_concurrency", tests, argc, argv);
}
