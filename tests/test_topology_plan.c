/*
 * The plan as a pure function: declared topologies against hand-built
 * metadata snapshots (empty, partial, complete, conflicting clusters).
 */
#include "plan.h"
#include "testutil.h"
#include "topology.h"

#include <string.h>

#define DAY_MS (86400000LL)

/* Parse @p yaml (one topology), or fail the test. */
static kretry_topology_file_t *parse(const char *yaml) {
        kretry_diags_t d;
        kretry_diags_init(&d);
        kretry_topology_file_t *f =
                kretry_topology_file_parse(yaml, strlen(yaml), "t.yaml", &d);
        kretry_diags_clear(&d);
        KT_REQUIRE(f != NULL);
        return f;
}

/* orders: 3 tiers, DLQ, retention 7d; partitions from the source unless
 * @p partitions is given. */
static kretry_topology_file_t *load(const char *partitions) {
        char yaml[512];
        snprintf(yaml, sizeof(yaml),
                 "topologies:\n  - source: orders\n    group: g\n"
                 "    retry: { tiers: [1s, 10s, 1m] }\n"
                 "    topics: { retention: 7d%s%s }\n",
                 partitions ? ", partitions: " : "",
                 partitions ? partitions : "");
        return parse(yaml);
}

static void plan(const kretry_topology_file_t *f,
                 const kretry_meta_t *m,
                 kretry_plan_t *p) {
        memset(p, 0, sizeof(*p));
        KT_REQUIRE(kretry_plan_compute(kretry_topology_at(f, 0),
                                       kretry_topology_count(f), m, p) == 0);
}

static void assert_action(const kretry_plan_t *p,
                          size_t i,
                          kretry_plan_op_t op,
                          const char *topic,
                          int partitions) {
        KT_REQUIRE(i < p->cnt);
        KT_ASSERT_STR_EQ(kretry_plan_op_name(p->actions[i].op),
                         kretry_plan_op_name(op));
        KT_ASSERT_STR_EQ(p->actions[i].topic, topic);
        KT_ASSERT_INT_EQ(p->actions[i].partitions, partitions);
}

static void test_empty_cluster(void) {
        kretry_topology_file_t *f = load("6");
        kretry_meta_t m           = {0};
        kretry_plan_t p;
        KT_REQUIRE(f != NULL);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 5);
        KT_ASSERT_INT_EQ(p.changes, 5);
        KT_ASSERT_INT_EQ(p.conflicts, 0);
        assert_action(&p, 0, KRETRY_PLAN_CREATE, "orders", 6);
        KT_ASSERT_INT_EQ(p.actions[0].retention_ms, 0); /* not kretry's */
        assert_action(&p, 1, KRETRY_PLAN_CREATE, "orders.retry.1", 6);
        assert_action(&p, 3, KRETRY_PLAN_CREATE, "orders.retry.3", 6);
        assert_action(&p, 4, KRETRY_PLAN_CREATE, "orders.dlq", 6);
        KT_ASSERT_INT_EQ(p.actions[4].retention_ms, 7 * DAY_MS);
        KT_ASSERT_STR_EQ(p.actions[4].role, "dlq");
        kretry_plan_clear(&p);
        kretry_topology_file_destroy(f);
}

static void test_empty_cluster_unsized(void) {
        kretry_topology_file_t *f = load(NULL);
        kretry_meta_t m           = {0};
        kretry_plan_t p;
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 1);
        KT_ASSERT_INT_EQ(p.conflicts, 1);
        KT_ASSERT_INT_EQ(p.actions[0].op, KRETRY_PLAN_CONFLICT);
        KT_ASSERT(strstr(p.actions[0].reason, "does not exist") != NULL);
        kretry_plan_clear(&p);
        kretry_topology_file_destroy(f);
}

static void test_partial_cluster(void) {
        kretry_topology_file_t *f = load(NULL);
        kretry_meta_t m           = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 8, -1);
        kretry_meta_add(&m, "orders.retry.1", 8, 7 * DAY_MS);
        kretry_meta_add(&m, "orders.retry.2", 4, 1 * DAY_MS);
        kretry_meta_add(&m, "unrelated", 1, DAY_MS);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.conflicts, 0);
        KT_ASSERT_INT_EQ(p.cnt, 4);
        assert_action(&p, 0, KRETRY_PLAN_ADD_PARTITIONS, "orders.retry.2", 8);
        KT_ASSERT_INT_EQ(p.actions[0].current_partitions, 4);
        KT_ASSERT_INT_EQ(p.actions[1].op, KRETRY_PLAN_ALTER_CONFIG);
        KT_ASSERT_STR_EQ(p.actions[1].topic, "orders.retry.2");
        KT_ASSERT_INT_EQ(p.actions[1].current_retention_ms, DAY_MS);
        KT_ASSERT_INT_EQ(p.actions[1].retention_ms, 7 * DAY_MS);
        assert_action(&p, 2, KRETRY_PLAN_CREATE, "orders.retry.3", 8);
        assert_action(&p, 3, KRETRY_PLAN_CREATE, "orders.dlq", 8);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

static void test_complete_cluster(void) {
        kretry_topology_file_t *f = load(NULL);
        kretry_meta_t m           = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 8, DAY_MS); /* source: left alone */
        kretry_meta_add(&m, "orders.retry.1", 8, 7 * DAY_MS);
        kretry_meta_add(&m, "orders.retry.2", 8, 7 * DAY_MS);
        /* more partitions than needed: never shrunk */
        kretry_meta_add(&m, "orders.retry.3", 16, 7 * DAY_MS);
        kretry_meta_add(&m, "orders.dlq", 8, 7 * DAY_MS);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 0);
        KT_ASSERT_INT_EQ(p.changes, 0);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

static void test_conflicting_cluster(void) {
        kretry_topology_file_t *f = load("6");
        kretry_meta_t m           = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 12, -1);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.conflicts, 1);
        KT_ASSERT_INT_EQ(p.changes, 0);
        KT_ASSERT_INT_EQ(p.cnt, 1);
        KT_ASSERT(strstr(p.actions[0].reason, "the source has 12") != NULL);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

static void test_unknown_retention(void) {
        kretry_topology_file_t *f = load(NULL);
        kretry_meta_t m           = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 4, -1);
        kretry_meta_add(&m, "orders.retry.1", 4, -1);
        kretry_meta_add(&m, "orders.retry.2", 4, 7 * DAY_MS);
        kretry_meta_add(&m, "orders.retry.3", 4, 7 * DAY_MS);
        kretry_meta_add(&m, "orders.dlq", 4, 7 * DAY_MS);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 1);
        KT_ASSERT_INT_EQ(p.changes, 0);
        KT_ASSERT_INT_EQ(p.actions[0].op, KRETRY_PLAN_UNKNOWN);
        KT_ASSERT_STR_EQ(p.actions[0].topic, "orders.retry.1");
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

/* Two topologies on one source: the source is sized once, each chain
 * planned. */
static void test_shared_source(void) {
        kretry_diags_t d;
        kretry_meta_t m = {0};
        kretry_plan_t p;
        kretry_diags_init(&d);
        kretry_topology_file_t *f = kretry_topology_file_load(
                KRETRY_SOURCE_DIR "/tests/topology/valid/shared-topics.yaml",
                &d);
        KT_REQUIRE(f != NULL);
        kretry_meta_add(&m, "orders", 3, -1);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 5);
        assert_action(&p, 0, KRETRY_PLAN_CREATE, "orders.billing.retry.1", 3);
        assert_action(&p, 4, KRETRY_PLAN_CREATE, "orders.shipping.dlq", 3);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
}

/* versioning adds the compacted changelog, co-partitioned with the source,
 * and grows it with the chain. */
static void test_versions_changelog(void) {
        const char *yaml = "topologies:\n  - source: orders\n    group: g\n"
                           "    retry: { tiers: [1s] }\n"
                           "    versioning: { header: version }\n";
        kretry_diags_t d;
        kretry_diags_init(&d);
        kretry_topology_file_t *f =
                kretry_topology_file_parse(yaml, strlen(yaml), "t.yaml", &d);
        kretry_diags_clear(&d);
        KT_REQUIRE(f != NULL);
        kretry_meta_t m = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 4, -1);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 3);
        assert_action(&p, 2, KRETRY_PLAN_CREATE, "g.orders.versions", 4);
        KT_ASSERT_INT_EQ(p.actions[2].compact, 1);
        KT_ASSERT_INT_EQ(p.actions[2].retention_ms, 0);
        KT_ASSERT_STR_EQ(p.actions[2].role, "versions");
        kretry_plan_clear(&p);
        kretry_meta_add(&m, "orders.retry.1", 4, -1);
        kretry_meta_add(&m, "orders.dlq", 4, -1);
        kretry_meta_add(&m, "g.orders.versions", 2, -1);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 1);
        assert_action(&p, 0, KRETRY_PLAN_ADD_PARTITIONS, "g.orders.versions",
                      4);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

/* park_key adds the compacted topic of the parked keys, co-partitioned
 * with the source, like the changelog; ordering: key alone does not. */
static void test_parked_topic(void) {
        kretry_topology_file_t *f =
                parse("topologies:\n  - source: orders\n    group: g\n"
                      "    retry: { tiers: [1s] }\n"
                      "    ordering: key\n    on_dead_letter: park_key\n");
        kretry_meta_t m = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 4, -1);
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 3);
        assert_action(&p, 2, KRETRY_PLAN_CREATE, "g.orders.parked", 4);
        KT_ASSERT_INT_EQ(p.actions[2].compact, 1);
        KT_ASSERT_INT_EQ(p.actions[2].retention_ms, 0);
        KT_ASSERT_STR_EQ(p.actions[2].role, "parked");
        kretry_plan_clear(&p);
        kretry_topology_file_destroy(f);
        f = parse("topologies:\n  - source: orders\n    group: g\n"
                  "    retry: { tiers: [1s] }\n    ordering: key\n");
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 2);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

/* Created topics get min.insync.replicas = min(2, replication), or the
 * declared value, and tiers and the DLQ the source's max.message.bytes
 * plus the copy headroom; the changelog no size limit of its own. */
static void test_create_configs(void) {
        kretry_topology_file_t *f =
                parse("topologies:\n  - source: orders\n    group: g\n"
                      "    retry: { tiers: [1s] }\n"
                      "    versioning: { header: version }\n"
                      "    topics: { replication: 3 }\n");
        kretry_meta_t m = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 4, -1);
        m.topics[0].max_message_bytes = 1048588;
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 3);
        for (size_t i = 0; i < p.cnt; i++)
                KT_ASSERT_INT_EQ(p.actions[i].min_insync, 2);
        KT_ASSERT_INT_EQ(p.actions[0].max_message_bytes,
                         1048588 + KRETRY_COPY_HEADROOM);
        KT_ASSERT_INT_EQ(p.actions[1].max_message_bytes,
                         1048588 + KRETRY_COPY_HEADROOM);
        KT_ASSERT_STR_EQ(p.actions[2].role, "versions");
        KT_ASSERT_INT_EQ(p.actions[2].max_message_bytes, 0);
        kretry_plan_clear(&p);
        kretry_topology_file_destroy(f);
        /* replication 1: min(2, 1); the source's limit unknown: none. */
        f = parse("topologies:\n  - source: orders\n    group: g\n"
                  "    retry: { tiers: [1s] }\n"
                  "    topics: { replication: 1 }\n");
        m.topics[0].max_message_bytes = -1;
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.actions[0].min_insync, 1);
        KT_ASSERT_INT_EQ(p.actions[0].max_message_bytes, 0);
        kretry_plan_clear(&p);
        kretry_topology_file_destroy(f);
        /* Declared: as declared; replication not declared: unknown. */
        f = parse("topologies:\n  - source: orders\n    group: g\n"
                  "    retry: { tiers: [1s] }\n"
                  "    topics: { min_insync_replicas: 3 }\n");
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.actions[0].min_insync, 3);
        kretry_plan_clear(&p);
        kretry_topology_file_destroy(f);
        f = parse("topologies:\n  - source: orders\n    group: g\n"
                  "    retry: { tiers: [1s] }\n");
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.actions[0].min_insync, 0);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

/* Existing topics: min.insync.replicas and max.message.bytes are raised
 * (never lowered) in one ALTER_CONFIG with the retention. */
static void test_alter_configs(void) {
        kretry_topology_file_t *f = load(NULL);
        kretry_meta_t m           = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 4, -1);
        m.topics[0].max_message_bytes = 2000000;
        const char *names[]           = {"orders.retry.1", "orders.retry.2",
                                         "orders.retry.3", "orders.dlq"};
        for (int i = 0; i < 4; i++) {
                kretry_meta_add(&m, names[i], 4, 7 * DAY_MS);
                kretry_meta_topic_t *t = &m.topics[m.cnt - 1];
                t->replication         = 3;
                t->min_insync          = 2;
                t->max_message_bytes   = 4000000;
        }
        m.topics[1].retention_ms      = DAY_MS;  /* retry.1: retention */
        m.topics[1].min_insync        = 1;       /* and min.insync */
        m.topics[2].max_message_bytes = 1048588; /* retry.2: too small */
        m.topics[3].min_insync        = 3;       /* retry.3: left alone */
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 2);
        KT_ASSERT_INT_EQ(p.changes, 2);
        assert_action(&p, 0, KRETRY_PLAN_ALTER_CONFIG, "orders.retry.1", 0);
        KT_ASSERT_INT_EQ(p.actions[0].retention_ms, 7 * DAY_MS);
        KT_ASSERT_INT_EQ(p.actions[0].current_retention_ms, DAY_MS);
        KT_ASSERT_INT_EQ(p.actions[0].min_insync, 2);
        KT_ASSERT_INT_EQ(p.actions[0].current_min_insync, 1);
        KT_ASSERT_INT_EQ(p.actions[0].max_message_bytes, 0);
        assert_action(&p, 1, KRETRY_PLAN_ALTER_CONFIG, "orders.retry.2", 0);
        KT_ASSERT_INT_EQ(p.actions[1].retention_ms, 0);
        KT_ASSERT_INT_EQ(p.actions[1].min_insync, 0);
        KT_ASSERT_INT_EQ(p.actions[1].max_message_bytes,
                         2000000 + KRETRY_COPY_HEADROOM);
        KT_ASSERT_INT_EQ(p.actions[1].current_max_message_bytes, 1048588);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

/* A changelog that exists with delete cleanup is made compact (a tier
 * never is); one whose policy is unknown is left alone. */
static void test_changelog_compacted(void) {
        kretry_topology_file_t *f =
                parse("topologies:\n  - source: orders\n    group: g\n"
                      "    retry: { tiers: [1s] }\n"
                      "    versioning: { header: version }\n");
        kretry_meta_t m = {0};
        kretry_plan_t p;
        kretry_meta_add(&m, "orders", 4, -1);
        kretry_meta_add(&m, "orders.retry.1", 4, -1);
        kretry_meta_add(&m, "orders.dlq", 4, -1);
        kretry_meta_add(&m, "g.orders.versions", 4, -1);
        m.topics[1].compact = 0;
        m.topics[3].compact = 0;
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 1);
        assert_action(&p, 0, KRETRY_PLAN_ALTER_CONFIG, "g.orders.versions", 0);
        KT_ASSERT_INT_EQ(p.actions[0].compact, 1);
        kretry_plan_clear(&p);
        m.topics[3].compact = -1;
        plan(f, &m, &p);
        KT_ASSERT_INT_EQ(p.cnt, 0);
        kretry_plan_clear(&p);
        kretry_meta_clear(&m);
        kretry_topology_file_destroy(f);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_empty_cluster),
                                          KT_TEST(test_empty_cluster_unsized),
                                          KT_TEST(test_partial_cluster),
                                          KT_TEST(test_complete_cluster),
                                          KT_TEST(test_conflicting_cluster),
                                          KT_TEST(test_unknown_retention),
                                          KT_TEST(test_shared_source),
                                          KT_TEST(test_versions_changelog),
                                          KT_TEST(test_parked_topic),
                                          KT_TEST(test_create_configs),
                                          KT_TEST(test_alter_configs),
                                          KT_TEST(test_changelog_compacted),
                                          KT_END};
        return kt_main("topology_plan", tests, argc, argv);
}
