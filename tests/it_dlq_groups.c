/*
 * The DLQ's failures grouped (dlq_groups.c, kretry ui's failures view):
 * the grouping as plain data, then 100,000 dead letters on the mock
 * cluster grouped from the DLQ reader within 2 s.
 */
#include "dlq_groups.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static kretry_dlq_info_t
info_of(const char *cls, const char *code, const char *topic) {
        kretry_dlq_info_t i;
        memset(&i, 0, sizeof(i));
        i.error_class.ptr = cls;
        i.error_class.len = cls ? strlen(cls) : 0;
        i.error_code.ptr  = code;
        i.error_code.len  = code ? strlen(code) : 0;
        if (topic) {
                snprintf(i.chain.orig_topic, sizeof(i.chain.orig_topic), "%s",
                         topic);
                i.chain.orig_topic_ok = 1;
        }
        return i;
}

static json_t *field(json_t *arr, size_t i, const char *name) {
        return json_object_get(json_array_get(arr, i), name);
}

static void test_groups_plain(void) {
        dlq_groups_t *g = dlq_groups_new(3);
        KT_REQUIRE(g);
        kretry_dlq_info_t a = info_of("exhausted", "HTTP_503", "orders");
        kretry_dlq_info_t b = info_of("permanent", "VALIDATION", "orders");
        kretry_dlq_info_t c = info_of("permanent", NULL, "orders");
        kretry_dlq_info_t d = info_of("permanent", "VALIDATION", "payments");
        kretry_dlq_info_t e = info_of("schema", "X", "orders");
        KT_ASSERT(!dlq_groups_add(g, &a, 300));
        KT_ASSERT(!dlq_groups_add(g, &b, 100));
        KT_ASSERT(!dlq_groups_add(g, &a, 200));
        KT_ASSERT(!dlq_groups_add(g, &a, -1)); /* time unknown */
        KT_ASSERT(!dlq_groups_add(g, &c, 50));
        KT_ASSERT(!dlq_groups_add(g, &d, 60)); /* a fourth: other */
        KT_ASSERT(!dlq_groups_add(g, &e, 70));
        KT_ASSERT(!dlq_groups_add(g, &b, 400));
        KT_ASSERT_INT_EQ(dlq_groups_count(g), 3);
        KT_ASSERT_INT_EQ(dlq_groups_other(g), 2);
        json_t *j = dlq_groups_json(g);
        KT_ASSERT_INT_EQ(json_array_size(j), 3);
        /* the largest first */
        KT_ASSERT_STR_EQ(json_string_value(field(j, 0, "class")), "exhausted");
        KT_ASSERT_INT_EQ(json_integer_value(field(j, 0, "count")), 3);
        KT_ASSERT_INT_EQ(json_integer_value(field(j, 0, "first_seen")), 200);
        KT_ASSERT_INT_EQ(json_integer_value(field(j, 0, "last_seen")), 300);
        KT_ASSERT_STR_EQ(json_string_value(field(j, 1, "code")), "VALIDATION");
        KT_ASSERT_INT_EQ(json_integer_value(field(j, 1, "count")), 2);
        KT_ASSERT_STR_EQ(json_string_value(field(j, 1, "original_topic")),
                         "orders");
        KT_ASSERT(json_is_null(field(j, 2, "code"))); /* absent, not "" */
        json_decref(j);
        dlq_groups_destroy(g);
        KT_ASSERT(dlq_groups_new(0) == NULL);
        KT_ASSERT(dlq_groups_new(DLQ_GROUPS_MAX + 1) == NULL);
}

#define MANY 100000
static const char *const CLASSES[] = {"exhausted", "permanent", "schema"};
static const char *const CODES[]   = {"HTTP_503", "VALIDATION", "TIMEOUT",
                                      "NOT_FOUND"};

static void produce_many(rd_kafka_t *p, const char *dlq, int64_t t0) {
        static char value[] = "v";
        for (int i = 0; i < MANY; i++) {
                rd_kafka_headers_t *h = rd_kafka_headers_new(4);
                rd_kafka_header_add(h, "kretry-error-class", -1, CLASSES[i % 3],
                                    -1);
                rd_kafka_header_add(h, "kretry-error-code", -1, CODES[i % 4],
                                    -1);
                rd_kafka_header_add(h, "kretry-original-topic", -1,
                                    (i / 12) % 2 ? "orders" : "payments", -1);
                rd_kafka_resp_err_t err;
                while ((err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(dlq),
                                                RD_KAFKA_V_PARTITION(i % 2),
                                                RD_KAFKA_V_VALUE(value, 1),
                                                RD_KAFKA_V_TIMESTAMP(t0 + i),
                                                RD_KAFKA_V_HEADERS(h),
                                                RD_KAFKA_V_END)) ==
                       RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        rd_kafka_poll(p, 10);
                KT_REQUIRE(err == RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        KT_REQUIRE(rd_kafka_flush(p, 60000) == RD_KAFKA_RESP_ERR_NO_ERROR);
}

static double mono_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_groups_100k(void) {
        kt_cluster_t *c = kt_cluster_new(1);
        char dlq[160], errstr[512];
        KT_REQUIRE(kt_cluster_topic(c, "orders.dlq", 2, dlq, sizeof(dlq)) == 0);
        rd_kafka_conf_t *conf = kt_rdkafka_conf(c);
        rd_kafka_conf_set(conf, "linger.ms", "20", NULL, 0);
        rd_kafka_conf_set(conf, "queue.buffering.max.messages", "200000", NULL,
                          0);
        rd_kafka_t *p =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        KT_REQUIRE(p);
        int64_t t0 = 1700000000000;
        produce_many(p, dlq, t0);
        rd_kafka_destroy(p);

        /* timed: what GET /api/groups does (open, snapshot, read, group) */
        double start    = mono_s();
        dlq_reader_t *r = dlq_reader_new(kt_rdkafka_conf(c), dlq, NULL, 10000,
                                         errstr, sizeof(errstr));
        KT_REQUIRE(r);
        KT_REQUIRE(!dlq_reader_snapshot(r, 0, errstr, sizeof(errstr)));
        dlq_groups_t *g = dlq_groups_new(DLQ_GROUPS_MAX);
        int64_t read;
        int rc = dlq_groups_read(r, g, 200000, &read, errstr, sizeof(errstr));
        json_t *j   = dlq_groups_json(g);
        double took = mono_s() - start;
        printf("\n  grouped %lld dead letters into %zu groups in %.3f s\n",
               (long long)read, json_array_size(j), took);
        KT_ASSERT_INT_EQ(rc, 1);
        KT_ASSERT_INT_EQ(read, MANY);
        /* class i%3, code i%4 (12 combinations), each with both original
         * topics */
        KT_ASSERT_INT_EQ(json_array_size(j), 24);
        int64_t sum = 0, first = -1, last = -1;
        for (size_t i = 0; i < json_array_size(j); i++) {
                sum += json_integer_value(field(j, i, "count"));
                int64_t f = json_integer_value(field(j, i, "first_seen"));
                int64_t l = json_integer_value(field(j, i, "last_seen"));
                if (first < 0 || f < first)
                        first = f;
                if (l > last)
                        last = l;
        }
        KT_ASSERT_INT_EQ(sum, MANY);
        KT_ASSERT_INT_EQ(first, t0);
        KT_ASSERT_INT_EQ(last, t0 + MANY - 1);
        KT_ASSERT(took < 2.0);
        /* bounded: a read stops at its limit and says so */
        dlq_reader_t *r2 = dlq_reader_new(kt_rdkafka_conf(c), dlq, NULL, 10000,
                                          errstr, sizeof(errstr));
        dlq_groups_t *g2 = dlq_groups_new(DLQ_GROUPS_MAX);
        KT_REQUIRE(r2 && !dlq_reader_snapshot(r2, 0, errstr, sizeof(errstr)));
        KT_ASSERT_INT_EQ(
                dlq_groups_read(r2, g2, 1000, &read, errstr, sizeof(errstr)),
                0);
        KT_ASSERT_INT_EQ(read, 1000);
        dlq_groups_destroy(g2);
        dlq_reader_destroy(r2);
        json_decref(j);
        dlq_groups_destroy(g);
        dlq_reader_destroy(r);
        kt_cluster_destroy(c);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_groups_plain),
                                          KT_TEST(test_groups_100k), KT_END};
        return kt_main("dlq_groups", tests, argc, argv);
}
