/*
 * Integration tests of promises made in docs/behaviour.md that no
 * other suite checks: what the tier and DLQ copies carry (error message cut,
 * correlation id, fallback coordinates, null key and value, invalid actions,
 * parked followers), invalid version headers, the values of the stats
 * callback's per-topic figures, logs without payloads, and an application's
 * own poll loop on kretry_adapter_fd().
 */
#include "it_harness.h"

#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int64_t counter(kretry_adapter_t *a, kretry_counter_t c) {
        return kretry_adapter_counter(a, c, 0);
}

/* What the handler saw, beyond it_call_t: the original coordinates. */
typedef struct {
        char value[64];
        int attempt, tier, key_null, value_null;
        int32_t orig_partition;
        int64_t orig_offset, orig_ts, ts, now_ms, due_ts;
        char orig_topic[160];
} ct_call_t;

static struct {
        ct_call_t calls[64];
        int n;
} ct;

static void ct_record(kretry_msg_t *msg) {
        if (ct.n >= (int)(sizeof(ct.calls) / sizeof(ct.calls[0])))
                return;
        ct_call_t *c = &ct.calls[ct.n++];
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        memset(c, 0, sizeof(*c));
        snprintf(c->value, sizeof(c->value), "%.*s", (int)(len < 60 ? len : 60),
                 v ? v : "");
        c->value_null     = v == NULL;
        c->key_null       = kretry_msg_key(msg, NULL) == NULL;
        c->attempt        = kretry_msg_attempt(msg);
        c->tier           = kretry_msg_tier(msg);
        c->orig_partition = kretry_msg_original_partition(msg);
        c->orig_offset    = kretry_msg_original_offset(msg);
        c->orig_ts        = kretry_msg_original_timestamp(msg);
        c->ts             = kretry_msg_timestamp(msg);
        c->now_ms         = kt_wall_ms();
        snprintf(c->orig_topic, sizeof(c->orig_topic), "%s",
                 kretry_msg_original_topic(msg));
        const void *hv;
        size_t hn;
        char b[32] = "-1";
        if (!kretry_msg_header(msg, "kretry-due-ts", &hv, &hn))
                snprintf(b, sizeof(b), "%.*s", (int)hn, (const char *)hv);
        c->due_ts = strtoll(b, NULL, 10);
}

/* The @p nth call for @p value; a call of nothing when there is none. */
static const ct_call_t *ct_call(const char *value, int nth) {
        static const ct_call_t none = {.value = "(no call)"};
        for (int i = 0; i < ct.n; i++)
                if (!strcmp(ct.calls[i].value, value) && nth-- == 0)
                        return &ct.calls[i];
        return &none;
}

static int ct_calls(const char *value) {
        int n = 0;
        for (int i = 0; i < ct.n; i++)
                n += !strcmp(ct.calls[i].value, value);
        return n;
}

/* Error messages whose last character straddles byte 16
 * (error.max.length=16): 14 ASCII bytes and a 3-byte euro sign; 15 and a
 * 2-byte e acute; 13 and a 4-byte emoji. */
static const char *const utf_msgs[3][2] = {
        {"0123456789abcd\xe2\x82\xac tail", "0123456789abcd"},
        {"0123456789abcde\xc3\xa9 tail", "0123456789abcde"},
        {"0123456789abc\xf0\x9f\x98\x80 tail", "0123456789abc"},
};

/*
 * it_handler's script, and besides:
 *   "utf"      RETRY, then FAIL, with the messages of utf_msgs[attempt - 1]
 *   "inv..."   returns 42 (not an action)
 *   null key and null value: RETRY every time
 */
static kretry_action_t ct_handler(kretry_msg_t *msg, void *opaque) {
        ct_record(msg);
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        int attempt   = kretry_msg_attempt(msg);
        if (!v && !kretry_msg_key(msg, NULL))
                return KRETRY_RETRY;
        if (v && len == 3 && !memcmp(v, "utf", 3) && attempt <= 3) {
                kretry_msg_set_error(msg, "UTF", utf_msgs[attempt - 1][0]);
                return attempt < 3 ? KRETRY_RETRY : KRETRY_FAIL;
        }
        if (v && len >= 3 && !memcmp(v, "inv", 3))
                return (kretry_action_t)42;
        return it_handler(msg, opaque);
}

static kretry_adapter_t *ct_adapter(kretry_conf_t *conf, it_env_t *env) {
        memset(&ct, 0, sizeof(ct));
        kretry_conf_set_handler(conf, ct_handler, env);
        return it_adapter(conf);
}

typedef struct {
        kt_copy_t m[16];
        int n;
} ct_copies_t;

/* Read @p n copies of @p topic (all of them: the topic holds @p n). */
static void ct_read(it_env_t *env, const char *topic, int n, ct_copies_t *cs) {
        kt_copies_t kc = {.m = cs->m, .max = 16};
        KT_ASSERT_INT_EQ(kt_consume(env->c, topic, n, 10000, kt_copy_grab, &kc),
                         n);
        cs->n = kc.n;
}

static const kt_copy_t *ct_copy(const ct_copies_t *cs, const char *value) {
        kt_copies_t kc = {.m = (kt_copy_t *)cs->m, .n = cs->n, .max = 16};
        return kt_copy_find(&kc, value);
}

/* (c) A handler's error message longer than error.max.length is cut on a
 * UTF-8 boundary: in both tier copies and in the DLQ copy, the character
 * that straddles the limit is left out whole. */
static void test_error_cut_utf8(void) {
        it_env_t *env = it_env_new("20ms,20ms", 1);
        it_produce(env, 0, "k", "utf", NULL);
        kretry_adapter_t *a =
                ct_adapter(it_conf(env, "error.max.length", "16", NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 1, 20000));
        KT_ASSERT_INT_EQ(ct_calls("utf"), 3);
        kretry_adapter_destroy(a);
        ct_copies_t cs;
        const char *topics[3] = {env->tiers[0], env->tiers[1], env->dlq};
        for (int i = 0; i < 3; i++) {
                ct_read(env, topics[i], 1, &cs);
                KT_ASSERT_STR_EQ(kt_copy_hdr(&cs.m[0], "kretry-error"),
                                 utf_msgs[i][1]);
                KT_ASSERT_STR_EQ(kt_copy_hdr(&cs.m[0], "kretry-error-code"),
                                 "UTF");
        }
        KT_ASSERT_STR_EQ(kt_copy_hdr(&cs.m[0], "kretry-error-class"),
                         "permanent");
        it_env_destroy(env);
}

/* (d) A source message's kretry-correlation-id is kept, once and unchanged,
 * in its tier and DLQ copies; without one, the copies carry
 * "topic/partition/offset" of the original. */
static void test_correlation_id(void) {
        it_env_t *env         = it_env_new("20ms", 1);
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        rd_kafka_header_add(h, "kretry-correlation-id", -1, "order-77/abc", -1);
        it_produce(env, 0, "k1", "always-cid", h);
        it_produce(env, 0, "k2", "always-nocid", NULL);
        kretry_adapter_t *a = ct_adapter(it_conf(env, NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 2, 20000));
        kretry_adapter_destroy(a);
        char own[200];
        snprintf(own, sizeof(own), "%s/0/1", env->source);
        const char *topics[2] = {env->tiers[0], env->dlq};
        for (int i = 0; i < 2; i++) {
                ct_copies_t cs;
                ct_read(env, topics[i], 2, &cs);
                const kt_copy_t *kept = ct_copy(&cs, "always-cid");
                const kt_copy_t *made = ct_copy(&cs, "always-nocid");
                KT_REQUIRE(kept && made);
                KT_ASSERT_INT_EQ(kt_copy_hdr_cnt(kept, "kretry-correlation-id"),
                                 1);
                KT_ASSERT_STR_EQ(kt_copy_hdr(kept, "kretry-correlation-id"),
                                 "order-77/abc");
                KT_ASSERT_INT_EQ(kt_copy_hdr_cnt(made, "kretry-correlation-id"),
                                 1);
                KT_ASSERT_STR_EQ(kt_copy_hdr(made, "kretry-correlation-id"),
                                 own);
        }
        it_env_destroy(env);
}

/* The header @p name of @p c as a big-endian number of exactly @p n bytes
 * (Spring's binary forms); -1 when absent or of another length. */
static int64_t be_hdr(const kt_copy_t *c, const char *name, size_t n) {
        for (int i = c->hdr_cnt - 1; i >= 0; i--) {
                if (strcmp(c->names[i], name))
                        continue;
                if (c->lens[i] != n)
                        return -1;
                uint64_t u = 0;
                for (size_t b = 0; b < n; b++)
                        u = u << 8 | (unsigned char)c->vals[i][b];
                return (int64_t)u;
        }
        return -1;
}

/* headers.profile spring: a DLQ copy also carries Spring Kafka's DLT
 * headers in Spring's binary forms (4-byte partition and attempts, 8-byte
 * offset), the ones a source message already carried replaced; tier
 * copies carry none. */
static void test_spring_profile(void) {
        it_env_t *env         = it_env_new("20ms", 1);
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        rd_kafka_header_add(h, "kafka_dlt-exception-fqcn", -1, "old.Stale", -1);
        it_produce(env, 0, "k1", "fail-s", h);
        it_produce(env, 0, "k2", "always-s", NULL);
        kretry_adapter_t *a = ct_adapter(
                it_conf(env, "headers.profile", "spring", NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 2, 20000));
        kretry_adapter_destroy(a);
        ct_copies_t cs;
        ct_read(env, env->dlq, 2, &cs);
        const kt_copy_t *f = ct_copy(&cs, "fail-s"),
                        *x = ct_copy(&cs, "always-s");
        KT_REQUIRE(f && x);
        KT_ASSERT_INT_EQ(kt_copy_hdr_cnt(f, "kafka_dlt-exception-fqcn"), 1);
        KT_ASSERT_STR_EQ(kt_copy_hdr(f, "kafka_dlt-exception-fqcn"),
                         "VALIDATION");
        KT_ASSERT_STR_EQ(kt_copy_hdr(f, "kafka_dlt-exception-message"),
                         "bad order");
        KT_ASSERT_STR_EQ(kt_copy_hdr(f, "kafka_dlt-original-topic"),
                         env->source);
        KT_ASSERT_STR_EQ(kt_copy_hdr(f, "kafka_dlt-original-consumer-group"),
                         env->group);
        KT_ASSERT_INT_EQ(be_hdr(f, "kafka_dlt-original-partition", 4), 0);
        KT_ASSERT_INT_EQ(be_hdr(f, "kafka_dlt-original-offset", 8), 0);
        KT_ASSERT_INT_EQ(be_hdr(f, "retry_topic-attempts", 4), 1);
        KT_ASSERT_INT_EQ(be_hdr(x, "kafka_dlt-original-offset", 8), 1);
        KT_ASSERT_INT_EQ(be_hdr(x, "retry_topic-attempts", 4), 2);
        KT_ASSERT_STR_EQ(kt_copy_hdr(x, "kretry-error-class"), "exhausted");
        ct_read(env, env->tiers[0], 1, &cs);
        KT_ASSERT_INT_EQ(kt_copy_hdr_cnt(&cs.m[0], "kafka_dlt-exception-fqcn"),
                         0);
        KT_ASSERT_INT_EQ(kt_copy_hdr_cnt(&cs.m[0], "retry_topic-attempts"), 0);
        it_env_destroy(env);
}

static void tier_msg(it_env_t *env,
                     int32_t partition,
                     const char *value,
                     const char *const *hdrs /* name, value, ..., NULL */) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        for (; *hdrs; hdrs += 2)
                rd_kafka_header_add(h, hdrs[0], -1, hdrs[1], -1);
        KT_REQUIRE(kt_produce(env->c, env->tiers[0], partition, "k", 1, value,
                              strlen(value), h) == 0);
}

/* (e) On a tier message, malformed original coordinates fall back to the
 * message's own (topic, partition, offset, timestamp), for the handler and
 * in the DLQ copy; a malformed kretry-due-ts means due now (read leniently,
 * "99999999999999zz" would hold it for millennia). Valid ones are kept. */
static void test_malformed_coordinates(void) {
        it_env_t *env = it_env_new("20ms", 2);
        tier_msg(env, 1, "ok-filler",
                 (const char *[]){"kretry-attempt", "1", NULL});
        tier_msg(env, 1, "fail-bad",
                 (const char *[]){"kretry-attempt", "1", "kretry-tier", "1",
                                  "kretry-due-ts", "99999999999999zz",
                                  "kretry-original-topic", "",
                                  "kretry-original-partition", "p1",
                                  "kretry-original-offset", "-7",
                                  "kretry-original-timestamp", "12x", NULL});
        tier_msg(env, 1, "fail-good",
                 (const char *[]){
                         "kretry-attempt", "1", "kretry-original-topic",
                         "elsewhere", "kretry-original-partition", "3",
                         "kretry-original-offset", "42",
                         "kretry-original-timestamp", "1700000000000", NULL});
        kretry_adapter_t *a = ct_adapter(it_conf(env, NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 2, 20000));
        const ct_call_t *c = ct_call("fail-bad", 0);
        KT_ASSERT_INT_EQ(c->attempt, 2);
        KT_ASSERT_STR_EQ(c->orig_topic, env->tiers[0]);
        KT_ASSERT_INT_EQ(c->orig_partition, 1);
        KT_ASSERT_INT_EQ(c->orig_offset, 1);
        KT_ASSERT(c->ts > 1000000000000LL);
        KT_ASSERT_INT_EQ(c->orig_ts, c->ts);
        const ct_call_t *g = ct_call("fail-good", 0);
        KT_ASSERT_STR_EQ(g->orig_topic, "elsewhere");
        KT_ASSERT_INT_EQ(g->orig_partition, 3);
        KT_ASSERT_INT_EQ(g->orig_offset, 42);
        KT_ASSERT_INT_EQ(g->orig_ts, 1700000000000LL);
        kretry_adapter_destroy(a);

        ct_copies_t cs;
        ct_read(env, env->dlq, 2, &cs);
        const kt_copy_t *bad = ct_copy(&cs, "fail-bad");
        char want[200];
        KT_REQUIRE(bad != NULL);
        KT_ASSERT_STR_EQ(kt_copy_hdr(bad, "kretry-original-topic"),
                         env->tiers[0]);
        KT_ASSERT_STR_EQ(kt_copy_hdr(bad, "kretry-original-partition"), "1");
        KT_ASSERT_STR_EQ(kt_copy_hdr(bad, "kretry-original-offset"), "1");
        snprintf(want, sizeof(want), "%lld", (long long)c->ts);
        KT_ASSERT_STR_EQ(kt_copy_hdr(bad, "kretry-original-timestamp"), want);
        snprintf(want, sizeof(want), "%s/1/1", env->tiers[0]);
        KT_ASSERT_STR_EQ(kt_copy_hdr(bad, "kretry-correlation-id"), want);
        KT_ASSERT_STR_EQ(kt_copy_hdr(bad, "kretry-attempt"), "2");
        const kt_copy_t *good = ct_copy(&cs, "fail-good");
        KT_REQUIRE(good != NULL);
        KT_ASSERT_STR_EQ(kt_copy_hdr(good, "kretry-original-topic"),
                         "elsewhere");
        KT_ASSERT_STR_EQ(kt_copy_hdr(good, "kretry-original-partition"), "3");
        KT_ASSERT_STR_EQ(kt_copy_hdr(good, "kretry-original-offset"), "42");
        KT_ASSERT_STR_EQ(kt_copy_hdr(good, "kretry-original-timestamp"),
                         "1700000000000");
        KT_ASSERT_STR_EQ(kt_copy_hdr(good, "kretry-correlation-id"),
                         "elsewhere/3/42");
        it_env_destroy(env);
}

/* (f) A null key and a null value stay null, not empty: for the handler on
 * the source and after the held tier hop, and in the tier and DLQ copies. */
static void test_null_key_value(void) {
        it_env_t *env = it_env_new("50ms", 1);
        KT_REQUIRE(kt_produce(env->c, env->source, 0, NULL, 0, NULL, 0, NULL) ==
                   0);
        kretry_adapter_t *a = ct_adapter(it_conf(env, NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 1, 20000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_EXHAUSTED, 0), 1);
        KT_REQUIRE(ct.n == 2);
        for (int i = 0; i < 2; i++) {
                KT_ASSERT_INT_EQ(ct.calls[i].tier, i);
                KT_ASSERT(ct.calls[i].key_null);
                KT_ASSERT(ct.calls[i].value_null);
        }
        kretry_adapter_destroy(a);
        const char *topics[2] = {env->tiers[0], env->dlq};
        for (int i = 0; i < 2; i++) {
                ct_copies_t cs;
                ct_read(env, topics[i], 1, &cs);
                KT_ASSERT(cs.m[0].key_null);
                KT_ASSERT(cs.m[0].value_null);
        }
        it_env_destroy(env);
}

/* (h) A handler returning something other than OK/RETRY/FAIL is treated as
 * FAIL: dead-lettered at once, class permanent, code INVALID_ACTION. */
static void test_invalid_action(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k", "inv", NULL);
        kretry_adapter_t *a = ct_adapter(it_conf(env, NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 1, 20000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_PERMANENT, 0), 1);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_RETRIED), 0);
        KT_ASSERT_INT_EQ(ct_calls("inv"), 1);
        kretry_adapter_destroy(a);
        ct_copies_t cs;
        ct_read(env, env->dlq, 1, &cs);
        KT_ASSERT_STR_EQ(kt_copy_hdr(&cs.m[0], "kretry-error-class"),
                         "permanent");
        KT_ASSERT_STR_EQ(kt_copy_hdr(&cs.m[0], "kretry-error-code"),
                         "INVALID_ACTION");
        KT_ASSERT_STR_EQ(kt_copy_hdr(&cs.m[0], "kretry-attempt"), "1");
        it_env_destroy(env);
}

/* Treated as FAIL also by the circuit breaker: an invalid action says
 * nothing of the dependency, so it does not end a run of transient
 * failures (as a success would). RETRY, 42, RETRY trips a breaker of 2. */
static void test_invalid_action_breaker(void) {
        it_env_t *env = it_env_new("10s", 1);
        it_produce(env, 0, "k1", "always-a", NULL);
        it_produce(env, 0, "k2", "inv-b", NULL);
        it_produce(env, 0, "k3", "always-c", NULL);
        kretry_adapter_t *a =
                ct_adapter(it_conf(env, "breaker.failures", "2",
                                   "breaker.cooldown", "10s", NULL),
                           env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_BREAKER_TRIPS, 1, 20000));
        KT_ASSERT_INT_EQ(ct_calls("always-c"), 1);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_HANDLER_CALLS), 3);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* (i) ordering=key: a follower parked behind its retrying head goes into
 * the head's tier with class parked and its attempt count unchanged (no
 * failure of its own, however often it is parked again), and is handled
 * once, on its first attempt, after the head. A null key is unordered: its
 * follower is handled at once from the source, never parked. */
static void test_parked_follower(void) {
        it_env_t *env = it_env_new("100ms,100ms", 1);
        it_produce(env, 0, "K", "retry2-head", NULL);
        it_produce(env, 0, "K", "ok-follow", NULL);
        KT_REQUIRE(kt_produce(env->c, env->source, 0, NULL, 0, "retry1-nh", 9,
                              NULL) == 0);
        KT_REQUIRE(kt_produce(env->c, env->source, 0, NULL, 0, "ok-nf", 5,
                              NULL) == 0);
        kretry_adapter_t *a =
                ct_adapter(it_conf(env, "ordering", "key", NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 4, 20000));
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_FORWARDED), 2);
        KT_ASSERT_INT_EQ(ct_calls("ok-follow"), 1);
        const ct_call_t *f = ct_call("ok-follow", 0);
        KT_ASSERT_INT_EQ(f->attempt, 1);
        KT_ASSERT_INT_EQ(f->tier, 2);
        KT_ASSERT(f > ct_call("retry2-head", 2));
        KT_ASSERT_INT_EQ(ct_calls("ok-nf"), 1);
        KT_ASSERT_INT_EQ(ct_call("ok-nf", 0)->tier, 0);
        KT_ASSERT(ct_call("ok-nf", 0) < ct_call("retry1-nh", 1));
        kretry_adapter_destroy(a);

        ct_copies_t cs;
        /* Tier 1: the head, the parked follower, the null-key head. */
        ct_read(env, env->tiers[0], 3, &cs);
        KT_ASSERT_STR_EQ(
                kt_copy_hdr(ct_copy(&cs, "retry2-head"), "kretry-error-class"),
                "transient");
        KT_ASSERT_STR_EQ(
                kt_copy_hdr(ct_copy(&cs, "retry1-nh"), "kretry-error-class"),
                "transient");
        const kt_copy_t *p = ct_copy(&cs, "ok-follow");
        KT_ASSERT_STR_EQ(kt_copy_hdr(p, "kretry-error-class"), "parked");
        KT_ASSERT_STR_EQ(kt_copy_hdr(p, "kretry-attempt"), "0");
        KT_ASSERT(kt_copy_hdr(p, "kretry-first-failure-ts") == NULL);
        KT_ASSERT(ct_copy(&cs, "ok-nf") == NULL);
        /* Tier 2: the head again, the follower parked again, unchanged. */
        ct_read(env, env->tiers[1], 2, &cs);
        KT_ASSERT_STR_EQ(
                kt_copy_hdr(ct_copy(&cs, "retry2-head"), "kretry-attempt"),
                "2");
        p = ct_copy(&cs, "ok-follow");
        KT_ASSERT_STR_EQ(kt_copy_hdr(p, "kretry-error-class"), "parked");
        KT_ASSERT_STR_EQ(kt_copy_hdr(p, "kretry-attempt"), "0");
        it_env_destroy(env);
}

static void
produce_versioned(it_env_t *env, const char *value, const char *version) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        rd_kafka_header_add(h, "version", -1, version, -1);
        it_produce(env, 0, "K", value, h);
}

static void count_record(const rd_kafka_message_t *m, void *opaque) {
        (void)m;
        (*(int *)opaque)++;
}

/* (k) A version header that is not a decimal integer is no version: the
 * message is handled normally (not stale) and leaves the store as it was,
 * so a later valid version is judged against the last valid one. */
static void test_invalid_version(void) {
        it_env_t *env = it_env_new("50ms", 1);
        char vt[300];
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        KT_REQUIRE(kt_cluster_changelog(env->c, vt, 1) == 0);
        static const char *const bad[][2] = {
                {"ok-bad1", "9x"}, {"ok-bad2", "+9"},  {"ok-bad3", " 9"},
                {"ok-bad4", ""},   {"ok-bad5", "9.0"}, {"ok-bad6", "0x9"},
        };
        int nbad = (int)(sizeof(bad) / sizeof(bad[0]));
        produce_versioned(env, "ok-v5", "5");
        for (int i = 0; i < nbad; i++)
                produce_versioned(env, bad[i][0], bad[i][1]);
        produce_versioned(env, "ok-v6", "6");
        produce_versioned(env, "ok-v4", "4");
        kretry_adapter_t *a = ct_adapter(
                it_conf(env, "versioning.header", "version", NULL), env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_STALE, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, nbad + 2, 20000));
        for (int i = 0; i < nbad; i++)
                KT_CHECK_MSG(ct_calls(bad[i][0]) == 1, CU_FALSE,
                             "version \"%s\": %d handler calls", bad[i][1],
                             ct_calls(bad[i][0]));
        KT_ASSERT_INT_EQ(ct_calls("ok-v5"), 1);
        KT_ASSERT_INT_EQ(ct_calls("ok-v6"), 1);
        KT_ASSERT_INT_EQ(ct_calls("ok-v4"), 0);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_STALE), 1);
        kretry_adapter_destroy(a);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0),
                         nbad + 3);
        /* The changelog holds the two valid raises, 5 and 6, nothing else. */
        int n = 0;
        kt_consume(env->c, vt, 3, 3000, count_record, &n);
        KT_ASSERT_INT_EQ(n, 2);
        it_env_destroy(env);
}

/* One stats callback document, as far as the tests read it. */
typedef struct {
        int64_t ts, interval_ms, held;
        struct {
                int64_t waiting, oldest, drain; /* drain -2: "never" */
                double consume, arrival;
        } t[2]; /* by "tier": the source, tier 1 */
} ct_emit_t;

static struct {
        ct_emit_t e[512];
        int n;
} emits;

static void ct_stats(const char *json, size_t len, void *opaque) {
        (void)opaque;
        json_t *doc = json_loadb(json, len, 0, NULL);
        KT_REQUIRE(doc != NULL);
        if (emits.n >= 512) {
                json_decref(doc);
                return;
        }
        ct_emit_t *e = &emits.e[emits.n++];
        e->ts        = json_integer_value(json_object_get(doc, "ts"));
        e->interval_ms =
                json_integer_value(json_object_get(doc, "interval_ms"));
        e->held        = json_integer_value(json_object_get(doc, "held"));
        json_t *topics = json_object_get(doc, "topics");
        KT_ASSERT_INT_EQ(json_array_size(topics), 2);
        size_t i;
        json_t *t;
        json_array_foreach(topics, i, t) {
                int tier = (int)json_integer_value(json_object_get(t, "tier"));
                if (tier < 0 || tier > 1)
                        continue;
                json_t *drain = json_object_get(t, "drain_ms");
                e->t[tier].waiting =
                        json_integer_value(json_object_get(t, "waiting"));
                e->t[tier].oldest = json_integer_value(
                        json_object_get(t, "oldest_held_age_ms"));
                e->t[tier].consume =
                        json_number_value(json_object_get(t, "consume_per_s"));
                e->t[tier].arrival =
                        json_number_value(json_object_get(t, "arrival_per_s"));
                e->t[tier].drain =
                        json_is_string(drain) ? -2 : json_integer_value(drain);
                KT_ASSERT(json_is_integer(drain) ||
                          !strcmp(json_string_value(drain), "never"));
        }
        json_decref(doc);
}

static int emits_target;

/* The drain estimate of topic @p t: 0 with nothing waiting, "never" when
 * arrival keeps up with consumption, else the time the net consumption
 * takes to work off what waits. */
static void check_drain(const ct_emit_t *e, int t) {
        double net = e->t[t].consume - e->t[t].arrival;
        if (e->t[t].waiting <= 0) {
                KT_ASSERT_INT_EQ(e->t[t].drain, 0);
        } else if (net <= 0) {
                KT_ASSERT_INT_EQ(e->t[t].drain, -2);
        } else {
                double want = (double)e->t[t].waiting / net * 1000;
                KT_CHECK_MSG(e->t[t].drain >= want - 1 &&
                                     e->t[t].drain <= want + 1,
                             CU_FALSE, "drain %lld ms, %lld waiting at %f/s",
                             (long long)e->t[t].drain,
                             (long long)e->t[t].waiting, net);
        }
}

static int emitted(kretry_adapter_t *a, it_env_t *env) {
        (void)a, (void)env;
        return emits.n >= emits_target;
}

/* Both topics' figures known, nothing waiting. */
static int figures_known(kretry_adapter_t *a, it_env_t *env) {
        (void)a, (void)env;
        return emits.n > 0 && emits.e[emits.n - 1].t[0].waiting == 0 &&
               emits.e[emits.n - 1].t[1].waiting == 0;
}

static void wait_emits(kretry_adapter_t *a, it_env_t *env, int more) {
        emits_target = emits.n + more;
        KT_ASSERT(it_run_until(a, emitted, env, 20000));
}

/* (n) The stats callback's per-topic figures have the right values: the
 * oldest held message's age is its age (it grows exactly with the time
 * between documents, -1 once nothing is held); consume and arrival rates
 * times their interval add up to the messages consumed and produced; the
 * drain estimate is 0 with nothing waiting and "never" while a held message
 * waits and nothing moves. */
static void test_stats_figures(void) {
        it_env_t *env = it_env_new("1500ms", 1);
        memset(&emits, 0, sizeof(emits));
        kretry_conf_t *conf = it_conf(env, "stats.interval.ms", "200", NULL);
        kretry_conf_set_stats_cb(conf, ct_stats);
        kretry_adapter_t *a = ct_adapter(conf, env);
        /* Rates count from known figures: wait until both topics have
         * them, then produce. */
        KT_REQUIRE(it_run_until(a, figures_known, env, 20000));
        int first = emits.n;
        it_produce(env, 0, "k", "retry1-held", NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_HELD, 1, 20000));
        wait_emits(a, env, 2);
        char v[32];
        for (int i = 0; i < 20; i++) {
                snprintf(v, sizeof(v), "ok-%d", i);
                it_produce(env, 0, "k", v, NULL);
        }
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 21, 20000));
        wait_emits(a, env, 3);
        kretry_adapter_destroy(a);

        const ct_call_t *c0 = ct_call("retry1-held", 0);
        int held_docs = 0, pairs = 0;
        double consumed[2] = {0, 0}, arrived[2] = {0, 0};
        for (int i = first; i < emits.n; i++) {
                const ct_emit_t *e = &emits.e[i];
                KT_ASSERT(e->interval_ms > 0);
                for (int t = 0; t < 2; t++) {
                        consumed[t] +=
                                e->t[t].consume * e->interval_ms / 1000.0;
                        arrived[t] += e->t[t].arrival * e->interval_ms / 1000.0;
                        check_drain(e, t);
                }
                KT_ASSERT_INT_EQ(e->t[0].oldest, -1);
                if (!e->held) {
                        KT_ASSERT_INT_EQ(e->t[1].oldest, -1);
                        continue;
                }
                /* The copy was made right after the first handler call. */
                held_docs++;
                int64_t since = e->ts - c0->now_ms;
                KT_CHECK_MSG(e->t[1].oldest <= since + 1 &&
                                     e->t[1].oldest >= since - 1000,
                             CU_FALSE,
                             "oldest held age %lld ms, %lld ms after the "
                             "failure",
                             (long long)e->t[1].oldest, (long long)since);
                KT_ASSERT_INT_EQ(e->t[1].waiting, 1);
                if (i > first && emits.e[i - 1].held) {
                        pairs++;
                        KT_ASSERT_INT_EQ(e->t[1].oldest -
                                                 emits.e[i - 1].t[1].oldest,
                                         e->ts - emits.e[i - 1].ts);
                }
        }
        KT_CHECK_MSG(held_docs >= 2 && pairs >= 1, CU_FALSE,
                     "%d documents while held, %d in a row", held_docs, pairs);
        const ct_emit_t *last = &emits.e[emits.n - 1];
        KT_ASSERT_INT_EQ(last->t[0].waiting, 0);
        KT_ASSERT_INT_EQ(last->t[1].waiting, 0);
        /* 21 messages in and through the source, one through the tier. */
        KT_CHECK_MSG(consumed[0] > 20.99 && consumed[0] < 21.01, CU_FALSE,
                     "source consume rates add up to %f", consumed[0]);
        KT_CHECK_MSG(arrived[0] > 20.99 && arrived[0] < 21.01, CU_FALSE,
                     "source arrival rates add up to %f", arrived[0]);
        KT_CHECK_MSG(consumed[1] > 0.99 && consumed[1] < 1.01, CU_FALSE,
                     "tier consume rates add up to %f", consumed[1]);
        KT_CHECK_MSG(arrived[1] > 0.99 && arrived[1] < 1.01, CU_FALSE,
                     "tier arrival rates add up to %f", arrived[1]);
        it_env_destroy(env);
}

/* Every log line, from kretry and from librdkafka's threads. */
static struct {
        pthread_mutex_t lock;
        int lines, debug, produce_warnings;
        char leak[1100];
} logs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *const secrets[] = {"SECRETKEY-5e1d", "SECRETVAL-91c4",
                                      "SECRETHDR-77b2"};

static void ct_log(kretry_log_level_t level,
                   const char *fac,
                   const char *msg,
                   void *opaque) {
        (void)opaque;
        pthread_mutex_lock(&logs.lock);
        logs.lines++;
        logs.debug += level == KRETRY_LOG_DEBUG;
        logs.produce_warnings += !strcmp(fac, "PRODUCE");
        for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
                if (strstr(msg, secrets[i]) && !logs.leak[0])
                        snprintf(logs.leak, sizeof(logs.leak), "%s: %s", fac,
                                 msg);
        pthread_mutex_unlock(&logs.lock);
}

static void produce_secret(it_env_t *env, const char *action) {
        char v[64];
        snprintf(v, sizeof(v), "%s-%s", action, secrets[1]);
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        rd_kafka_header_add(h, "trace-id", -1, secrets[2], -1);
        it_produce(env, 0, secrets[0], v, h);
}

/* (o) Logs carry ids, never payloads: with librdkafka's every debug
 * context on and each line captured, a message that is retried, one that
 * is dead-lettered, one that exhausts its attempts, and (on the mock, which
 * can refuse them) copies whose produce fails and is retried leave neither
 * key, value nor header value in any line. */
static void test_logs_no_payload(void) {
        it_env_t *env                 = it_env_new("20ms", 1);
        rd_kafka_mock_cluster_t *mock = kt_cluster_mock(env->c);
        produce_secret(env, "retry1");
        produce_secret(env, "fail");
        produce_secret(env, "always");
        if (mock)
                rd_kafka_mock_push_request_errors(
                        mock, 0 /* Produce */, 3,
                        RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                        RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                        RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        logs.lines = logs.debug = logs.produce_warnings = 0;
        logs.leak[0]                                    = '\0';
        kretry_conf_t *conf =
                it_conf(env, "debug", "all", "log_level", "7", NULL);
        kretry_conf_set_log_cb(conf, ct_log, NULL);
        kretry_adapter_t *a = ct_adapter(conf, env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 2, 30000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 30000));
        if (mock)
                KT_ASSERT(counter(a, KRETRY_COUNTER_PRODUCE_ERRORS) >= 1);
        kretry_adapter_destroy(a);
        pthread_mutex_lock(&logs.lock);
        KT_CHECK_MSG(logs.debug > 100, CU_FALSE, "%d debug lines of %d",
                     logs.debug, logs.lines);
        if (mock)
                KT_ASSERT(logs.produce_warnings >= 1);
        KT_CHECK_MSG(!logs.leak[0], CU_FALSE, "payload in a log line: %s",
                     logs.leak);
        pthread_mutex_unlock(&logs.lock);
        it_env_destroy(env);
}

/* The configuration's secrets, and what the log lines showed of them. */
static const char *const conf_secrets[] = {"pw-9f3c2a51", "oidc-7d1e0b6c",
                                           "keypw-41b8aa02"};
static struct {
        pthread_mutex_t lock;
        int lines, masked;
        char leak[1100];
} slogs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void ct_secret_log(kretry_log_level_t level,
                          const char *fac,
                          const char *msg,
                          void *opaque) {
        (void)level;
        (void)opaque;
        pthread_mutex_lock(&slogs.lock);
        slogs.lines++;
        slogs.masked += !!strstr(msg, "kretry-[redacted]");
        for (size_t i = 0; i < sizeof(conf_secrets) / sizeof(conf_secrets[0]);
             i++)
                if (strstr(msg, conf_secrets[i]) && !slogs.leak[0])
                        snprintf(slogs.leak, sizeof(slogs.leak), "%s: %s", fac,
                                 msg);
        pthread_mutex_unlock(&slogs.lock);
}

/* (o) Logs never carry a secret of the configuration: with librdkafka's
 * every debug context on, a password, an OAUTHBEARER client secret and a
 * key password appear in no line, also where librdkafka quotes one
 * through another property (a client.id that holds the password, in every
 * line naming the client): those lines show the mask instead. */
static void test_logs_no_secret(void) {
        it_env_t *env = it_env_new("20ms", 1);
        it_produce(env, 0, "k", "retry1-secret", NULL);
        slogs.lines = slogs.masked = 0;
        slogs.leak[0]              = '\0';
        kretry_conf_t *conf =
                it_conf(env, "debug", "all", "log_level", "7", "sasl.password",
                        conf_secrets[0], "sasl.oauthbearer.client.secret",
                        conf_secrets[1], "ssl.key.password", conf_secrets[2],
                        "client.id", "kretry-pw-9f3c2a51", NULL);
        kretry_conf_set_log_cb(conf, ct_secret_log, NULL);
        kretry_adapter_t *a = ct_adapter(conf, env);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 30000));
        kretry_adapter_destroy(a);
        pthread_mutex_lock(&slogs.lock);
        KT_CHECK_MSG(slogs.masked > 0, CU_FALSE,
                     "no line showed the masked client id (%d lines)",
                     slogs.lines);
        KT_CHECK_MSG(!slogs.leak[0], CU_FALSE, "secret in a log line: %s",
                     slogs.leak);
        pthread_mutex_unlock(&slogs.lock);
        it_env_destroy(env);
}

typedef struct {
        int64_t now, timeout; /* when a wait began, and for how long */
} ct_wait_t;

/* (p) An application's own loop: poll(2) on kretry_adapter_fd() for
 * kretry_adapter_next_timeout_ms() (or long: 30 s when nothing is due),
 * kretry_adapter_poll(a, 0) only when woken. A retry with a 2 s tier delay
 * is handled on time: never early, and never waiting past its due time,
 * since while it is held the timeout says when it is due. (2 s: the copy
 * of a new adapter waits for its producer's id, up to 500 ms, and must
 * still arrive before it is due to be held; at 700 ms it once came due
 * under load.) */
static void test_own_poll_loop(void) {
        it_env_t *env = it_env_new("2s", 1);
        it_produce(env, 0, "k", "retry1-fd", NULL);
        kretry_adapter_t *a = ct_adapter(it_conf(env, NULL), env);
        struct pollfd pfd   = {.fd = kretry_adapter_fd(a), .events = POLLIN};
        KT_REQUIRE(pfd.fd >= 0);
        static ct_wait_t held_waits[4096];
        int nheld = 0, loops = 0;
        int64_t deadline = kt_now_ms() + 30000;
        while (counter(a, KRETRY_COUNTER_OK) < 1 && kt_now_ms() < deadline) {
                int64_t at = kt_wall_ms();
                int t      = kretry_adapter_next_timeout_ms(a);
                if (counter(a, KRETRY_COUNTER_HELD) > 0 && nheld < 4096)
                        held_waits[nheld++] = (ct_wait_t){at, t};
                poll(&pfd, 1, t < 0 ? 30000 : t);
                KT_ASSERT_INT_EQ(kretry_adapter_poll(a, 0), KRETRY_ERR_OK);
                loops++;
        }
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_OK), 1);
        KT_REQUIRE(ct_calls("retry1-fd") == 2);
        const ct_call_t *c0 = ct_call("retry1-fd", 0);
        const ct_call_t *c1 = ct_call("retry1-fd", 1);
        KT_ASSERT_INT_EQ(c1->tier, 1);
        int64_t due = c1->due_ts;
        KT_ASSERT(due >= c0->now_ms + 2000);
        KT_CHECK_MSG(c1->now_ms >= due, CU_FALSE, "handled %lld ms early",
                     (long long)(due - c1->now_ms));
        /* Far below the 30 s the loop would sleep without a timeout. */
        KT_CHECK_MSG(c1->now_ms < due + 10000, CU_FALSE, "handled %lld ms late",
                     (long long)(c1->now_ms - due));
        /* Every wait while held ended by the due time (the tier copy's
         * kretry-due-ts): the held message, not a timer of a second or a
         * long poll, sets how long the loop may sleep. */
        KT_ASSERT(nheld > 0);
        for (int i = 0; i < nheld; i++)
                KT_CHECK_MSG(
                        held_waits[i].timeout >= 0 &&
                                held_waits[i].now + held_waits[i].timeout <=
                                        due,
                        CU_FALSE,
                        "wait %d of %d while held: %lld ms from %lld, due at "
                        "%lld",
                        i, nheld, (long long)held_waits[i].timeout,
                        (long long)held_waits[i].now, (long long)due);
        /* Woken by work and timers only: an fd that stayed readable once
         * its work was served would spin this loop (hundreds of thousands
         * of turns in these few seconds). */
        KT_CHECK_MSG(loops < 1000, CU_FALSE,
                     "%d turns of the loop (%d while held): it spun", loops,
                     nheld);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_error_cut_utf8),
                                          KT_TEST(test_correlation_id),
                                          KT_TEST(test_spring_profile),
                                          KT_TEST(test_malformed_coordinates),
                                          KT_TEST(test_null_key_value),
                                          KT_TEST(test_invalid_action),
                                          KT_TEST(test_invalid_action_breaker),
                                          KT_TEST(test_parked_follower),
                                          KT_TEST(test_invalid_version),
                                          KT_TEST(test_stats_figures),
                                          KT_TEST(test_logs_no_payload),
                                          KT_TEST(test_logs_no_secret),
                                          KT_TEST(test_own_poll_loop),
                                          KT_END};
        return kt_main("it_contract", tests, argc, argv);
}
