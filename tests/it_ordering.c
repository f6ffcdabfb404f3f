/*
 * ordering: key and versioning on the test cluster: per-key order across
 * retries under random failures, the two on_dead_letter policies, stale
 * versions, and both states rebuilt by a new instance.
 */
#include "it_harness.h"
#include "replay_headers.h"
#include "restore.h" /* kretry_test_restore_dlq_reads */
#include "txn.h"     /* kretry_test_txn_fails */

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 200
#define PER_KEY 50

typedef struct {
        int violations; /* a message handled before an earlier one */
        int duplicates; /* handled again after it was resolved */
        int resolved[KEYS][PER_KEY]; /* handled OK or failed permanently */
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
        /* Order: every earlier message of the key was resolved first. A
         * message handled again after it was resolved is a duplicate (at
         * least once: redelivered after a commit that did not happen). */
        for (int s = 0; s < seq; s++)
                if (!st->resolved[key][s] && st->violations++ < 5)
                        fprintf(stderr, "  key %d: seq %d before %d\n", key,
                                seq, s);
        st->duplicates += st->resolved[key][seq];
        if (st->permanent_every && seq % st->permanent_every == 7) {
                st->resolved[key][seq] = 1;
                return KRETRY_FAIL;
        }
        if (flaky(key, seq, kretry_msg_attempt(msg)))
                return KRETRY_RETRY;
        st->ok[key][seq]++;
        st->resolved[key][seq] = 1;
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

/* For every key the handler sees non-decreasing sequence numbers (a retry
 * repeats its own), under ~30% transient failures and a few permanent ones;
 * nothing is lost. */
static void test_key_order_under_failures(void) {
        it_env_t *env = it_env_new("20ms,40ms", 3);
        it_produce_keys(env, KEYS, PER_KEY);
        static order_state_t st;
        memset(&st, 0, sizeof(st));
        st.permanent_every  = 11;
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
        /* Permanent failures: seq % 11 == 7 of each key. */
        int perm = 0;
        for (int q = 0; q < PER_KEY; q++)
                perm += q % 11 == 7;
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_PERMANENT, 0),
                KEYS * perm);
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED, 0) > 0);
        for (int k = 0; k < KEYS; k++)
                for (int s = 0; s < PER_KEY; s++)
                        if (s % 11 != 7)
                                KT_REQUIRE(st.ok[k][s] >= 1);
        fprintf(stderr, "  %d handler calls, %lld forwarded behind a key\n",
                st.calls,
                (long long)kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED,
                                                  0));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* Index of the first call with @p value, or -1. */
static int call_at(const it_env_t *env, const char *value, int last) {
        int at = -1;
        for (int i = 0; i < env->call_cnt; i++)
                if (!strcmp(env->calls[i].value, value)) {
                        at = i;
                        if (!last)
                                break;
                }
        return at;
}

static void produce_k(it_env_t *env,
                      const char *key,
                      const char *value,
                      const char *hname,
                      const char *hval) {
        rd_kafka_headers_t *h = NULL;
        if (hname) {
                h = rd_kafka_headers_new(1);
                rd_kafka_header_add(h, hname, -1, hval, -1);
        }
        it_produce(env, 0, key, value, h);
}

/* A message on partition 0 of tier @p tier (0: the DLQ) as kretry or a
 * replay writes it, its headers given as name/value pairs ending with NULL. */
static void
produce_copy(it_env_t *env, int tier, const char *key, const char *value, ...) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        va_list ap;
        va_start(ap, value);
        const char *n;
        while ((n = va_arg(ap, const char *)))
                rd_kafka_header_add(h, n, -1, va_arg(ap, const char *), -1);
        va_end(ap);
        KT_REQUIRE(kt_produce(env->c, tier ? env->tiers[tier - 1] : env->dlq, 0,
                              key, strlen(key), value, strlen(value), h) == 0);
}

/* continue: a key whose head dead-letters goes on with its next message,
 * which waited behind the head; other keys never waited. */
static void test_dead_letter_continue(void) {
        it_env_t *env = it_env_new("60ms", 1);
        produce_k(env, "K", "always-h", NULL, NULL);
        produce_k(env, "K", "ok-f1", NULL, NULL);
        produce_k(env, "L", "ok-other", NULL, NULL);
        produce_k(env, "K", "ok-f2", NULL, NULL);
        kretry_adapter_t *a = it_adapter(it_conf(
                env, "ordering", "key", "retry.max.attempts", "3", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 3, 20000));
        /* The head's DLQ copy is counted when acknowledged, which may come
         * after its followers were handled. */
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_EXHAUSTED, 1, 20000));
        int head_last = call_at(env, "always-h", 1);
        KT_ASSERT(call_at(env, "ok-other", 0) < head_last);
        KT_ASSERT(call_at(env, "ok-f1", 0) > head_last);
        KT_ASSERT(call_at(env, "ok-f2", 0) > call_at(env, "ok-f1", 0));
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED, 0) >= 2);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_CHAIN_KEYS, 0), 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static const char *
hdr_of(const rd_kafka_message_t *m, const char *n, char *buf) {
        return kt_header(m, n, buf, 64);
}

typedef struct {
        int parked, followers_hdr;
} dlq_seen_t;

static void see_dlq(const rd_kafka_message_t *m, void *opaque) {
        dlq_seen_t *d = opaque;
        char b[64];
        const char *cls = hdr_of(m, "kretry-error-class", b);
        if (cls && !strcmp(cls, "parked"))
                d->parked++;
        if (hdr_of(m, "kretry-parked-followers", b))
                d->followers_hdr = atoi(b);
}

/* An environment for park_key: with its compacted parked-keys topic
 * (ordering.parked.topic's default name). */
static void parked_topic(const it_env_t *env, char *pt, size_t size) {
        snprintf(pt, size, "%s.%s.parked", env->group, env->source);
}

static it_env_t *park_env_brokers(const char *tiers, int brokers) {
        it_env_t *env = it_env_new_brokers(tiers, 1, brokers);
        char pt[300];
        parked_topic(env, pt, sizeof(pt));
        KT_REQUIRE(kt_cluster_changelog(env->c, pt, 1) == 0);
        return env;
}

static it_env_t *park_env(const char *tiers) {
        return park_env_brokers(tiers, 1);
}

/* routing of park_key_adapter's instances (test_park_rebuilt_txn). */
static const char *park_routing = "at_least_once";

static kretry_adapter_t *park_key_adapter(it_env_t *env, const char *attempts) {
        return it_adapter(it_conf(
                env, "ordering", "key", "ordering.on.dead.letter", "park_key",
                "retry.max.attempts", attempts, "routing", park_routing, NULL));
}

/* park_key: the followers of a dead-lettered head go to the DLQ without a
 * handler call, until a replayed message of the key arrives. */
static void test_dead_letter_park_key(void) {
        it_env_t *env = park_env("60ms");
        produce_k(env, "K", "always-h", NULL, NULL);
        produce_k(env, "K", "ok-f1", NULL, NULL);
        produce_k(env, "K", "ok-f2", NULL, NULL);
        produce_k(env, "L", "ok-other", NULL, NULL);
        kretry_adapter_t *a = park_key_adapter(env, "3");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 3, 20000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_PARKED, 0), 2);
        KT_ASSERT(call_at(env, "ok-f1", 0) < 0);
        KT_ASSERT(call_at(env, "ok-f2", 0) < 0);
        /* Still parked: a new message of K goes after them. */
        produce_k(env, "K", "ok-f3", NULL, NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 4, 20000));
        /* A replayed message of K lifts the park. */
        produce_k(env, "K", "ok-replayed", "kretry-replay-count", "1");
        produce_k(env, "K", "ok-after", NULL, NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 3, 20000));
        KT_ASSERT(call_at(env, "ok-replayed", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-after", 0) > call_at(env, "ok-replayed", 0));
        kretry_adapter_destroy(a);
        dlq_seen_t d = {0, -1};
        KT_ASSERT_INT_EQ(kt_consume(env->c, env->dlq, 4, 10000, see_dlq, &d),
                         4);
        KT_ASSERT_INT_EQ(d.parked, 3);
        KT_ASSERT_INT_EQ(d.followers_hdr, 2);
        it_env_destroy(env);
}

/* park_key: a replay of the key into a tier (dlq replay --to tier:1) lifts
 * the park when the replayed copy arrives there; it is handled, not
 * dead-lettered again as parked, and the key's next message flows. */
static void test_replay_into_tier_lifts_park(void) {
        it_env_t *env = park_env("50ms");
        produce_k(env, "K", "always-h", NULL, NULL);
        produce_k(env, "K", "ok-f1", NULL, NULL);
        kretry_adapter_t *a = park_key_adapter(env, "2");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_EXHAUSTED, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 1, 20000));
        /* The head's DLQ copy, replayed into tier 1 as the CLI writes it. */
        rd_kafka_headers_t *dlq = rd_kafka_headers_new(4);
        rd_kafka_header_add(dlq, "kretry-attempt", -1, "2", -1);
        rd_kafka_header_add(dlq, "kretry-original-partition", -1, "0", -1);
        rd_kafka_header_add(dlq, "kretry-original-offset", -1, "0", -1);
        rd_kafka_header_add(dlq, "kretry-error-class", -1, "exhausted", -1);
        rd_kafka_headers_t *h =
                kretry_replay_headers(dlq, kt_wall_ms(), 1, env->source);
        rd_kafka_headers_destroy(dlq);
        KT_REQUIRE(kt_produce(env->c, env->tiers[0], 0, "K", 1, "ok-replayed",
                              11, h) == 0);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(call_at(env, "ok-replayed", 0) >= 0);
        produce_k(env, "K", "ok-after", NULL, NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        KT_ASSERT(call_at(env, "ok-after", 0) > call_at(env, "ok-replayed", 0));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_PARKED, 0), 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A tier copy with a malformed kretry-attempt but a valid original offset
 * is restored as its key's head; dead-lettering it (class schema) resolves
 * its chain entry, so the key's next message is handled instead of being
 * parked behind it again and again. */
static void test_malformed_head_leaves_chain(void) {
        it_env_t *env = it_env_new("50ms", 1);
        produce_copy(env, 1, "K", "ok-bad", "kretry-attempt", "x",
                     "kretry-tier", "1", "kretry-due-ts", "0",
                     "kretry-original-offset", "0", NULL);
        produce_k(env, "L", "ok-other", NULL, NULL);
        produce_k(env, "K", "ok-f", NULL, NULL);
        kretry_adapter_t *a = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_SCHEMA, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 15000));
        KT_ASSERT(call_at(env, "ok-f", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-bad", 0) < 0);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_CHAIN_KEYS, 0), 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static it_env_t *versioned_env(const char *tiers) {
        it_env_t *env = it_env_new(tiers, 1);
        char vt[300];
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        KT_REQUIRE(kt_cluster_changelog(env->c, vt, 1) == 0);
        return env;
}

/* v3, v1, v2, v5, v4: the handler sees v3 and v5; with older_or_equal a
 * repeated v5 is skipped; a new instance restores the store, so a v1 after
 * the restart is still stale. */
static void test_versions(void) {
        it_env_t *env     = versioned_env("50ms");
        const char *seq[] = {"3", "1", "2", "5", "4"};
        for (int i = 0; i < 5; i++) {
                char v[16];
                snprintf(v, sizeof(v), "ok-v%s", seq[i]);
                produce_k(env, "K", v, "version", seq[i]);
        }
        produce_k(env, "K", "ok-v5again", "version", "5");
        produce_k(env, "L", "ok-unversioned", NULL, NULL);
        kretry_adapter_t *a = it_adapter(
                it_conf(env, "versioning.header", "version",
                        "versioning.discard", "older_or_equal", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_STALE, 4, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 3, 20000));
        KT_ASSERT_INT_EQ(env->call_cnt, 3);
        KT_ASSERT(call_at(env, "ok-v3", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-v5", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-unversioned", 0) >= 0);
        KT_ASSERT_INT_EQ(env->routes[KRETRY_ROUTE_STALE], 4);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_VERSION_KEYS, 0), 1);
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_VERSION_BYTES, 0) >
                  0);
        kretry_adapter_destroy(a);
        /* Everything committed: the changelog was durable first. */
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 7);

        produce_k(env, "K", "ok-v1late", "version", "1");
        produce_k(env, "K", "ok-v6", "version", "6");
        env->call_cnt = 0;
        a = it_adapter(it_conf(env, "versioning.header", "version", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_STALE, 1, 20000));
        KT_ASSERT_INT_EQ(env->call_cnt, 1);
        KT_ASSERT(call_at(env, "ok-v6", 0) == 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A retry overtaken by a newer version is dropped from the tier. */
static void test_overtaken_retry(void) {
        it_env_t *env = versioned_env("300ms");
        produce_k(env, "K", "retry1-v7", "version", "7");
        produce_k(env, "K", "ok-v8", "version", "8");
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "versioning.header", "version", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_STALE, 1, 20000));
        const it_call_t *c[4];
        KT_ASSERT_INT_EQ(it_calls_for(env, "retry1-v7", c, 4), 1);
        /* The copy's delivery report may be served after the copy itself
         * was read back (real Kafka): counted then. */
        int64_t deadline = kt_now_ms() + 5000;
        while (!kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 1) &&
               kt_now_ms() < deadline)
                it_poll_for(a, 20);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 1),
                         1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* Commit @p offset on partition 0 of @p topic for the test's group, from
 * a client that never joins it; returns the partition's log start. */
static int64_t commit_at(it_env_t *env, const char *topic, int64_t offset) {
        rd_kafka_conf_t *conf = kt_rdkafka_conf(env->c);
        rd_kafka_conf_set(conf, "group.id", env->group, NULL, 0);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, NULL, 0);
        KT_REQUIRE(rk != NULL);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, 0)->offset = offset;
        KT_REQUIRE(rd_kafka_commit(rk, l, 0) == 0);
        rd_kafka_topic_partition_list_destroy(l);
        int64_t lo = -1, hi = -1;
        KT_REQUIRE(rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi,
                                                    10000) == 0);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return lo;
}

/* The group's committed offset in a tier lies below the log start (the
 * mock drops a partition's oldest data past 5 MiB, as retention would):
 * the restore reads from the log start — K's head, written after the
 * dropped data, is restored and K's next message parks behind it — and
 * does not wait restore.timeout.ms for an end it never reaches (with
 * auto.offset.reset=latest the out-of-range fetch went to the end). */
static void test_restore_below_log_start(void) {
        it_env_t *env = it_env_new("60s", 1);
        if (!it_mock_or_skip(env, "none: a real broker drops a "
                                  "compacted topic's head only after its "
                                  "segments roll and the cleaner runs, "
                                  "which a test cannot await"))
                return;
        char due[24], orig[24];
        snprintf(due, sizeof(due), "%lld", (long long)(kt_now_ms() + 60000));
        static char big[900000];
        memset(big, 'x', sizeof(big) - 1);
        for (int i = 0; i < 7; i++) {
                snprintf(orig, sizeof(orig), "%d", 100 + i);
                produce_copy(env, 1, "fill", big, "kretry-attempt", "1",
                             "kretry-tier", "1", "kretry-due-ts", due,
                             "kretry-original-offset", orig, NULL);
        }
        produce_copy(env, 1, "K", "ok-head", "kretry-attempt", "1",
                     "kretry-tier", "1", "kretry-due-ts", due,
                     "kretry-original-offset", "0", NULL);
        KT_REQUIRE(commit_at(env, env->tiers[0], 0) > 0);
        produce_k(env, "L", "ok-other", NULL, NULL);
        produce_k(env, "K", "ok-f", NULL, NULL);
        commit_at(env, env->source, 0);
        int64_t t0          = kt_now_ms();
        kretry_adapter_t *a = it_adapter(
                it_conf(env, "ordering", "key", "auto.offset.reset", "latest",
                        "restore.timeout.ms", "30000", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_FORWARDED, 1, 15000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 15000));
        KT_ASSERT(call_at(env, "ok-other", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-f", 0) < 0);
        fprintf(stderr, "  restored and parked in %lld ms\n",
                (long long)(kt_now_ms() - t0));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* After a crash between producing a head's copy to tier 2 and committing
 * its tier 1 offset, both copies wait above the committed offsets, with
 * the follower parked behind the head in tier 1. The restore keeps the
 * newest copy (attempt 2) as the head; the older one is acknowledged as a
 * duplicate, never handled: the head is handled once, before its
 * follower. */
static void test_superseded_copy_is_duplicate(void) {
        it_env_t *env = it_env_new("50ms,100ms", 1);
        produce_k(env, "K", "ok-h", NULL, NULL);
        produce_k(env, "K", "ok-f", NULL, NULL);
        commit_at(env, env->source, 2);
        produce_copy(env, 1, "K", "ok-h", "kretry-attempt", "1", "kretry-tier",
                     "1", "kretry-due-ts", "0", "kretry-original-offset", "0",
                     "kretry-error-class", "transient", NULL);
        produce_copy(env, 1, "K", "ok-f", "kretry-attempt", "0", "kretry-tier",
                     "1", "kretry-due-ts", "0", "kretry-original-offset", "1",
                     "kretry-error-class", "parked", NULL);
        produce_copy(env, 2, "K", "ok-h", "kretry-attempt", "2", "kretry-tier",
                     "2", "kretry-due-ts", "0", "kretry-original-offset", "0",
                     "kretry-error-class", "transient", NULL);
        kretry_adapter_t *a = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DUPLICATES, 1, 20000));
        const it_call_t *c[4];
        KT_ASSERT_INT_EQ(it_calls_for(env, "ok-h", c, 4), 1);
        KT_ASSERT_INT_EQ(c[0]->attempt, 3);
        KT_ASSERT(call_at(env, "ok-f", 0) > call_at(env, "ok-h", 0));
        KT_ASSERT_INT_EQ(env->routes[KRETRY_ROUTE_DUPLICATE], 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* The state a crash leaves after K's head failed and its copy was never
 * made, while K's follower was parked into tier 1 behind it and L's retry
 * copy was made after that: source L "ok-l0" (0, done), K "ok-h" (1), K
 * "ok-f" (2), L "ok-l" (3), committed at the head; tier 1 the follower's
 * parked copy (due) and then L's copy (not due for seconds). The source's
 * leader answers its first fetch 1.5 s late, so the tier is read first and
 * the follower's copy waits for the source; meanwhile L's copy takes the
 * tier partition's hold slot until its due time (consumed in the same
 * batch, or released from behind the waiting copy when that one looked
 * again). The follower's copy must wait all the same. Before the fix it
 * went to the handler as soon as it found the slot taken: the follower
 * before its head, and its source message handled again after it (in 20
 * of 20 runs of each). */
static void source_wait_behind_held(const char *concurrency) {
        it_env_t *env = it_env_new_brokers("20s", 1, 2);
        rd_kafka_mock_cluster_t *mock =
                it_mock_or_skip(env, "none: a real broker cannot be told to "
                                     "answer the source's first fetch late, "
                                     "which lets the tier be read first");
        if (!mock)
                return;
        rd_kafka_mock_coordinator_set(mock, "group", env->group, 1);
        rd_kafka_mock_partition_set_leader(mock, env->tiers[0], 0, 1);
        char due[24];
        snprintf(due, sizeof(due), "%lld", (long long)(kt_wall_ms() + 15000));
        produce_k(env, "L", "ok-l0", NULL, NULL);
        produce_k(env, "K", "ok-h", NULL, NULL);
        produce_k(env, "K", "ok-f", NULL, NULL);
        produce_k(env, "L", "ok-l", NULL, NULL);
        commit_at(env, env->source, 1);
        produce_copy(env, 1, "K", "ok-f", "kretry-attempt", "0", "kretry-tier",
                     "1", "kretry-due-ts", "0", "kretry-original-topic",
                     env->source, "kretry-original-partition", "0",
                     "kretry-original-offset", "2", "kretry-error-class",
                     "parked", "kretry-group", env->group, NULL);
        produce_copy(env, 1, "L", "ok-l", "kretry-attempt", "1", "kretry-tier",
                     "1", "kretry-due-ts", due, "kretry-original-topic",
                     env->source, "kretry-original-partition", "0",
                     "kretry-original-offset", "3", "kretry-error-class",
                     "transient", "kretry-group", env->group, NULL);
        rd_kafka_mock_partition_set_leader(mock, env->source, 0, 2);
        rd_kafka_mock_broker_push_request_error_rtts(
                mock, 2, 1 /* Fetch */, 1, RD_KAFKA_RESP_ERR_NO_ERROR, 1500);
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "ordering", "key",
                                   "handler.concurrency", concurrency, NULL));
        /* The head, then its follower's copy; the source messages whose
         * copies wait in the tier are acknowledged as duplicates. */
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DUPLICATES, 2, 10000));
        const it_call_t *c[4];
        int h = it_calls_for(env, "ok-h", c, 4);
        int f = it_calls_for(env, "ok-f", c, 4);
        KT_CHECK_MSG(h == 1 && f == 1, CU_FALSE,
                     "calls: head %d, follower %d (1 each)", h, f);
        int head = call_at(env, "ok-h", 0), fol = call_at(env, "ok-f", 0);
        KT_CHECK_MSG(head >= 0 && head < fol, CU_FALSE,
                     "the follower was handled (call %d) before its head "
                     "(call %d)",
                     fol, head);
        KT_ASSERT(fol >= 0 && env->calls[fol].tier == 1);
        /* L's copy is not due yet, and its source message is no call. */
        KT_ASSERT_INT_EQ(it_calls_for(env, "ok-l", c, 4), 0);
        KT_ASSERT_INT_EQ(env->call_cnt, 2);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void test_source_wait_behind_held(void) {
        source_wait_behind_held("1");
}

/* The same with more handlers: the shape. */
static void test_source_wait_behind_held_concurrent(void) {
        source_wait_behind_held("4");
}

/* A new instance rebuilds the key chains from the tiers: a message that
 * arrives on the source after a restart still waits for its key's head,
 * which sits in a tier (without the rebuild it would be handled first). */
static void test_chain_rebuilt(void) {
        it_env_t *env = it_env_new("8s", 1);
        produce_k(env, "K", "retry1-head", NULL, NULL);
        produce_k(env, "K", "ok-follower", NULL, NULL);
        kretry_adapter_t *a = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_FORWARDED, 1, 20000));
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_OK, 0), 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);

        produce_k(env, "K", "ok-late", NULL, NULL);
        env->call_cnt = 0;
        a             = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 3, 30000));
        int head = call_at(env, "retry1-head", 1);
        int fol  = call_at(env, "ok-follower", 0);
        int late = call_at(env, "ok-late", 0);
        KT_REQUIRE(head >= 0);
        KT_CHECK_MSG(head < fol && fol < late, CU_FALSE,
                     "calls: head %d, follower %d, late %d", head, fol, late);
        KT_ASSERT_INT_EQ(env->calls[head].attempt, 2);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* Keys for test_many_chains_rebuilt: several fetches' worth of copies. */
#define MANY_KEYS 700

/* The key and value of key @p k's message: its head "retry1-h<k>", or
 * "ok-l<k>", the one after it. */
static void many_names(int k, int late, char *key, char *value) {
        snprintf(key, 16, "m%d", k);
        snprintf(value, 32, late ? "ok-l%d" : "retry1-h%d", k);
}

/* Chains of many keys on two partitions, rebuilt by a new instance: every
 * key's head waits in the tier (its first attempt failed) when the
 * instance stops; the next starts after a message of each key arrived on
 * the source, while the heads are not due yet. Each key's message waits
 * for its head (forwarded behind it) and is handled after it, never
 * before: the restore read every copy of both partitions (planted: the
 * copies at odd offsets not read: 350 keys overtaken). */
static void test_many_chains_rebuilt(void) {
        it_env_t *env = it_env_new("10s", 2);
        char key[16], value[32];
        for (int k = 0; k < MANY_KEYS; k++) {
                many_names(k, 0, key, value);
                it_produce(env, k % 2, key, value, NULL);
        }
        kretry_adapter_t *a = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_RETRIED, MANY_KEYS, 30000));
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);

        for (int k = 0; k < MANY_KEYS; k++) {
                many_names(k, 1, key, value);
                it_produce(env, k % 2, key, value, NULL);
        }
        env->call_cnt = 0;
        a             = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2 * MANY_KEYS, 60000));
        int overtaken = 0, first = -1;
        for (int k = 0; k < MANY_KEYS; k++) {
                char late[32];
                many_names(k, 0, key, value);
                many_names(k, 1, key, late);
                int head = call_at(env, value, 1), next = call_at(env, late, 0);
                if (head < 0 || next <= head || env->calls[head].attempt != 2) {
                        overtaken++;
                        first = first < 0 ? k : first;
                }
        }
        KT_CHECK_MSG(overtaken == 0, CU_FALSE,
                     "%d of %d keys: the message after the head was handled "
                     "before it (first: key m%d)",
                     overtaken, MANY_KEYS, first);
        KT_ASSERT(kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED, 0) >=
                  MANY_KEYS);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* Another group's copy in a shared tier is no part of this group's chains:
 * the rebuild ignores it, so the source message it copied (same key and
 * original offset) is handled, not taken for a duplicate of it, and nothing
 * is parked behind it. */
static void test_foreign_copy_not_chained(void) {
        it_env_t *env = it_env_new("8s", 1);
        produce_k(env, "K", "ok-src", NULL, NULL);
        produce_copy(env, 1, "K", "ok-src", "kretry-attempt", "1",
                     "kretry-tier", "1", "kretry-due-ts", "0",
                     "kretry-original-offset", "0", "kretry-group",
                     "another-service", NULL);
        produce_k(env, "K", "ok-next", NULL, NULL);
        kretry_adapter_t *a = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_FOREIGN, 1, 20000));
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DUPLICATES, 0), 0);
        KT_ASSERT_INT_EQ(kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED, 0),
                         0);
        int src = call_at(env, "ok-src", 0), next = call_at(env, "ok-next", 0);
        KT_ASSERT(src >= 0 && next > src);
        KT_ASSERT(src >= 0 && env->calls[src].tier == 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* Another group's copy in a shared tier lifts no park either, whatever its
 * other headers say (a replayed message that group failed again carries
 * kretry-replay-count): K, parked by its head at source offset 0, stays
 * parked across a restart although a foreign copy of K with a replay count
 * sits at a tier offset above 0. The tier's leader answers 500 ms later
 * than the parked-keys topic's, so that the restore has read K's park when
 * it reads the foreign copy (read the other way round, the copy found
 * nothing to lift). */
static void test_foreign_replayed_copy_keeps_park(void) {
        it_env_t *env = park_env_brokers("50ms", 2);
        rd_kafka_mock_cluster_t *mock =
                it_mock_or_skip(env, "none: a real broker cannot be told to "
                                     "answer one partition later than another");
        if (!mock)
                return;
        char pt[300];
        parked_topic(env, pt, sizeof(pt));
        rd_kafka_mock_coordinator_set(mock, "group", env->group, 1);
        const char *on1[] = {env->source, env->dlq, pt};
        for (int i = 0; i < 3; i++)
                rd_kafka_mock_partition_set_leader(mock, on1[i], 0, 1);
        rd_kafka_mock_partition_set_leader(mock, env->tiers[0], 0, 2);
        /* K's park (its head at source offset 0), the migration done. */
        static const char mark[] = "kretry-parked-keys-migrated";
        KT_REQUIRE(kt_produce(env->c, pt, 0, "K", 1, "0", 1, NULL) == 0);
        KT_REQUIRE(kt_produce(env->c, pt, 0, mark, strlen(mark), "migrated", 8,
                              NULL) == 0);
        for (int i = 0; i < 2; i++) /* tier offsets 0 (Z's) and 1 (K's) */
                produce_copy(env, 1, i ? "K" : "Z", "ok-foreign",
                             "kretry-attempt", "1", "kretry-tier", "1",
                             "kretry-due-ts", "0", "kretry-original-offset",
                             "0", "kretry-group", "another-service",
                             "kretry-replay-count", "1", NULL);
        produce_k(env, "X", "ok-x", NULL, NULL); /* source offset 0 */
        produce_k(env, "K", "ok-k", NULL, NULL); /* 1: parked */
        rd_kafka_mock_broker_set_rtt(mock, 2, 500);
        kretry_adapter_t *a = park_key_adapter(env, "2");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_FOREIGN, 2, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 1, 20000));
        KT_ASSERT(call_at(env, "ok-x", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-k", 0) < 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A malformed copy superseded by a valid newer copy of the same message
 * is dead-lettered (class schema) without taking the newer copy's place in
 * the chain: the key's next message still waits for the head (due well
 * after the group join, so it is still held when that message arrives). */
static void test_malformed_superseded_copy(void) {
        it_env_t *env = it_env_new("50ms,100ms", 1);
        produce_k(env, "K", "ok-h", NULL, NULL);
        commit_at(env, env->source, 1);
        char due[24];
        snprintf(due, sizeof(due), "%lld", (long long)(kt_now_ms() + 12000));
        produce_copy(env, 1, "K", "ok-h", "kretry-attempt", "x", "kretry-tier",
                     "1", "kretry-due-ts", "0", "kretry-original-offset", "0",
                     NULL);
        produce_copy(env, 2, "K", "ok-h", "kretry-attempt", "2", "kretry-tier",
                     "2", "kretry-due-ts", due, "kretry-original-offset", "0",
                     "kretry-error-class", "transient", NULL);
        kretry_adapter_t *a = it_adapter(it_conf(env, "ordering", "key", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_SCHEMA, 1, 20000));
        produce_k(env, "K", "ok-f", NULL, NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        KT_ASSERT(call_at(env, "ok-f", 0) > call_at(env, "ok-h", 0));
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* Warnings that a tier copy claims an original offset its source
 * partition never held (any thread). */
static atomic_int beyond_logged;
static void count_beyond(kretry_log_level_t level,
                         const char *fac,
                         const char *msg,
                         void *opaque) {
        it_log(level, fac, msg, opaque);
        if (level == KRETRY_LOG_WARNING && strstr(msg, "beyond"))
                atomic_fetch_add(&beyond_logged, 1);
}

/* A tier copy whose kretry-original-offset lies beyond anything its source
 * partition held (a source topic recreated, another writer) is not held
 * back for the source to catch up, which it never would: the copies and
 * the retry behind them are handled, the tier partition committed to its
 * end, and the claim is logged once for the partition. Before the bound a
 * copy waited while its original offset was at or past the next source
 * offset, unbounded: the tier partition stalled for good. */
static void test_copy_beyond_source(void) {
        it_env_t *env = it_env_new("50ms", 1);
        produce_k(env, "C", "ok-c", NULL, NULL);
        commit_at(env, env->source, 1);
        static const char *bogus[][2] = {{"B1", "1000000"}, {"B2", "2000000"}};
        char value[32];
        for (int i = 0; i < 2; i++) {
                snprintf(value, sizeof(value), "ok-bogus-%d", i);
                produce_copy(env, 1, bogus[i][0], value, "kretry-attempt", "1",
                             "kretry-tier", "1", "kretry-due-ts", "0",
                             "kretry-original-topic", env->source,
                             "kretry-original-partition", "0",
                             "kretry-original-offset", bogus[i][1],
                             "kretry-error-class", "transient", "kretry-group",
                             env->group, NULL);
        }
        produce_copy(env, 1, "C", "ok-c-retry", "kretry-attempt", "1",
                     "kretry-tier", "1", "kretry-due-ts", "0",
                     "kretry-original-topic", env->source,
                     "kretry-original-partition", "0", "kretry-original-offset",
                     "0", "kretry-error-class", "transient", "kretry-group",
                     env->group, NULL);
        atomic_store(&beyond_logged, 0);
        kretry_conf_t *conf = it_conf(env, "ordering", "key", NULL);
        kretry_conf_set_log_cb(conf, count_beyond, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_CHECK_MSG(it_wait_counter(a, KRETRY_COUNTER_OK, 3, 10000), CU_FALSE,
                     "%d handler calls in 10 s, 3 tier copies to handle",
                     env->call_cnt);
        const it_call_t *c[4];
        KT_ASSERT_INT_EQ(it_calls_for(env, "ok-bogus-0", c, 4), 1);
        KT_ASSERT_INT_EQ(it_calls_for(env, "ok-bogus-1", c, 4), 1);
        KT_ASSERT_INT_EQ(it_calls_for(env, "ok-c-retry", c, 4), 1);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        KT_ASSERT(it_tier_at_end(env, 0));
        KT_ASSERT_INT_EQ(atomic_load(&beyond_logged), 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* park_key across instances: a new instance rebuilds the park from the DLQ
 * (the head's kretry-parked-followers copy, the parked followers), so the
 * key's next message is dead-lettered after it, not handled out of order;
 * once a replayed message of the key lifted the park, the next instance
 * sees it on the source above the DLQ's evidence and does not park the key
 * again. */
/* Stop @p a, produce a message of K and one of L, start a new instance. */
static kretry_adapter_t *restart_with(it_env_t *env,
                                      kretry_adapter_t *a,
                                      const char *k_value,
                                      const char *l_value) {
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        produce_k(env, "K", k_value, NULL, NULL);
        produce_k(env, "L", l_value, NULL, NULL);
        env->call_cnt = 0;
        return park_key_adapter(env, "2");
}

static void test_park_rebuilt(void) {
        it_env_t *env = park_env("50ms");
        produce_k(env, "K", "always-h", NULL, NULL);
        produce_k(env, "K", "ok-f1", NULL, NULL);
        produce_k(env, "L", "always-l", NULL, NULL);
        kretry_adapter_t *a = park_key_adapter(env, "2");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_EXHAUSTED, 2, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 1, 20000));

        /* Restarted: K and L are still parked. */
        a = restart_with(env, a, "ok-late", "ok-late-l");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 2, 20000));
        KT_ASSERT(call_at(env, "ok-late", 0) < 0);
        KT_ASSERT(call_at(env, "ok-late-l", 0) < 0);
        /* A replay of K lifts K's park (L's stays). */
        produce_k(env, "K", "ok-replayed", "kretry-replay-count", "1");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));

        /* Restarted again: K flows, L is still parked. */
        a = restart_with(env, a, "ok-after", "ok-after-l");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 1, 20000));
        KT_ASSERT(call_at(env, "ok-after", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-after-l", 0) < 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A DLQ copy that parked @p key, as a kretry that kept parks in the DLQ
 * alone wrote it (class parked, this group, original offset 0). */
static void old_park_copy(it_env_t *env, const char *key) {
        produce_copy(env, 0, key, "parked-before", "kretry-attempt", "1",
                     "kretry-error-class", "parked", "kretry-group", env->group,
                     "kretry-original-topic", env->source,
                     "kretry-original-partition", "0", "kretry-original-offset",
                     "0", NULL);
}

/* The restore takes the parks from the parked-keys topic, not from the
 * DLQ: a DLQ whose parks were never written there (a chain parked by an
 * older kretry) is read once, from its start, on the first assignment,
 * and its parks written to the parked-keys topic; the next restore does
 * not read the DLQ, so a park copy that appeared in the DLQ since (L's,
 * forged) parks nothing, while K's park, migrated, holds. */
static void test_park_restore_skips_dlq(void) {
        it_env_t *env = park_env("50ms");
        old_park_copy(env, "K");
        produce_k(env, "K", "ok-k1", NULL, NULL);
        kretry_adapter_t *a = park_key_adapter(env, "2");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 1, 20000));
        KT_ASSERT(call_at(env, "ok-k1", 0) < 0);
        old_park_copy(env, "L");
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);

        int dlq_reads = kretry_test_restore_dlq_reads;
        produce_k(env, "K", "ok-k2", NULL, NULL);
        produce_k(env, "L", "ok-l", NULL, NULL);
        env->call_cnt = 0;
        a             = park_key_adapter(env, "2");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 1, 20000));
        KT_ASSERT(call_at(env, "ok-l", 0) >= 0);
        KT_ASSERT(call_at(env, "ok-k2", 0) < 0);
        KT_ASSERT_INT_EQ(kretry_test_restore_dlq_reads, dlq_reads);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* How many records park_key's migration was about to write; from the
 * second on it is cut (kretry_test_migration_cut). */
static int migration_records;
static int cut_after_one(void) {
        return ++migration_records > 1;
}

/* A migration cut short (the process killed after the first park record it
 * wrote, before the others and the mark) loses no parked key: the next
 * assignment finds no mark, reads the DLQ again and writes every park,
 * then the mark; the one after reads the parked-keys topic alone, and
 * every key is still parked. */
static void test_park_migration_cut(void) {
        static const char *keys[] = {"K1", "K2", "K3"};
        it_env_t *env             = park_env("50ms");
        for (int i = 0; i < 3; i++)
                old_park_copy(env, keys[i]);
        produce_k(env, "X", "ok-x", NULL, NULL);
        migration_records         = 0;
        kretry_test_migration_cut = cut_after_one;
        int dlq_reads             = kretry_test_restore_dlq_reads;
        kretry_adapter_t *a       = park_key_adapter(env, "2");
        /* Handled after the restore, which ran the migration. */
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        kretry_test_migration_cut = NULL;
        KT_ASSERT_INT_EQ(migration_records, 2); /* cut at the second */
        KT_ASSERT(kretry_test_restore_dlq_reads > dlq_reads);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);

        for (int round = 0; round < 2; round++) {
                char v[32];
                for (int i = 0; i < 3; i++) {
                        snprintf(v, sizeof(v), "ok-%s-%d", keys[i], round);
                        produce_k(env, keys[i], v, NULL, NULL);
                }
                produce_k(env, "L", round ? "ok-l1" : "ok-l0", NULL, NULL);
                dlq_reads     = kretry_test_restore_dlq_reads;
                env->call_cnt = 0;
                a             = park_key_adapter(env, "2");
                KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
                KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 3,
                                          20000));
                for (int i = 0; i < 3; i++) {
                        snprintf(v, sizeof(v), "ok-%s-%d", keys[i], round);
                        KT_CHECK_MSG(call_at(env, v, 0) < 0, CU_FALSE,
                                     "%s handled: its key's park was lost "
                                     "(restart %d)",
                                     v, round + 1);
                }
                /* The first restart migrates again; the second reads the
                 * DLQ no more. */
                if (round)
                        KT_ASSERT_INT_EQ(kretry_test_restore_dlq_reads,
                                         dlq_reads);
                else
                        KT_ASSERT(kretry_test_restore_dlq_reads > dlq_reads);
                KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
                kretry_adapter_destroy(a);
        }
        it_env_destroy(env);
}

/* park_key: the replay that released a key is not committed before the
 * park's tombstone is acknowledged (kretry_commit_periodic waits while
 * a->unparks). The parked-keys partition's leader goes down once K is
 * parked: the tombstone waits, the replay and L's message after it are
 * handled (their offsets stored), and for ten commit intervals the group's
 * committed offset stays at or below the replay's; once the broker is back
 * the tombstone lands, the commit moves past both, and a new instance
 * handles K's next message. A commit past the replay with the tombstone
 * not yet durable would let a process killed then restart with K parked
 * and its replay never coming again. */
static void test_unpark_tombstone_before_commit(void) {
        it_env_t *env = park_env_brokers("50ms", 2);
        rd_kafka_mock_cluster_t *mock =
                it_mock_or_skip(env, "none: a real broker cannot be held "
                                     "down for one partition while the "
                                     "others and the coordinator answer");
        if (!mock)
                return;
        char pt[300];
        parked_topic(env, pt, sizeof(pt));
        rd_kafka_mock_coordinator_set(mock, "group", env->group, 1);
        const char *on1[] = {env->source, env->tiers[0], env->dlq};
        for (int i = 0; i < 3; i++)
                rd_kafka_mock_partition_set_leader(mock, on1[i], 0, 1);
        rd_kafka_mock_partition_set_leader(mock, pt, 0, 2);
        produce_k(env, "K", "always-h", NULL, NULL);
        produce_k(env, "K", "ok-f1", NULL, NULL);
        kretry_adapter_t *a = park_key_adapter(env, "2");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_PARKED, 1, 20000));
        rd_kafka_mock_broker_set_down(mock, 2);
        produce_k(env, "K", "ok-replayed", "kretry-replay-count", "1"); /* 2 */
        produce_k(env, "L", "ok-l", NULL, NULL);                        /* 3 */
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        it_poll_for(a, 1000);
        int64_t held = kt_committed(env->c, env->group, env->source, 0);
        KT_CHECK_MSG(held <= 2, CU_FALSE,
                     "committed %lld with the tombstone of the replay at 2 "
                     "not acknowledged",
                     (long long)held);
        rd_kafka_mock_broker_set_up(mock, 2);
        int64_t committed = held, deadline = kt_now_ms() + 30000;
        while (committed < 4 && kt_now_ms() < deadline) {
                it_poll_for(a, 200);
                committed = kt_committed(env->c, env->group, env->source, 0);
        }
        KT_ASSERT_INT_EQ(committed, 4);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);

        produce_k(env, "K", "ok-next", NULL, NULL);
        env->call_cnt = 0;
        a             = park_key_adapter(env, "2");
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(call_at(env, "ok-next", 0) >= 0);
        KT_ASSERT_INT_EQ(
                kretry_adapter_counter(a, KRETRY_COUNTER_DLQ_PARKED, 0), 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static int txn_commits_sent;
static int count_txn_commit(void) {
        txn_commits_sent++;
        return 0; /* none fails */
}

/* The same under routing=transactional: the park's evidence is read from
 * the DLQ read_committed, and each instance's copies commit with their
 * offsets. */
static void test_park_rebuilt_txn(void) {
        if (!kt_real_only("the mock cluster's transactions write no markers"))
                return;
        park_routing          = "transactional";
        txn_commits_sent      = 0;
        kretry_test_txn_fails = count_txn_commit;
        test_park_rebuilt();
        kretry_test_txn_fails = NULL;
        park_routing          = "at_least_once";
        KT_ASSERT(txn_commits_sent > 0); /* it ran in transactions */
}

/* A second instance joins mid-run, with @p assignor: per-key order still
 * holds across the handover (chains rebuilt by the new owner), nothing is
 * lost. The tiers' delays @p tiers keep chains open until the handover
 * (the incremental one takes two rebalances). */
static void key_order_rebalance(const char *assignor, const char *tiers) {
        it_env_t *env = it_env_new(tiers, 4);
        it_produce_keys(env, KEYS, PER_KEY);
        static order_state_t st;
        memset(&st, 0, sizeof(st));
        kretry_conf_t *c1 = it_conf(
                env, "ordering", "key", "retry.max.attempts", "30",
                "consumer.partition.assignment.strategy", assignor, NULL);
        kretry_conf_t *c2 = kretry_conf_dup(c1);
        kretry_conf_set_handler(c1, order_handler, &st);
        kretry_conf_set_handler(c2, order_handler, &st);
        kretry_conf_set_route_cb(c1, NULL);
        kretry_conf_set_route_cb(c2, NULL);
        kretry_adapter_t *a = it_adapter(c1);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_FORWARDED, 50, 20000));
        kretry_adapter_t *b = it_adapter(c2);
        int64_t deadline    = kt_now_ms() + 90000;
        int resolved        = 0;
        while (!resolved && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
                int ok = 0;
                for (int k = 0; k < KEYS; k++)
                        for (int q = 0; q < PER_KEY; q++)
                                ok += st.ok[k][q] > 0;
                resolved = ok == KEYS * PER_KEY;
        }
        KT_ASSERT(resolved);
        KT_ASSERT_INT_EQ(st.violations, 0);
        KT_ASSERT(kretry_adapter_counter(b, KRETRY_COUNTER_HANDLER_CALLS, 0) >
                  0);
        fprintf(stderr,
                "  %d handler calls, %d duplicates after the handover\n",
                st.calls, st.duplicates);
        kretry_adapter_destroy(a);
        kretry_adapter_destroy(b);
        it_env_destroy(env);
}

static void test_key_order_rebalance_eager(void) {
        if (kt_classic_protocol("an eager assignor"))
                key_order_rebalance("range,roundrobin", "20ms,40ms");
}

static void test_key_order_rebalance_cooperative(void) {
        key_order_rebalance("cooperative-sticky", "1s,2s");
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_key_order_under_failures),
                KT_TEST(test_dead_letter_continue),
                KT_TEST(test_dead_letter_park_key),
                KT_TEST(test_replay_into_tier_lifts_park),
                KT_TEST(test_park_restore_skips_dlq),
                KT_TEST(test_malformed_head_leaves_chain),
                KT_TEST(test_versions),
                KT_TEST(test_overtaken_retry),
                KT_TEST(test_chain_rebuilt),
                KT_TEST(test_many_chains_rebuilt),
                KT_TEST(test_superseded_copy_is_duplicate),
                KT_TEST(test_source_wait_behind_held),
                KT_TEST(test_source_wait_behind_held_concurrent),
                KT_TEST(test_copy_beyond_source),
                KT_TEST(test_malformed_superseded_copy),
                KT_TEST(test_park_rebuilt),
                KT_TEST(test_park_rebuilt_txn),
                KT_TEST(test_park_migration_cut),
                KT_TEST(test_unpark_tombstone_before_commit),
                KT_TEST(test_restore_below_log_start),
                KT_TEST(test_foreign_copy_not_chained),
                KT_TEST(test_foreign_replayed_copy_keeps_park),
                KT_TEST(test_key_order_rebalance_eager),
                KT_TEST(test_key_order_rebalance_cooperative),
                KT_END};
        return kt_main("it_ordering", tests, argc, argv);
}
