/*
 * routing=transactional on real Kafka: the copies kretry writes and the
 * offsets they decide are committed in one transaction. A read_committed
 * reader sees each copy once, an aborted transaction's copies never, and
 * the messages of an aborted transaction are decided again. The mock
 * cluster's transactions are not real (no markers, read_committed sees
 * aborted records): every test here skips there.
 */
#include "adapter_int.h" /* kretry_test_txn_fails */
#include "it_harness.h"

#include <stdlib.h>
#include <string.h>

static int real_kafka(void) {
        if (getenv("KRETRY_TEST_BOOTSTRAP"))
                return 1;
        kt_skip("needs a real cluster in KRETRY_TEST_BOOTSTRAP: the mock "
                "cluster's transactions write no markers, so an aborted copy "
                "would be read");
        return 0;
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

/* The end offset of @p topic [@p p] (its high watermark). */
static int64_t end_offset(it_env_t *env, const char *topic, int32_t p) {
        int64_t lo = -1, hi = -1;
        rd_kafka_t *rk = kt_group_client(env->c, "kt-watermarks");
        if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000))
                hi = -1;
        rd_kafka_destroy(rk);
        return hi;
}

/* A tier partition committed past its last copy: at its end, or before the
 * commit marker that ends it (a marker is never consumed). */
static int tier_at_end(it_env_t *env, int32_t p) {
        int64_t c   = kt_committed(env->c, env->group, env->tiers[0], p);
        int64_t end = end_offset(env, env->tiers[0], p);
        return c > 0 && (c == end || c == end - 1);
}

/* produce_mix's {4, 4, 4} committed to the end: 12 source messages a
 * partition, and their tier copies. */
static int all_at_end(kretry_adapter_t *a, it_env_t *env) {
        (void)a;
        for (int p = 0; p < env->parts; p++)
                if (kt_committed(env->c, env->group, env->source, p) != 12 ||
                    !tier_at_end(env, p))
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
                        m->ok + m->retry + m->fail);
                /* Aborted copies and markers take tier offsets too. */
                KT_ASSERT(tier_at_end(env, p));
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

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_routes_in_transactions),
                                          KT_TEST(test_abort_decides_again),
                                          KT_END};
        return kt_main("it_txn", tests, argc, argv);
}
