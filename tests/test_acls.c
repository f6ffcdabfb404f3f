/*
 * The least-privilege table (acls.c): what each role needs on a chain, and
 * which of those bindings the operations a cluster reports allowed leave
 * missing.
 */
#include "acls.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static char tier1[] = "orders.retry.1", tier2[] = "orders.retry.2";
static char *tiers[] = {tier1, tier2};

static kretry_acl_chain_t chain(void) {
        return (kretry_acl_chain_t){
                "orders", tiers, 2,   "orders.dlq", "g.orders.versions",
                "g",      0,     NULL};
}

/* The bindings of @p a as "op restype name[*]" lines, in order. */
static char *render(const kretry_acls_t *a) {
        static char buf[8192];
        size_t len = 0;
        buf[0]     = '\0';
        for (size_t i = 0; i < a->cnt; i++) {
                const kretry_acl_t *b = &a->items[i];
                len += (size_t)snprintf(
                        buf + len, sizeof(buf) - len, "%s %s %s%s\n",
                        kretry_acl_op_name(b->op),
                        kretry_acl_restype_name(b->restype), b->name,
                        b->pattern == RD_KAFKA_RESOURCE_PATTERN_PREFIXED ? "*"
                                                                         : "");
        }
        return buf;
}

static void test_run_role(void) {
        kretry_acls_t a      = {0};
        kretry_acl_chain_t c = chain();
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_RUN) == 0);
        KT_ASSERT_STR_EQ(render(&a), "Read topic orders\n"
                                     "DescribeConfigs topic orders\n"
                                     "Read topic orders.retry.1\n"
                                     "Write topic orders.retry.1\n"
                                     "DescribeConfigs topic orders.retry.1\n"
                                     "Read topic orders.retry.2\n"
                                     "Write topic orders.retry.2\n"
                                     "DescribeConfigs topic orders.retry.2\n"
                                     "Write topic orders.dlq\n"
                                     "DescribeConfigs topic orders.dlq\n"
                                     "Read topic g.orders.versions\n"
                                     "Write topic g.orders.versions\n"
                                     "DescribeConfigs topic g.orders.versions\n"
                                     "Read group g\n");
        /* Nothing the engine does not do: no Read on the DLQ (but with
         * park_key, test_run_park_key), no cluster
         * binding (an idempotent producer's Write on a topic is enough). */
        for (size_t i = 0; i < a.cnt; i++) {
                KT_ASSERT(!(a.items[i].op == RD_KAFKA_ACL_OPERATION_READ &&
                            !strcmp(a.items[i].name, "orders.dlq")));
                KT_ASSERT(a.items[i].why && *a.items[i].why);
        }
        kretry_acls_clear(&a);
}

/* park_key: Read and Write on the parked keys, and Read on the DLQ, which
 * the first restore after an upgrade reads once (the migration). */
static void test_run_park_key(void) {
        kretry_acls_t a      = {0};
        kretry_acl_chain_t c = chain();
        c.changelog          = NULL;
        c.parked             = "g.orders.parked";
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_RUN) == 0);
        const char *r = render(&a);
        KT_ASSERT(strstr(r, "Read topic g.orders.parked\n"
                            "Write topic g.orders.parked\n"
                            "DescribeConfigs topic g.orders.parked\n"
                            "Read topic orders.dlq\n") != NULL);
        kretry_acls_clear(&a);
}

/* routing=transactional: Write on kretry's own transactional ids by
 * prefix, or on the operator's id exactly; no changelog without
 * versioning. */
static void test_run_transactional(void) {
        kretry_acls_t a      = {0};
        kretry_acl_chain_t c = chain();
        c.changelog          = NULL;
        c.transactional      = 1;
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_RUN) == 0);
        KT_ASSERT(strstr(render(&a), "versions") == NULL);
        KT_ASSERT(strstr(render(&a),
                         "Read group g\nWrite transactional-id kretry.g.*\n") !=
                  NULL);
        char line[512];
        kretry_acl_command(&a.items[a.cnt - 1], "User:svc", "b:9093", line,
                           sizeof(line));
        KT_ASSERT_STR_EQ(line, "kafka-acls.sh --bootstrap-server b:9093 "
                               "--command-config admin.properties --add "
                               "--allow-principal User:svc --operation Write "
                               "--transactional-id kretry.g. "
                               "--resource-pattern-type prefixed");
        kretry_acls_clear(&a);
        c.transactional_id = "svc-1";
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_RUN) == 0);
        KT_ASSERT(strstr(render(&a), "Write transactional-id svc-1\n") != NULL);
        kretry_acls_clear(&a);
}

static void test_operator_and_ui(void) {
        kretry_acls_t a      = {0};
        kretry_acl_chain_t c = chain();
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_OPERATOR) == 0);
        KT_ASSERT_STR_EQ(render(&a), "Read topic orders\n"
                                     "Read topic orders.retry.1\n"
                                     "Read topic orders.retry.2\n"
                                     "Read topic orders.dlq\n"
                                     "Describe group g\n"
                                     "Describe group kretry-dlq-reader\n"
                                     "Write topic orders\n"
                                     "Read group g.kretry-replay\n");
        kretry_acls_clear(&a);
        /* ui: read-only, nothing written, no group offsets committed. */
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_UI) == 0);
        for (size_t i = 0; i < a.cnt; i++) {
                KT_ASSERT(a.items[i].op != RD_KAFKA_ACL_OPERATION_WRITE);
                KT_ASSERT(a.items[i].restype != RD_KAFKA_RESOURCE_GROUP ||
                          a.items[i].op == RD_KAFKA_ACL_OPERATION_DESCRIBE);
        }
        KT_ASSERT(strstr(render(&a), "Describe group g.kretry-replay\n") !=
                  NULL);
        KT_ASSERT_INT_EQ(a.cnt, 7);
        kretry_acls_clear(&a);
        kretry_acl_role_t r;
        KT_ASSERT(kretry_acl_role_parse("ui-replay", &r) == 0 &&
                  r == KRETRY_ACL_ROLE_UI_REPLAY);
        KT_ASSERT(kretry_acl_role_parse("admin", &r) == -1);
}

/* Two chains sharing a DLQ: each binding once. */
static void test_dedup(void) {
        kretry_acls_t a      = {0};
        kretry_acl_chain_t c = chain();
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_RUN) == 0);
        size_t n = a.cnt;
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_RUN) == 0);
        KT_ASSERT_INT_EQ(a.cnt, n);
        kretry_acls_clear(&a);
}

static void test_allowed(void) {
        rd_kafka_AclOperation_t rw[]    = {RD_KAFKA_ACL_OPERATION_READ,
                                           RD_KAFKA_ACL_OPERATION_WRITE};
        rd_kafka_AclOperation_t all[]   = {RD_KAFKA_ACL_OPERATION_ALL};
        rd_kafka_AclOperation_t alter[] = {
                RD_KAFKA_ACL_OPERATION_ALTER_CONFIGS};
        KT_ASSERT(kretry_acl_allowed(rw, 2, RD_KAFKA_ACL_OPERATION_DESCRIBE));
        KT_ASSERT(!kretry_acl_allowed(rw, 2,
                                      RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS));
        KT_ASSERT(kretry_acl_allowed(alter, 1,
                                     RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS));
        KT_ASSERT(kretry_acl_allowed(all, 1, RD_KAFKA_ACL_OPERATION_WRITE));
        KT_ASSERT(!kretry_acl_allowed(rw, 1, RD_KAFKA_ACL_OPERATION_WRITE));
        KT_ASSERT(!kretry_acl_allowed(NULL, 0, RD_KAFKA_ACL_OPERATION_READ));
}

/* The cluster's answer: the DLQ lacks DescribeConfigs, the changelog is
 * denied outright (not even Describe: its Read and Write missing, its
 * DescribeConfigs unknown, as Describe does not come with it), the group
 * unknown (no authorizer answered for it): nothing said about it. */
static void test_missing(void) {
        kretry_acls_t a      = {0};
        kretry_acl_chain_t c = chain();
        c.transactional      = 1;
        KT_REQUIRE(kretry_acls_add(&a, &c, KRETRY_ACL_ROLE_RUN) == 0);
        rd_kafka_AclOperation_t src[] = {
                RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_OPERATION_DESCRIBE,
                RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS};
        rd_kafka_AclOperation_t tier[] = {
                RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_OPERATION_WRITE,
                RD_KAFKA_ACL_OPERATION_DESCRIBE,
                RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS};
        rd_kafka_AclOperation_t dlq[] = {RD_KAFKA_ACL_OPERATION_WRITE,
                                         RD_KAFKA_ACL_OPERATION_DESCRIBE};
        kretry_authz_t said[]         = {
                        {RD_KAFKA_RESOURCE_TOPIC, "orders", KRETRY_AUTHZ_OPS, src, 3},
                        {RD_KAFKA_RESOURCE_TOPIC, "orders.retry.1", KRETRY_AUTHZ_OPS,
                         tier, 4},
                        {RD_KAFKA_RESOURCE_TOPIC, "orders.retry.2", KRETRY_AUTHZ_OPS,
                         tier, 4},
                        {RD_KAFKA_RESOURCE_TOPIC, "orders.dlq", KRETRY_AUTHZ_OPS, dlq,
                         2},
                        {RD_KAFKA_RESOURCE_TOPIC, "g.orders.versions",
                         KRETRY_AUTHZ_DENIED, NULL, 0},
                        {RD_KAFKA_RESOURCE_GROUP, "g", KRETRY_AUTHZ_UNKNOWN, NULL, 0},
        };
        size_t *missing = calloc(a.cnt, sizeof(*missing));
        KT_REQUIRE(missing != NULL);
        size_t n = kretry_acls_missing(&a, said, 6, missing);
        KT_REQUIRE(n == 3);
        char line[300];
        kretry_acl_describe(&a.items[missing[0]], line, sizeof(line));
        KT_ASSERT_STR_EQ(line, "DescribeConfigs on topic orders.dlq");
        kretry_acl_describe(&a.items[missing[1]], line, sizeof(line));
        KT_ASSERT_STR_EQ(line, "Read on topic g.orders.versions");
        kretry_acl_describe(&a.items[missing[2]], line, sizeof(line));
        KT_ASSERT_STR_EQ(line, "Write on topic g.orders.versions");
        /* The group allowed Describe only: Read missing. */
        rd_kafka_AclOperation_t describe[] = {RD_KAFKA_ACL_OPERATION_DESCRIBE};
        said[5] = (kretry_authz_t){RD_KAFKA_RESOURCE_GROUP, "g",
                                   KRETRY_AUTHZ_OPS, describe, 1};
        said[4] = (kretry_authz_t){RD_KAFKA_RESOURCE_TOPIC, "g.orders.versions",
                                   KRETRY_AUTHZ_OPS, tier, 4};
        said[3].ops_cnt = 0; /* no authorizer on that topic: ops unknown */
        said[3].state   = KRETRY_AUTHZ_UNKNOWN;
        n               = kretry_acls_missing(&a, said, 6, missing);
        KT_REQUIRE(n == 1);
        kretry_acl_describe(&a.items[missing[0]], line, sizeof(line));
        KT_ASSERT_STR_EQ(line, "Read on group g");
        free(missing);
        kretry_acls_clear(&a);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_run_role),
                                          KT_TEST(test_run_park_key),
                                          KT_TEST(test_run_transactional),
                                          KT_TEST(test_operator_and_ui),
                                          KT_TEST(test_dedup),
                                          KT_TEST(test_allowed),
                                          KT_TEST(test_missing),
                                          KT_END};
        return kt_main("acls", tests, argc, argv);
}
