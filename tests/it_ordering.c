/*
 * ordering: key and versioning on the test cluster: per-key order across
 * retries under random failures, the two on_dead_letter policies, stale
 * versions, and both states rebuilt by a new instance.
 */
#include "it_harness.h"

#include <stdlib.h>
#include <string.h>

#define KEYS 60
#define PER_KEY 20

typedef struct {
        int last_seq[KEYS];  /* highest sequence handed to the handler */
        int violations;
        int ok[KEYS][PER_KEY];
        int calls;
        int permanent_every; /* seq % this == 7 fails permanently */
} order_state_t;

/* Deterministic "random": about 30% of attempts fail transiently. */
static int flaky(int key, int seq, int attempt) {
        unsigned h = (unsigned)(key * 7919 + seq * 104729 + attempt * 1299709);
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        return h % 100 < 30;
}

static kretry_action_t order_handler(kretry_msg_t *msg, void *opaque) {
        order_state_t *st = opaque;
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        char buf[32];
        snprintf(buf, sizeof(buf), "%.*s", (int)(len < 31 ? len : 31), v);
        int key = atoi(buf), seq = atoi(strchr(buf, ':') + 1);
        st->calls++;
        if (seq < st->last_seq[key]) {
                if (st->violations++ < 5)
                        fprintf(stderr, "  key %d: seq %d after %d\n", key, seq,
                                st->last_seq[key]);
        }
        st->last_seq[key] = seq;
        if (st->permanent_every && seq % st->permanent_every == 7)
                return KRETRY_FAIL;
        if (flaky(key, seq, kretry_msg_attempt(msg)))
                return KRETRY_RETRY;
        st->ok[key][seq]++;
        return KRETRY_OK;
}

static int all_resolved(const order_state_t *st, kretry_adapter_t *a) {
        int64_t dlq = kretry_adapter_counter(a, KRETRY_COUNTER_DLQ, 0);
        int ok      = 0;
        for (int k = 0; k < KEYS; k++)
                for (int s = 0; s < PER_KEY; s++)
                        ok += st->ok[k][s] > 0;
        return ok + dlq >= KEYS * PER_KEY;
}

static void produce_keys(it_env_t *env) {
        for (int s = 0; s < PER_KEY; s++)
                for (int k = 0; k < KEYS; k++) {
                        char key[16], v[32];
                        snprintf(key, sizeof(key), "key-%d", k);
                        snprintf(v, sizeof(v), "%d:%d", k, s);
                        it_produce(env, k % env->parts, key, v, NULL);
                }
}

/* For every key the handler sees non-decreasing sequence numbers (a retry
 * repeats its own), under ~30% transient failures and a few permanent ones;
 * nothing is lost. */
static void test_key_order_under_failures(void) {
        it_env_t *env = it_env_new("20ms,40ms", 3);
        produce_keys(env);
        static order_state_t st;
        memset(&st, 0, sizeof(st));
        st.permanent_every = 11;
        kretry_conf_t *conf = it_conf(env, "ordering", "key",
                                      "retry.max.attempts", "30", NULL);
        kretry_conf_set_handler(conf, order_handler, &st);
        kretry_conf_set_route_cb(conf, NULL); /* it shares the opaque */
        kretry_adapter_t *a = it_adapter(conf);
        int64_t deadline    = kt_now_ms() + 90000;
        while (!all_resolved(&st, a) && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 50);
        KT_ASSERT(all_resolved(&st, a));
        KT_ASSERT_INT_EQ(st.violations, 0);
        /* Permanent failures: seq 7 and 18 of each key. */
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_PERMANENT, 0),
                         KEYS * 2);
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED, 0) > 0);
        for (int k = 0; k < KEYS; k++)
                for (int s = 0; s < PER_KEY; s++)
                        if (s % 11 != 7)
                                KT_REQUIRE(st.ok[k][s] >= 1);
        fprintf(stderr, "  %d handler calls, %lld forwarded behind a key\n",
                st.calls,
                (long long)kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED, 0));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
            KT_TEST(test_key_order_under_failures), KT_END};
        return kt_main("it_ordering", tests, argc, argv);
}
