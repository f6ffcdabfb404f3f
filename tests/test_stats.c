/* Unit tests: the handler latency histogram and the Prometheus rendering of
 * a stats document. */
#include "kretry/kretry.h"
#include "latency.h"
#include "testutil.h"

#include <string.h>

static void test_latency(void) {
        kretry_latency_t l;
        kretry_latency_reset(&l);
        KT_ASSERT_INT_EQ(kretry_latency_quantile(&l, 0.5), 0);
        for (int i = 1; i <= 1000; i++)
                kretry_latency_record(&l, i);
        int64_t p50 = kretry_latency_quantile(&l, 0.5);
        int64_t p99 = kretry_latency_quantile(&l, 0.99);
        /* At most 1/8 above the true value, never above the maximum. */
        KT_CHECK_MSG(p50 >= 500 && p50 <= 500 + 500 / 8 + 1, CU_FALSE,
                     "p50 %lld", (long long)p50);
        KT_CHECK_MSG(p99 >= 990 && p99 <= 1000, CU_FALSE, "p99 %lld",
                     (long long)p99);
        KT_ASSERT_INT_EQ(kretry_latency_quantile(&l, 1.0), 1000);
        KT_ASSERT_INT_EQ(l.count, 1000);
        kretry_latency_reset(&l);
        kretry_latency_record(&l, 7);
        KT_ASSERT_INT_EQ(kretry_latency_quantile(&l, 0.99), 7);
        kretry_latency_record(&l, -5); /* clock went backwards: 0 */
        kretry_latency_record(&l, 40LL * 1000 * 1000 * 1000); /* past range */
        KT_ASSERT_INT_EQ(kretry_latency_quantile(&l, 1.0),
                         40LL * 1000 * 1000 * 1000);
        KT_ASSERT_INT_EQ(kretry_latency_quantile(&l, 0.0), 0);
}

static void test_prometheus(void) {
        const char *doc =
                "{\"consumed\":10,\"ok\":7,\"handler_calls\":9,\"retried\":[2,"
                "1],"
                "\"dead_lettered\":{\"permanent\":1,\"exhausted\":0},"
                "\"produce_errors\":0,\"stale\":3,\"forwarded\":4,"
                "\"inflight\":6,\"inflight_bytes\":12288,"
                "\"breaker_open\":true,\"breaker_trips\":2,\"assigned\":3,"
                "\"txn_commits\":4,\"txn_aborts\":1,"
                "\"handler_latency_ms\":{\"count\":9,\"p50\":1.5,\"p99\":20,"
                "\"max\":25},\"topics\":[{\"topic\":\"or\\\"ders\",\"waiting\":"
                "5,"
                "\"oldest_held_age_ms\":-1},{\"topic\":\"orders.retry.1\","
                "\"waiting\":-1,\"oldest_held_age_ms\":1500,\"partitions\":"
                "[{\"partition\":4,\"waiting\":7}]}]}";
        char out[4096];
        size_t n = kretry_stats_prometheus(doc, out, sizeof(out));
        KT_REQUIRE(n > 0 && n < sizeof(out));
        KT_ASSERT_INT_EQ(n, strlen(out));
        const char *want[] = {
                "# TYPE kretry_consumed_total counter\nkretry_consumed_total "
                "10\n",
                "kretry_ok_total 7\n",
                "kretry_stale_total 3\n",
                "kretry_retried_total{tier=\"1\"} 2\n",
                "kretry_retried_total{tier=\"2\"} 1\n",
                "kretry_dead_lettered_total{class=\"permanent\"} 1\n",
                "kretry_handler_latency_seconds{quantile=\"0.99\"} 0.02\n",
                "# TYPE kretry_inflight_messages gauge\n"
                "kretry_inflight_messages 6\n",
                "# TYPE kretry_inflight_bytes gauge\nkretry_inflight_bytes "
                "12288\n",
                "kretry_topic_waiting_messages{topic=\"or\\\"ders\"} 5\n",
                "# TYPE kretry_breaker_open gauge\nkretry_breaker_open 1\n",
                "kretry_breaker_trips_total 2\n",
                "kretry_txn_commits_total 4\n",
                "kretry_txn_aborts_total 1\n",
                "kretry_assigned_partitions 3\n",
                "kretry_partition_waiting_messages{topic=\"orders.retry.1\","
                "partition=\"4\"} 7\n",
                "kretry_topic_oldest_held_age_seconds{topic=\"orders.retry.1\"}"
                " "
                "1.5\n",
        };
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                KT_CHECK_MSG(strstr(out, want[i]) != NULL, CU_FALSE,
                             "missing %s in:\n%s", want[i], out);
        /* Unknown figures are left out rather than invented. */
        KT_ASSERT(strstr(out, "topic=\"orders.retry.1\"} -1") == NULL);
        /* A document without the in-flight gauges renders none. */
        KT_REQUIRE(kretry_stats_prometheus("{\"ok\":1}", out, sizeof(out)) > 0);
        KT_ASSERT(strstr(out, "kretry_inflight") == NULL);
        KT_ASSERT(strstr(out, "kretry_ok_total 1\n") != NULL);
        kretry_stats_prometheus(doc, out, sizeof(out));
        /* Truncation reports the full length, NUL-terminated. */
        char small[32];
        KT_ASSERT_INT_EQ(kretry_stats_prometheus(doc, small, sizeof(small)), n);
        KT_ASSERT_INT_EQ(strlen(small), sizeof(small) - 1);
        KT_ASSERT_INT_EQ(kretry_stats_prometheus("not json", out, sizeof(out)),
                         0);
        KT_ASSERT_STR_EQ(out, "");
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_latency),
                                          KT_TEST(test_prometheus), KT_END};
        return kt_main("stats", tests, argc, argv);
}
