/*
 * The startup check's decision (shape.c): every tier, the DLQ and the
 * changelog exist with at least the source's partitions, the changelog is
 * compacted; one error per problem, naming the topic and the fix.
 */
#include "shape.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static char tier1[] = "orders.retry.1", tier2[] = "orders.retry.2";
static char *tiers[] = {tier1, tier2};

static const kretry_shape_t shape = {
        "orders", tiers, 2, "orders.dlq", "g.orders.versions", "orders.yaml"};

/* The text of the diagnostic containing @p needle, or NULL. */
static const char *find(const kretry_diags_t *d, const char *needle) {
        for (size_t i = 0; i < d->cnt; i++)
                if (strstr(d->items[i].text, needle))
                        return d->items[i].text;
        return NULL;
}

static void full(kretry_meta_t *m, int tier2_parts, int compact) {
        kretry_meta_add(m, "orders", 4, -1);
        kretry_meta_add(m, "orders.retry.1", 8, -1);
        kretry_meta_add(m, "orders.retry.2", tier2_parts, -1);
        kretry_meta_add(m, "orders.dlq", 4, -1);
        kretry_meta_add(m, "g.orders.versions", 4, -1);
        m->topics[4].compact = compact;
}

static void test_fits(void) {
        kretry_meta_t m = {0};
        kretry_diags_t d;
        kretry_diags_init(&d);
        full(&m, 4, 1);
        KT_ASSERT_INT_EQ(kretry_shape_check(&shape, &m, &d), 0);
        KT_ASSERT_INT_EQ(d.cnt, 0);
        kretry_diags_clear(&d);
        kretry_meta_clear(&m);
}

static void test_fewer_partitions(void) {
        kretry_meta_t m = {0};
        kretry_diags_t d;
        kretry_diags_init(&d);
        full(&m, 1, 1);
        KT_ASSERT_INT_EQ(kretry_shape_check(&shape, &m, &d), 1);
        const char *t = find(&d, "orders.retry.2");
        KT_REQUIRE(t != NULL);
        KT_ASSERT(strstr(t, "tier 2 topic orders.retry.2 has 1 partition, "
                            "fewer than the source orders (4)") != NULL);
        KT_ASSERT(strstr(t, "partitions 1..3") != NULL);
        KT_ASSERT(strstr(t, "`kretry topology apply orders.yaml`") != NULL);
        kretry_diags_clear(&d);
        kretry_meta_clear(&m);
}

/* Each missing topic is its own error; without a file the fix says so. */
static void test_missing(void) {
        kretry_meta_t m = {0};
        kretry_diags_t d;
        kretry_diags_init(&d);
        kretry_shape_t s = shape;
        s.file           = NULL;
        kretry_meta_add(&m, "orders", 4, -1);
        kretry_meta_add(&m, "orders.retry.2", 4, -1);
        KT_ASSERT_INT_EQ(kretry_shape_check(&s, &m, &d), 3);
        KT_ASSERT(find(&d, "tier 1 topic orders.retry.1 does not exist") !=
                  NULL);
        KT_ASSERT(find(&d, "DLQ topic orders.dlq does not exist") != NULL);
        const char *t =
                find(&d, "version changelog topic g.orders.versions does not "
                         "exist");
        KT_REQUIRE(t != NULL);
        KT_ASSERT(strstr(t, "`kretry topology apply FILE`") != NULL);
        kretry_diags_clear(&d);
        kretry_meta_clear(&m);
}

static void test_missing_source(void) {
        kretry_meta_t m = {0};
        kretry_diags_t d;
        kretry_diags_init(&d);
        full(&m, 4, 1);
        free(m.topics[0].name);
        m.topics[0].name = strdup("other");
        KT_ASSERT_INT_EQ(kretry_shape_check(&shape, &m, &d), 1);
        KT_ASSERT(find(&d, "source topic orders does not exist") != NULL);
        kretry_diags_clear(&d);
        kretry_meta_clear(&m);
}

/* Not compacted: an error; unknown (the mock cluster): a warning only. */
static void test_changelog_policy(void) {
        kretry_meta_t m = {0};
        kretry_diags_t d;
        kretry_diags_init(&d);
        full(&m, 4, 0);
        KT_ASSERT_INT_EQ(kretry_shape_check(&shape, &m, &d), 1);
        const char *t = find(&d, "g.orders.versions is not compacted");
        KT_REQUIRE(t != NULL);
        KT_ASSERT(strstr(t, "`kretry topology apply orders.yaml`") != NULL);
        kretry_diags_clear(&d);
        kretry_diags_init(&d);
        m.topics[4].compact = -1;
        KT_ASSERT_INT_EQ(kretry_shape_check(&shape, &m, &d), 0);
        KT_ASSERT_INT_EQ(d.cnt, 1);
        KT_ASSERT_INT_EQ(d.items[0].level, KRETRY_DIAG_WARNING);
        KT_ASSERT(find(&d, "cannot tell whether version changelog "
                           "g.orders.versions is compacted") != NULL);
        kretry_diags_clear(&d);
        kretry_diags_init(&d);
        kretry_shape_t s = shape;
        s.changelog      = NULL; /* versioning off: not looked at */
        KT_ASSERT_INT_EQ(kretry_shape_check(&s, &m, &d), 0);
        KT_ASSERT_INT_EQ(d.cnt, 0);
        kretry_diags_clear(&d);
        kretry_meta_clear(&m);
}

/* park_key: the parked keys' topic is required like the changelog:
 * missing, too small or not compacted is an error. */
static void test_parked_topic(void) {
        kretry_meta_t m = {0};
        kretry_diags_t d;
        kretry_diags_init(&d);
        kretry_shape_t s = shape;
        s.parked         = "g.orders.parked";
        full(&m, 4, 1);
        KT_ASSERT_INT_EQ(kretry_shape_check(&s, &m, &d), 1);
        KT_ASSERT(find(&d, "parked-keys topic g.orders.parked does not "
                           "exist") != NULL);
        kretry_diags_clear(&d);
        kretry_diags_init(&d);
        kretry_meta_add(&m, "g.orders.parked", 2, -1);
        m.topics[5].compact = 0;
        KT_ASSERT_INT_EQ(kretry_shape_check(&s, &m, &d), 2);
        KT_ASSERT(find(&d, "parked-keys topic g.orders.parked has 2 "
                           "partitions") != NULL);
        KT_ASSERT(find(&d, "parked-keys topic g.orders.parked is not "
                           "compacted") != NULL);
        kretry_diags_clear(&d);
        kretry_diags_init(&d);
        m.topics[5].partitions = 4;
        m.topics[5].compact    = 1;
        KT_ASSERT_INT_EQ(kretry_shape_check(&s, &m, &d), 0);
        kretry_diags_clear(&d);
        kretry_meta_clear(&m);
}

/* A tier or DLQ whose max.message.bytes is below the source's plus the
 * headroom: a warning naming both limits; unknown limits: nothing. */
static void test_size_limits(void) {
        kretry_meta_t m = {0};
        kretry_diags_t d;
        kretry_diags_init(&d);
        full(&m, 4, 1);
        m.topics[0].max_message_bytes = 1048588;
        m.topics[1].max_message_bytes = 1048588 + KRETRY_COPY_HEADROOM;
        m.topics[2].max_message_bytes = 1048588; /* tier 2: too small */
        m.topics[4].max_message_bytes = 1000;    /* the changelog: fine */
        KT_ASSERT_INT_EQ(kretry_shape_check(&shape, &m, &d), 0);
        KT_ASSERT_INT_EQ(d.cnt, 1);
        const char *t = find(&d, "tier 2 topic orders.retry.2 takes messages "
                                 "up to 1048588 bytes, the source orders up "
                                 "to 1048588");
        KT_ASSERT(t != NULL);
        KT_ASSERT_INT_EQ(d.items[0].level, KRETRY_DIAG_WARNING);
        kretry_diags_clear(&d);
        kretry_diags_init(&d);
        m.topics[0].max_message_bytes = -1;
        KT_ASSERT_INT_EQ(kretry_shape_check(&shape, &m, &d), 0);
        KT_ASSERT_INT_EQ(d.cnt, 0);
        kretry_diags_clear(&d);
        kretry_meta_clear(&m);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_fits),
                                          KT_TEST(test_fewer_partitions),
                                          KT_TEST(test_missing),
                                          KT_TEST(test_missing_source),
                                          KT_TEST(test_changelog_policy),
                                          KT_TEST(test_parked_topic),
                                          KT_TEST(test_size_limits),
                                          KT_END};
        return kt_main("topology_shape", tests, argc, argv);
}
