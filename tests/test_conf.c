#include "conf.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static void test_defaults(void) {
        kretry_conf_t *c = kretry_conf_new();
        char v[128];
        KT_REQUIRE(c != NULL);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "retry.tiers", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "1s,10s,1m");
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "retry.max.attempts", v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "4");
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "retry.jitter", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "10%");
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "dlq.topic", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "{source}.dlq");
        KT_ASSERT_INT_EQ(
                kretry_conf_get(c, "enable.auto.offset.store", v, sizeof(v)),
                0);
        KT_ASSERT_STR_EQ(v, "false");
        /* Commits every 100 ms and incremental rebalancing unless the
         * operator says otherwise; buffers behind held tier messages. */
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "consumer.auto.commit.interval.ms",
                                         v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "100");
        KT_ASSERT_INT_EQ(kretry_conf_get(c,
                                         "consumer.partition.assignment."
                                         "strategy",
                                         v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "cooperative-sticky");
        KT_ASSERT_INT_EQ(
                kretry_conf_get(c, "tier.buffer.messages", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "1000");
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "tier.buffer.bytes", v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "1048576");
        KT_ASSERT_INT_EQ(
                kretry_conf_get(c, "tier.buffer.total.bytes", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "67108864");
        char e[256];
        KT_ASSERT_INT_EQ(kretry_conf_set(c, "partition.assignment.strategy",
                                         "range,roundrobin", e, sizeof(e)),
                         0);
        KT_ASSERT_INT_EQ(kretry_conf_get(c,
                                         "consumer.partition.assignment."
                                         "strategy",
                                         v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "range,roundrobin");
        kretry_conf_destroy(c);
}

static void test_set_errors(void) {
        kretry_conf_t *c = kretry_conf_new();
        char e[512];
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "retry.jitter", "150%", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_STR_EQ(e, "retry.jitter: 150% is out of range 0%..100%");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "retry.tiers", "1s,-1s", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(kretry_conf_set(c, "retry.tiers", "", e, sizeof(e)),
                         KRETRY_ERR_INVALID_VALUE);
        /* 0: an immediate retry through the tier. */
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "retry.tiers", "0s,1s", e, sizeof(e)), 0);
        char v[64];
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "retry.tiers", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "0ms,1s");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "no.such.property", "1", e, sizeof(e)),
                KRETRY_ERR_UNKNOWN_PROPERTY);
        KT_ASSERT(strstr(e, "No such configuration property") != NULL);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "session.timeout.ms", "abc", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "enable.idempotence", "false", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT(strstr(e, "fixed") != NULL);
        KT_ASSERT_INT_EQ(kretry_conf_set(c, "producer.acks", "1", e, sizeof(e)),
                         KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "retry.max.attempts", "0", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(kretry_conf_set(NULL, "x", "y", e, sizeof(e)),
                         KRETRY_ERR_INVALID_ARG);
        kretry_conf_destroy(c);
}

static void test_set_get(void) {
        kretry_conf_t *c = kretry_conf_new();
        char v[128], e[256];
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "retry.tiers", "100ms,2s", e, sizeof(e)), 0);
        KT_ASSERT_INT_EQ(c->tier_cnt, 2);
        KT_ASSERT_INT_EQ(kretry_conf_max_attempts(c), 3);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "retry.max.attempts", "7", e, sizeof(e)), 0);
        KT_ASSERT_INT_EQ(kretry_conf_max_attempts(c), 7);
        KT_ASSERT_INT_EQ(kretry_conf_set(c, "consumer.session.timeout.ms",
                                         "7000", e, sizeof(e)),
                         0);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "session.timeout.ms", v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "7000");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "producer.linger.ms", "3", e, sizeof(e)), 0);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "producer.linger.ms", v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "3");
        kretry_conf_t *d = kretry_conf_dup(c);
        kretry_conf_destroy(c);
        KT_ASSERT_INT_EQ(kretry_conf_get(d, "retry.tiers", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "100ms,2s");
        kretry_conf_destroy(d);
        kretry_conf_destroy(NULL);
}

static void test_topic_names(void) {
        char n[256];
        KT_ASSERT_INT_EQ(kretry_conf_topic_name("{source}.retry.{n}", "orders",
                                                3, n, sizeof(n)),
                         0);
        KT_ASSERT_STR_EQ(n, "orders.retry.3");
        KT_ASSERT_INT_EQ(kretry_conf_topic_name("{source}.dlq", "orders", 0, n,
                                                sizeof(n)),
                         0);
        KT_ASSERT_STR_EQ(n, "orders.dlq");
}

static void test_check(void) {
        kretry_conf_t *c = kretry_conf_new();
        char e[256];
        KT_ASSERT_INT_EQ(kretry_conf_check(c, e, sizeof(e)),
                         KRETRY_ERR_INVALID_ARG);
        KT_ASSERT_STR_EQ(e, "source.topic is required");
        kretry_conf_set(c, "source.topic", "orders", e, sizeof(e));
        KT_ASSERT_INT_EQ(kretry_conf_check(c, e, sizeof(e)),
                         KRETRY_ERR_INVALID_ARG);
        KT_ASSERT_STR_EQ(e, "group.id is required");
        kretry_conf_destroy(c);
}

static kretry_action_t noop(kretry_msg_t *msg, void *opaque) {
        (void)msg, (void)opaque;
        return KRETRY_OK;
}

/* handler.concurrency, max.inflight.messages and .bytes, ordering=partition.
 */
static void test_concurrency(void) {
        kretry_conf_t *c = kretry_conf_new();
        char v[64], e[256];
        KT_ASSERT_INT_EQ(
                kretry_conf_get(c, "handler.concurrency", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "1");
        KT_ASSERT_INT_EQ(
                kretry_conf_get(c, "max.inflight.messages", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "1000");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "handler.concurrency", "0", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "handler.concurrency", "1025", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "max.inflight.messages", "0", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "max.inflight.bytes", v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "67108864"); /* 64 MiB */
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "max.inflight.bytes", "0", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(kretry_conf_set(c, "max.inflight.bytes", "2147483648",
                                         e, sizeof(e)),
                         KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "max.inflight.bytes", "1", e, sizeof(e)), 0);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "max.inflight.bytes", v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "1");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "ordering", "partition", e, sizeof(e)), 0);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "ordering", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "partition");
        /* Avro with handlers at once: each reads its own decoded record. */
        kretry_conf_set(c, "source.topic", "orders", e, sizeof(e));
        kretry_conf_set(c, "group.id", "g", e, sizeof(e));
        kretry_conf_set_handler(c, noop, NULL);
        kretry_conf_set(c, "value.format", "avro", e, sizeof(e));
        kretry_conf_set(c, "value.schema", "order.avsc", e, sizeof(e));
        KT_ASSERT_INT_EQ(kretry_conf_check(c, e, sizeof(e)), 0);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "handler.concurrency", "4", e, sizeof(e)),
                0);
        KT_ASSERT_INT_EQ(kretry_conf_check(c, e, sizeof(e)), 0);
        /* handler.thread: worker or poll. */
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "handler.thread", "poll", e, sizeof(e)), 0);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "handler.thread", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "poll");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "handler.thread", "main", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        /* handler.sched: batch (the default) or inherit. */
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "handler.sched", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "batch");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "handler.sched", "inherit", e, sizeof(e)),
                0);
        KT_ASSERT_INT_EQ(kretry_conf_get(c, "handler.sched", v, sizeof(v)), 0);
        KT_ASSERT_STR_EQ(v, "inherit");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(c, "handler.sched", "fifo", e, sizeof(e)),
                KRETRY_ERR_INVALID_VALUE);
        kretry_conf_destroy(c);
}

static void test_dump(void) {
        char buf[8192];
        size_t n = kretry_conf_properties_dump(buf, sizeof(buf));
        KT_ASSERT(n < sizeof(buf));
        KT_ASSERT(strstr(buf, "retry.tiers") != NULL);
        KT_ASSERT(kretry_conf_properties_dump(NULL, 0) == n);
}

/* docs/properties.md is the property table rendered: a property added,
 * changed or described anew without regenerating it fails here. */
static void test_properties_doc(void) {
        size_t n   = kretry_conf_properties_md(NULL, 0);
        char *want = malloc(n + 1);
        KT_REQUIRE(want != NULL);
        KT_ASSERT(kretry_conf_properties_md(want, n + 1) == n);
        KT_ASSERT(strstr(want, "| `retry.tiers` |") != NULL);
        KT_ASSERT(
                strstr(want, "| `enable.idempotence` | producer | `true` |") !=
                NULL);
        FILE *f = fopen(KRETRY_SOURCE_DIR "/docs/properties.md", "rb");
        KT_REQUIRE(f != NULL);
        char *have = malloc(n + 2);
        KT_REQUIRE(have != NULL);
        size_t got = fread(have, 1, n + 1, f);
        fclose(f);
        int same = got == n && !memcmp(have, want, n);
        KT_CHECK_MSG(same, CU_FALSE,
                     "docs/properties.md differs from the property table in "
                     "adapter/src/conf.c: run scripts/gen-properties.sh");
        free(have);
        free(want);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_defaults),
                                          KT_TEST(test_set_errors),
                                          KT_TEST(test_set_get),
                                          KT_TEST(test_topic_names),
                                          KT_TEST(test_check),
                                          KT_TEST(test_concurrency),
                                          KT_TEST(test_dump),
                                          KT_TEST(test_properties_doc),
                                          KT_END};
        return kt_main("conf", tests, argc, argv);
}
