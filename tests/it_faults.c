/*
 * Fault and bad-input tests on the test cluster: failed deliveries of
 * copies, allocation failures, null keys and values, a 1 MiB value,
 * malformed kretry headers, due times far ahead, retry-after hints and
 * message age.
 */
#include "adapter_int.h" /* the adapter's producer, for test_fatal_producer */
#include "clock.h"
#include "it_harness.h"
#include "offsets.h" /* kretry_test_alloc_fails */

#include <avro.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t counter(kretry_adapter_t *a, kretry_counter_t c) {
        return kretry_adapter_counter(a, c, 0);
}

static void pause_ms(kretry_adapter_t *a, int ms) {
        int64_t end = kt_now_ms() + ms;
        while (kt_now_ms() < end)
                kretry_adapter_poll(a, 20);
}

/* Why a test that takes the whole cluster away has no real twin. */
#define KT_WHOLE_CLUSTER                                                       \
        "none: it takes the whole cluster away, and the real pass shares "     \
        "one broker among the suites; it_cluster test_stop_broker stops one "  \
        "broker of three "                                                     \
        "with copies in flight"

/* The next 200 Produce requests fail with an error librdkafka does not retry
 * itself; rd_kafka_mock_clear_request_errors() ends it. */
static void fail_produces(rd_kafka_mock_cluster_t *mock) {
        rd_kafka_resp_err_t errs[200];
        for (int i = 0; i < 200; i++)
                errs[i] = RD_KAFKA_RESP_ERR_POLICY_VIOLATION;
        rd_kafka_mock_push_request_errors_array(mock, 0 /* Produce */, 200,
                                                errs);
}

/* (e) produce errors on the copy: the source offset does not advance past
 * the failed message until its copy is durable; nothing is lost. */
static void test_produce_errors(void) {
        it_env_t *env                 = it_env_new("30ms", 1);
        rd_kafka_mock_cluster_t *mock = it_mock_or_skip(
                env,
                "it_cluster test_kill_tier_leader and test_kill_dlq_leader "
                "kill the leaders of the tier and DLQ "
                "partitions while copies are produced");
        if (!mock)
                return;
        it_produce(env, 0, "k0", "retry1-e", NULL);
        for (int i = 0; i < 5; i++)
                it_produce(env, 0, "k1", "ok-e", NULL);
        /* The copy keeps failing until the test clears the errors. */
        fail_produces(mock);
        kretry_adapter_t *a = it_adapter(it_conf(env, NULL));
        /* The messages behind the failing one may or may not be handled
         * yet: a failed copy pauses its partition. Either way nothing may be
         * committed past offset 0. */
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_PRODUCE_ERRORS, 2, 20000));
        /* Give auto-commit several rounds while the copy is still failing. */
        pause_ms(a, 250);
        int64_t committed = kt_committed(env->c, env->group, env->source, 0);
        /* Meaningful only while the copy is still undelivered. */
        KT_REQUIRE(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 1) == 0);
        KT_CHECK_MSG(committed <= 0, CU_FALSE,
                     "source committed at %lld past the failed copy at 0",
                     (long long)committed);
        rd_kafka_mock_clear_request_errors(mock, 0 /* Produce */);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 6, 40000));
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 1),
                         1);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 6);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->tiers[0], 0), 1);
        it_env_destroy(env);
}

/* Copies not yet acknowledged are bounded by max.inflight.copies: each
 * keeps its source message, and the Fetch response holding it, allocated
 * until its delivery report. Every Produce answer 100 ms late and a
 * handler that decides at once: 200 messages dead-lettered at
 * max.inflight.copies 10 are never handled more than 10 + 10 ahead of the
 * acknowledged copies (10 copies unacknowledged, at most 10 decided and not
 * yet produced: max.inflight.messages 10 too). Before copies were counted the
 * handler ran ahead by all 200 while the first acknowledgements were on their
 * way (a 1,000,000-message backlog filled librdkafka's producer queue: 340 MB
 * of RSS). */
enum { ACK_N = 200, ACK_BOUND = 10, ACK_RTT_MS = 100 };
static int ack_ahead_max;

static int acks_all(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        int ahead = env->call_cnt - env->routes[KRETRY_ROUTE_DLQ];
        if (ahead > ack_ahead_max)
                ack_ahead_max = ahead;
        return env->routes[KRETRY_ROUTE_DLQ] >= ACK_N;
}

static void test_unacked_copies_bounded(void) {
        it_env_t *env                 = it_env_new("30ms", 1);
        rd_kafka_mock_cluster_t *mock = it_mock_or_skip(
                env, "the Produce answers are delayed by the mock; "
                     "bench/run's retry_hop and dead_letter measure the RSS "
                     "this bounds on a real cluster");
        if (!mock)
                return;
        for (int i = 0; i < ACK_N; i++) {
                char key[16]; /* distinct keys: none waits for another's */
                snprintf(key, sizeof(key), "k%d", i);
                it_produce(env, 0, key, "fail-ack", NULL);
        }
        char bound[16];
        snprintf(bound, sizeof(bound), "%d", ACK_BOUND);
        /* Only the acknowledgements are late: fetching is not. Each
         * Produce request takes one entry (one broker: id 1). */
        for (int i = 0; i < ACK_N; i++)
                KT_REQUIRE(rd_kafka_mock_broker_push_request_error_rtts(
                                   mock, 1, 0 /* Produce */, 1,
                                   RD_KAFKA_RESP_ERR_NO_ERROR,
                                   ACK_RTT_MS) == 0);
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "max.inflight.copies", bound,
                                   "max.inflight.messages", bound, NULL));
        ack_ahead_max = 0;
        KT_REQUIRE(it_run_until(a, acks_all, env, 60000));
        fprintf(stderr,
                "  handled at most %d ahead of the acknowledged copies "
                "(max.inflight.copies %d)\n",
                ack_ahead_max, ACK_BOUND);
        KT_CHECK_MSG(ack_ahead_max <= 2 * ACK_BOUND, CU_FALSE,
                     "handled %d messages ahead of their acknowledged "
                     "copies at max.inflight.copies %d",
                     ack_ahead_max, ACK_BOUND);
        KT_ASSERT(ack_ahead_max > 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* Log lines kept for a test to search; librdkafka's threads log too. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[16384];
static size_t log_len;

static void keep_log(kretry_log_level_t level,
                     const char *fac,
                     const char *msg,
                     void *opaque) {
        (void)opaque;
        /* librdkafka's debug contexts (cgrp by default) are not kept: on a
         * real cluster a coordinator still loading logs enough of them to
         * fill the buffer before the line a test looks for. */
        if (level >= KRETRY_LOG_DEBUG)
                return;
        pthread_mutex_lock(&log_lock);
        int n = snprintf(log_text + log_len, sizeof(log_text) - log_len,
                         "[%s] %s\n", fac, msg);
        if (n > 0 && (size_t)n < sizeof(log_text) - log_len)
                log_len += (size_t)n;
        pthread_mutex_unlock(&log_lock);
}

static void log_clear(void) {
        pthread_mutex_lock(&log_lock);
        log_len     = 0;
        log_text[0] = '\0';
        pthread_mutex_unlock(&log_lock);
}

static int log_has(const char *what) {
        pthread_mutex_lock(&log_lock);
        int found = strstr(log_text, what) != NULL;
        pthread_mutex_unlock(&log_lock);
        return found;
}

static int ok_reported(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        return env->routes[KRETRY_ROUTE_OK] >= 1;
}

/* A version changelog record whose delivery fails is produced again, and its
 * failure is logged naming the changelog (the record has no tier: naming it
 * by tier index read before the topic table and crashed); the offset waits
 * until the record is durable. */
static void test_changelog_produce_error(void) {
        it_env_t *env                 = it_env_new("30ms", 1);
        rd_kafka_mock_cluster_t *mock = it_mock_or_skip(
                env, "none: a real broker refuses no write to a "
                     "healthy compacted topic on demand");
        if (!mock)
                return;
        char vt[300];
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        KT_REQUIRE(kt_cluster_changelog(env->c, vt, 1) == 0);
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        rd_kafka_header_add(h, "version", -1, "3", -1);
        it_produce(env, 0, "K", "ok-v3", h);
        fail_produces(mock);
        kretry_conf_t *conf =
                it_conf(env, "versioning.header", "version", NULL);
        log_clear();
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_PRODUCE_ERRORS, 2, 20000));
        pause_ms(a, 250); /* auto-commit rounds while the record fails */
        KT_REQUIRE(env->routes[KRETRY_ROUTE_OK] == 0);
        int64_t committed = kt_committed(env->c, env->group, env->source, 0);
        KT_CHECK_MSG(committed <= 0, CU_FALSE,
                     "source committed at %lld before its changelog record "
                     "was durable",
                     (long long)committed);
        char want[400];
        snprintf(want, sizeof(want), "to %s failed", vt);
        KT_CHECK_MSG(log_has(want), CU_FALSE, "no log line with \"%s\"", want);
        rd_kafka_mock_clear_request_errors(mock, 0 /* Produce */);
        KT_ASSERT(it_run_until(a, ok_reported, env, 40000));
        KT_ASSERT_INT_EQ(env->call_cnt, 1);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 1);
        it_env_destroy(env);
}

static kretry_adapter_t *fatal_adapter;

/* The scripted handler, but "retry1-lost" first breaks the adapter's
 * producer (as a broken idempotent sequence would): its copy can never be
 * made durable. */
static kretry_action_t fatal_handler(kretry_msg_t *msg, void *opaque) {
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        if (v && len == 11 && !memcmp(v, "retry1-lost", 11))
                KT_ASSERT_INT_EQ(
                        rd_kafka_test_fatal_error(
                                fatal_adapter->producer,
                                RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                "sequence broken on purpose"),
                        0);
        return it_handler(msg, opaque);
}

/* A fatal producer error stops the adapter (KRETRY_ERR_FATAL) with a log
 * line saying why, instead of retrying every copy forever; the source offset
 * is committed up to the last durable outcome, not past the lost copy. */
static void test_fatal_producer(void) {
        it_env_t *env = it_env_new("30ms", 1);
        it_produce(env, 0, "k0", "ok-before", NULL);
        kretry_conf_t *conf = it_conf(env, "revoke.timeout.ms", "3000", NULL);
        kretry_conf_set_handler(conf, fatal_handler, env);
        log_clear();
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        kretry_adapter_t *a = fatal_adapter = it_adapter(conf);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        it_produce(env, 0, "k1", "retry1-lost", NULL);
        it_produce(env, 0, "k2", "ok-after", NULL);
        kretry_err_t err;
        int64_t deadline = kt_now_ms() + 20000;
        while ((err = kretry_adapter_poll(a, 100)) == KRETRY_ERR_OK &&
               kt_now_ms() < deadline)
                ;
        KT_ASSERT_INT_EQ(err, KRETRY_ERR_FATAL);
        KT_ASSERT_INT_EQ(kretry_adapter_poll(a, 0), KRETRY_ERR_FATAL);
        KT_CHECK_MSG(log_has("[FATAL] producer: ") &&
                             log_has("sequence broken on purpose; stopping"),
                     CU_FALSE, "no log line says the producer failed: %s",
                     log_text);
        kretry_adapter_destroy(a); /* joins the handler's thread */
        const it_call_t *c[4];
        KT_ASSERT_INT_EQ(it_calls_for(env, "retry1-lost", c, 4), 1);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 1);
        KT_ASSERT_INT_EQ(kt_consume(env->c, env->tiers[0], 1, 500, NULL, NULL),
                         0);
        it_env_destroy(env);
}

/* Allocation failures injected through kretry_test_alloc_fails: a site
 * named in oom_sites fails, at most oom_budget times (-1: no limit);
 * oom_reserve_ok lets that many "reserve" allocations through first. */
static const char *oom_sites;
static int oom_reserve_ok, oom_budget, oom_failed, oom_record_failed;
static int64_t oom_last_ms; /* when the last failure was injected */

static int oom_hook(const char *site) {
        if (!oom_sites || !strstr(oom_sites, site) || oom_budget == 0)
                return 0;
        if (!strcmp(site, "reserve") && oom_reserve_ok > 0) {
                oom_reserve_ok--;
                return 0;
        }
        oom_budget -= oom_budget > 0;
        oom_failed++;
        oom_record_failed += !strcmp(site, "record");
        oom_last_ms = kt_wall_ms();
        return 1;
}

static void oom_set(const char *sites, int reserve_ok, int budget) {
        oom_sites               = sites;
        oom_reserve_ok          = reserve_ok;
        oom_budget              = budget;
        oom_failed              = 0;
        oom_record_failed       = 0;
        kretry_test_alloc_fails = sites ? oom_hook : NULL;
}

/* ordering=key: the key's chain cannot grow three times. A message whose
 * place in its key's order cannot be recorded is not decided (nor handed
 * to the handler) until it can: the key's three messages are handled in
 * order, the first through its retries, each once, and all committed. */
static void test_oom_key_chain(void) {
        it_env_t *env = it_env_new("20ms,40ms", 1);
        it_produce(env, 0, "k", "retry2-m0", NULL);
        it_produce(env, 0, "k", "ok-m1", NULL);
        it_produce(env, 0, "k", "ok-m2", NULL);
        it_produce(env, 0, "k", "ok-m3", NULL);
        oom_set("chain", 0, 3);
        kretry_adapter_t *a = it_adapter(it_conf(
                env, "ordering", "key", "handler.concurrency", "2", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 4, 20000));
        KT_ASSERT_INT_EQ(oom_failed, 3);
        oom_set(NULL, 0, 0);
        kretry_adapter_destroy(a);
        static const char *const want[] = {"retry2-m0", "retry2-m0",
                                           "retry2-m0", "ok-m1",
                                           "ok-m2",     "ok-m3"};
        KT_ASSERT_INT_EQ(env->call_cnt, 6);
        for (int i = 0; i < 6 && i < env->call_cnt; i++)
                KT_CHECK_MSG(!strcmp(env->calls[i].value, want[i]), CU_FALSE,
                             "call %d: %s, want %s", i, env->calls[i].value,
                             want[i]);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 4);
        it_env_destroy(env);
}

/* One partition, a 20 ms tier, five messages "<prefix>0".."<prefix>4". */
static it_env_t *oom_env(const char *prefix) {
        it_env_t *env = it_env_new("20ms", 1);
        for (int i = 0; i < 5; i++) {
                char v[16];
                snprintf(v, sizeof(v), "%s%d", prefix, i);
                it_produce(env, 0, "k", v, NULL);
        }
        return env;
}

/* The offset tracker cannot grow for the first message, four times in a
 * row: it is neither dropped nor passed. Nothing behind it is handled (or
 * committed) before it is tracked; every message is handled once, in
 * order, and all are committed. */
static void test_oom_tracking(void) {
        char v[16];
        it_env_t *env = oom_env("ok-m");
        oom_set("offsets", 0, 4);
        kretry_adapter_t *a = it_adapter(it_conf(env, NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 5, 20000));
        KT_ASSERT_INT_EQ(oom_failed, 4);
        oom_set(NULL, 0, 0);
        KT_ASSERT_INT_EQ(env->call_cnt, 5);
        for (int i = 0; i < 5 && i < env->call_cnt; i++) {
                snprintf(v, sizeof(v), "ok-m%d", i);
                KT_ASSERT_STR_EQ(env->calls[i].value, v);
                KT_CHECK_MSG(env->calls[i].now_ms >= oom_last_ms, CU_FALSE,
                             "%s handled %lld ms before offset 0 was tracked",
                             v,
                             (long long)(oom_last_ms - env->calls[i].now_ms));
        }
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 5);
        it_env_destroy(env);
}

/* No copy record can be allocated, all along, and the reserve only once:
 * each copy goes out in the reserve record, and the next message waits
 * (its partition paused) until the reserve comes back with the previous
 * copy's acknowledgement. Nothing is lost, skipped or handled twice. */
static void test_oom_copy_record(void) {
        char v[16];
        it_env_t *env = oom_env("retry1-r");
        oom_set("record,reserve", 1, -1);
        kretry_adapter_t *a = it_adapter(it_conf(env, NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 5, 30000));
        /* Every copy went out in the reserve. */
        KT_ASSERT_INT_EQ(oom_record_failed, 5);
        oom_set(NULL, 0, 0);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_RETRIED, 5, 10000));
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 1),
                         5);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_DLQ, 0), 0);
        KT_ASSERT_INT_EQ(env->call_cnt, 10);
        for (int i = 0; i < 5; i++) {
                const it_call_t *c[3];
                snprintf(v, sizeof(v), "retry1-r%d", i);
                KT_ASSERT_INT_EQ(it_calls_for(env, v, c, 3), 2);
        }
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 5);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->tiers[0], 0), 5);
        it_env_destroy(env);
}

/* A tier copy R{id "t<n>", n} on partition 0 of the first tier, key "k",
 * attempt 1, due at @p due (0: due now). */
static void copy_tier_msg(it_env_t *env, int n, int64_t due) {
        unsigned char buf[32];
        size_t len = 0;
        char id[8], ds[32];
        snprintf(id, sizeof(id), "t%d", n);
        buf[len++] = (unsigned char)(strlen(id) << 1);
        memcpy(buf + len, id, strlen(id));
        len += strlen(id);
        buf[len++]            = (unsigned char)(n << 1); /* zigzag, below 64 */
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        rd_kafka_header_add(h, "kretry-attempt", -1, "1", -1);
        if (due) {
                snprintf(ds, sizeof(ds), "%lld", (long long)due);
                rd_kafka_header_add(h, "kretry-due-ts", -1, ds, -1);
        }
        KT_REQUIRE(kt_produce(env->c, env->tiers[0], 0, "k", 1, buf, len, h) ==
                   0);
}

/* What copy_handler saw: each call's record, attempt and time; "t0"
 * waits in its call until the test releases it. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int entered, released, cnt, foreign;
        char id[16][8];
        int attempt[16];
        int64_t now_ms[16];
} cc = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* OK for every message; a record that is not its own message's (id
 * "t<offset>", n = offset) counts in cc.foreign. */
static kretry_action_t copy_handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        const avro_value_t *rec = kretry_msg_value_avro(msg);
        avro_value_t f, g;
        const char *id = NULL;
        size_t sz;
        int64_t n = -1, off = kretry_msg_offset(msg);
        int ok = rec && !avro_value_get_by_name(rec, "id", &f, NULL) &&
                 !avro_value_get_string(&f, &id, &sz) &&
                 !avro_value_get_by_name(rec, "n", &g, NULL) &&
                 !avro_value_get_long(&g, &n);
        pthread_mutex_lock(&cc.lock);
        int i = cc.cnt++;
        if (i < 16) {
                snprintf(cc.id[i], sizeof(cc.id[i]), "%s", ok ? id : "?");
                cc.attempt[i] = kretry_msg_attempt(msg);
                cc.now_ms[i]  = kt_wall_ms();
        }
        cc.foreign += !ok || n != off || id[0] != 't' || atoll(id + 1) != n;
        if (ok && !strcmp(id, "t0")) {
                /* Bounded: a test that failed before releasing it must
                 * still end. */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 10;
                cc.entered = 1;
                while (!cc.released &&
                       pthread_cond_timedwait(&cc.cond, &cc.lock, &ts) == 0)
                        ;
        }
        pthread_mutex_unlock(&cc.lock);
        return KRETRY_OK;
}

static int copy_entered(kretry_adapter_t *a, it_env_t *env) {
        (void)a, (void)env;
        pthread_mutex_lock(&cc.lock);
        int entered = cc.entered;
        pthread_mutex_unlock(&cc.lock);
        return entered;
}

/* t1 consumed into its partition's gate behind t0, t2 held (not due), t3
 * kept behind t2. */
static int copy_held(kretry_adapter_t *a, it_env_t *env) {
        (void)env;
        return counter(a, KRETRY_COUNTER_HELD) == 1 &&
               counter(a, KRETRY_COUNTER_CONSUMED) >= 4;
}

static atomic_int watchdog_done;

/* The test's end within 15 s of its start, or the process aborts: an
 * endless loop in the polling thread (a held list that links to itself)
 * would otherwise never let it report. */
static void *watchdog(void *arg) {
        (void)arg;
        int64_t end = kt_now_ms() + 15000;
        while (!atomic_load(&watchdog_done)) {
                if (kt_now_ms() > end) {
                        fprintf(stderr, "\ntest_oom_record_copy_held: still "
                                        "running 15 s after the copy failures "
                                        "began (an endless loop?); aborting\n");
                        abort();
                }
                kt_nap_ms(20);
        }
        return NULL;
}

/* value.format avro, ordering partition: the job of a tier partition's
 * message is prepared while the same partition holds a later message not
 * due yet, and the copy of its decoded record runs out of memory three
 * times. The job keeps its place and its gate (dispatching pauses 100 ms
 * each time) instead of being held in the partition's one hold slot over
 * the message already there (which was lost, its offset never done, and
 * its partition linked into the held list twice: the polling thread
 * looped forever). Every message is handled once, in offset order, with
 * its own record, the held one not before it is due, and all committed,
 * in seconds. */
static void test_oom_record_copy_held(void) {
        it_env_t *env = it_env_new("500ms", 1);
        char schema[64];
        it_schema_r(schema, sizeof(schema));
        pthread_mutex_lock(&cc.lock);
        cc.entered = cc.released = cc.cnt = cc.foreign = 0;
        pthread_mutex_unlock(&cc.lock);
        copy_tier_msg(env, 0, 0);
        kretry_conf_t *conf = it_conf(
                env, "value.format", "avro", "value.schema", schema, "ordering",
                "partition", "handler.concurrency", "2", NULL);
        kretry_conf_set_handler(conf, copy_handler, env);
        log_clear();
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        int shaped          = it_run_until(a, copy_entered, env, 20000);
        int64_t due         = kt_wall_ms() + 500;
        if (shaped) {
                copy_tier_msg(env, 1, 0);   /* waits at the gate behind t0 */
                copy_tier_msg(env, 2, due); /* held: due in 500 ms */
                copy_tier_msg(env, 3, 0);   /* kept behind t2 */
                shaped = it_run_until(a, copy_held, env, 10000) &&
                         kt_wall_ms() < due - 150;
        }
        pthread_mutex_lock(&cc.lock);
        int calls = cc.cnt;
        pthread_mutex_unlock(&cc.lock);
        KT_CHECK_MSG(shaped, CU_FALSE,
                     "t0 not in the handler, or t2 not held 150 ms before "
                     "due (calls %d, held %lld, consumed %lld)",
                     calls, (long long)counter(a, KRETRY_COUNTER_HELD),
                     (long long)counter(a, KRETRY_COUNTER_CONSUMED));
        KT_ASSERT_INT_EQ(calls, 1);
        /* t1's record copy fails as soon as t0 is decided, while t2 is
         * held. */
        oom_set("avro-copy", 0, 3);
        pthread_t wd;
        atomic_store(&watchdog_done, 0);
        KT_REQUIRE(pthread_create(&wd, NULL, watchdog, NULL) == 0);
        int64_t t0 = kt_now_ms(), margin = due - kt_wall_ms();
        pthread_mutex_lock(&cc.lock);
        cc.released = 1;
        pthread_cond_broadcast(&cc.cond);
        pthread_mutex_unlock(&cc.lock);
        int64_t end = kt_now_ms() + 10000;
        while (shaped && counter(a, KRETRY_COUNTER_OK) < 4 && kt_now_ms() < end)
                kretry_adapter_poll(a, 10);
        int64_t took = kt_now_ms() - t0;
        pause_ms(a, 200); /* a second call of any would show */
        int failed = oom_failed, record_failed = oom_record_failed;
        int64_t last_failed = oom_last_ms;
        oom_set(NULL, 0, 0);
        fprintf(stderr,
                "  t0 released %lld ms before t2 was due; %d copy failures, "
                "the last %lld ms before; all handled %lld ms after t0\n",
                (long long)margin, failed, (long long)(due - last_failed),
                (long long)took);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_OK), 4);
        KT_ASSERT_INT_EQ(failed, 3);
        KT_ASSERT_INT_EQ(record_failed, 0); /* "record" is a copy's */
        /* t1's, all while t2 was held. */
        KT_CHECK_MSG(log_has("[0] offset 1 for the handler") &&
                             last_failed < due,
                     CU_FALSE,
                     "the failures were not t1's while t2 was held (the "
                     "last %lld ms after t2 was due): %s",
                     (long long)(last_failed - due), log_text);
        KT_CHECK_MSG(log_has("out of memory preparing") &&
                             log_has("dispatching again in 100 ms"),
                     CU_FALSE, "no log line says the preparation waits: %s",
                     log_text);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_HELD), 0);
        pthread_mutex_lock(&cc.lock);
        KT_ASSERT_INT_EQ(cc.cnt, 4);
        KT_ASSERT_INT_EQ(cc.foreign, 0);
        for (int i = 0; i < cc.cnt && i < 4; i++) {
                char want[8];
                snprintf(want, sizeof(want), "t%d", i);
                KT_CHECK_MSG(!strcmp(cc.id[i], want), CU_FALSE,
                             "call %d: %s, want %s", i, cc.id[i], want);
                KT_ASSERT_INT_EQ(cc.attempt[i], 2);
        }
        if (cc.cnt >= 3)
                KT_CHECK_MSG(cc.now_ms[2] >= due, CU_FALSE,
                             "t2 handled %lld ms before it was due",
                             (long long)(due - cc.now_ms[2]));
        pthread_mutex_unlock(&cc.lock);
        kretry_adapter_destroy(a);
        atomic_store(&watchdog_done, 1);
        pthread_join(wd, NULL);
        KT_CHECK_MSG(took < 5000, CU_FALSE, "handled in %lld ms",
                     (long long)took);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->tiers[0], 0), 4);
        it_env_destroy(env);
        unlink(schema);
}

/* (g) null key, null value and a 1 MiB value pass through a retry hop. */
static void test_null_and_huge(void) {
        it_env_t *env = it_env_new("20ms", 1);
        KT_REQUIRE(kt_produce(env->c, env->source, 0, NULL, 0, "retry1-nk", 9,
                              NULL) == 0);
        KT_REQUIRE(kt_produce(env->c, env->source, 0, "k", 1, NULL, 0, NULL) ==
                   0);
        size_t big = 1024 * 1024;
        char *v    = malloc(big);
        memcpy(v, "retry1-big", 10);
        for (size_t i = 10; i < big; i++)
                v[i] = (char)('a' + i % 26);
        KT_REQUIRE(kt_produce(env->c, env->source, 0, "k", 1, v, big, NULL) ==
                   0);
        kretry_adapter_t *a = it_adapter(it_conf(env, NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 3, 30000));
        const it_call_t *c[4];
        KT_REQUIRE(it_calls_for(env, "retry1-nk", c, 4) == 2);
        KT_ASSERT(c[1]->key_null);
        KT_ASSERT_INT_EQ(c[1]->tier, 1);
        KT_REQUIRE(it_calls_for(env, "", c, 4) == 2);
        KT_ASSERT(c[0]->value_null && c[1]->value_null);
        KT_ASSERT_INT_EQ(c[1]->tier, 1);
        int n = 0;
        for (int i = 0; i < env->call_cnt; i++)
                if (env->calls[i].value_len == big) {
                        n++;
                        KT_ASSERT(!strncmp(env->calls[i].value, v, 40));
                }
        KT_ASSERT_INT_EQ(n, 2);
        kretry_adapter_destroy(a);
        free(v);
        it_env_destroy(env);
}

static int dlq4_ok2(kretry_adapter_t *a, it_env_t *env) {
        (void)env;
        return counter(a, KRETRY_COUNTER_DLQ) >= 4 &&
               counter(a, KRETRY_COUNTER_OK) >= 2;
}

static void tier_msg(it_env_t *env,
                     const char *attempt,
                     const char *due,
                     const char *value) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        if (attempt)
                rd_kafka_header_add(h, "kretry-attempt", -1, attempt, -1);
        if (due)
                rd_kafka_header_add(h, "kretry-due-ts", -1, due, -1);
        KT_REQUIRE(kt_produce(env->c, env->tiers[0], 0, "k", 1, value,
                              strlen(value), h) == 0);
}

/* (g) malformed kretry headers: on a tier, an unusable attempt count goes to
 * the DLQ (class schema) without a handler call; an unusable due time means
 * "due now"; on the source, kretry headers start no chain. */
static void test_malformed_headers(void) {
        it_env_t *env = it_env_new("20ms", 1);
        tier_msg(env, "abc", NULL, "ok-bad1");
        tier_msg(env, "-1", NULL, "ok-bad2");
        tier_msg(env, "99999999999999999999", NULL, "ok-bad3");
        tier_msg(env, NULL, "123", "ok-bad4");
        tier_msg(env, "1", "not-a-time", "ok-due");
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        rd_kafka_header_add(h, "kretry-attempt", -1, "7", -1);
        rd_kafka_header_add(h, "kretry-tier", -1, "x", -1);
        it_produce(env, 0, "k", "ok-src", h);
        kretry_adapter_t *a = it_adapter(it_conf(env, NULL));
        KT_ASSERT(it_run_until(a, dlq4_ok2, env, 20000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_SCHEMA, 0), 4);
        KT_ASSERT_INT_EQ(env->routes[KRETRY_ROUTE_DLQ], 4);
        KT_ASSERT_INT_EQ(env->call_cnt, 2);
        const it_call_t *c[2];
        KT_REQUIRE(it_calls_for(env, "ok-due", c, 2) == 1);
        KT_ASSERT_INT_EQ(c[0]->attempt, 2);
        KT_REQUIRE(it_calls_for(env, "ok-src", c, 2) == 1);
        KT_ASSERT_INT_EQ(c[0]->attempt, 1);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_consume(env->c, env->dlq, 4, 10000, NULL, NULL), 4);
        it_env_destroy(env);
}

/* A tier message whose kretry-due-ts is an hour ahead (written under a
 * longer delay, or by another writer) is held no longer than its tier's
 * delay plus jitter, not an hour; the message behind it follows. */
static void test_due_far_ahead(void) {
        it_env_t *env = it_env_new("300ms", 1);
        char due[32];
        snprintf(due, sizeof(due), "%lld", (long long)(kt_wall_ms() + 3600000));
        tier_msg(env, "1", due, "ok-far");
        tier_msg(env, "1", NULL, "ok-behind");
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "retry.jitter", "20%", NULL));
        /* When it is held: seen between polls of 10 ms, well inside the
         * 300-360 ms it waits. */
        int64_t held = -1, deadline = kt_now_ms() + 20000;
        while (counter(a, KRETRY_COUNTER_OK) < 2 && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 10);
                if (held < 0 && counter(a, KRETRY_COUNTER_HELD) == 1)
                        held = kt_wall_ms();
        }
        KT_ASSERT(held > 0);
        KT_REQUIRE(counter(a, KRETRY_COUNTER_OK) == 2);
        const it_call_t *c[2];
        KT_REQUIRE(it_calls_for(env, "ok-far", c, 2) == 1);
        int64_t waited = c[0]->now_ms - held;
        /* 360 ms at most (test_delay checks the bound itself); the
         * margin is for a loaded machine, and far below the hour. */
        KT_CHECK_MSG(waited <= 10000, CU_FALSE,
                     "held %lld ms with a 300 ms tier (20%% jitter)",
                     (long long)waited);
        KT_ASSERT_STR_EQ(env->calls[0].value, "ok-far");
        KT_ASSERT_STR_EQ(env->calls[1].value, "ok-behind");
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->tiers[0], 0), 2);
        it_env_destroy(env);
}

/* A retry-after hint picks the first tier whose delay covers it. */
static void test_hint(void) {
        it_env_t *env = it_env_new("20ms,200ms,2s", 1);
        it_produce(env, 0, "k", "hint", NULL);
        kretry_adapter_t *a = it_adapter(it_conf(env, NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        const it_call_t *c[2];
        KT_REQUIRE(it_calls_for(env, "hint", c, 2) == 2);
        KT_ASSERT_INT_EQ(c[1]->tier, 2);
        KT_ASSERT(c[1]->now_ms - c[0]->now_ms >= 200);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A message older than retry.max.age at its failure expires to the DLQ. */
static void test_expired(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k", "always-x", NULL);
        kretry_adapter_t *a = it_adapter(it_conf(
                env, "retry.max.age", "1ms", "retry.max.attempts", "5", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 1, 20000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_EXPIRED, 0), 1);
        KT_ASSERT_INT_EQ(env->call_cnt, 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* retry.permanent.errors: a RETRY answered with a listed code is a FAIL. */
static void test_permanent_codes(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k", "retry1-code", NULL); /* code HTTP_503 */
        kretry_adapter_t *a = it_adapter(it_conf(env, "retry.permanent.errors",
                                                 "VALIDATION,HTTP_503", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PERMANENT, 1, 20000));
        KT_ASSERT_INT_EQ(env->call_cnt, 1);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0),
                         0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* 30 always-failing messages of 30 keys over two partitions, and an adapter
 * whose breaker opens after 5 of them (3 keys or more) for @p cooldown. */
static kretry_adapter_t *breaker_adapter(it_env_t *env, const char *cooldown) {
        for (int i = 0; i < 30; i++) {
                char key[16];
                snprintf(key, sizeof(key), "key-%d", i);
                it_produce(env, i % 2, key, "always-b", NULL);
        }
        return it_adapter(it_conf(env, "breaker.failures", "5",
                                  "breaker.distinct.keys", "3",
                                  "breaker.cooldown", cooldown,
                                  "retry.max.attempts", "50", NULL));
}

/* The breaker opens after a run of transient failures across keys, pauses
 * every partition (no handler call) for its cool-down, then lets one through;
 * that one failing reopens it. */
static void test_breaker(void) {
        it_env_t *env       = it_env_new("20ms", 2);
        kretry_adapter_t *a = breaker_adapter(env, "1500ms");
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_BREAKER_TRIPS, 1, 20000));
        int calls = env->call_cnt;
        KT_ASSERT_INT_EQ(calls, 5);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_BREAKER_OPEN, 0), 1);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_BREAKER_TRIPS, 2, 20000));
        KT_ASSERT_INT_EQ(env->call_cnt, calls + 1); /* one probe, failed */
        /* Nothing while open: the call after the one that opened it is the
         * probe, a whole cool-down later. The cool-down is longer than the
         * ~0.8 s a paused partition takes to deliver again, so a breaker
         * that did not wait fails this; load only makes the gap longer. */
        int64_t gap = env->calls[calls].now_ms - env->calls[calls - 1].now_ms;
        KT_CHECK_MSG(gap >= 1490, CU_FALSE,
                     "probe %lld ms after the call that opened the breaker",
                     (long long)gap);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void *run_adapter(void *arg) {
        kretry_adapter_run(arg);
        return NULL;
}

static int64_t thread_cpu_ms(pthread_t t) {
        clockid_t cid;
        struct timespec ts;
        KT_REQUIRE(pthread_getcpuclockid(t, &cid) == 0);
        KT_REQUIRE(clock_gettime(cid, &ts) == 0);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static kretry_action_t retry_handler(kretry_msg_t *msg, void *opaque) {
        (void)msg, (void)opaque;
        return KRETRY_RETRY;
}

/* An open breaker sleeps through its cool-down instead of spinning, and
 * still serves the group: a member that joins meanwhile gets its share of
 * the partitions before the cool-down ends (the mock completes a join
 * session.timeout.ms - 1 s after it starts; the cool-down outlasts that by
 * far, for a loaded machine, and the test ends as soon as the share came). */
static void test_breaker_sleeps_and_serves_group(void) {
        it_env_t *env       = it_env_new("20ms", 2);
        kretry_adapter_t *a = breaker_adapter(env, "40s");
        pthread_t thr;
        KT_REQUIRE(pthread_create(&thr, NULL, run_adapter, a) == 0);
        int64_t deadline = kt_now_ms() + 20000;
        while (kretry_adapter_counter(a, KRETRY_COUNTER_BREAKER_TRIPS, 0) < 1 &&
               kt_now_ms() < deadline) {
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        KT_REQUIRE(kretry_adapter_counter(a, KRETRY_COUNTER_BREAKER_TRIPS, 0) ==
                   1);
        int64_t opened = kt_now_ms(), cpu0 = thread_cpu_ms(thr);

        kretry_conf_t *conf = it_conf(env, NULL);
        kretry_conf_set_handler(conf, retry_handler, env);
        log_clear();
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        kretry_adapter_t *b = it_adapter(conf);
        /* The open breaker's thread over 2 s of its cool-down, while the
         * second member joins. */
        while (kt_now_ms() < opened + 2000)
                kretry_adapter_poll(b, 50);
        int64_t cpu = thread_cpu_ms(thr) - cpu0, wall = kt_now_ms() - opened;
        fprintf(stderr, "  open breaker: %lld ms CPU in %lld ms\n",
                (long long)cpu, (long long)wall);
        KT_CHECK_MSG(cpu * 20 < wall, CU_FALSE,
                     "open breaker used %lld ms CPU in %lld ms (5%% allowed)",
                     (long long)cpu, (long long)wall);
        /* Cooperative (kretry's default), its first
         * assignment is empty: the
         * open member gives a partition up, and a second rebalance hands it
         * over. */
        while (!log_has("[REBALANCE] assigned 2 partition(s)") &&
               kt_now_ms() < opened + 38000)
                kretry_adapter_poll(b, 50);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_BREAKER_OPEN, 0), 1);
        /* One source partition and its tier: shared with the open member. */
        KT_CHECK_MSG(log_has("[REBALANCE] assigned 2 partition(s)"), CU_FALSE,
                     "the joining member got no share %lld ms into the "
                     "cool-down: %s",
                     (long long)(kt_now_ms() - opened), log_text);
        kretry_adapter_destroy(b);
        kretry_adapter_stop(a);
        pthread_join(thr, NULL);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static rd_kafka_mock_cluster_t *down_mock;

/* The scripted handler, but "retry1-down" first takes the cluster's only
 * broker down: its copy is produced to a broker that is gone. */
static kretry_action_t down_handler(kretry_msg_t *msg, void *opaque) {
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        if (v && len == 11 && !memcmp(v, "retry1-down", 11))
                KT_ASSERT_INT_EQ(rd_kafka_mock_broker_set_down(down_mock, 1),
                                 0);
        return it_handler(msg, opaque);
}

/* Closing while the cluster is gone, with a copy in flight, ends within
 * revoke.timeout.ms plus a few seconds (librdkafka's consumer close alone
 * would wait for the group coordinator forever) and reports the timeout. */
static void test_close_cluster_gone(void) {
        it_env_t *env = it_env_new("30ms", 1);
        if (!(down_mock = it_mock_or_skip(env, KT_WHOLE_CLUSTER)))
                return;
        it_produce(env, 0, "k0", "ok-before", NULL);
        it_produce(env, 0, "k1", "retry1-down", NULL);
        /* librdkafka's close alone waits about session.timeout.ms for the
         * coordinator: make that long enough to tell from the bound. */
        kretry_conf_t *conf =
                it_conf(env, "revoke.timeout.ms", "2000",
                        "consumer.session.timeout.ms", "20000", NULL);
        kretry_conf_set_handler(conf, down_handler, env);
        kretry_adapter_t *a = it_adapter(conf);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_HANDLER_CALLS, 2, 20000));
        KT_REQUIRE(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0) == 0);
        int64_t t0       = kt_now_ms();
        kretry_err_t err = kretry_adapter_close(a);
        int64_t closed   = kt_now_ms() - t0;
        kretry_adapter_destroy(a);
        int64_t gone = kt_now_ms() - t0;
        fprintf(stderr, "  close %lld ms, destroy done at %lld ms\n",
                (long long)closed, (long long)gone);
        KT_ASSERT_INT_EQ(err, KRETRY_ERR_TIMED_OUT);
        KT_CHECK_MSG(gone < 2000 + 10000, CU_FALSE,
                     "close and destroy took %lld ms with revoke.timeout.ms "
                     "2000",
                     (long long)gone);
        it_env_destroy(env);
}

static int committed_one(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        return kt_committed(env->c, env->group, env->source, 0) == 1;
}

/* The cluster gone with nothing in flight: the handlers and copies are
 * done at once, so the close does not wait out revoke.timeout.ms for a
 * coordinator that does not answer; the commit and the leave get their
 * own few seconds (KRETRY_COMMIT_GRACE_MS, KRETRY_CLOSE_GRACE_MS). Here
 * everything was committed before the cluster went: no commit is left to
 * wait for and the close may end at once, without a timeout to report
 * (nothing is consumed again). An operator's SIGTERM after the broker went
 * away ends in seconds, not in revoke.timeout.ms + 5 s. */
static void test_close_cluster_gone_idle(void) {
        it_env_t *env                 = it_env_new("30ms", 1);
        rd_kafka_mock_cluster_t *mock = it_mock_or_skip(env, KT_WHOLE_CLUSTER);
        if (!mock)
                return;
        it_produce(env, 0, "k0", "ok-before", NULL);
        kretry_conf_t *conf =
                it_conf(env, "revoke.timeout.ms", "25000",
                        "consumer.session.timeout.ms", "30000", NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        /* Done and committed: the close has no work left but the leave. */
        KT_REQUIRE(it_run_until(a, committed_one, env, 10000));
        KT_ASSERT_INT_EQ(rd_kafka_mock_broker_set_down(mock, 1), 0);
        int64_t t0       = kt_now_ms();
        kretry_err_t err = kretry_adapter_close(a);
        int64_t closed   = kt_now_ms() - t0;
        kretry_adapter_destroy(a);
        fprintf(stderr, "  close %lld ms: %s\n", (long long)closed,
                kretry_err2str(err));
        KT_ASSERT(err == KRETRY_ERR_OK || err == KRETRY_ERR_TIMED_OUT);
        KT_CHECK_MSG(closed < 3000 + 5000 + 2000, CU_FALSE,
                     "close took %lld ms with nothing in flight "
                     "(revoke.timeout.ms 25000)",
                     (long long)closed);
        it_env_destroy(env);
}

static int poll_exceeded;

static void watch_log(kretry_log_level_t level,
                      const char *fac,
                      const char *msg,
                      void *opaque) {
        (void)level, (void)fac, (void)opaque;
        if (strstr(msg, "maximum poll interval") ||
            strstr(msg, "max.poll.interval"))
                poll_exceeded++;
}

/* A handler call longer than max.poll.interval.ms does not get the consumer
 * kicked out of the group: the handler runs on its worker thread while the
 * polling thread keeps serving the group (at handler.concurrency 1, the
 * default). */
static void test_long_handler(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k", "slow8", NULL);
        it_produce(env, 0, "k", "ok-after", NULL);
        kretry_conf_t *conf =
                it_conf(env, "consumer.max.poll.interval.ms", "6000", NULL);
        kretry_conf_set_log_cb(conf, watch_log, NULL);
        poll_exceeded       = 0;
        kretry_adapter_t *a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 30000));
        /* Give a kicked-out consumer the time to notice and say so. */
        int64_t end = kt_now_ms() + 500;
        while (kt_now_ms() < end)
                kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(poll_exceeded, 0);
        KT_ASSERT_INT_EQ(env->routes[KRETRY_ROUTE_OK], 2);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 2);
        it_env_destroy(env);
}

static void *step_wall_clock(void *arg) {
        (void)arg;
        kt_nap_ms(100);
        atomic_store(&kretry_test_wall_step_ms, -3600 * 1000);
        return NULL;
}

/* The wall clock steps back an hour while a close waits for a handler
 * call (revoke.timeout.ms 300): the wait is on the monotonic clock, so the
 * close still ends within its bound instead of waiting for the call. */
static void test_clock_step_keeps_bounds(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k", "slow2", NULL);
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "revoke.timeout.ms", "300", NULL));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_HANDLER_CALLS, 1, 20000));
        pthread_t t;
        KT_REQUIRE(pthread_create(&t, NULL, step_wall_clock, NULL) == 0);
        int64_t t0 = kt_now_ms();
        kretry_adapter_close(a);
        int64_t closed = kt_now_ms() - t0;
        pthread_join(t, NULL);
        atomic_store(&kretry_test_wall_step_ms, 0);
        kretry_adapter_destroy(a);
        fprintf(stderr, "  close %lld ms\n", (long long)closed);
        KT_CHECK_MSG(closed < 1000, CU_FALSE,
                     "close took %lld ms with revoke.timeout.ms 300 after the "
                     "wall clock stepped back",
                     (long long)closed);
        it_env_destroy(env);
}

/* How long after its due time "retry1-first"'s retry started (awaited for
 * 20 s), printed with the source messages handled by then. */
static int64_t
retry_lateness(it_env_t *env, kretry_adapter_t *a, const char *ordering) {
        int64_t deadline = kt_now_ms() + 20000;
        const it_call_t *c[2];
        while (it_calls_for(env, "retry1-first", c, 2) < 2 &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(a, 20);
        KT_REQUIRE(it_calls_for(env, "retry1-first", c, 2) == 2);
        int64_t late = c[1]->now_ms - c[1]->due_ts;
        fprintf(stderr,
                "  %s%s%sretry started %lld ms after due, %lld source messages "
                "handled by then\n",
                *ordering ? "ordering=" : "", ordering, *ordering ? ": " : "",
                (long long)late,
                (long long)kretry_adapter_counter(a, KRETRY_COUNTER_OK, 0));
        return late;
}

/* A due retry is not handled behind a source backlog: tier partitions feed
 * their own queue, served first. 20,000 source messages at 200 us each take
 * 4 s; the retry, due 100 ms after its failure, must not wait for them. */
static void test_tier_not_behind_backlog(void) {
        it_env_t *env = it_env_new("100ms", 1);
        it_produce(env, 0, "k0", "retry1-first", NULL);
        char errstr[256];
        rd_kafka_conf_t *pc = kt_rdkafka_conf(env->c);
        rd_kafka_conf_set(pc, "linger.ms", "5", NULL, 0);
        rd_kafka_t *p =
                rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof(errstr));
        KT_REQUIRE(p != NULL);
        for (int i = 0; i < 20000; i++)
                KT_REQUIRE(rd_kafka_producev(
                                   p, RD_KAFKA_V_TOPIC(env->source),
                                   RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_KEY("k1", 2),
                                   RD_KAFKA_V_VALUE((void *)"okslow", 6),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_END) == 0);
        KT_REQUIRE(rd_kafka_flush(p, 30000) == 0);
        rd_kafka_destroy(p);
        kretry_adapter_t *a = it_adapter(it_conf(env, NULL));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_RETRIED, 1, 20000));
        int64_t late = retry_lateness(env, a, "");
        KT_CHECK_MSG(late >= 0 && late < 1000, CU_FALSE,
                     "retry handled %lld ms after due", (long long)late);
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_OK, 0) < 15000);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A due retry starts before the source messages queued for the workers
 * (up to max.inflight.messages of them): it waits for a free worker, not
 * for the backlog. 300 source messages of 5 ms each (1.5 s at one handler)
 * are all taken at once; the retry of the first, due 50 ms after it
 * failed, must start within a few handler calls of its due time, under
 * every ordering that queues a backlog (a partition's gate queues one
 * message at a time). Before due retries went first it started ~1.4 s
 * late, behind the whole backlog. */
static void retry_before_queued_source(const char *ordering) {
        enum { BACKLOG = 300, WORK_MS = 5, BOUND_MS = 250 };
        it_env_t *env = it_env_new("50ms", 1);
        /* First a retry that ends before the backlog comes: the copies of
         * a new adapter wait for its producer's id (up to 500 ms with
         * librdkafka 2.14.2), which is not what is measured here. */
        it_produce(env, 0, "kw", "retry1-warm", NULL);
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "ordering", ordering, NULL));
        const it_call_t *w[2];
        int64_t deadline = kt_now_ms() + 20000;
        while (it_calls_for(env, "retry1-warm", w, 2) < 2 &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(a, 20);
        KT_REQUIRE(it_calls_for(env, "retry1-warm", w, 2) == 2);
        /* Not polled meanwhile: the backlog waits fetched, taken at once. */
        it_produce(env, 0, "k0", "retry1-first", NULL);
        for (int i = 1; i <= BACKLOG; i++) {
                char key[16];
                snprintf(key, sizeof(key), "k%d", i);
                it_produce(env, 0, key, "work5", NULL);
        }
        int64_t late = retry_lateness(env, a, ordering);
        KT_CHECK_MSG(late >= 0 && late < BOUND_MS, CU_FALSE,
                     "ordering=%s: retry started %lld ms after due, %d ms "
                     "handler calls queued before it",
                     ordering, (long long)late, WORK_MS);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, BACKLOG + 2, 20000));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void test_retry_before_queued_source(void) {
        retry_before_queued_source("none");
        retry_before_queued_source("key");
}

/* A session timeout outside the broker's group.min.session.timeout.ms ..
 * group.max.session.timeout.ms is refused on every JoinGroup: the adapter
 * stops with KRETRY_ERR_FATAL, saying which setting, instead of asking
 * again forever without ever consuming. (The mock accepts any.) */
static void test_session_timeout_refused(void) {
        if (!kt_real_only("the mock accepts any session timeout"))
                return;
        it_env_t *env = it_env_new("30ms", 1);
        if (kt_consumer_protocol()) {
                /* The broker sets sessions under the consumer protocol: a
                 * session timeout of the client's is refused at once. */
                kretry_conf_t *conf = it_conf(env, NULL);
                char err[512]       = "";
                KT_REQUIRE(kretry_conf_set(conf, "consumer.session.timeout.ms",
                                           "500", err, sizeof(err)) == 0);
                kretry_adapter_t *a =
                        kretry_adapter_new(conf, err, sizeof(err));
                KT_ASSERT(a == NULL);
                KT_CHECK_MSG(strstr(err, "session.timeout.ms") &&
                                     strstr(err, "group.protocol=consumer"),
                             CU_FALSE, "kretry_adapter_new: %s", err);
                kretry_adapter_destroy(a);
                kretry_conf_destroy(conf);
                it_env_destroy(env);
                return;
        }
        kretry_conf_t *conf =
                it_conf(env, "consumer.session.timeout.ms", "500",
                        "consumer.heartbeat.interval.ms", "100", NULL);
        log_clear();
        kretry_conf_set_log_cb(conf, keep_log, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        kretry_err_t err    = KRETRY_ERR_OK;
        int64_t deadline    = kt_now_ms() + 15000;
        while (err == KRETRY_ERR_OK && kt_now_ms() < deadline)
                err = kretry_adapter_poll(a, 100);
        KT_ASSERT_INT_EQ(err, KRETRY_ERR_FATAL);
        KT_CHECK_MSG(log_has("refuses consumer.session.timeout.ms 500"),
                     CU_FALSE, "log: %s", log_text);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_produce_errors),
                KT_TEST(test_unacked_copies_bounded),
                KT_TEST(test_changelog_produce_error),
                KT_TEST(test_fatal_producer),
                KT_TEST(test_oom_tracking),
                KT_TEST(test_oom_copy_record),
                KT_TEST(test_oom_key_chain),
                KT_TEST(test_oom_record_copy_held),
                KT_TEST(test_null_and_huge),
                KT_TEST(test_malformed_headers),
                KT_TEST(test_due_far_ahead),
                KT_TEST(test_hint),
                KT_TEST(test_expired),
                KT_TEST(test_permanent_codes),
                KT_TEST(test_breaker),
                KT_TEST(test_breaker_sleeps_and_serves_group),
                KT_TEST(test_close_cluster_gone),
                KT_TEST(test_close_cluster_gone_idle),
                KT_TEST(test_long_handler),
                KT_TEST(test_tier_not_behind_backlog),
                KT_TEST(test_retry_before_queued_source),
                KT_TEST(test_clock_step_keeps_bounds),
                KT_TEST(test_session_timeout_refused),
                KT_END};
        return kt_main("it_faults", tests, argc, argv);
}
