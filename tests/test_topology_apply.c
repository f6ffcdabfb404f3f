/*
 * The admin layer against a cluster. On librdkafka's mock cluster (no admin
 * APIs, and names no controller among its brokers) the snapshot and plan
 * work from Metadata alone and apply fails at once with a clear message;
 * against real Kafka (KRETRY_TEST_BOOTSTRAP) apply creates, grows and
 * re-configures the chain, and a second apply finds nothing to do.
 */
#include "admin.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
        kretry_topology_file_t *f;
        rd_kafka_t *rk;
        kretry_plan_t plan;
} env_t;

/* The login of KRETRY_TEST_SERVICE_PROPS (the secured pass: its admin)
 * as lines of the kafka: section. */
static void login_prop(const char *name, const char *value, void *opaque) {
        char *login = opaque;
        size_t n    = strlen(login);
        snprintf(login + n, 2048 - n, "  %s: \"%s\"\n", name, value);
}

static void env_open(env_t *e,
                     const kt_cluster_t *c,
                     const char *source,
                     const char *topics) {
        char yaml[3072], login[2048] = "", err[512];
        kretry_diags_t d;
        kt_env_props("KRETRY_TEST_SERVICE_PROPS", login_prop, login);
        snprintf(yaml, sizeof(yaml),
                 "kafka:\n  bootstrap.servers: \"%s\"\n%s"
                 "topologies:\n  - source: %s\n    group: g\n"
                 "    retry: { tiers: [1s, 10s] }\n    topics: { %s }\n",
                 kt_cluster_bootstrap(c), login, source, topics);
        kretry_diags_init(&d);
        memset(e, 0, sizeof(*e));
        e->f = kretry_topology_file_parse(yaml, strlen(yaml), "t.yaml", &d);
        KT_REQUIRE(e->f != NULL);
        kretry_diags_clear(&d);
        e->rk = kretry_admin_new(e->f, NULL, err, sizeof(err));
        KT_REQUIRE(e->rk != NULL);
}

/* Snapshot and plan; returns the snapshot's result. */
static int env_plan(env_t *e, int timeout_ms) {
        char err[512];
        kretry_meta_t meta = {0};
        kretry_plan_clear(&e->plan);
        int r = kretry_admin_snapshot(e->rk, kretry_topology_at(e->f, 0), 1,
                                      timeout_ms, &meta, err, sizeof(err));
        KT_CHECK_MSG(r >= 0, CU_TRUE, "snapshot: %.500s", err);
        KT_REQUIRE(kretry_plan_compute(kretry_topology_at(e->f, 0), 1, &meta,
                                       &e->plan) == 0);
        kretry_meta_clear(&meta);
        return r;
}

static void env_close(env_t *e) {
        kretry_plan_clear(&e->plan);
        rd_kafka_destroy(e->rk);
        kretry_topology_file_destroy(e->f);
}

static void test_mock_fails_fast(void) {
        char source[128];
        kt_cluster_t *c = kt_cluster_new(1);
        KT_REQUIRE(c != NULL);
        if (!kt_cluster_mock(c)) {
                kt_skip("a real cluster answers: test_real_apply covers it");
                kt_cluster_destroy(c);
                return;
        }
        KT_REQUIRE(kt_cluster_topic(c, "topo", 3, source, sizeof(source)) == 0);
        env_t e;
        env_open(&e, c, source, "retention: 1d");
        /* The source exists, its configuration cannot be asked: a note,
         * at once (no DescribeConfigs waiting for a controller). */
        int64_t t0 = kt_now_ms();
        KT_ASSERT_INT_EQ(env_plan(&e, 500), 1);
        KT_ASSERT(kt_now_ms() - t0 < 400);
        KT_ASSERT_INT_EQ(e.plan.changes, 3);
        KT_ASSERT_INT_EQ(e.plan.actions[0].partitions, 3);
        t0 = kt_now_ms();
        KT_ASSERT_INT_EQ(kretry_admin_apply(e.rk, &e.plan, 300), 3);
        KT_CHECK_MSG(kt_now_ms() - t0 < 3000, CU_FALSE, "apply took %lld ms",
                     (long long)(kt_now_ms() - t0));
        KT_CHECK_MSG(strstr(e.plan.actions[0].result,
                            "names no controller among its brokers") != NULL,
                     CU_FALSE, "result: %s", e.plan.actions[0].result);
        env_close(&e);
        kt_cluster_destroy(c);
}

static void apply_ok(env_t *e) {
        KT_ASSERT_INT_EQ(kretry_admin_apply(e->rk, &e->plan, 10000), 0);
        for (size_t i = 0; i < e->plan.cnt; i++)
                KT_CHECK_MSG(
                        e->plan.actions[i].done == 1, CU_FALSE, "%s %s: %s",
                        kretry_plan_op_name(e->plan.actions[i].op),
                        e->plan.actions[i].topic, e->plan.actions[i].result);
}

/* Plans until nothing is left, at most @p timeout_ms: Kafka answers
 * CreatePartitions and AlterConfigs before every broker shows the change,
 * so a plan right after an apply may still list it (what `kretry topology
 * apply` waits out before it returns). Prints what lingered, and for how
 * long; returns the plan's last count. */
static size_t settle(env_t *e, int timeout_ms) {
        int64_t t0 = kt_now_ms();
        env_plan(e, 10000);
        for (size_t i = 0; i < e->plan.cnt; i++)
                fprintf(stderr, "  still planned right after apply: %s %s\n",
                        kretry_plan_op_name(e->plan.actions[i].op),
                        e->plan.actions[i].topic);
        while (e->plan.cnt && kt_now_ms() - t0 < timeout_ms) {
                struct timespec ts = {0, 100 * 1000 * 1000};
                nanosleep(&ts, NULL);
                env_plan(e, 10000);
        }
        if (kt_now_ms() - t0 > 200)
                fprintf(stderr, "  the plan was empty after %lld ms\n",
                        (long long)(kt_now_ms() - t0));
        return e->plan.cnt;
}

static void test_real_apply(void) {
        char source[128];
        env_t e;
        if (!kt_real_only(NULL))
                return;
        kt_cluster_t *c = kt_cluster_new(1);
        KT_REQUIRE(kt_cluster_topic(c, "topo", 3, source, sizeof(source)) == 0);
        env_open(&e, c, source, "retention: 1d");
        KT_ASSERT_INT_EQ(env_plan(&e, 10000), 0);
        KT_ASSERT_INT_EQ(e.plan.changes, 3);
        apply_ok(&e);
        KT_ASSERT_INT_EQ(settle(&e, 10000), 0); /* idempotent */
        env_close(&e);

        /* More partitions and another retention: grow and alter. */
        env_open(&e, c, source, "retention: 2d, partitions: 5");
        env_plan(&e, 10000);
        KT_ASSERT_INT_EQ(e.plan.changes, 6);
        apply_ok(&e);
        KT_ASSERT_INT_EQ(settle(&e, 10000), 0);
        env_close(&e);

        /* Fewer partitions than the source: refused. */
        env_open(&e, c, source, "partitions: 2");
        env_plan(&e, 10000);
        KT_ASSERT_INT_EQ(e.plan.conflicts, 1);
        KT_ASSERT_INT_EQ(kretry_admin_apply(e.rk, &e.plan, 1000), -1);
        env_close(&e);
        kt_cluster_destroy(c);
}

/* The names of @p res's entries, in order, comma-separated. */
static void
entries(const rd_kafka_ConfigResource_t *res, char *buf, size_t size) {
        size_t n, len = 0;
        const rd_kafka_ConfigEntry_t **e =
                rd_kafka_ConfigResource_configs(res, &n);
        buf[0] = '\0';
        for (size_t i = 0; i < n && len < size; i++)
                len += (size_t)snprintf(buf + len, size - len, "%s%s=%s",
                                        i ? "," : "",
                                        rd_kafka_ConfigEntry_name(e[i]),
                                        rd_kafka_ConfigEntry_value(e[i]));
}

/* AlterConfigs replaces the dynamic configuration: the request carries
 * the current entries with the changes applied, each key once (Kafka
 * answers INVALID_REQUEST to a key named twice). */
static void test_alter_request(void) {
        char got[1024];
        const kretry_admin_kv_t cur[] = {{"retention.ms", "86400000"},
                                         {"segment.bytes", "1048576"},
                                         {"min.insync.replicas", "1"}};
        const kretry_admin_kv_t ch[]  = {{"retention.ms", "604800000"},
                                         {"min.insync.replicas", "2"},
                                         {"max.message.bytes", "1179660"}};
        rd_kafka_ConfigResource_t *res =
                kretry_admin_alter_request("t", cur, 3, ch, 3);
        KT_REQUIRE(res != NULL);
        entries(res, got, sizeof(got));
        KT_ASSERT_STR_EQ(got, "segment.bytes=1048576,retention.ms=604800000,"
                              "min.insync.replicas=2,max.message.bytes="
                              "1179660");
        rd_kafka_ConfigResource_destroy(res);
        /* A repeated key (in what DescribeConfigs reported, or in the
         * changes) is sent once; no changes: the current entries. */
        const kretry_admin_kv_t dup[] = {{"a", "1"}, {"a", "2"}, {"b", "3"}};
        res = kretry_admin_alter_request("t", dup, 3, dup + 2, 0);
        entries(res, got, sizeof(got));
        KT_ASSERT_STR_EQ(got, "a=1,b=3");
        rd_kafka_ConfigResource_destroy(res);
        res = kretry_admin_alter_request("t", NULL, 0, dup, 3);
        entries(res, got, sizeof(got));
        KT_ASSERT_STR_EQ(got, "a=1,b=3");
        rd_kafka_ConfigResource_destroy(res);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_alter_request),
                                          KT_TEST(test_mock_fails_fast),
                                          KT_TEST(test_real_apply), KT_END};
        return kt_main("topology_apply", tests, argc, argv);
}
