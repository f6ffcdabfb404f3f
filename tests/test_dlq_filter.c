#include "dlq_filter.h"
#include "dlq_foreign.h"
#include "testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static rd_kafka_headers_t *dlq_headers(const char *cls, const char *code) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        rd_kafka_header_add(h, "trace", -1, "t1", 2);
        rd_kafka_header_add(h, "kretry-attempt", -1, "4", 1);
        rd_kafka_header_add(h, "kretry-original-topic", -1, "orders", 6);
        rd_kafka_header_add(h, "kretry-first-failure-ts", -1, "1000", 4);
        rd_kafka_header_add(h, "kretry-last-failure-ts", -1, "5000", 4);
        if (cls)
                rd_kafka_header_add(h, "kretry-error-class", -1, cls, -1);
        if (code)
                rd_kafka_header_add(h, "kretry-error-code", -1, code, -1);
        rd_kafka_header_add(h, "kretry-error", -1, "bad order", 9);
        rd_kafka_header_add(h, "kretry-replay-count", -1, "2", 1);
        return h;
}

static void test_decode(void) {
        rd_kafka_headers_t *h = dlq_headers("permanent", "VALIDATION");
        kretry_dlq_info_t i;
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT(i.chain.attempt_ok && i.chain.attempt == 4);
        KT_ASSERT(i.chain.first_failure_ok && i.chain.first_failure_ts == 1000);
        KT_ASSERT_INT_EQ(i.last_failure_ts, 5000);
        KT_ASSERT_INT_EQ(i.replay_count, 2);
        KT_ASSERT(i.error_class.len == 9 &&
                  !memcmp(i.error_class.ptr, "permanent", 9));
        KT_ASSERT(i.error.len == 9 && !memcmp(i.error.ptr, "bad order", 9));
        KT_ASSERT(i.group.ptr == NULL);
        KT_ASSERT_INT_EQ(kretry_dlq_dead_lettered_at(&i, 7000), 7000);
        KT_ASSERT_INT_EQ(kretry_dlq_dead_lettered_at(&i, -1), 5000);
        rd_kafka_headers_destroy(h);

        kretry_dlq_info_decode(NULL, &i);
        KT_ASSERT(!i.chain.attempt_ok && i.error_class.ptr == NULL);
        KT_ASSERT_INT_EQ(i.last_failure_ts, -1);
        KT_ASSERT_INT_EQ(kretry_dlq_dead_lettered_at(&i, -1), -1);
}

/* Spring Kafka's DLT headers (binary numbers), and an older Spring's
 * shortest attempts; kretry's own win where both are there. */
static void test_spring(void) {
        unsigned char part[4], off[8], ts[8], att[4];
        kt_put_be(part, 3, 4);
        kt_put_be(off, 5000000000, 8);
        kt_put_be(ts, 1700000000123, 8);
        kt_put_be(att, 4, 4);
        rd_kafka_headers_t *h = rd_kafka_headers_new(16);
        rd_kafka_header_add(h, "kafka_dlt-exception-fqcn", -1, "a.Outer", -1);
        rd_kafka_header_add(h, "kafka_dlt-exception-cause-fqcn", -1, "a.Cause",
                            -1);
        rd_kafka_header_add(h, "kafka_dlt-exception-message", -1, "boom", -1);
        rd_kafka_header_add(h, "kafka_dlt-exception-stacktrace", -1, "at x",
                            -1);
        rd_kafka_header_add(h, "kafka_dlt-original-topic", -1, "orders", -1);
        rd_kafka_header_add(h, "kafka_dlt-original-partition", -1, part, 4);
        rd_kafka_header_add(h, "kafka_dlt-original-offset", -1, off, 8);
        rd_kafka_header_add(h, "kafka_dlt-original-timestamp", -1, ts, 8);
        rd_kafka_header_add(h, "kafka_dlt-original-consumer-group", -1, "g",
                            -1);
        rd_kafka_header_add(h, "retry_topic-attempts", -1, att, 4);
        kretry_dlq_info_t i;
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT_STR_EQ(i.origin, "spring");
        KT_ASSERT(i.error_class.len == 9 &&
                  !memcmp(i.error_class.ptr, "exhausted", 9));
        KT_ASSERT(i.error_code.len == 7 &&
                  !memcmp(i.error_code.ptr, "a.Cause", 7));
        KT_ASSERT(i.error.len == 4 && !memcmp(i.error.ptr, "boom", 4));
        KT_ASSERT(i.group.len == 1 && i.stacktrace.len == 4);
        KT_ASSERT(i.chain.orig_topic_ok &&
                  !strcmp(i.chain.orig_topic, "orders"));
        KT_ASSERT(i.chain.orig_partition_ok && i.chain.orig_partition == 3);
        KT_ASSERT(i.chain.orig_offset_ok && i.chain.orig_offset == 5000000000);
        KT_ASSERT(i.chain.orig_ts_ok && i.chain.orig_ts == 1700000000123);
        /* attempts numbers the next delivery: 4 means 3 failed */
        KT_ASSERT(i.chain.attempt_ok && i.chain.attempt == 3);
        rd_kafka_headers_destroy(h);

        /* Retry topics' names (kafka_<field>), attempts in one byte (an
         * older Spring), no cause: sent to the DLT from its first delivery;
         * then kretry's class and attempt win. */
        h                       = rd_kafka_headers_new(8);
        const unsigned char two = 2;
        rd_kafka_header_add(h, "kafka_exception-fqcn", -1, "a.Outer", -1);
        rd_kafka_header_add(h, "retry_topic-attempts", -1, &two, 1);
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT(i.error_class.len == 9 &&
                  !memcmp(i.error_class.ptr, "permanent", 9));
        KT_ASSERT(i.error_code.len == 7 &&
                  !memcmp(i.error_code.ptr, "a.Outer", 7));
        KT_ASSERT(i.chain.attempt_ok && i.chain.attempt == 1);
        KT_ASSERT(!i.chain.orig_partition_ok);
        rd_kafka_header_add(h, "kretry-error-class", -1, "expired", -1);
        rd_kafka_header_add(h, "kretry-attempt", -1, "7", -1);
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT_STR_EQ(i.origin, "kretry");
        KT_ASSERT(i.error_class.len == 7 && i.chain.attempt == 7);
        KT_ASSERT(i.error_code.ptr == NULL);
        rd_kafka_headers_destroy(h);
}

/* A record of a real Spring Kafka 4.1.2 DLT (retry topics configured, a
 * not-retryable exception), its headers byte for byte as a real broker
 * returned them (tests/fixtures/spring-4.1.2-dlt.json). */
static void test_spring_real_record(void) {
        json_error_t jerr;
        json_t *rec = json_load_file(KRETRY_SOURCE_DIR
                                     "/tests/fixtures/spring-4.1.2-dlt.json",
                                     0, &jerr);
        KT_REQUIRE(rec != NULL);
        json_t *hs            = json_object_get(rec, "headers");
        rd_kafka_headers_t *h = rd_kafka_headers_new(json_array_size(hs));
        unsigned char buf[8192];
        for (size_t k = 0; k < json_array_size(hs); k++) {
                json_t *e       = json_array_get(hs, k);
                const char *hex = json_string_value(json_array_get(e, 1));
                size_t n        = strlen(hex) / 2;
                KT_REQUIRE(n <= sizeof(buf));
                for (size_t b = 0; b < n; b++) {
                        unsigned x;
                        sscanf(hex + 2 * b, "%2x", &x);
                        buf[b] = (unsigned char)x;
                }
                rd_kafka_header_add(h, json_string_value(json_array_get(e, 0)),
                                    -1, buf, (ssize_t)n);
        }
        kretry_dlq_info_t i;
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT_STR_EQ(i.origin, "spring");
        KT_ASSERT(i.error_class.len == 9 &&
                  !memcmp(i.error_class.ptr, "permanent", 9));
        static const char code[] = "kretry.peers.spring.SpringSide$Permanent";
        KT_ASSERT(i.error_code.len == sizeof(code) - 1 &&
                  !memcmp(i.error_code.ptr, code, sizeof(code) - 1));
        KT_ASSERT(i.error.len == 24 &&
                  !memcmp(i.error.ptr, "Listener failed; fail me", 24));
        KT_ASSERT(i.stacktrace.len == 4464);
        KT_ASSERT(i.chain.orig_topic_ok &&
                  !strcmp(i.chain.orig_topic, "springdlt-2702"));
        KT_ASSERT(i.chain.orig_partition_ok && i.chain.orig_partition == 1);
        KT_ASSERT(i.chain.orig_offset_ok && i.chain.orig_offset == 0);
        KT_ASSERT(i.chain.orig_ts_ok && i.chain.orig_ts == 0x1a23da2c5d1);
        KT_ASSERT(i.group.len == 16 &&
                  !memcmp(i.group.ptr, "springdlt-2702-g", 16));
        KT_ASSERT(i.chain.attempt_ok && i.chain.attempt == 1);
        /* A replay keeps only the user's headers. */
        int kept = 0;
        for (size_t k = 0; k < json_array_size(hs); k++)
                kept += !kretry_dlq_foreign_header(json_string_value(
                        json_array_get(json_array_get(hs, k), 0)));
        KT_ASSERT_INT_EQ(kept, 2); /* trace-id, content-type */
        rd_kafka_headers_destroy(h);
        json_decref(rec);
}

/* Kafka Connect's DLQ context headers (decimal text). */
static void test_connect(void) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        rd_kafka_header_add(h, "__connect.errors.topic", -1, "orders", -1);
        rd_kafka_header_add(h, "__connect.errors.partition", -1, "2", -1);
        rd_kafka_header_add(h, "__connect.errors.offset", -1, "17", -1);
        rd_kafka_header_add(h, "__connect.errors.exception.class.name", -1,
                            "x.DataException", -1);
        rd_kafka_header_add(h, "__connect.errors.exception.message", -1, "bad",
                            -1);
        kretry_dlq_info_t i;
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT_STR_EQ(i.origin, "connect");
        KT_ASSERT(i.error_class.len == 9 &&
                  !memcmp(i.error_class.ptr, "permanent", 9));
        KT_ASSERT(i.error_code.len == 15);
        KT_ASSERT(i.chain.orig_partition_ok && i.chain.orig_partition == 2);
        KT_ASSERT(i.chain.orig_offset_ok && i.chain.orig_offset == 17);
        KT_ASSERT(!i.chain.attempt_ok);
        rd_kafka_headers_destroy(h);
        /* Malformed numbers are unknown, never a crash or a wrong value. */
        h = rd_kafka_headers_new(4);
        rd_kafka_header_add(h, "__connect.errors.topic", -1, "orders", -1);
        rd_kafka_header_add(h, "__connect.errors.partition", -1, "-2", -1);
        rd_kafka_header_add(h, "__connect.errors.offset", -1, "x", -1);
        rd_kafka_header_add(h, "kafka_dlt-original-partition", -1, "", 0);
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT(!i.chain.orig_partition_ok && !i.chain.orig_offset_ok);
        rd_kafka_headers_destroy(h);
        KT_ASSERT(kretry_dlq_foreign_header("kafka_dlt-original-offset"));
        KT_ASSERT(kretry_dlq_foreign_header("retry_topic-attempts"));
        KT_ASSERT(kretry_dlq_foreign_header("__connect.errors.topic"));
        KT_ASSERT(!kretry_dlq_foreign_header("kafka_dltx"));
        KT_ASSERT(!kretry_dlq_foreign_header("traceparent"));
}

static void test_malformed(void) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        rd_kafka_header_add(h, "kretry-attempt", -1, "x", 1);
        rd_kafka_header_add(h, "kretry-last-failure-ts", -1, "-5", 2);
        rd_kafka_header_add(h, "kretry-replay-count", -1, "", 0);
        rd_kafka_header_add(h, "kretry-error-class", -1, NULL, 0);
        kretry_dlq_info_t i;
        kretry_dlq_info_decode(h, &i);
        KT_ASSERT(!i.chain.attempt_ok);
        KT_ASSERT_INT_EQ(i.last_failure_ts, -1);
        KT_ASSERT_INT_EQ(i.replay_count, 0);
        KT_ASSERT(i.error_class.ptr == NULL);
        rd_kafka_headers_destroy(h);
}

static int match(const kretry_dlq_filter_t *f,
                 const char *cls,
                 const char *code,
                 const char *key,
                 int64_t at) {
        rd_kafka_headers_t *h = dlq_headers(cls, code);
        kretry_dlq_info_t i;
        kretry_dlq_info_decode(h, &i);
        int r = kretry_dlq_filter_match(f, &i, key, key ? strlen(key) : 0, at);
        rd_kafka_headers_destroy(h);
        return r;
}

static void test_filters(void) {
        kretry_dlq_filter_t f;
        kretry_dlq_filter_init(&f);
        KT_ASSERT(match(&f, "permanent", "VALIDATION", "k1", 100));
        KT_ASSERT(match(&f, NULL, NULL, NULL, -1));

        f.error_class = "permanent";
        KT_ASSERT(match(&f, "permanent", "X", "k1", 100));
        KT_ASSERT(!match(&f, "exhausted", "X", "k1", 100));
        KT_ASSERT(!match(&f, "permanentx", "X", "k1", 100));
        KT_ASSERT(!match(&f, NULL, "X", "k1", 100));

        kretry_dlq_filter_init(&f);
        f.error_code = "HTTP_503";
        KT_ASSERT(match(&f, "exhausted", "HTTP_503", "k1", 100));
        KT_ASSERT(!match(&f, "exhausted", "HTTP_50", "k1", 100));
        KT_ASSERT(!match(&f, "exhausted", NULL, "k1", 100));

        kretry_dlq_filter_init(&f);
        f.key     = "k1";
        f.key_len = 2;
        KT_ASSERT(match(&f, "permanent", NULL, "k1", 100));
        KT_ASSERT(!match(&f, "permanent", NULL, "k12", 100));
        KT_ASSERT(!match(&f, "permanent", NULL, NULL, 100));
        f.key     = "";
        f.key_len = 0;
        KT_ASSERT(match(&f, "permanent", NULL, "", 100));
        KT_ASSERT(!match(&f, "permanent", NULL, NULL, 100));

        /* since inclusive, until exclusive; unknown times match no bound */
        kretry_dlq_filter_init(&f);
        f.since_ms = 100;
        f.until_ms = 200;
        KT_ASSERT(!match(&f, NULL, NULL, NULL, 99));
        KT_ASSERT(match(&f, NULL, NULL, NULL, 100));
        KT_ASSERT(match(&f, NULL, NULL, NULL, 199));
        KT_ASSERT(!match(&f, NULL, NULL, NULL, 200));
        KT_ASSERT(!match(&f, NULL, NULL, NULL, -1));

        /* all at once */
        kretry_dlq_filter_init(&f);
        f.error_class = "permanent";
        f.error_code  = "VALIDATION";
        f.key         = "k1";
        f.key_len     = 2;
        f.since_ms    = 50;
        KT_ASSERT(match(&f, "permanent", "VALIDATION", "k1", 60));
        KT_ASSERT(!match(&f, "permanent", "VALIDATION", "k2", 60));
        KT_ASSERT(!match(&f, "permanent", "VALIDATION", "k1", 40));
}

static void test_binary_key(void) {
        kretry_dlq_filter_t f;
        kretry_dlq_info_t i;
        kretry_dlq_info_decode(NULL, &i);
        kretry_dlq_filter_init(&f);
        f.key     = "a\0b";
        f.key_len = 3;
        KT_ASSERT(kretry_dlq_filter_match(&f, &i, "a\0b", 3, -1));
        KT_ASSERT(!kretry_dlq_filter_match(&f, &i, "a\0c", 3, -1));
        KT_ASSERT(!kretry_dlq_filter_match(&f, &i, "a", 1, -1));
}

static void test_parse_time(void) {
        int64_t v;
        char err[256];
        KT_ASSERT_INT_EQ(
                kretry_dlq_parse_time("1h", 10000000, &v, err, sizeof(err)), 0);
        KT_ASSERT_INT_EQ(v, 10000000 - 3600000);
        KT_ASSERT_INT_EQ(
                kretry_dlq_parse_time("90s", 100000, &v, err, sizeof(err)), 0);
        KT_ASSERT_INT_EQ(v, 10000);
        KT_ASSERT_INT_EQ(
                kretry_dlq_parse_time("1700000000000", 5, &v, err, sizeof(err)),
                0);
        KT_ASSERT_INT_EQ(v, 1700000000000LL);
        /* a duration longer than the clock reaches back stops at 0 */
        KT_ASSERT_INT_EQ(
                kretry_dlq_parse_time("2d", 1000, &v, err, sizeof(err)), 0);
        KT_ASSERT_INT_EQ(v, 0);
        KT_ASSERT_INT_EQ(kretry_dlq_parse_time("1x", 5, &v, err, sizeof(err)),
                         -1);
        KT_ASSERT(strstr(err, "\"1x\"") != NULL);
        KT_ASSERT_INT_EQ(kretry_dlq_parse_time("", 5, &v, err, sizeof(err)),
                         -1);
        KT_ASSERT_INT_EQ(kretry_dlq_parse_time("-5", 5, &v, err, sizeof(err)),
                         -1);
        KT_ASSERT_INT_EQ(kretry_dlq_parse_time("99999999999999999999", 5, &v,
                                               err, sizeof(err)),
                         -1);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_decode),
                                          KT_TEST(test_spring),
                                          KT_TEST(test_spring_real_record),
                                          KT_TEST(test_connect),
                                          KT_TEST(test_malformed),
                                          KT_TEST(test_filters),
                                          KT_TEST(test_binary_key),
                                          KT_TEST(test_parse_time),
                                          KT_END};
        return kt_main("dlq_filter", tests, argc, argv);
}
