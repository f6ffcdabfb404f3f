/*
 * routing=transactional on real Kafka: the copies kretry writes and the
 * offsets they decide are committed in one transaction. A read_committed
 * reader sees each copy once, an aborted transaction's copies never, and
 * the messages of an aborted transaction are decided again. The mock
 * cluster's transactions are not real (no markers, read_committed sees
 * aborted records): every test here skips there but
 * test_begin_fails_offsets_kept, which checks there what the adapter
 * committed by its own record (and on real Kafka by the group's too).
 */
#include "it_harness.h"
#include "txn.h"      /* kretry_test_txn_fails */
#include "versions.h" /* kretry_version_decode */

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int real_kafka(void) {
        return kt_real_only("the mock cluster's transactions write no "
                            "markers, so an aborted copy would be read");
}

static int64_t counter(kretry_adapter_t *a, kretry_counter_t c) {
        return kretry_adapter_counter(a, c, 0);
}

/* Copies of @p topic read by a read_committed reader (librdkafka's
 * default), at most @p max, within @p timeout_ms. */
static int committed_copies(it_env_t *env,
                            const char *topic,
                            kt_copies_t *cs,
                            int expected,
                            int timeout_ms) {
        cs->n = 0;
        return kt_consume(env->c, topic, expected, timeout_ms, kt_copy_grab,
                          cs);
}

/* How many copies in @p cs carry @p value. */
static int copies_of(const kt_copies_t *cs, const char *value) {
        int n = 0;
        for (int i = 0; i < cs->n; i++)
                n += !strcmp(cs->m[i].value, value);
        return n;
}

typedef struct {
        int ok, retry, fail;
        int before; /* produced before the mix by the test, ending OK */
} mix_t;

/* ok-P-I, retry1-P-I (RETRY once, then OK) and fail-P-I on each of
 * @p parts partitions. */
static void produce_mix(it_env_t *env, const mix_t *m) {
        char v[64];
        for (int p = 0; p < env->parts; p++) {
                for (int i = 0; i < m->ok; i++) {
                        snprintf(v, sizeof(v), "ok-%d-%d", p, i);
                        it_produce(env, p, "k", v, NULL);
                }
                for (int i = 0; i < m->retry; i++) {
                        snprintf(v, sizeof(v), "retry1-%d-%d", p, i);
                        it_produce(env, p, "k", v, NULL);
                }
                for (int i = 0; i < m->fail; i++) {
                        snprintf(v, sizeof(v), "fail-%d-%d", p, i);
                        it_produce(env, p, "k", v, NULL);
                }
        }
}

/* produce_mix's {4, 4, 4} committed to the end: 12 source messages a
 * partition (and before_mix more), and their tier copies. */
static int before_mix;
static int all_at_end(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        for (int p = 0; p < env->parts; p++)
                if (kt_committed(env->c, env->group, env->source, p) !=
                            12 + before_mix ||
                    !it_tier_at_end(env, p))
                        return 0;
        return 1;
}

/* Every tier and DLQ copy, read read_committed, exactly once; commits at
 * the end offsets of the source and the tier. */
static void check_exactly_once(it_env_t *env, const mix_t *m) {
        kt_copies_t tier = {.max = 256}, dlq = {.max = 256};
        tier.m = calloc((size_t)tier.max, sizeof(kt_copy_t));
        dlq.m  = calloc((size_t)dlq.max, sizeof(kt_copy_t));
        int nt = m->retry * env->parts;
        int nd = m->fail * env->parts;
        /* One more than expected is asked for: a duplicate would be
         * read. */
        KT_ASSERT_INT_EQ(
                committed_copies(env, env->tiers[0], &tier, nt + 1, 3000), nt);
        KT_ASSERT_INT_EQ(committed_copies(env, env->dlq, &dlq, nd + 1, 3000),
                         nd);
        char v[64];
        for (int p = 0; p < env->parts; p++) {
                for (int i = 0; i < m->retry; i++) {
                        snprintf(v, sizeof(v), "retry1-%d-%d", p, i);
                        KT_CHECK_MSG(copies_of(&tier, v) == 1, CU_FALSE,
                                     "%s: %d tier copies", v,
                                     copies_of(&tier, v));
                }
                for (int i = 0; i < m->fail; i++) {
                        snprintf(v, sizeof(v), "fail-%d-%d", p, i);
                        KT_CHECK_MSG(copies_of(&dlq, v) == 1, CU_FALSE,
                                     "%s: %d DLQ copies", v,
                                     copies_of(&dlq, v));
                }
                KT_ASSERT_INT_EQ(
                        kt_committed(env->c, env->group, env->source, p),
                        m->before + m->ok + m->retry + m->fail);
                /* Aborted copies and markers take tier offsets too. */
                KT_ASSERT(it_tier_at_end(env, p));
        }
        free(tier.m);
        free(dlq.m);
}

static kretry_conf_t *txn_conf(it_env_t *env) {
        return it_conf(env, "routing", "transactional",
                       "transaction.interval.ms", "50", NULL);
}

/* One message of each outcome all the way through, in transactions. */
static void test_routes_in_transactions(void) {
        if (!real_kafka())
                return;
        it_env_t *env = it_env_new("30ms", 2);
        mix_t m       = {4, 4, 4};
        produce_mix(env, &m);
        kretry_adapter_t *a = it_adapter(txn_conf(env));
        KT_REQUIRE(a != NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 16, 30000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 8, 30000));
        /* Committed by the transactions while running, not at close. */
        KT_ASSERT(it_run_until(a, all_at_end, env, 20000));
        KT_ASSERT(counter(a, KRETRY_COUNTER_TXN_COMMITS) > 0);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TXN_ABORTS), 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        check_exactly_once(env, &m);
        /* Handled once each: OK ones once, retried ones twice. */
        KT_ASSERT_INT_EQ(env->call_cnt, 2 * (4 + 8 + 4));
        it_env_destroy(env);
}

static int fail_first_commits;
static int fail_commit(void) {
        return fail_first_commits > 0 ? fail_first_commits-- : 0;
}

/* A transaction that fails is aborted: its copies never become visible, and
 * every message it decided is decided again (the handler called again). */
static void test_abort_decides_again(void) {
        if (!real_kafka())
                return;
        it_env_t *env = it_env_new("30ms", 1);
        mix_t m       = {4, 4, 4};
        produce_mix(env, &m);
        kretry_conf_t *conf   = it_conf(env, "routing", "transactional",
                                        "transaction.interval.ms", "200", NULL);
        fail_first_commits    = 2;
        kretry_test_txn_fails = fail_commit;
        kretry_adapter_t *a   = it_adapter(conf);
        KT_REQUIRE(a != NULL);
        KT_ASSERT(it_run_until(a, all_at_end, env, 30000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_TXN_ABORTS, 2, 10000));
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        kretry_test_txn_fails = NULL;
        check_exactly_once(env, &m);
        /* The first transaction decided at least the first messages: the
         * handler saw them again after the abort. */
        const it_call_t *c[8];
        KT_ASSERT(it_calls_for(env, "ok-0-0", c, 8) >= 2);
        KT_ASSERT(it_calls_for(env, "fail-0-0", c, 8) >= 2);
        it_env_destroy(env);
}

/* One partition: slow1 (a 1 s handler call) at offset 0, then @p m's mix
 * behind it; with four handlers (slow_head_conf) the mix is decided while
 * slow1 holds the partition's commit back at 0, so the mix's offsets
 * travel as decided-above metadata. */
static it_env_t *slow_head_env(const mix_t *m) {
        it_env_t *env = it_env_new("30ms", 1);
        it_produce(env, 0, "k", "slow1", NULL);
        produce_mix(env, m);
        return env;
}

static kretry_conf_t *slow_head_conf(it_env_t *env) {
        return it_conf(env, "routing", "transactional",
                       "transaction.interval.ms", "50", "handler.concurrency",
                       "4", NULL);
}

/* test_stop_during_abort: the adapter told to stop from inside its first
 * commit, which then fails; what the log said after. */
static kretry_adapter_t *stopping;
static int stop_logged, rewound_logged;

static int stop_and_fail(void) {
        kretry_adapter_stop(stopping);
        return 1;
}

static void stop_log(kretry_log_level_t level,
                     const char *fac,
                     const char *msg,
                     void *opaque) {
        if (strstr(msg, "stopping: nothing more is committed"))
                stop_logged++;
        if (strstr(msg, "start again from their committed") ||
            (stop_logged && strstr(msg, "rebuilt in")))
                rewound_logged++;
        it_log(level, fac, msg, opaque);
}

/* A transaction aborted once the adapter was asked to stop is not
 * rewound (the rewind would wait for the cluster to no purpose when it is
 * gone, up to restore.timeout.ms; seen: a SIGTERM with the broker down
 * took 77 s), and nothing is committed after it: a handler call that ends
 * during the close (slow1, at offset 0, holding the commit back) must not
 * commit the offsets of the messages decided in the aborted transaction,
 * whose copies were aborted. The next instance decides them again: each
 * copy once, nothing lost. */
static void test_stop_during_abort(void) {
        if (!real_kafka())
                return;
        mix_t m             = {4, 4, 4, 1};
        it_env_t *env       = slow_head_env(&m);
        kretry_conf_t *conf = slow_head_conf(env);
        kretry_conf_set_log_cb(conf, stop_log, NULL);
        stop_logged = rewound_logged = 0;
        kretry_test_txn_fails        = stop_and_fail;
        kretry_adapter_t *a = stopping = it_adapter(conf);
        KT_REQUIRE(a != NULL);
        /* The first commit comes once the 12 others are decided. */
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 4, 20000));
        int64_t deadline = kt_now_ms() + 30000;
        kretry_err_t err = KRETRY_ERR_OK;
        while (err == KRETRY_ERR_OK && kt_now_ms() < deadline)
                err = kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(err, KRETRY_ERR_STOPPED);
        kretry_adapter_close(a);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TXN_COMMITS), 0);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TXN_ABORTS), 1);
        kretry_adapter_destroy(a);
        kretry_test_txn_fails = NULL;
        KT_ASSERT_INT_EQ(stop_logged, 1);
        KT_ASSERT_INT_EQ(rewound_logged, 0);
        KT_ASSERT(kt_committed(env->c, env->group, env->source, 0) <= 0);
        a = it_adapter(txn_conf(env));
        KT_REQUIRE(a != NULL);
        before_mix = 1;
        KT_ASSERT(it_run_until(a, all_at_end, env, 30000));
        before_mix = 0;
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        check_exactly_once(env, &m);
        it_env_destroy(env);
}

/* test_oom_commit_metadata: the first commit's decided-above metadata
 * cannot be allocated; the second commit attempt fails. */
static int metadata_fails, commits_tried;
static int fail_metadata(const char *site) {
        if (strcmp(site, "metadata") || metadata_fails <= 0)
                return 0;
        metadata_fails--;
        return 1;
}
static int fail_second_commit(void) {
        return ++commits_tried == 2;
}

/* A transaction whose offsets cannot carry the offsets decided above them
 * (out of memory) is aborted, not committed with the offset alone: slow1
 * at offset 0 holds the commit back while the 12 behind it are decided,
 * so they travel as metadata; committed without it, the rewind of a later
 * failed transaction (or the next owner) would decide them again and copy
 * the retried and failed ones twice. */
static void test_oom_commit_metadata(void) {
        if (!real_kafka())
                return;
        mix_t m                 = {4, 4, 4, 1};
        it_env_t *env           = slow_head_env(&m);
        metadata_fails          = 1;
        commits_tried           = 0;
        kretry_test_alloc_fails = fail_metadata;
        kretry_test_txn_fails   = fail_second_commit;
        kretry_adapter_t *a     = it_adapter(slow_head_conf(env));
        KT_REQUIRE(a != NULL);
        before_mix = 1;
        KT_ASSERT(it_run_until(a, all_at_end, env, 30000));
        before_mix = 0;
        KT_ASSERT_INT_EQ(metadata_fails, 0);
        KT_ASSERT(counter(a, KRETRY_COUNTER_TXN_ABORTS) >= 2);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        kretry_test_alloc_fails = NULL;
        kretry_test_txn_fails   = NULL;
        check_exactly_once(env, &m);
        it_env_destroy(env);
}

/* The process's CPU time (every thread), ms. */
static int64_t cpu_ms(void) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* An open breaker under routing=transactional: what was decided before it
 * opened is committed while it is open (the open transaction is not left
 * waiting for the cool-down, holding read_committed readers back), and the
 * adapter sleeps meanwhile instead of spinning. */
static void test_breaker_open_commits(void) {
        if (!real_kafka())
                return;
        it_env_t *env = it_env_new("20ms", 2);
        for (int i = 0; i < 30; i++) {
                char key[16];
                snprintf(key, sizeof(key), "key-%d", i);
                it_produce(env, i % 2, key, "always-b", NULL);
        }
        kretry_adapter_t *a = it_adapter(it_conf(
                env, "routing", "transactional", "transaction.interval.ms",
                "50", "breaker.failures", "5", "breaker.distinct.keys", "3",
                "breaker.cooldown", "30s", "retry.max.attempts", "50", NULL));
        KT_REQUIRE(a != NULL);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_BREAKER_TRIPS, 1, 20000));
        /* Five calls, five copies to the tier (counted once delivered). */
        KT_ASSERT_INT_EQ(env->call_cnt, 5);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_RETRIED, 5, 10000));
        int64_t decided  = counter(a, KRETRY_COUNTER_RETRIED);
        int64_t deadline = kt_now_ms() + 10000, committed = 0;
        while (kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 100);
                committed = 0;
                for (int p = 0; p < 2; p++) {
                        int64_t c = kt_committed(env->c, env->group,
                                                 env->source, p);
                        committed += c > 0 ? c : 0;
                }
                if (committed == decided)
                        break;
        }
        KT_ASSERT_INT_EQ(committed, decided);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_BREAKER_OPEN), 1);
        kt_copies_t tier = {.max = 64};
        tier.m           = calloc((size_t)tier.max, sizeof(kt_copy_t));
        KT_ASSERT_INT_EQ(committed_copies(env, env->tiers[0], &tier,
                                          (int)decided + 1, 3000),
                         (int)decided);
        free(tier.m);
        /* Two seconds of the open breaker: a poll loop that spun would
         * take about as much CPU time. */
        int64_t cpu0 = cpu_ms(), until = kt_now_ms() + 2000;
        while (kt_now_ms() < until)
                kretry_adapter_poll(a, 100);
        int64_t cpu = cpu_ms() - cpu0;
        KT_CHECK_MSG(cpu < 400, CU_FALSE,
                     "%lld ms of CPU in 2 s with the breaker open",
                     (long long)cpu);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_BREAKER_OPEN), 1);
        KT_ASSERT_INT_EQ(env->call_cnt, 5);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* ordering=key, versioning and four handlers, with every third commit
 * failing: */
#define KEYS 12
#define PER_KEY 8

typedef struct {
        int resolved[KEYS][PER_KEY];
        int violations, calls;
} key_state_t;

/* About a third of first attempts fail transiently, seq 5 of every key
 * permanently. */
static kretry_action_t key_handler(kretry_msg_t *msg, void *opaque) {
        key_state_t *st = opaque;
        int key, seq;
        it_key_seq(msg, &key, &seq);
        __atomic_add_fetch(&st->calls, 1, __ATOMIC_RELAXED);
        for (int s = 0; s < seq; s++)
                if (!__atomic_load_n(&st->resolved[key][s], __ATOMIC_ACQUIRE))
                        __atomic_add_fetch(&st->violations, 1,
                                           __ATOMIC_RELAXED);
        if (seq == 5) {
                kretry_msg_set_error(msg, "VALIDATION", "bad");
                __atomic_store_n(&st->resolved[key][seq], 1, __ATOMIC_RELEASE);
                return KRETRY_FAIL;
        }
        if (kretry_msg_attempt(msg) == 1 && (key + seq) % 3 == 0)
                return KRETRY_RETRY;
        __atomic_store_n(&st->resolved[key][seq], 1, __ATOMIC_RELEASE);
        return KRETRY_OK;
}

static int every_third;
static int fail_every_third(void) {
        return ++every_third % 3 == 0 && every_third < 30;
}

typedef struct {
        char key[16];
        int64_t version;
} change_t;

static void grab_change(const rd_kafka_message_t *m, void *opaque) {
        struct {
                change_t *c;
                int n, max;
        } *cs     = opaque;
        int64_t v = -1;
        if (cs->n >= cs->max || !m->key ||
            kretry_version_decode(m->payload, m->len, &v))
                return;
        change_t *c = &cs->c[cs->n++];
        snprintf(c->key, sizeof(c->key), "%.*s", (int)m->key_len,
                 (const char *)m->key);
        c->version = v;
}

/* Per-key order holds through aborted transactions; each dead letter and
 * each changelog record (key, version) is visible once read_committed: an
 * aborted transaction's changelog writes never are. */
static void test_key_order_versions_through_aborts(void) {
        if (!real_kafka())
                return;
        it_env_t *env = it_env_new("20ms", 2);
        char vt[300];
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        KT_REQUIRE(kt_cluster_changelog(env->c, vt, 2) == 0);
        for (int s = 0; s < PER_KEY; s++)
                for (int k = 0; k < KEYS; k++) {
                        char key[16], v[32], ver[16];
                        snprintf(key, sizeof(key), "key-%d", k);
                        snprintf(v, sizeof(v), "%d:%d", k, s);
                        snprintf(ver, sizeof(ver), "%d", s + 1);
                        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
                        rd_kafka_header_add(h, "version", -1, ver, -1);
                        it_produce(env, k % 2, key, v, h);
                }
        static key_state_t st;
        memset(&st, 0, sizeof(st));
        kretry_conf_t *conf = it_conf(
                env, "routing", "transactional", "transaction.interval.ms",
                "30", "ordering", "key", "handler.concurrency", "4",
                "versioning.header", "version", NULL);
        kretry_conf_set_handler(conf, key_handler, &st);
        kretry_conf_set_route_cb(conf, NULL);
        every_third           = 0;
        kretry_test_txn_fails = fail_every_third;
        kretry_adapter_t *a   = it_adapter(conf);
        KT_REQUIRE(a != NULL);
        int64_t deadline = kt_now_ms() + 60000;
        int done         = 0;
        while (!done && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 50);
                done = 1;
                for (int k = 0; k < KEYS && done; k++)
                        for (int s = 0; s < PER_KEY && done; s++)
                                done = __atomic_load_n(&st.resolved[k][s],
                                                       __ATOMIC_ACQUIRE);
                if (done) /* and committed */
                        for (int p = 0; p < 2 && done; p++)
                                done = kt_committed(env->c, env->group,
                                                    env->source,
                                                    p) == KEYS / 2 * PER_KEY;
        }
        KT_ASSERT(done);
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_TXN_ABORTS, 0) >= 1);
        /* done sees the source committed, not the tiers: the last retried
         * messages' outcomes (and their changelog records) may still be in
         * the transaction the close commits, which must not be failed. */
        kretry_test_txn_fails = NULL;
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(st.violations, 0);
        /* Dead letters: seq 5 of every key, once each. */
        kt_copies_t dlq = {.max = 64};
        dlq.m           = calloc((size_t)dlq.max, sizeof(kt_copy_t));
        KT_ASSERT_INT_EQ(committed_copies(env, env->dlq, &dlq, KEYS + 1, 3000),
                         KEYS);
        for (int k = 0; k < KEYS; k++) {
                char v[32];
                snprintf(v, sizeof(v), "%d:5", k);
                KT_CHECK_MSG(copies_of(&dlq, v) == 1, CU_FALSE,
                             "%s: %d DLQ copies", v, copies_of(&dlq, v));
        }
        free(dlq.m);
        /* Changelog: one record per version raised (every OK one: versions
         * rise with seq), none twice. */
        struct {
                change_t *c;
                int n, max;
        } ch       = {calloc(256, sizeof(change_t)), 0, 256};
        int expect = KEYS * (PER_KEY - 1);
        KT_ASSERT_INT_EQ(
                kt_consume(env->c, vt, expect + 1, 3000, grab_change, &ch),
                expect);
        int twice = 0;
        for (int i = 0; i < ch.n; i++)
                for (int j = i + 1; j < ch.n; j++)
                        twice += !strcmp(ch.c[i].key, ch.c[j].key) &&
                                 ch.c[i].version == ch.c[j].version;
        KT_ASSERT_INT_EQ(twice, 0);
        free(ch.c);
        fprintf(stderr, "  %d handler calls for %d messages\n", st.calls,
                KEYS * PER_KEY);
        it_env_destroy(env);
}

/* A long interval: the close commits the open transaction (until then the
 * tier copies are not visible: the retries wait for it); the next instance
 * finishes them. */
static void test_close_commits(void) {
        if (!real_kafka())
                return;
        it_env_t *env = it_env_new("30ms", 1);
        mix_t m       = {4, 4, 4};
        produce_mix(env, &m);
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "routing", "transactional",
                                   "transaction.interval.ms", "60000", NULL));
        KT_REQUIRE(a != NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 4, 30000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 4, 30000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_RETRIED, 4, 30000));
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TXN_COMMITS), 0);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0),
                         -1001);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TXN_COMMITS), 1);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 12);
        a = it_adapter(txn_conf(env));
        KT_REQUIRE(a != NULL);
        KT_ASSERT(it_run_until(a, all_at_end, env, 30000));
        kretry_adapter_destroy(a);
        check_exactly_once(env, &m);
        /* The source was handled once: only the tier copies again. */
        const it_call_t *c[4];
        KT_ASSERT_INT_EQ(it_calls_for(env, "ok-0-0", c, 4), 1);
        KT_ASSERT_INT_EQ(it_calls_for(env, "retry1-0-0", c, 4), 2);
        it_env_destroy(env);
}

/* The big message handled from its tier copy, everything committed. */
static int big_done(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        return kt_committed(env->c, env->group, env->source, 0) == 1 &&
               it_tier_at_end(env, 0);
}

/* A copy the broker refuses as too large fails its transaction: it is
 * aborted, and the partition waits (100 ms, doubling) before it tries
 * again, instead of failing every transaction at once; the other partition
 * goes on. Once the limit is raised, everything is copied once. */
static void test_too_large_waits(void) {
        enum { BIG = 2000 };
        if (!real_kafka())
                return;
        it_env_t *env = it_env_new("30ms", 2);
        kt_topic_config(env->c, env->tiers[0], "max.message.bytes", "1000");
        it_produce_big(env, 0, "retry1-g", BIG);
        for (int i = 0; i < 5; i++) {
                char ok[16];
                snprintf(ok, sizeof(ok), "ok-1-%d", i);
                it_produce(env, 1, "k", ok, NULL);
        }
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "routing", "transactional",
                                   "transaction.interval.ms", "30", NULL));
        KT_REQUIRE(a != NULL);
        /* Partition 1 is committed while partition 0 keeps failing. */
        int64_t deadline = kt_now_ms() + 30000;
        while (kt_committed(env->c, env->group, env->source, 1) != 5 &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 1), 5);
        /* Two seconds of refusals: with backoff (0.1, 0.2, 0.4, 0.8 s ...)
         * a handful of aborts, not one per transaction interval (66).
         * Counted in those two seconds: the wait for partition 1 before
         * them lasts as long as the machine's load makes it. */
        int64_t before = counter(a, KRETRY_COUNTER_TXN_ABORTS);
        deadline       = kt_now_ms() + 2000;
        while (kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        int64_t aborts = counter(a, KRETRY_COUNTER_TXN_ABORTS);
        KT_CHECK_MSG(aborts >= 2 && aborts - before <= 8, CU_FALSE,
                     "%lld aborts in about 2 s (%lld in all)",
                     (long long)(aborts - before), (long long)aborts);
        KT_ASSERT(kt_committed(env->c, env->group, env->source, 0) <= 0);
        kt_topic_config(env->c, env->tiers[0], "max.message.bytes", "8519680");
        KT_ASSERT(it_run_until(a, big_done, env, 30000));
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 1);
        kt_copies_t tier = {.max = 8};
        tier.m           = calloc((size_t)tier.max, sizeof(kt_copy_t));
        KT_ASSERT_INT_EQ(committed_copies(env, env->tiers[0], &tier, 2, 3000),
                         1);
        free(tier.m);
        it_env_destroy(env);
}

static it_env_t *begin_env;
static int begin_failed;
/* The first begin_transaction once the four OK outcomes are decided (the
 * route callback runs as each is) fails, retriably. Polling thread. */
static int fail_begin_after_ok(void) {
        if (begin_failed || begin_env->routes[KRETRY_ROUTE_OK] < 4)
                return 0;
        return begin_failed = 1;
}

static int source_committed_4(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        return kt_committed(env->c, env->group, env->source, 0) == 4;
}

/* A transaction whose begin fails retriably, carrying only offsets (OK
 * outcomes write no copy), is begun again at the next step with the same
 * offsets: they are committed while the adapter runs, though nothing else
 * is decided on the partition. The mock's transactions commit no offsets
 * (send_offsets_to_transaction stores nothing): there the adapter's count
 * of committed transactions and its record of the offset the last one
 * carried say it; on real Kafka the group's committed offset too. */
static void test_begin_fails_offsets_kept(void) {
        it_env_t *env = it_env_new("30ms", 1);
        mix_t m       = {4, 0, 0};
        produce_mix(env, &m);
        begin_env                   = env;
        begin_failed                = 0;
        kretry_test_txn_begin_fails = fail_begin_after_ok;
        kretry_adapter_t *a         = it_adapter(txn_conf(env));
        KT_REQUIRE(a != NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 4, 20000));
        int64_t deadline = kt_now_ms() + 5000;
        while (!(begin_failed && counter(a, KRETRY_COUNTER_TXN_COMMITS) > 0) &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(a, 20);
        KT_REQUIRE(begin_failed);
        KT_CHECK_MSG(counter(a, KRETRY_COUNTER_TXN_COMMITS) > 0, CU_FALSE,
                     "no transaction committed in 5 s after a retriable "
                     "begin_transaction failure (%lld aborted)",
                     (long long)counter(a, KRETRY_COUNTER_TXN_ABORTS));
        kretry_part_t *part = kretry_part_find(a, 0, 0);
        KT_REQUIRE(part != NULL);
        KT_ASSERT_INT_EQ(part->txn_committed, 4);
        if (getenv("KRETRY_TEST_BOOTSTRAP"))
                KT_ASSERT(it_run_until(a, source_committed_4, env, 10000));
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TXN_ABORTS), 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        kretry_test_txn_begin_fails = NULL;
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_routes_in_transactions),
                KT_TEST(test_abort_decides_again),
                KT_TEST(test_key_order_versions_through_aborts),
                KT_TEST(test_close_commits),
                KT_TEST(test_stop_during_abort),
                KT_TEST(test_breaker_open_commits),
                KT_TEST(test_oom_commit_metadata),
                KT_TEST(test_too_large_waits),
                KT_TEST(test_begin_fails_offsets_kept),
                KT_END};
        return kt_main("it_txn", tests, argc, argv);
}
