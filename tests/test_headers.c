#include "headers.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

static void test_numbers(void) {
        int64_t v;
        KT_ASSERT_INT_EQ(kretry_header_num("42", 2, 100, &v), 0);
        KT_ASSERT_INT_EQ(v, 42);
        KT_ASSERT_INT_EQ(kretry_header_num("0", 1, 100, &v), 0);
        KT_ASSERT_INT_EQ(kretry_header_num("101", 3, 100, &v), -1);
        KT_ASSERT_INT_EQ(kretry_header_num("-1", 2, 100, &v), -1);
        KT_ASSERT_INT_EQ(kretry_header_num("abc", 3, 100, &v), -1);
        KT_ASSERT_INT_EQ(kretry_header_num("4 ", 2, 100, &v), -1);
        KT_ASSERT_INT_EQ(kretry_header_num("", 0, 100, &v), -1);
        KT_ASSERT_INT_EQ(kretry_header_num(NULL, 3, 100, &v), -1);
        KT_ASSERT_INT_EQ(
                kretry_header_num("99999999999999999999", 20, INT64_MAX, &v),
                -1);
        KT_ASSERT_INT_EQ(
                kretry_header_num("9223372036854775807", 19, INT64_MAX, &v), 0);
        /* 19 digits past INT64_MAX: refused without overflowing (found by
         * fuzz_headers under UBSan). */
        KT_ASSERT_INT_EQ(
                kretry_header_num("9999999999999999999", 19, INT64_MAX, &v),
                -1);
        KT_ASSERT_INT_EQ(
                kretry_header_num("9223372036854775808", 19, INT64_MAX, &v),
                -1);
        KT_ASSERT_INT_EQ(kretry_header_num("1\0", 2, 100, &v), -1);
}

static void test_decode_valid(void) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        rd_kafka_header_add(h, "kretry-attempt", -1, "3", 1);
        rd_kafka_header_add(h, "kretry-tier", -1, "2", 1);
        rd_kafka_header_add(h, "kretry-due-ts", -1, "1700000000123", 13);
        rd_kafka_header_add(h, "kretry-original-topic", -1, "orders", 6);
        rd_kafka_header_add(h, "kretry-original-partition", -1, "5", 1);
        rd_kafka_header_add(h, "kretry-original-offset", -1, "1234", 4);
        rd_kafka_header_add(h, "kretry-correlation-id", -1, "abc", 3);
        kretry_chain_t c;
        kretry_chain_decode(h, &c);
        KT_ASSERT(c.attempt_ok && c.attempt == 3);
        KT_ASSERT(c.tier_ok && c.tier == 2);
        KT_ASSERT(c.due_ok && c.due_ts == 1700000000123LL);
        KT_ASSERT(c.orig_topic_ok);
        KT_ASSERT_STR_EQ(c.orig_topic, "orders");
        KT_ASSERT(c.orig_partition_ok && c.orig_partition == 5);
        KT_ASSERT(c.orig_offset_ok && c.orig_offset == 1234);
        KT_ASSERT(!c.orig_ts_ok);
        KT_ASSERT(!c.first_failure_ok);
        KT_ASSERT_INT_EQ(c.correlation_id_len, 3);
        rd_kafka_headers_destroy(h);
}

static void test_decode_malformed(void) {
        const char *bad[] = {"abc",     "-1", "99999999999999999999",
                             "1000001", "",   "1.5"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                rd_kafka_headers_t *h = rd_kafka_headers_new(2);
                rd_kafka_header_add(h, "kretry-attempt", -1, bad[i],
                                    (ssize_t)strlen(bad[i]));
                rd_kafka_header_add(h, "kretry-original-topic", -1, "a\0b", 3);
                kretry_chain_t c;
                kretry_chain_decode(h, &c);
                KT_CHECK_MSG(!c.attempt_ok, CU_FALSE,
                             "attempt \"%s\" must be refused", bad[i]);
                KT_ASSERT(!c.orig_topic_ok);
                rd_kafka_headers_destroy(h);
        }
        kretry_chain_t c;
        /* Zero is valid: parked behind its key before any attempt. */
        rd_kafka_headers_t *z = rd_kafka_headers_new(1);
        rd_kafka_header_add(z, "kretry-attempt", -1, "0", 1);
        kretry_chain_decode(z, &c);
        KT_ASSERT(c.attempt_ok && c.attempt == 0);
        rd_kafka_headers_destroy(z);
        kretry_chain_decode(NULL, &c);
        KT_ASSERT(!c.attempt_ok && !c.due_ok);
        /* A header without a value. */
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        rd_kafka_header_add(h, "kretry-attempt", -1, NULL, 0);
        kretry_chain_decode(h, &c);
        KT_ASSERT(!c.attempt_ok);
        rd_kafka_headers_destroy(h);
}

static const char *get(rd_kafka_headers_t *h, const char *n, char *buf) {
        const void *v;
        size_t sz;
        if (rd_kafka_header_get_last(h, n, &v, &sz))
                return NULL;
        memcpy(buf, v, sz);
        buf[sz] = '\0';
        return buf;
}

static void test_build(void) {
        rd_kafka_headers_t *src = rd_kafka_headers_new(8);
        rd_kafka_header_add(src, "user", -1, "1", 1);
        rd_kafka_header_add(src, "kretry-attempt", -1, "1", 1);
        rd_kafka_header_add(src, "kretry-replay-count", -1, "2", 1);
        rd_kafka_header_add(src, "bin", -1, "\0\xff", 2);
        rd_kafka_header_add(src, "kretry-error", -1, "old", 3);
        kretry_copy_info_t info = {.attempt          = 2,
                                   .tier             = 2,
                                   .due_ts           = 99,
                                   .orig_topic       = "orders",
                                   .orig_partition   = 3,
                                   .orig_offset      = 77,
                                   .orig_ts          = 5,
                                   .first_failure_ts = 10,
                                   .last_failure_ts  = 20,
                                   .error_class      = "transient",
                                   .error_code       = "HTTP_503",
                                   .error            = NULL,
                                   .group            = "g",
                                   .followers        = -1};
        rd_kafka_headers_t *h   = kretry_headers_build(src, &info);
        char b[64];
        const char *n;
        const void *v;
        size_t sz;
        /* Pass-through headers first, in order; rewritten ones dropped. */
        KT_REQUIRE(!rd_kafka_header_get_all(h, 0, &n, &v, &sz));
        KT_ASSERT_STR_EQ(n, "user");
        KT_REQUIRE(!rd_kafka_header_get_all(h, 1, &n, &v, &sz));
        KT_ASSERT_STR_EQ(n, "kretry-replay-count");
        KT_REQUIRE(!rd_kafka_header_get_all(h, 2, &n, &v, &sz));
        KT_ASSERT_STR_EQ(n, "bin");
        KT_ASSERT(sz == 2 && !memcmp(v, "\0\xff", 2));
        KT_ASSERT_STR_EQ(get(h, "kretry-attempt", b), "2");
        KT_ASSERT_STR_EQ(get(h, "kretry-tier", b), "2");
        KT_ASSERT_STR_EQ(get(h, "kretry-due-ts", b), "99");
        KT_ASSERT_STR_EQ(get(h, "kretry-original-offset", b), "77");
        KT_ASSERT_STR_EQ(get(h, "kretry-error-code", b), "HTTP_503");
        KT_ASSERT(get(h, "kretry-error", b) == NULL);
        KT_ASSERT(get(h, "kretry-parked-followers", b) == NULL);
        KT_ASSERT_STR_EQ(get(h, "kretry-correlation-id", b), "orders/3/77");
        /* Round trip through the decoder. */
        kretry_chain_t c;
        kretry_chain_decode(h, &c);
        KT_ASSERT(c.attempt_ok && c.attempt == 2 && c.due_ts == 99);
        KT_ASSERT(c.first_failure_ok && c.first_failure_ts == 10);
        rd_kafka_headers_destroy(h);

        /* DLQ copies carry no tier or due time; a kept correlation id. */
        info.tier               = 0;
        info.followers          = 3;
        info.first_failure_ts   = -1;
        info.correlation_id     = "cid";
        info.correlation_id_len = 3;
        h                       = kretry_headers_build(NULL, &info);
        KT_ASSERT(get(h, "kretry-tier", b) == NULL);
        KT_ASSERT(get(h, "kretry-due-ts", b) == NULL);
        KT_ASSERT_STR_EQ(get(h, "kretry-correlation-id", b), "cid");
        KT_ASSERT_STR_EQ(get(h, "kretry-parked-followers", b), "3");
        KT_ASSERT(get(h, "kretry-first-failure-ts", b) == NULL);
        rd_kafka_headers_destroy(h);
        rd_kafka_headers_destroy(src);
}

/* A source list without chain headers becomes the copy's own, chain headers
 * appended (the producer takes it instead of a copy). */
static void test_append_in_place(void) {
        KT_ASSERT(!kretry_headers_have_chain(NULL));
        static const char *const chain[] = {
                KRETRY_H_ATTEMPT,         KRETRY_H_TIER,
                KRETRY_H_DUE_TS,          KRETRY_H_ORIG_TOPIC,
                KRETRY_H_ORIG_PARTITION,  KRETRY_H_ORIG_OFFSET,
                KRETRY_H_ORIG_TS,         KRETRY_H_FIRST_FAILURE,
                KRETRY_H_LAST_FAILURE,    KRETRY_H_ERROR_CLASS,
                KRETRY_H_ERROR_CODE,      KRETRY_H_ERROR,
                KRETRY_H_GROUP,           KRETRY_H_CORRELATION_ID,
                KRETRY_H_PARKED_FOLLOWERS};
        for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++)
                KT_ASSERT(kretry_header_is_chain(chain[i]));
        KT_ASSERT(!kretry_header_is_chain(KRETRY_H_REPLAY_COUNT));
        KT_ASSERT(!kretry_header_is_chain(KRETRY_H_REPLAYED_AT));
        KT_ASSERT(!kretry_header_is_chain("kretry-original-partitions"));
        KT_ASSERT(!kretry_header_is_chain("kretry-errors"));
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        rd_kafka_header_add(h, "user", -1, "1", 1);
        rd_kafka_header_add(h, "kretry-replay-count", -1, "2", 1);
        rd_kafka_header_add(h, "kretry-", -1, "x", 1);
        rd_kafka_header_add(h, "kretry-attemptx", -1, "x", 1);
        rd_kafka_header_add(h, "kretry-tie", -1, "x", 1);
        rd_kafka_header_add(h, "", -1, "x", 1);
        KT_ASSERT(!kretry_headers_have_chain(h));
        char topic[KRETRY_TOPIC_MAX + 1];
        memset(topic, 't', KRETRY_TOPIC_MAX);
        topic[KRETRY_TOPIC_MAX] = '\0';
        kretry_copy_info_t info = {.attempt          = 1,
                                   .tier             = 1,
                                   .due_ts           = 1700000000123LL,
                                   .orig_topic       = topic,
                                   .orig_partition   = 2147483647,
                                   .orig_offset      = INT64_MAX,
                                   .orig_ts          = -1,
                                   .first_failure_ts = 0,
                                   .last_failure_ts  = 0,
                                   .error_class      = "transient",
                                   .group            = "g",
                                   .followers        = -1};
        kretry_headers_append(h, &info);
        KT_ASSERT(kretry_headers_have_chain(h));
        KT_ASSERT(rd_kafka_header_cnt(h) == 6 + 11);
        const char *n;
        const void *v;
        size_t sz;
        KT_REQUIRE(!rd_kafka_header_get_all(h, 0, &n, &v, &sz));
        KT_ASSERT_STR_EQ(n, "user");
        KT_REQUIRE(!rd_kafka_header_get_all(h, 6, &n, &v, &sz));
        KT_ASSERT_STR_EQ(n, "kretry-attempt");
        char b[512];
        KT_ASSERT_STR_EQ(get(h, "kretry-due-ts", b), "1700000000123");
        KT_ASSERT_STR_EQ(get(h, "kretry-original-offset", b),
                         "9223372036854775807");
        KT_ASSERT_STR_EQ(get(h, "kretry-first-failure-ts", b), "0");
        KT_ASSERT(get(h, "kretry-original-timestamp", b) == NULL);
        char want[KRETRY_TOPIC_MAX + 48];
        snprintf(want, sizeof(want), "%s/2147483647/9223372036854775807",
                 topic);
        KT_ASSERT_STR_EQ(get(h, "kretry-correlation-id", b), want);
        /* Names of equal length decode to their own fields. */
        kretry_chain_t c;
        kretry_chain_decode(h, &c);
        KT_ASSERT(c.orig_partition_ok && c.orig_partition == 2147483647);
        KT_ASSERT(!c.orig_ts_ok);
        KT_ASSERT(c.orig_offset_ok && c.orig_offset == INT64_MAX);
        KT_ASSERT(c.last_failure_ts == 0);
        KT_ASSERT(c.orig_topic_ok && !strcmp(c.orig_topic, topic));
        rd_kafka_headers_destroy(h);
}

/* kretry-group decoded in the same pass as the chain says what
 * kretry_headers_foreign says of the list: the last one decides, a group
 * without a value is nobody's, an empty one another group's. */
static void test_chain_group(void) {
        static const struct {
                const char *values[2]; /* NULL: no such header */
                int null_value;        /* the last one has no value */
                int foreign;
        } cases[] = {
                {{NULL, NULL}, 0, 0}, {{"g", NULL}, 0, 0}, {{"h", NULL}, 0, 1},
                {{"gg", NULL}, 0, 1}, {{"", NULL}, 0, 1},  {{"h", "g"}, 0, 0},
                {{"g", "h"}, 0, 1},   {{"h", ""}, 1, 0},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                rd_kafka_headers_t *h = rd_kafka_headers_new(4);
                rd_kafka_header_add(h, "kretry-attempt", -1, "1", 1);
                for (int j = 0; j < 2 && cases[i].values[j]; j++) {
                        int last      = j == 1 || !cases[i].values[1];
                        const char *v = last && cases[i].null_value
                                                ? NULL
                                                : cases[i].values[j];
                        rd_kafka_header_add(h, KRETRY_H_GROUP, -1, v,
                                            v ? (ssize_t)strlen(v) : 0);
                }
                rd_kafka_header_add(h, "kretry-errors", -1, "x", 1);
                kretry_chain_t c;
                kretry_chain_decode(h, &c);
                KT_CHECK_MSG(kretry_chain_foreign(&c, "g") == cases[i].foreign,
                             CU_FALSE, "case %zu: foreign %d, want %d", i,
                             kretry_chain_foreign(&c, "g"), cases[i].foreign);
                KT_ASSERT_INT_EQ(kretry_headers_foreign(h, "g"),
                                 cases[i].foreign);
                KT_ASSERT(c.attempt_ok && c.attempt == 1);
                rd_kafka_headers_destroy(h);
        }
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_numbers),
                                          KT_TEST(test_decode_valid),
                                          KT_TEST(test_decode_malformed),
                                          KT_TEST(test_build),
                                          KT_TEST(test_append_in_place),
                                          KT_TEST(test_chain_group),
                                          KT_END};
        return kt_main("headers", tests, argc, argv);
}
