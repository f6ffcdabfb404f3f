/*
 * kretry stats, the command itself (KRETRY_CLI_PATH) on the mock cluster:
 * a topology with two tiers and a DLQ whose depth and timestamps the test
 * prepares — messages produced with explicit timestamps, offsets committed
 * for the topology's group by a consumer that never subscribes — so that
 * every figure is known exactly; and --check's exit statuses.
 */
#include "headers.h" /* KRETRY_TOO_LARGE_METADATA, KRETRY_DENIED_METADATA */
#include "testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOUR_MS 3600000LL

typedef struct {
        kt_cluster_t *c;
        char source[128], group[128], tier1[160], tier2[160], dlq[160];
        char yaml[256];
        rd_kafka_t *producer;
        int64_t t0; /* base of the message timestamps */
} env_t;

/* (Re)write the topology file with this alerts: block ("" for none). */
static void write_yaml(env_t *e, const char *alerts) {
        char extra[1024];
        snprintf(extra, sizeof(extra), "      jitter: 0%%\n%s", alerts);
        kt_write_topology(e->c, e->yaml, e->source, e->group, "[1s, 10s]",
                          extra);
}

static env_t *env_new(void) {
        env_t *e = calloc(1, sizeof(*e));
        char errstr[256];
        e->c = kt_cluster_new(1);
        KT_REQUIRE(kt_cluster_topic(e->c, "orders", 2, e->source,
                                    sizeof(e->source)) == 0);
        kt_unique_name("svc", e->group, sizeof(e->group));
        snprintf(e->tier1, sizeof(e->tier1), "%s.retry.1", e->source);
        snprintf(e->tier2, sizeof(e->tier2), "%s.retry.2", e->source);
        snprintf(e->dlq, sizeof(e->dlq), "%s.dlq", e->source);
        KT_REQUIRE(kt_cluster_topic_named(e->c, e->tier1, 2) == 0);
        KT_REQUIRE(kt_cluster_topic_named(e->c, e->tier2, 2) == 0);
        KT_REQUIRE(kt_cluster_topic_named(e->c, e->dlq, 2) == 0);
        snprintf(e->yaml, sizeof(e->yaml), "/tmp/kretry-it-stats-%d-%s.yaml",
                 (int)getpid(), e->group);
        write_yaml(e, "");
        e->producer = rd_kafka_new(RD_KAFKA_PRODUCER, kt_rdkafka_conf(e->c),
                                   errstr, sizeof(errstr));
        KT_REQUIRE(e->producer != NULL);
        e->t0 = kt_wall_ms() - 2 * HOUR_MS;
        return e;
}

static void env_destroy(env_t *e) {
        unlink(e->yaml);
        rd_kafka_destroy(e->producer);
        kt_cluster_destroy(e->c);
        free(e);
}

/* @p n messages to topic/partition with timestamps ts, ts+1, ... */
static void put(env_t *e, const char *topic, int32_t p, int n, int64_t ts) {
        for (int i = 0; i < n; i++) {
                rd_kafka_resp_err_t err = rd_kafka_producev(
                        e->producer, RD_KAFKA_V_TOPIC(topic),
                        RD_KAFKA_V_PARTITION(p),
                        RD_KAFKA_V_VALUE((void *)"v", 1),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_TIMESTAMP(ts + i), RD_KAFKA_V_END);
                KT_REQUIRE(err == 0);
        }
        KT_REQUIRE(rd_kafka_flush(e->producer, 10000) == 0);
}

/* Commit @p offset (with metadata @p md, or none) as @p group: a consumer
 * with its group.id that never subscribes (an assign-and-commit client). */
static void commit_md(env_t *e,
                      const char *group,
                      const char *topic,
                      int32_t p,
                      int64_t offset,
                      const char *md) {
        KT_ASSERT_INT_EQ(kt_commit_md(e->c, group, topic, p, offset, md), 0);
        KT_ASSERT_INT_EQ(kt_committed(e->c, group, topic, p), offset);
}

static void commit_as(env_t *e,
                      const char *group,
                      const char *topic,
                      int32_t p,
                      int64_t offset) {
        commit_md(e, group, topic, p, offset, NULL);
}

static void commit(env_t *e, const char *topic, int32_t p, int64_t offset) {
        commit_as(e, e->group, topic, p, offset);
}

/*
 * The prepared cluster:
 *   source p0: 5 messages at t0..t0+4, committed at 2 -> 3 waiting from t0+2
 *          p1: 3 messages at t0+1h.., committed at 3 -> nothing waits
 *   tier 1 p1: 2 messages at now-5m.., no commit -> 2 waiting
 *   tier 2: empty
 *   DLQ    p0: 3 messages at t0+10.., committed at 2 -> 1 waiting (t0+12)
 *          p1: 1 message at t0+20, no commit -> 1 waiting
 */
static void prepare(env_t *e) {
        put(e, e->source, 0, 5, e->t0);
        put(e, e->source, 1, 3, e->t0 + HOUR_MS);
        put(e, e->tier1, 1, 2, kt_wall_ms() - 300000);
        put(e, e->dlq, 0, 3, e->t0 + 10);
        put(e, e->dlq, 1, 1, e->t0 + 20);
        commit(e, e->source, 0, 2);
        commit(e, e->source, 1, 3);
        commit(e, e->dlq, 0, 2);
}

/* Run "kretry stats --topology FILE ARGS..."; stdout (and with @p both
 * stderr) goes to @p out. Returns the exit status, -1 on a signal. */
static int run_stats(env_t *e,
                     char *out,
                     size_t out_size,
                     int both,
                     const char *const *args) {
        const char *argv[32] = {"kretry", "stats", "--topology", e->yaml};
        int n                = 4;
        for (; args && *args && n < 30; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        return kt_run(KRETRY_CLI_PATH, argv, both, out, out_size);
}

static json_t *stats_json(env_t *e, const char *window) {
        static char out[1 << 16];
        const char *args[] = {"--output", "json", "--window", window, NULL};
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 0, args), 0);
        json_error_t jerr;
        json_t *j = json_loads(out, 0, &jerr);
        KT_CHECK_MSG(j != NULL, CU_TRUE, "not JSON: %s", out);
        return j;
}

static json_t *topic(json_t *j, const char *name) {
        json_t *t = json_object_get(j, "topics"), *v;
        size_t i;
        json_array_foreach(
                t, i,
                v) if (!strcmp(json_string_value(json_object_get(v, "topic")),
                               name)) return v;
        KT_CHECK_MSG(0, CU_TRUE, "no topic %s in the output", name);
        return NULL;
}

static int64_t num(json_t *t, const char *field) {
        json_t *v = json_object_get(t, field);
        KT_CHECK_MSG(json_is_integer(v), CU_FALSE, "%s is not an integer",
                     field);
        return json_integer_value(v);
}

static void
check_topic(json_t *j, const char *name, int64_t waiting, int64_t oldest_ts) {
        json_t *t   = topic(j, name);
        int64_t at  = num(j, "at_ms");
        int64_t age = oldest_ts < 0 ? 0 : at - oldest_ts;
        json_t *jts = json_object_get(t, "oldest_timestamp_ms");
        KT_ASSERT_INT_EQ(num(t, "partitions"), 2);
        KT_ASSERT_INT_EQ(num(t, "waiting"), waiting);
        if (oldest_ts < 0)
                KT_ASSERT(json_is_null(jts));
        else
                KT_ASSERT_INT_EQ(json_integer_value(jts), oldest_ts);
        KT_ASSERT_INT_EQ(num(t, "oldest_age_ms"), age);
        KT_ASSERT(json_is_null(json_object_get(t, "error")));
}

static void test_figures(void) {
        env_t *e = env_new();
        prepare(e);
        json_t *j = stats_json(e, "0");
        KT_ASSERT_STR_EQ(json_string_value(json_object_get(j, "group")),
                         e->group);
        KT_ASSERT_INT_EQ(num(j, "window_ms"), 0);
        check_topic(j, e->source, 3, e->t0 + 2);
        KT_ASSERT_STR_EQ(
                json_string_value(json_object_get(topic(j, e->source), "role")),
                "source");
        json_t *t1 = topic(j, e->tier1);
        KT_ASSERT_INT_EQ(num(t1, "waiting"), 2);
        KT_ASSERT_INT_EQ(num(t1, "tier"), 1);
        check_topic(j, e->tier2, 0, -1);
        check_topic(j, e->dlq, 2, e->t0 + 12);
        KT_ASSERT(json_is_null(
                json_object_get(topic(j, e->source), "arrival_rate")));
        KT_ASSERT(json_is_null(
                json_object_get(topic(j, e->source), "drain_seconds")));
        KT_ASSERT_INT_EQ(json_array_size(json_object_get(j, "alerts")), 0);
        json_decref(j);

        /* Rates over 1 s without traffic: 0; drain never where messages
         * wait, 0 s where none do. */
        j = stats_json(e, "1s");
        KT_ASSERT_INT_EQ(num(j, "window_ms"), 1000);
        json_t *s = topic(j, e->source);
        KT_ASSERT(json_real_value(json_object_get(s, "arrival_rate")) == 0.0);
        KT_ASSERT(json_real_value(json_object_get(s, "consume_rate")) == 0.0);
        KT_ASSERT_STR_EQ(json_string_value(json_object_get(s, "drain_seconds")),
                         "never");
        KT_ASSERT(json_real_value(json_object_get(topic(j, e->tier2),
                                                  "drain_seconds")) == 0.0);
        json_decref(j);
        env_destroy(e);
}

static void test_check(void) {
        static char out[1 << 16];
        const char *check[] = {"--check",  "--window", "0",
                               "--output", "json",     NULL};
        env_t *e            = env_new();
        prepare(e);

        /* DLQ 2 < 3; the source's oldest is ~2h old < 3h; tier 1's 5 min
         * < 1s + 3h */
        write_yaml(e, "    alerts: { dlq_messages: 3, oldest_age: 3h }\n");
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 0);
        KT_ASSERT(strstr(out, "ALERT") == NULL);

        /* the DLQ reaches its limit exactly */
        put(e, e->dlq, 1, 1, e->t0 + 30);
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 2);
        KT_CHECK_MSG(strstr(out, "ALERT dlq_messages: ") &&
                             strstr(out, "holds 3 messages (limit 3)"),
                     CU_FALSE, "no dlq_messages alert named in:\n%s", out);

        /* the source's oldest waiting message is older than 1h */
        write_yaml(e, "    alerts: { oldest_age: 1h }\n");
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 2);
        KT_CHECK_MSG(strstr(out, "ALERT oldest_age: ") &&
                             strstr(out, " old (limit 1h)"),
                     CU_FALSE, "no oldest_age alert named in:\n%s", out);

        /* once the group has consumed the source, nothing fires */
        commit(e, e->source, 0, 5);
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 0);

        /* dlq_rate needs rates: with --window 0 it cannot be told */
        write_yaml(e, "    alerts: { dlq_rate: 5 }\n");
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 1);
        KT_CHECK_MSG(strstr(out, "UNKNOWN dlq_rate: cannot tell how fast "
                                 "messages arrive in ") != NULL,
                     CU_FALSE, "no unknown dlq_rate in:\n%s", out);

        /* no alerts declared: only refused copies are checked, exit 0 */
        write_yaml(e, "");
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 0);
        KT_ASSERT(strstr(out, "only copies refused (as too large, or for want "
                              "of an ACL) are checked") != NULL);
        env_destroy(e);
}

/* A partition whose copy the broker refuses as too large carries the
 * adapter's mark on its commit (it_lifecycle test_refused_copy_too_large):
 * --check alerts on it whatever the topology declares, naming the topic
 * to fix, and stops once a commit without the mark moved it on. */
static void test_copy_too_large(void) {
        env_t *e = env_new();
        char out[1 << 14], md[512];
        const char *check[] = {"--check", "--window", "0", NULL};
        prepare(e);
        snprintf(md, sizeof(md), "%s%s", KRETRY_TOO_LARGE_METADATA, e->tier1);
        commit_md(e, e->group, e->source, 1, 3, md);
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 2);
        char want[1024];
        snprintf(want, sizeof(want),
                 "ALERT   copy_too_large: %s [1] is stuck: %s refuses its copy "
                 "as too large; raise max.message.bytes of %s",
                 e->source, e->tier1, e->tier1);
        KT_CHECK_MSG(strstr(out, want) != NULL, CU_FALSE, "no \"%s\" in:\n%s",
                     want, out);
        /* Any other metadata is not the mark. */
        commit_md(e, e->group, e->source, 1, 3, "kretry: something else");
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 0);
        commit_md(e, e->group, e->source, 1, 3, md);
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 2);
        commit(e, e->source, 1, 3);
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 0);
        KT_CHECK_MSG(strstr(out, "copy_too_large") == NULL, CU_FALSE,
                     "still alerting:\n%s", out);
        env_destroy(e);
}

/* A partition whose copy the cluster refuses for want of an ACL carries
 * the adapter's other mark (it_denied test_copy_denied_close_prompt):
 * --check alerts on it, naming the topic whose Write is missing, and stops
 * once a commit without the mark moved it on. */
static void test_copy_denied(void) {
        env_t *e = env_new();
        char out[1 << 14], md[512];
        const char *check[] = {"--check", "--window", "0", NULL};
        prepare(e);
        snprintf(md, sizeof(md), "%s%s", KRETRY_DENIED_METADATA, e->dlq);
        commit_md(e, e->group, e->source, 0, 2, md);
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 2);
        char want[1024];
        snprintf(want, sizeof(want),
                 "ALERT   copy_denied: %s [0] is stuck: %s refuses its copy "
                 "for want of an ACL; grant Write on %s to the service's "
                 "principal",
                 e->source, e->dlq, e->dlq);
        KT_CHECK_MSG(strstr(out, want) != NULL, CU_FALSE, "no \"%s\" in:\n%s",
                     want, out);
        KT_CHECK_MSG(strstr(out, "copy_too_large") == NULL, CU_FALSE,
                     "the ACL's mark read as too large:\n%s", out);
        commit(e, e->source, 0, 2);
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 0);
        env_destroy(e);
}

/* On the DLQ, kretry dlq replay's progress counts where the group has no
 * committed offset: what a replay went past was dealt with. */
static void test_dlq_replay_progress(void) {
        char replay[160];
        env_t *e = env_new();
        prepare(e);
        snprintf(replay, sizeof(replay), "%s.kretry-replay", e->group);
        commit_as(e, replay, e->dlq, 1, 1); /* p1 replayed */
        commit_as(e, replay, e->dlq, 0, 3); /* the group's 2 wins on p0 */
        json_t *j = stats_json(e, "0");
        check_topic(j, e->dlq, 1, e->t0 + 12);
        json_decref(j);

        commit(e, e->dlq, 0, 3); /* the group is past everything on p0 */
        j = stats_json(e, "0");
        check_topic(j, e->dlq, 0, -1);
        json_decref(j);
        env_destroy(e);
}

/* What the cluster does not answer is said, and --check cannot pass. */
static void test_unanswered(void) {
        static char out[1 << 16];
        const char *check[] = {"--check",     "--window",    "0",
                               "--bootstrap", "127.0.0.1:1", "--timeout",
                               "1000",        NULL};
        env_t *e            = env_new();
        write_yaml(e, "    alerts: { dlq_messages: 1 }\n");
        KT_ASSERT_INT_EQ(run_stats(e, out, sizeof(out), 1, check), 1);
        KT_CHECK_MSG(strstr(out,
                            "(bootstrap.servers 127.0.0.1:1) did not "
                            "answer a metadata request within 1000 ms") != NULL,
                     CU_FALSE, "unexpected output:\n%s", out);
        env_destroy(e);
}

/* @p n messages to the source's partition 0 in one committed transaction:
 * a commit marker follows them. */
static void put_transaction(env_t *e, int n) {
        char errstr[256], txid[160];
        rd_kafka_conf_t *conf = kt_rdkafka_conf(e->c);
        kt_unique_name("tx", txid, sizeof(txid));
        rd_kafka_conf_set(conf, "transactional.id", txid, NULL, 0);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        KT_REQUIRE(rk != NULL);
        rd_kafka_error_t *err = rd_kafka_init_transactions(rk, 30000);
        if (!err)
                err = rd_kafka_begin_transaction(rk);
        for (int i = 0; !err && i < n; i++)
                KT_REQUIRE(rd_kafka_producev(
                                   rk, RD_KAFKA_V_TOPIC(e->source),
                                   RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_VALUE((void *)"v", 1),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_END) == 0);
        if (!err)
                err = rd_kafka_commit_transaction(rk, 30000);
        KT_CHECK_MSG(err == NULL, CU_TRUE, "transaction: %s",
                     err ? rd_kafka_error_string(err) : "");
        rd_kafka_destroy(rk);
}

/* A transactional source the group consumed to its last record: its
 * committed offset stops before the commit marker, and nothing waits. Only
 * a real cluster writes markers (the mock's transactions are not real). */
static void test_transactional_source(void) {
        if (!kt_real_only("the mock cluster writes no transaction markers"))
                return;
        env_t *e = env_new();
        put_transaction(e, 3);
        commit(e, e->source, 0, 3);
        json_t *j = stats_json(e, "0");
        check_topic(j, e->source, 0, -1);
        json_decref(j);
        /* A record after the marker waits, and the count includes the
         * marker between (an upper bound, docs/stats.md). */
        put(e, e->source, 0, 1, e->t0);
        j = stats_json(e, "0");
        check_topic(j, e->source, 2, e->t0);
        json_decref(j);
        env_destroy(e);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_figures),
                                          KT_TEST(test_check),
                                          KT_TEST(test_copy_too_large),
                                          KT_TEST(test_copy_denied),
                                          KT_TEST(test_dlq_replay_progress),
                                          KT_TEST(test_unanswered),
                                          KT_TEST(test_transactional_source),
                                          KT_END};
        return kt_main("it_stats", tests, argc, argv);
}
