/* kretry_conf_load_topology(): a topology file into a configuration. */
#include "kretry/kretry.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define EXAMPLES KRETRY_SOURCE_DIR "/topology/examples/"
#define INVALID KRETRY_SOURCE_DIR "/tests/topology/invalid/"

static const char *get(const kretry_conf_t *conf, const char *name) {
        static char buf[512];
        if (kretry_conf_get(conf, name, buf, sizeof(buf)))
                return "(unknown)";
        return buf;
}

static void test_minimal(void) {
        char err[1024]      = "";
        kretry_conf_t *conf = kretry_conf_new();
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(conf,
                                                   EXAMPLES "minimal.yaml",
                                                   NULL, err, sizeof(err)),
                         KRETRY_ERR_OK);
        KT_ASSERT_STR_EQ(err, "");
        KT_ASSERT_STR_EQ(get(conf, "source.topic"), "orders");
        KT_ASSERT_STR_EQ(get(conf, "group.id"), "orders-service");
        KT_ASSERT_STR_EQ(get(conf, "retry.tiers"), "1s,10s,1m");
        KT_ASSERT_STR_EQ(get(conf, "retry.max.attempts"), "4");
        KT_ASSERT_STR_EQ(get(conf, "retry.jitter"), "10%");
        KT_ASSERT_STR_EQ(get(conf, "retry.max.age"), "0ms");
        KT_ASSERT_STR_EQ(get(conf, "dlq.topic"), "orders.dlq");
        KT_ASSERT_STR_EQ(get(conf, "retry.topic.pattern"),
                         "{source}.retry.{n}");
        kretry_conf_destroy(conf);
}

static void test_named_with_kafka_props(void) {
        char err[1024];
        kretry_conf_t *conf = kretry_conf_new();
        unsetenv("KAFKA_BOOTSTRAP");
        setenv("KAFKA_SECURITY", "ssl", 1);
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(conf, EXAMPLES "orders.yaml",
                                                   "payments", err,
                                                   sizeof(err)),
                         KRETRY_ERR_OK);
        KT_ASSERT_STR_EQ(get(conf, "source.topic"), "payments");
        KT_ASSERT_STR_EQ(get(conf, "retry.tiers"), "5s,30s,5m");
        KT_ASSERT_STR_EQ(get(conf, "bootstrap.servers"), "localhost:9092");
        KT_ASSERT_STR_EQ(get(conf, "security.protocol"), "ssl");
        KT_ASSERT_STR_EQ(get(conf, "consumer.session.timeout.ms"), "30000");
        unsetenv("KAFKA_SECURITY");
        kretry_conf_destroy(conf);
}

/* The orders topology declares everything the engine runs: ordering,
 * versions, permanent error codes, the circuit breaker. */
static void test_orders_complete(void) {
        char err[900];
        kretry_conf_t *conf = kretry_conf_new();
        KT_CHECK_MSG(kretry_conf_load_topology(conf, EXAMPLES "orders.yaml",
                                               "orders", err,
                                               sizeof(err)) == KRETRY_ERR_OK,
                     CU_FALSE, "load: %.800s", err);
        KT_ASSERT_STR_EQ(get(conf, "ordering"), "key");
        KT_ASSERT_STR_EQ(get(conf, "versioning.header"), "version");
        KT_ASSERT_STR_EQ(get(conf, "retry.permanent.errors"),
                         "VALIDATION,NOT_FOUND");
        KT_ASSERT_STR_EQ(get(conf, "breaker.failures"), "50");
        KT_ASSERT_STR_EQ(get(conf, "breaker.distinct.keys"), "10");
        KT_ASSERT_STR_EQ(get(conf, "breaker.cooldown"), "30s");
        kretry_conf_destroy(conf);
}

/* ordering, on_dead_letter and header versioning reach the engine. */
static void test_ordered_versioned(void) {
        char err[900];
        kretry_conf_t *conf = kretry_conf_new();
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(
                                 conf,
                                 KRETRY_SOURCE_DIR
                                 "/tests/topology/valid/ordered-versioned.yaml",
                                 NULL, err, sizeof(err)),
                         KRETRY_ERR_OK);
        KT_ASSERT_STR_EQ(get(conf, "ordering"), "key");
        KT_ASSERT_STR_EQ(get(conf, "ordering.on.dead.letter"), "park_key");
        KT_ASSERT_STR_EQ(get(conf, "versioning.header"), "version");
        KT_ASSERT_STR_EQ(get(conf, "versioning.discard"), "older_or_equal");
        kretry_conf_destroy(conf);
}

/* ordering: partition and handler.concurrency reach the engine; the
 * default concurrency is 1. */
static void test_concurrent(void) {
        char err[900];
        kretry_conf_t *conf = kretry_conf_new();
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(
                                 conf,
                                 KRETRY_SOURCE_DIR
                                 "/tests/topology/valid/concurrent.yaml",
                                 NULL, err, sizeof(err)),
                         KRETRY_ERR_OK);
        KT_ASSERT_STR_EQ(get(conf, "ordering"), "partition");
        KT_ASSERT_STR_EQ(get(conf, "handler.concurrency"), "8");
        kretry_conf_destroy(conf);
        conf = kretry_conf_new();
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(conf,
                                                   EXAMPLES "minimal.yaml",
                                                   NULL, err, sizeof(err)),
                         KRETRY_ERR_OK);
        KT_ASSERT_STR_EQ(get(conf, "handler.concurrency"), "1");
        kretry_conf_destroy(conf);
}

static void test_errors(void) {
        char err[900];
        kretry_conf_t *conf = kretry_conf_new();
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(conf, EXAMPLES "orders.yaml",
                                                   NULL, err, sizeof(err)),
                         KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT(strstr(err, "holds 2 topologies (orders, payments)") != NULL);
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(conf, EXAMPLES "orders.yaml",
                                                   "nope", err, sizeof(err)),
                         KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(conf,
                                                   INVALID "jitter-range.yaml",
                                                   NULL, err, sizeof(err)),
                         KRETRY_ERR_PARSE);
        KT_ASSERT_STR_EQ(err, INVALID "jitter-range.yaml:7:15: jitter: 150% "
                                      "is out of range 0%..100%");
        KT_ASSERT_INT_EQ(kretry_conf_load_topology(conf, INVALID "nope.yaml",
                                                   NULL, err, sizeof(err)),
                         KRETRY_ERR_IO);
        KT_ASSERT_INT_EQ(
                kretry_conf_load_topology(NULL, "x", NULL, err, sizeof(err)),
                KRETRY_ERR_INVALID_ARG);
        kretry_conf_destroy(conf);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_minimal),
                                          KT_TEST(test_named_with_kafka_props),
                                          KT_TEST(test_orders_complete),
                                          KT_TEST(test_ordered_versioned),
                                          KT_TEST(test_concurrent),
                                          KT_TEST(test_errors),
                                          KT_END};
        return kt_main("topology_conf", tests, argc, argv);
}
