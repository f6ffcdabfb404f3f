#include "headers.h"
#include "replay_headers.h"
#include "testutil.h"

#include <string.h>

static const char *get(rd_kafka_headers_t *h, const char *name, char *buf) {
        const void *v;
        size_t n;
        if (rd_kafka_header_get_last(h, name, &v, &n))
                return NULL;
        snprintf(buf, 64, "%.*s", (int)n, (const char *)v);
        return buf;
}

static void test_reset_chain(void) {
        rd_kafka_headers_t *src = rd_kafka_headers_new(20);
        rd_kafka_header_add(src, "trace", -1, "t\0x", 3);
        rd_kafka_header_add(src, "kretry-attempt", -1, "4", 1);
        rd_kafka_header_add(src, "kretry-tier", -1, "2", 1);
        rd_kafka_header_add(src, "kretry-due-ts", -1, "99", 2);
        rd_kafka_header_add(src, "kretry-original-topic", -1, "orders", 6);
        rd_kafka_header_add(src, "kretry-original-partition", -1, "1", 1);
        rd_kafka_header_add(src, "kretry-original-offset", -1, "7", 1);
        rd_kafka_header_add(src, "kretry-original-timestamp", -1, "5", 1);
        rd_kafka_header_add(src, "kretry-first-failure-ts", -1, "10", 2);
        rd_kafka_header_add(src, "kretry-last-failure-ts", -1, "20", 2);
        rd_kafka_header_add(src, "kretry-error-class", -1, "permanent", 9);
        rd_kafka_header_add(src, "kretry-error-code", -1, "VALIDATION", 10);
        rd_kafka_header_add(src, "kretry-error", -1, "bad order", 9);
        rd_kafka_header_add(src, "kretry-group", -1, "g", 1);
        rd_kafka_header_add(src, "kretry-correlation-id", -1, "cid-1", 5);
        rd_kafka_header_add(src, "kretry-future", -1, "f", 1);
        rd_kafka_header_add(src, "kretry-replay-count", -1, "2", 1);
        rd_kafka_header_add(src, "kretry-replayed-at", -1, "1", 1);
        rd_kafka_header_add(src, "empty", -1, NULL, 0);
        rd_kafka_header_add(src, "trace", -1, "t2", 2);

        rd_kafka_headers_t *h =
                kretry_replay_headers(src, 1700000000123LL, 0, "orders");
        KT_REQUIRE(h != NULL);
        /* user headers, unknown kretry-* and the correlation id, in order,
         * then the replay count and time */
        static const char *const want[] = {
                "trace", "kretry-correlation-id", "kretry-future",     "empty",
                "trace", "kretry-replay-count",   "kretry-replayed-at"};
        size_t want_cnt = sizeof(want) / sizeof(want[0]);
        KT_ASSERT_INT_EQ(rd_kafka_header_cnt(h), want_cnt);
        for (size_t i = 0; i < want_cnt && i < rd_kafka_header_cnt(h); i++) {
                const char *name;
                const void *v;
                size_t n;
                rd_kafka_header_get_all(h, i, &name, &v, &n);
                KT_ASSERT_STR_EQ(name, want[i]);
                if (i == 0)
                        KT_ASSERT(n == 3 && !memcmp(v, "t\0x", 3));
                if (i == 3)
                        KT_ASSERT(v == NULL && n == 0);
        }
        char b[64];
        KT_ASSERT_STR_EQ(get(h, "kretry-replay-count", b), "3");
        KT_ASSERT_STR_EQ(get(h, "kretry-replayed-at", b), "1700000000123");
        KT_ASSERT_STR_EQ(get(h, "kretry-correlation-id", b), "cid-1");
        rd_kafka_headers_destroy(h);
        rd_kafka_headers_destroy(src);
}

static void test_first_replay(void) {
        char b[64];
        rd_kafka_headers_t *h = kretry_replay_headers(NULL, 5, 0, NULL);
        KT_ASSERT_INT_EQ(rd_kafka_header_cnt(h), 2);
        KT_ASSERT_STR_EQ(get(h, "kretry-replay-count", b), "1");
        KT_ASSERT_STR_EQ(get(h, "kretry-replayed-at", b), "5");
        rd_kafka_headers_destroy(h);
}

static void test_malformed_count(void) {
        static const char *const bad[] = {"x", "-1", "", "1000000",
                                          "99999999999999999999"};
        char b[64];
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                rd_kafka_headers_t *src = rd_kafka_headers_new(1);
                rd_kafka_header_add(src, "kretry-replay-count", -1, bad[i], -1);
                rd_kafka_headers_t *h = kretry_replay_headers(src, 5, 0, NULL);
                KT_CHECK_MSG(!strcmp(get(h, "kretry-replay-count", b), "1"),
                             CU_FALSE, "count \"%s\" replayed as %s", bad[i],
                             b);
                rd_kafka_headers_destroy(h);
                rd_kafka_headers_destroy(src);
        }
}

static void test_tier_chain(void) {
        char b[64];
        rd_kafka_headers_t *src = rd_kafka_headers_new(12);
        rd_kafka_header_add(src, "trace", -1, "t1", 2);
        rd_kafka_header_add(src, "kretry-attempt", -1, "5", 1);
        rd_kafka_header_add(src, "kretry-original-topic", -1, "orders", 6);
        rd_kafka_header_add(src, "kretry-original-partition", -1, "3", 1);
        rd_kafka_header_add(src, "kretry-original-offset", -1, "77", 2);
        rd_kafka_header_add(src, "kretry-original-timestamp", -1, "10", 2);
        rd_kafka_header_add(src, "kretry-first-failure-ts", -1, "20", 2);
        rd_kafka_header_add(src, "kretry-error-class", -1, "exhausted", 9);
        rd_kafka_header_add(src, "kretry-correlation-id", -1, "cid", 3);
        rd_kafka_headers_t *h = kretry_replay_headers(src, 900, 2, "other");
        static const char *const want[] = {"trace",
                                           "kretry-correlation-id",
                                           "kretry-attempt",
                                           "kretry-tier",
                                           "kretry-due-ts",
                                           "kretry-original-topic",
                                           "kretry-original-partition",
                                           "kretry-original-offset",
                                           "kretry-replay-count",
                                           "kretry-replayed-at"};
        size_t want_cnt                 = sizeof(want) / sizeof(want[0]);
        KT_ASSERT_INT_EQ(rd_kafka_header_cnt(h), want_cnt);
        for (size_t i = 0; i < want_cnt && i < rd_kafka_header_cnt(h); i++) {
                const char *name;
                const void *v;
                size_t n;
                rd_kafka_header_get_all(h, i, &name, &v, &n);
                KT_ASSERT_STR_EQ(name, want[i]);
        }
        KT_ASSERT_STR_EQ(get(h, "kretry-attempt", b), "1");
        KT_ASSERT_STR_EQ(get(h, "kretry-tier", b), "2");
        KT_ASSERT_STR_EQ(get(h, "kretry-due-ts", b), "900");
        KT_ASSERT_STR_EQ(get(h, "kretry-original-topic", b), "orders");
        KT_ASSERT_STR_EQ(get(h, "kretry-original-offset", b), "77");
        /* the adapter places it in a chain instead of refusing it */
        kretry_chain_t c;
        kretry_chain_decode(h, &c);
        KT_ASSERT(c.attempt_ok && c.attempt == 1 && c.tier_ok && c.tier == 2);
        KT_ASSERT(c.due_ok && c.due_ts == 900);
        KT_ASSERT(!c.orig_ts_ok && !c.first_failure_ok);
        rd_kafka_headers_destroy(h);
        rd_kafka_headers_destroy(src);

        /* no original topic: the topology's source */
        h = kretry_replay_headers(NULL, 900, 1, "orders");
        KT_ASSERT_STR_EQ(get(h, "kretry-original-topic", b), "orders");
        KT_ASSERT(get(h, "kretry-original-partition", b) == NULL);
        KT_ASSERT_STR_EQ(get(h, "kretry-replay-count", b), "1");
        rd_kafka_headers_destroy(h);
}

static void test_dropped_names(void) {
        KT_ASSERT(kretry_replay_header_dropped("kretry-attempt"));
        KT_ASSERT(kretry_replay_header_dropped("kretry-error-class"));
        KT_ASSERT(kretry_replay_header_dropped("kretry-replay-count"));
        KT_ASSERT(!kretry_replay_header_dropped("kretry-correlation-id"));
        KT_ASSERT(!kretry_replay_header_dropped("kretry-something-new"));
        KT_ASSERT(!kretry_replay_header_dropped("traceparent"));
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_reset_chain),     KT_TEST(test_first_replay),
                KT_TEST(test_malformed_count), KT_TEST(test_tier_chain),
                KT_TEST(test_dropped_names),   KT_END};
        return kt_main("replay_headers", tests, argc, argv);
}
