/*
 * README promises about the adapter's life cycle, each held to a test on the
 * test cluster: close waits for in-flight copies at most revoke.timeout.ms;
 * a copy the broker refuses as too large is retried with its partition
 * paused and an error naming max.message.bytes; the key-state rebuild on
 * assignment gives up after restore.timeout.ms; held messages wait for an
 * open breaker; tier partitions follow their source partition under the
 * cooperative assignor; the rebalance callback survives librdkafka's NULL
 * protocol answer late in a close.
 */
#include "adapter_int.h" /* the consumer's assignment, a partition's pause */
#include "it_harness.h"
#include "part.h"
#include "rebalance.h"

#include <time.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Log lines the tests look for, from any thread (librdkafka's threads log
 * too). */
#define LOG_MAX 256
static struct {
        pthread_mutex_t lock;
        int cnt;
        struct {
                int level;
                int64_t at;
                char msg[512];
        } lines[LOG_MAX];
} logs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void capture_log(kretry_log_level_t level,
                        const char *fac,
                        const char *msg,
                        void *opaque) {
        it_log(level, fac, msg, opaque);
        if (level > KRETRY_LOG_INFO)
                return;
        pthread_mutex_lock(&logs.lock);
        if (logs.cnt < LOG_MAX) {
                logs.lines[logs.cnt].level = (int)level;
                logs.lines[logs.cnt].at    = kt_wall_ms();
                snprintf(logs.lines[logs.cnt].msg, sizeof(logs.lines[0].msg),
                         "%s", msg);
                logs.cnt++;
        }
        pthread_mutex_unlock(&logs.lock);
}

static void logs_reset(void) {
        pthread_mutex_lock(&logs.lock);
        logs.cnt = 0;
        pthread_mutex_unlock(&logs.lock);
}

/* When the first line at @p max_level or more severe that contains every
 * one of @p a and @p b (b may be NULL) was logged, or -1; *@p cnt (may be
 * NULL) gets how many such lines there are. */
static int64_t logged_n(int max_level, const char *a, const char *b, int *cnt) {
        int64_t at = -1;
        int n      = 0;
        pthread_mutex_lock(&logs.lock);
        for (int i = 0; i < logs.cnt; i++)
                if (logs.lines[i].level <= max_level &&
                    strstr(logs.lines[i].msg, a) &&
                    (!b || strstr(logs.lines[i].msg, b)) && !n++)
                        at = logs.lines[i].at;
        pthread_mutex_unlock(&logs.lock);
        if (cnt)
                *cnt = n;
        return at;
}

static int64_t logged(int max_level, const char *a, const char *b) {
        return logged_n(max_level, a, b, NULL);
}

static kretry_conf_t *capture(kretry_conf_t *conf) {
        logs_reset();
        kretry_conf_set_log_cb(conf, capture_log, NULL);
        return conf;
}

static int64_t counter(kretry_adapter_t *a, kretry_counter_t c) {
        return kretry_adapter_counter(a, c, 0);
}

static const it_call_t *call_of(const it_env_t *env, const char *v, int n) {
        const it_call_t *c[8];
        return it_calls_for(env, v, c, 8) > n ? c[n] : NULL;
}

/* A test environment on the mock cluster, or NULL on a real cluster, where
 * faults cannot be injected: the test is reported skipped with @p on_real
 * (kt_mock_only). */
static it_env_t *fault_env(const char *tiers,
                           int parts,
                           rd_kafka_mock_cluster_t **mock,
                           const char *on_real) {
        it_env_t *env = it_env_new(tiers, parts);
        *mock         = it_mock_or_skip(env, on_real);
        return *mock ? env : NULL;
}

/* Every Produce request fails (the broker stays up) until cleared. */
static void
refuse_produce(rd_kafka_mock_cluster_t *mock, rd_kafka_resp_err_t err, int n) {
        rd_kafka_resp_err_t errs[500];
        for (int i = 0; i < n && i < 500; i++)
                errs[i] = err;
        rd_kafka_mock_push_request_errors_array(
                mock, 0 /* Produce */, (size_t)(n < 500 ? n : 500), errs);
}

/* A fault environment holding @p values (NULL-terminated), the i-th on
 * partition i % @p parts, whose next @p n Produce requests fail with
 * @p err; NULL on a real cluster (skipped with @p on_real). */
static it_env_t *refusing_env(int parts,
                              const char *const *values,
                              rd_kafka_resp_err_t err,
                              int n,
                              rd_kafka_mock_cluster_t **mock,
                              const char *on_real) {
        it_env_t *env = fault_env("50ms", parts, mock, on_real);
        for (int i = 0; env && values[i]; i++)
                it_produce(env, i % parts, "k", values[i], NULL);
        if (env)
                refuse_produce(*mock, err, n);
        return env;
}

/* (b) revoke.timeout.ms: close waits for an unacknowledged copy that long
 * and no longer, reports KRETRY_ERR_TIMED_OUT, commits the done offset
 * before the message and nothing past it; the next instance handles the
 * message again. */
static void test_close_bounded_by_revoke_timeout(void) {
        static const char *const values[] = {"ok-0", "retry1-b", "ok-2", NULL};
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = refusing_env(
                1, values, RD_KAFKA_RESP_ERR_POLICY_VIOLATION, 500, &mock,
                "none: a copy left unacknowledged past revoke.timeout.ms needs "
                "a broker that holds its answer; it_cluster "
                "test_kill_tier_leader SIGKILLs a tier "
                "leader with copies in flight");
        if (!env)
                return;
        kretry_adapter_t *a = it_adapter(
                capture(it_conf(env, "revoke.timeout.ms", "1500", NULL)));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_PRODUCE_ERRORS, 1, 20000));
        KT_REQUIRE(counter(a, KRETRY_COUNTER_RETRIED) == 0);
        int64_t t0         = kt_now_ms();
        kretry_err_t err   = kretry_adapter_close(a);
        int64_t elapsed    = kt_now_ms() - t0;
        int64_t committed1 = kt_committed(env->c, env->group, env->source, 0);
        KT_ASSERT_INT_EQ(err, KRETRY_ERR_TIMED_OUT);
        /* It waited for the copy: about revoke.timeout.ms... */
        KT_CHECK_MSG(elapsed >= 1400, CU_FALSE,
                     "close returned after %lld ms, before revoke.timeout.ms "
                     "(1500 ms)",
                     (long long)elapsed);
        /* ...and not the default 30 s, nor until the copy succeeds. */
        KT_CHECK_MSG(elapsed < 1500 + 5000, CU_FALSE,
                     "close took %lld ms with revoke.timeout.ms 1500",
                     (long long)elapsed);
        KT_ASSERT(logged(KRETRY_LOG_WARNING,
                         "1 copies still unacknowledged after 1500 ms",
                         NULL) >= 0);
        /* Offset 0 was done: committed; offset 1 was not: nothing past it. */
        KT_ASSERT_INT_EQ(committed1, 1);
        kretry_adapter_destroy(a);

        /* Nothing lost: with the broker accepting again, the next instance
         * consumes the message again and retries it; offset 2, decided
         * above the commit (its metadata), is acknowledged unhandled. */
        rd_kafka_mock_clear_request_errors(mock, 0 /* Produce */);
        env->call_cnt = 0;
        a             = it_adapter(it_conf(env, NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 30000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DUPLICATES, 1, 30000));
        const it_call_t *again = call_of(env, "retry1-b", 1);
        KT_ASSERT(again != NULL);
        KT_ASSERT(again && again->attempt == 2 && again->tier == 1);
        KT_ASSERT(call_of(env, "ok-2", 0) == NULL);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 3);
        it_env_destroy(env);
}

static kretry_part_t *source_part(kretry_adapter_t *a, int32_t p) {
        return kretry_part_find(a, 0, p);
}

static int ok_calls(const it_env_t *env, const char *value) {
        int n = 0;
        for (int i = 0; i < env->call_cnt; i++)
                n += !strcmp(env->calls[i].value, value) &&
                     (strncmp(value, "retry1", 6) || env->calls[i].attempt > 1);
        return n;
}

/* (b) the same bound on revoke: a second instance joins while a copy keeps
 * failing; the first one's revocation waits revoke.timeout.ms for it, no
 * longer, commits nothing past it, and once the broker accepts again the
 * message is retried by whichever instance owns its partition. */
static void test_revoke_bounded_by_revoke_timeout(void) {
        static const char *const values[] = {"retry1-r", "ok-r", NULL};
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = refusing_env(
                2, values, RD_KAFKA_RESP_ERR_POLICY_VIOLATION, 500, &mock,
                "none: a copy left unacknowledged past revoke.timeout.ms needs "
                "a broker that holds its answer; it_cluster "
                "test_kill_tier_leader SIGKILLs a tier "
                "leader with copies in flight");
        if (!env)
                return;
        kretry_conf_t *conf =
                capture(it_conf(env, "revoke.timeout.ms", "1500", NULL));
        kretry_adapter_t *b, *a = it_adapter(kretry_conf_dup(conf));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_PRODUCE_ERRORS, 1, 20000));
        b                = it_adapter(conf);
        int64_t deadline = kt_now_ms() + 40000, revoked = -1, gave_up = -1;
        while (gave_up < 0 && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
                revoked = logged(KRETRY_LOG_INFO, "revoking", NULL);
                gave_up = logged(KRETRY_LOG_WARNING,
                                 "1 copies still unacknowledged", NULL);
        }
        KT_REQUIRE(revoked >= 0 && gave_up >= 0);
        KT_CHECK_MSG(gave_up - revoked >= 1400 && gave_up - revoked < 4500,
                     CU_FALSE, "the revocation waited %lld ms for the copy",
                     (long long)(gave_up - revoked));
        KT_ASSERT(kt_committed(env->c, env->group, env->source, 0) <= 0);
        rd_kafka_mock_clear_request_errors(mock, 0 /* Produce */);
        deadline = kt_now_ms() + 60000;
        while (!(ok_calls(env, "retry1-r") && ok_calls(env, "ok-r")) &&
               kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
        }
        KT_ASSERT(ok_calls(env, "retry1-r") > 0);
        KT_ASSERT(ok_calls(env, "ok-r") > 0);
        kretry_adapter_destroy(a);
        kretry_adapter_destroy(b);
        it_env_destroy(env);
}

/* (g) a copy the broker refuses as too large is produced again with a
 * growing backoff; its partition stays paused and its offset uncommitted
 * meanwhile; an error says to raise the tier's max.message.bytes; once the
 * broker accepts, nothing is lost. (The mock broker enforces no size limit:
 * the refusal is injected.) */
static void test_refused_copy_too_large(void) {
        static const char *const values[] = {"retry1-g", "ok-1", NULL};
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = refusing_env(
                1, values, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, 3, &mock,
                "test_refused_copy_too_large_real: a tier whose "
                "max.message.bytes the broker enforces, raised mid-test");
        if (!env)
                return;
        kretry_adapter_t *a  = it_adapter(capture(it_conf(env, NULL)));
        int64_t failed_at[4] = {0};
        int unpaused = 0, uncommitted_checked = 0;
        int64_t deadline = kt_now_ms() + 30000;
        while (counter(a, KRETRY_COUNTER_RETRIED) == 0 &&
               kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 10);
                int64_t n = counter(a, KRETRY_COUNTER_PRODUCE_ERRORS);
                for (int i = 1; i <= 3 && i <= n; i++)
                        if (!failed_at[i])
                                failed_at[i] = kt_now_ms();
                if (n == 0 || counter(a, KRETRY_COUNTER_RETRIED) > 0)
                        continue;
                /* Refused and not yet delivered: the partition waits. */
                kretry_part_t *src = source_part(a, 0);
                unpaused += !src || !src->paused;
                if (n == 3 && !uncommitted_checked++) {
                        char md[512], want[512];
                        int64_t c =
                                kt_committed_md(env->c, env->group, env->source,
                                                0, md, sizeof(md));
                        KT_CHECK_MSG(c <= 0, CU_FALSE,
                                     "committed %lld past the refused copy "
                                     "at offset 0",
                                     (long long)c);
                        /* The mark kretry stats alerts on. */
                        snprintf(want, sizeof(want), "%s%s.retry.1",
                                 KRETRY_TOO_LARGE_METADATA, env->source);
                        KT_ASSERT_STR_EQ(md, want);
                }
        }
        KT_REQUIRE(counter(a, KRETRY_COUNTER_RETRIED) == 1);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_PRODUCE_ERRORS), 3);
        KT_ASSERT_INT_EQ(unpaused, 0);
        /* Produced again with backoff: 50 ms, then 100 ms. */
        KT_CHECK_MSG(failed_at[3] - failed_at[1] >= 120, CU_FALSE,
                     "three refusals within %lld ms",
                     (long long)(failed_at[3] - failed_at[1]));
        /* Said once for the partition, counted once for the copy. */
        int lines;
        KT_ASSERT(logged_n(KRETRY_LOG_ERR, "max.message.bytes", env->tiers[0],
                           &lines) >= 0);
        KT_ASSERT_INT_EQ(lines, 1);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TOO_LARGE), 1);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 30000));
        const it_call_t *c = call_of(env, "retry1-g", 1);
        KT_ASSERT(c && c->attempt == 2 && c->tier == 1);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        char md[512];
        KT_ASSERT_INT_EQ(kt_committed_md(env->c, env->group, env->source, 0, md,
                                         sizeof(md)),
                         2);
        /* Moved on: the mark is gone with the next commit. */
        KT_ASSERT_STR_EQ(md, "");
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->tiers[0], 0), 1);
        it_env_destroy(env);
}

/* A topic's max.message.bytes set to @p value through AlterConfigs (which
 * sets the whole set of the topic's overrides; the test's topics have no
 * other). */
static void set_max_bytes(it_env_t *env, const char *topic, const char *value) {
        kt_topic_config(env->c, topic, "max.message.bytes", value);
}

/* (g) on real Kafka, which enforces the limit itself: a tier that takes
 * 1,000 bytes refuses the 2,000-byte copy; it is produced again with
 * backoff, its source partition stays paused and uncommitted, the error
 * names the tier's max.message.bytes once; raised, the tier takes the copy
 * and nothing is lost. */
static void test_refused_copy_too_large_real(void) {
        enum { BIG = 2000 };
        if (!kt_real_only("the mock enforces no size limit"))
                return;
        it_env_t *env = it_env_new("50ms", 1);
        set_max_bytes(env, env->tiers[0], "1000");
        it_produce_big(env, 0, "retry1-g", BIG);
        it_produce(env, 0, "k1", "ok-1", NULL);
        kretry_adapter_t *a = it_adapter(capture(it_conf(env, NULL)));
        int unpaused        = 0;
        int64_t deadline    = kt_now_ms() + 30000;
        while (counter(a, KRETRY_COUNTER_PRODUCE_ERRORS) < 3 &&
               kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 10);
                kretry_part_t *src = source_part(a, 0);
                if (counter(a, KRETRY_COUNTER_PRODUCE_ERRORS) > 0)
                        unpaused += !src || !src->paused;
        }
        KT_REQUIRE(counter(a, KRETRY_COUNTER_PRODUCE_ERRORS) >= 3);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_RETRIED), 0);
        KT_ASSERT_INT_EQ(unpaused, 0);
        KT_CHECK_MSG(kt_committed(env->c, env->group, env->source, 0) <= 0,
                     CU_FALSE, "committed past the refused copy at offset 0");
        int lines;
        KT_ASSERT(logged_n(KRETRY_LOG_ERR, "max.message.bytes", env->tiers[0],
                           &lines) >= 0);
        KT_ASSERT_INT_EQ(lines, 1);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_TOO_LARGE), 1);
        set_max_bytes(env, env->tiers[0], "8519680");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 30000));
        /* The copy's delivery report may be served after its tier message
         * was already handled: a real broker answers the fetch that fast. */
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_RETRIED, 1, 30000));
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_RETRIED), 1);
        /* The big message, twice: from the source, then from tier 1. */
        const it_call_t *big[2];
        int n = 0;
        for (int i = 0; i < env->call_cnt && n < 2; i++)
                if (env->calls[i].value_len == BIG)
                        big[n++] = &env->calls[i];
        KT_REQUIRE(n == 2);
        KT_ASSERT(big[1]->attempt == 2 && big[1]->tier == 1);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 2);
        it_env_destroy(env);
}

/* (g) the same copy refused by the producer itself: a user's lower
 * producer.message.max.bytes (kretry raises librdkafka's default to
 * 16 MiB). It stays paused and uncommitted, the error names the setting,
 * close gives up on it, and an instance without the limit retries it. */
static void test_copy_over_producer_limit(void) {
        enum { BIG = 1200 };
        it_env_t *env = it_env_new("50ms", 1);
        char *v       = malloc(BIG);
        memset(v, 'L', BIG);
        memcpy(v, "retry1-", 7);
        KT_REQUIRE(kt_produce(env->c, env->source, 0, "k", 1, v, BIG, NULL) ==
                   0);
        free(v);
        kretry_adapter_t *a = it_adapter(
                capture(it_conf(env, "producer.message.max.bytes", "1000",
                                "revoke.timeout.ms", "300", NULL)));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_PRODUCE_ERRORS, 2, 20000));
        kretry_part_t *src = source_part(a, 0);
        KT_ASSERT(src && src->paused);
        KT_ASSERT(logged(KRETRY_LOG_ERR, "producer.message.max.bytes",
                         env->tiers[0]) >= 0);
        KT_ASSERT(kt_committed(env->c, env->group, env->source, 0) <= 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_TIMED_OUT);
        kretry_adapter_destroy(a);
        KT_ASSERT(kt_committed(env->c, env->group, env->source, 0) <= 0);

        a = it_adapter(it_conf(env, NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 30000));
        const it_call_t *last = &env->calls[env->call_cnt - 1];
        KT_ASSERT(last->value_len == BIG && last->attempt == 2);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* CPU time of the calling thread, ms. */
static int64_t thread_cpu_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* (m) a held tier message whose due time passes while the breaker is open
 * waits for the breaker: it is handled once the cool-down is over (as the
 * half-open probe, whose success closes the breaker), not at its due
 * time. */
static void test_held_waits_for_breaker(void) {
        enum { DELAY = 1500, COOLDOWN = 4000 };
        it_env_t *env = it_env_new("1500ms", 2);
        it_produce(env, 0, "held", "retry1-m", NULL);
        kretry_adapter_t *a = it_adapter(it_conf(
                env, "breaker.failures", "3", "breaker.cooldown", "4s", NULL));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_HELD, 1, 20000));
        /* Two more transient failures, on other keys, open the breaker. */
        it_produce(env, 1, "k1", "retry1-m1", NULL);
        it_produce(env, 1, "k2", "retry1-m2", NULL);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_BREAKER_TRIPS, 1, 20000));
        const it_call_t *first = call_of(env, "retry1-m", 0);
        const it_call_t *trip  = &env->calls[env->call_cnt - 1];
        KT_REQUIRE(first != NULL);
        KT_REQUIRE(env->call_cnt == 3);
        /* Meaningful only when the held message fell due while the breaker
         * was open. */
        KT_REQUIRE(first->now_ms + DELAY < trip->now_ms + COOLDOWN - 500);
        /* This thread polls through the cool-down: with the held message
         * due meanwhile, the poll must still sleep, not spin. */
        int64_t cpu0 = thread_cpu_ms(), wall0 = kt_now_ms();
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 3, 30000));
        int64_t cpu = thread_cpu_ms() - cpu0, wall = kt_now_ms() - wall0;
        KT_CHECK_MSG(cpu * 20 < wall, CU_FALSE,
                     "the polling thread used %lld ms CPU in %lld ms while "
                     "the breaker was open (5%% allowed)",
                     (long long)cpu, (long long)wall);
        const it_call_t *again = call_of(env, "retry1-m", 1);
        KT_REQUIRE(again != NULL);
        KT_ASSERT_INT_EQ(again->attempt, 2);
        KT_CHECK_MSG(again->now_ms >= trip->now_ms + COOLDOWN - 20, CU_FALSE,
                     "handled %lld ms after the breaker opened (cool-down "
                     "%d ms; due %lld ms after)",
                     (long long)(again->now_ms - trip->now_ms), COOLDOWN,
                     (long long)(first->now_ms + DELAY - trip->now_ms));
        /* It was the probe: nothing else was handled before it. */
        KT_ASSERT(again == &env->calls[3]);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_BREAKER_TRIPS), 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static int handled_any(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        return env->call_cnt > 0;
}

/* The rebuild gave up after about @p restore_ms, said so, and the first
 * message was handled then. */
static void check_restore_gave_up(const it_env_t *env, int restore_ms) {
        int64_t assigned = logged(KRETRY_LOG_INFO, "assigned", NULL);
        int64_t gave_up  = logged(KRETRY_LOG_ERR, "restore.timeout.ms", NULL);
        KT_REQUIRE(assigned >= 0);
        KT_CHECK_MSG(gave_up >= 0, CU_FALSE,
                     "no error says the tiers were not read");
        int64_t waited = env->calls[0].now_ms - assigned;
        KT_CHECK_MSG(waited >= restore_ms - 100 && waited < restore_ms + 3000,
                     CU_FALSE,
                     "first message handled %lld ms after the assignment "
                     "(restore.timeout.ms %d)",
                     (long long)waited, restore_ms);
}

/* (j) restore.timeout.ms (ordering=key): when the tier partitions cannot be
 * read (they have no leader), the assignment goes on after about
 * restore.timeout.ms, with an error that says so, and the source flows. */
static void test_restore_bounded(void) {
        enum { PARTS = 4, RESTORE_MS = 1500 };
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = fault_env("200ms", PARTS, &mock,
                                  "none: a tier partition without any leader "
                                  "for seconds takes every replica down");
        if (!env)
                return;
        for (int p = 0; p < PARTS; p++) {
                it_produce(env, p, "k", "ok-j", NULL);
                KT_REQUIRE(rd_kafka_mock_partition_set_leader(
                                   mock, env->tiers[0], p, -1) == 0);
        }
        kretry_adapter_t *a = it_adapter(capture(it_conf(
                env, "ordering", "key", "restore.timeout.ms", "1500", NULL)));
        KT_REQUIRE(it_run_until(a, handled_any, env, 40000));
        check_restore_gave_up(env, RESTORE_MS);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, PARTS, 20000));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* (j) the read itself is bounded too: the restorer's first Fetch is
 * answered only after 6 s; the assignment goes on after about
 * restore.timeout.ms, with the error. */
static void test_restore_read_bounded(void) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = fault_env("200ms", 1, &mock,
                                  "none: an answer held back 6 s needs the "
                                  "mock's request delays");
        if (!env)
                return;
        /* Something in the tier for the rebuild to read. */
        KT_REQUIRE(kt_produce(env->c, env->tiers[0], 0, "k", 1, "x", 1, NULL) ==
                   0);
        it_produce(env, 0, "k", "ok-jr", NULL);
        KT_REQUIRE(rd_kafka_mock_broker_push_request_error_rtts(
                           mock, 1, 1 /* Fetch */, 1,
                           RD_KAFKA_RESP_ERR_NO_ERROR, 6000) == 0);
        kretry_adapter_t *a = it_adapter(capture(it_conf(
                env, "ordering", "key", "restore.timeout.ms", "1500", NULL)));
        KT_REQUIRE(it_run_until(a, handled_any, env, 40000));
        check_restore_gave_up(env, 1500);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

#define COOP_N 80

/* One adapter of the cooperative group, seen from its handler. */
typedef struct {
        it_env_t *env;
        kretry_adapter_t *a;
        int *done;      /* per message index, shared by the group */
        int tier_calls; /* tier messages handled here */
        int strays;     /* ...of a partition whose source is not ours */
} member_t;

static kretry_action_t member_handler(kretry_msg_t *msg, void *opaque) {
        member_t *m = opaque;
        if (kretry_msg_tier(msg) > 0) {
                kretry_part_t *src =
                        kretry_part_find(m->a, 0, kretry_msg_partition(msg));
                m->tier_calls++;
                m->strays += !src || !src->assigned;
        }
        kretry_action_t act = it_handler(msg, m->env);
        size_t len;
        const char *v    = kretry_msg_value(msg, &len);
        const char *dash = v ? memchr(v, '-', len) : NULL;
        if (act == KRETRY_OK && dash)
                m->done[atoi(dash + 1)]++;
        return act;
}

/* Bit masks of the source and tier partitions assigned to @p a. */
static void assigned_masks(kretry_adapter_t *a, int *src, int *tier) {
        rd_kafka_topic_partition_list_t *l = NULL;
        *src = *tier = 0;
        if (rd_kafka_assignment(a->consumer, &l))
                return;
        for (int i = 0; i < l->cnt; i++) {
                int t = kretry_topic_index(a, l->elems[i].topic);
                *(t == 0 ? src : tier) |= 1 << l->elems[i].partition;
        }
        rd_kafka_topic_partition_list_destroy(l);
}

static kretry_adapter_t *member_new(member_t *m, it_env_t *env, int *done) {
        kretry_conf_t *conf =
                it_conf(env, "consumer.partition.assignment.strategy",
                        "cooperative-sticky", NULL);
        m->env  = env;
        m->done = done;
        kretry_conf_set_handler(conf, member_handler, m);
        kretry_conf_set_route_cb(conf, NULL); /* it_route's opaque is env */
        return m->a = it_adapter(conf);
}

/* (q) the cooperative assignor: a second instance joins while retries wait
 * in the tier; after the incremental handover each instance is assigned
 * exactly the tier partitions of its source partitions, retries go on
 * (handled by the new owner where their partition moved), nothing is
 * lost. */
static void test_cooperative_tiers_follow_source(void) {
        enum { ALL = (1 << 4) - 1 };
        it_env_t *env = it_env_new("8s", 4);
        for (int i = 0; i < COOP_N; i++) {
                char v[32];
                snprintf(v, sizeof(v), "%s-%d", i % 3 == 0 ? "retry1" : "ok",
                         i);
                it_produce(env, i % 4, "k", v, NULL);
        }
        static int done[COOP_N];
        static member_t ma, mb;
        memset(done, 0, sizeof(done));
        memset(&ma, 0, sizeof(ma));
        memset(&mb, 0, sizeof(mb));
        kretry_adapter_t *a = member_new(&ma, env, done);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_HELD, 1, 20000));
        KT_ASSERT_STR_EQ(rd_kafka_rebalance_protocol(a->consumer),
                         "COOPERATIVE");
        kretry_adapter_t *b = member_new(&mb, env, done);
        int64_t deadline    = kt_now_ms() + 90000;
        int all = 0, split = 0, apart = 0, samples = 0;
        while (!(all && split) && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
                int sa, ta, sb, tb;
                assigned_masks(a, &sa, &ta);
                assigned_masks(b, &sb, &tb);
                /* Tier partitions move with their source, in the same
                 * rebalance callback. */
                apart += sa != ta || sb != tb;
                samples++;
                split = sa && sb && (sa | sb) == ALL && !(sa & sb);
                all   = 1;
                for (int i = 0; i < COOP_N; i++)
                        all &= done[i] > 0;
        }
        KT_ASSERT(all);
        KT_CHECK_MSG(split, CU_FALSE,
                     "source partitions not split between the two");
        KT_CHECK_MSG(apart == 0, CU_FALSE,
                     "%d of %d samples had tier partitions apart from their "
                     "source",
                     apart, samples);
        KT_ASSERT_INT_EQ(ma.strays + mb.strays, 0);
        /* Retries went on across the handover, on both sides. */
        KT_ASSERT(ma.tier_calls > 0);
        KT_ASSERT(mb.tier_calls > 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        KT_ASSERT_INT_EQ(kretry_adapter_close(b), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        kretry_adapter_destroy(b);
        it_env_destroy(env);
}

/* (r) Stopped in the middle of its first cooperative join: the group chose
 * cooperative-sticky (JoinGroup answered) and no SyncGroup has answered
 * yet; here the first SyncGroup fails, which keeps the member there.
 * librdkafka before 2.3.0 aborted the process when such a consumer was
 * destroyed (its issue 4312), and kretry then finished the join first;
 * every librdkafka kretry runs on (2.6.1 and newer) leaves mid-join. The
 * stop is clean, does not wait for the join (revoke.timeout.ms is 30 s
 * here), logs no error, and the consumer is destroyed: the process
 * lives. */
/* A member whose group chose cooperative-sticky and whose SyncGroups fail
 * @p sync_errors times: stopped before its first assignment. */
static kretry_adapter_t *stopped_mid_join(it_env_t *env,
                                          rd_kafka_mock_cluster_t *mock,
                                          int sync_errors,
                                          const char *revoke_ms) {
        rd_kafka_resp_err_t errs[64];
        for (int i = 0; i < sync_errors && i < 64; i++)
                errs[i] = RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS;
        rd_kafka_mock_push_request_errors_array(mock, 14 /* SyncGroup */,
                                                (size_t)sync_errors, errs);
        kretry_adapter_t *a = it_adapter(capture(it_conf(
                env, "consumer.partition.assignment.strategy",
                "cooperative-sticky", "revoke.timeout.ms", revoke_ms, NULL)));
        int64_t deadline    = kt_now_ms() + 20000;
        while (strcmp(rd_kafka_rebalance_protocol(a->consumer),
                      "COOPERATIVE") &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(a, 2);
        KT_REQUIRE(!strcmp(rd_kafka_rebalance_protocol(a->consumer),
                           "COOPERATIVE"));
        KT_REQUIRE(!a->synced);
        return a;
}

static void test_stop_during_cooperative_join(void) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = fault_env(
                "50ms", 1, &mock,
                "none: a join held half-way needs the mock's request delays");
        if (!env)
                return;
        kretry_adapter_t *a = stopped_mid_join(env, mock, 1, "30000");
        int64_t t0          = kt_now_ms();
        kretry_err_t err    = kretry_adapter_close(a);
        int64_t took        = kt_now_ms() - t0;
        fprintf(stderr, "  closed %lld ms after a stop mid-join\n",
                (long long)took);
        KT_ASSERT_INT_EQ(err, KRETRY_ERR_OK);
        KT_CHECK_MSG(took < 5000 + 2000, CU_FALSE,
                     "the close took %lld ms: a stop mid-join waits for "
                     "nothing",
                     (long long)took);
        kretry_adapter_destroy(a);
        KT_ASSERT(logged(KRETRY_LOG_ERR, "", NULL) < 0);
        it_env_destroy(env);
}

/* The same when the join could never finish (every SyncGroup refused):
 * the stop is still clean and bounded by revoke.timeout.ms + 5 s, and
 * the consumer is destroyed (before librdkafka 2.3.0 kretry had to give it
 * up undestroyed, with an error). */
static void test_stop_during_cooperative_join_bounded(void) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = fault_env(
                "50ms", 1, &mock,
                "none: a join held half-way needs the mock's request errors");
        if (!env)
                return;
        kretry_adapter_t *a = stopped_mid_join(env, mock, 64, "500");
        int64_t t0          = kt_now_ms();
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        int64_t took = kt_now_ms() - t0;
        fprintf(stderr, "  stopped in %lld ms\n", (long long)took);
        KT_ASSERT(took < 500 + 5000 + 2000);
        KT_ASSERT(logged(KRETRY_LOG_ERR, "", NULL) < 0);
        rd_kafka_mock_clear_request_errors(mock, 14);
        it_env_destroy(env);
}

/* librdkafka answers rd_kafka_rebalance_protocol() with NULL when it cannot
 * ask the group's thread, which happens during a close (the revocation the
 * close brings is served while the group is terminating) and always once
 * the consumer is closed. The rebalance callback must not take that answer
 * for a protocol name: called on a closed consumer, as librdkafka may call
 * it late in a close, with a revocation of the partition it had, it
 * revokes (the configured assignor says how) and returns. */
static void test_rebalance_cb_protocol_unknown(void) {
        it_env_t *env = it_env_new("50ms", 1);
        it_produce(env, 0, "k", "ok-0", NULL);
        kretry_adapter_t *a = it_adapter(capture(it_conf(env, NULL)));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        /* The premise: what the callback sees late in a close. */
        KT_REQUIRE(rd_kafka_rebalance_protocol(a->consumer) == NULL);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, env->source, 0);
        int64_t t0 = kt_now_ms();
        kretry_rebalance_cb(a->consumer, RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS,
                            l, a);
        rd_kafka_topic_partition_list_destroy(l);
        KT_ASSERT(kt_now_ms() - t0 < 5000);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* (s) An idle adapter has no timer of its own: once its partitions are
 * assigned, a message handled and committed, and the forwards' renewal
 * window after the rebalance passed (kretry_forward_renew_ms, shortened
 * here), kretry_adapter_next_timeout_ms() answers -1: the loop sleeps until
 * librdkafka or a worker signals (before, the forwards of every assigned
 * partition were set again every second for good: 1,536 lookups a second
 * at 512 source partitions with two tiers). */
static void test_idle_no_timer(void) {
        int was                 = kretry_forward_renew_ms;
        kretry_forward_renew_ms = 300;
        it_env_t *env           = it_env_new("50ms", 2);
        it_produce(env, 0, "k", "ok-0", NULL);
        kretry_adapter_t *a = it_adapter(capture(it_conf(env, NULL)));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        int64_t deadline = kt_now_ms() + 10000;
        int t            = 0;
        while ((t = kretry_adapter_next_timeout_ms(a)) >= 0 &&
               kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_CHECK_MSG(t == -1, CU_FALSE,
                     "an idle adapter still wakes in %d ms after 10 s", t);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
        kretry_forward_renew_ms = was;
}

/* (t) Inside the window a forward that librdkafka dropped (a stop of an
 * earlier revocation served after the partition was assigned again) is set
 * again: here the tier partition's forward is dropped by hand right after
 * the assignment, and its retry is still handled, through the tier queue. */
static void test_dropped_forward_renewed(void) {
        it_env_t *env = it_env_new("50ms", 1);
        it_produce(env, 0, "k", "ok-0", NULL);
        kretry_adapter_t *a = it_adapter(capture(it_conf(env, NULL)));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        rd_kafka_queue_t *pq =
                rd_kafka_queue_get_partition(a->consumer, env->tiers[0], 0);
        KT_REQUIRE(pq != NULL);
        rd_kafka_queue_forward(pq, NULL);
        rd_kafka_queue_destroy(pq);
        it_produce(env, 0, "k", "retry1-1", NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_close_bounded_by_revoke_timeout),
                KT_TEST(test_revoke_bounded_by_revoke_timeout),
                KT_TEST(test_refused_copy_too_large),
                KT_TEST(test_refused_copy_too_large_real),
                KT_TEST(test_copy_over_producer_limit),
                KT_TEST(test_held_waits_for_breaker),
                KT_TEST(test_restore_bounded),
                KT_TEST(test_restore_read_bounded),
                KT_TEST(test_cooperative_tiers_follow_source),
                KT_TEST(test_stop_during_cooperative_join),
                KT_TEST(test_stop_during_cooperative_join_bounded),
                KT_TEST(test_rebalance_cb_protocol_unknown),
                KT_TEST(test_idle_no_timer),
                KT_TEST(test_dropped_forward_renewed),
                KT_END};
        return kt_main("it_lifecycle", tests, argc, argv);
}
