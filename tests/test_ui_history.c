/* kretry ui's history ring without a server: bounded, oldest first,
 * unknown figures as null, a since bound, tiers by number. */
#include "testutil.h"
#include "ui_history.h"

#include <string.h>

/* A report of a source, two tiers and a DLQ, taken at @p at. */
static void report(stats_report_t *r, stats_topic_t *t, int64_t at) {
        memset(r, 0, sizeof(*r));
        memset(t, 0, 4 * sizeof(*t));
        r->at_ms     = at;
        r->topics    = t;
        r->topic_cnt = 4;
        t[0].role    = STATS_ROLE_SOURCE;
        for (int k = 1; k <= 2; k++) {
                t[k].role          = STATS_ROLE_TIER;
                t[k].tier          = k;
                t[k].waiting_ok    = 1;
                t[k].waiting       = at * 10 + k;
                t[k].oldest_ok     = 1;
                t[k].oldest_age_ms = at * 100 + k;
        }
        t[3].role         = STATS_ROLE_DLQ;
        t[3].waiting_ok   = 1;
        t[3].waiting      = at;
        t[3].rates_ok     = 1;
        t[3].arrival_rate = 0.5;
}

static int64_t at(json_t *j, const char *col, size_t i) {
        json_t *v = json_array_get(json_object_get(j, col), i);
        return json_is_integer(v) ? json_integer_value(v) : -1;
}

static void test_ring_bounded(void) {
        ui_history_t *h = ui_history_new(3);
        stats_report_t r;
        stats_topic_t t[4];
        KT_REQUIRE(h);
        for (int64_t i = 1; i <= 5; i++) {
                report(&r, t, i);
                ui_history_add(h, &r);
        }
        KT_ASSERT_INT_EQ(ui_history_count(h), 3);
        json_t *j = ui_history_json(h, 0);
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(j, "count")), 3);
        KT_ASSERT_INT_EQ(at(j, "at_ms", 0), 3); /* oldest first */
        KT_ASSERT_INT_EQ(at(j, "at_ms", 2), 5);
        KT_ASSERT_INT_EQ(at(j, "dlq_waiting", 1), 4);
        KT_ASSERT(json_real_value(json_array_get(
                          json_object_get(j, "dlq_rate_per_min"), 0)) == 30.0);
        json_t *tiers = json_object_get(j, "tiers");
        KT_ASSERT_INT_EQ(json_array_size(tiers), 2);
        json_t *t2 = json_array_get(tiers, 1);
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(t2, "tier")), 2);
        KT_ASSERT_INT_EQ(at(t2, "waiting", 0), 32);
        KT_ASSERT_INT_EQ(at(t2, "oldest_age_ms", 2), 502);
        json_decref(j);
        /* since: only what was taken at or after it */
        j = ui_history_json(h, 4);
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(j, "count")), 2);
        KT_ASSERT_INT_EQ(at(j, "at_ms", 0), 4);
        json_decref(j);
        ui_history_destroy(h);
}

static void test_unknown_figures(void) {
        ui_history_t *h = ui_history_new(4);
        stats_report_t r;
        stats_topic_t t[4];
        report(&r, t, 7);
        t[3].waiting_ok = 0;
        t[3].rates_ok   = 0;
        t[2].oldest_ok  = 0;
        ui_history_add(h, &r);
        json_t *j = ui_history_json(h, 0);
        KT_ASSERT(json_is_null(
                json_array_get(json_object_get(j, "dlq_waiting"), 0)));
        KT_ASSERT(json_is_null(
                json_array_get(json_object_get(j, "dlq_rate_per_min"), 0)));
        json_t *t2 = json_array_get(json_object_get(j, "tiers"), 1);
        KT_ASSERT(json_is_null(
                json_array_get(json_object_get(t2, "oldest_age_ms"), 0)));
        KT_ASSERT_INT_EQ(at(t2, "waiting", 0), 72);
        json_decref(j);
        ui_history_destroy(h);
        KT_ASSERT(ui_history_new(0) == NULL);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_ring_bounded),
                                          KT_TEST(test_unknown_figures),
                                          KT_END};
        return kt_main("ui_history", tests, argc, argv);
}
