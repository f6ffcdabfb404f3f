/*
 * kretry stats figures without a broker: waiting counts from watermarks and
 * committed offsets, oldest age, rates and the drain estimate, the alert
 * rules at their boundaries, and the renderings (Prometheus text against a
 * golden file: tests/stats/prometheus.golden; run the suite with
 * KRETRY_UPDATE_GOLDEN=1 to rewrite it after a deliberate change, and
 * review the diff).
 */
#include "stats_calc.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define AT_MS 1700000000000LL

static stats_part_t part(int64_t low, int64_t high, int64_t committed) {
        return (stats_part_t){low, high, committed, 1};
}

static void test_allowance(void) {
        KT_ASSERT_INT_EQ(stats_tier_allowance_ms(10000, 0.2), 12000);
        KT_ASSERT_INT_EQ(stats_tier_allowance_ms(70000, 0.07), 74900);
        KT_ASSERT_INT_EQ(stats_tier_allowance_ms(1000, 0.0), 1000);
        KT_ASSERT_INT_EQ(stats_tier_allowance_ms(3, 0.1), 4); /* rounded up */
}

static void test_part_start(void) {
        stats_part_t p = part(10, 50, -1);
        KT_ASSERT_INT_EQ(stats_part_start(&p), 10); /* no commit: low */
        KT_ASSERT_INT_EQ(stats_part_waiting(&p), 40);
        p = part(10, 50, 30);
        KT_ASSERT_INT_EQ(stats_part_waiting(&p), 20);
        p = part(10, 50, 4); /* committed before retention's start */
        KT_ASSERT_INT_EQ(stats_part_start(&p), 10);
        KT_ASSERT_INT_EQ(stats_part_waiting(&p), 40);
        p = part(10, 50, 70); /* past the end (a truncated topic) */
        KT_ASSERT_INT_EQ(stats_part_waiting(&p), 0);
        p = part(0, 0, -1);
        KT_ASSERT_INT_EQ(stats_part_waiting(&p), 0);
        p              = part(10, 50, 30);
        p.committed_ok = 0;
        KT_ASSERT_INT_EQ(stats_part_waiting(&p), -1);
        p = part(-1, -1, 30);
        KT_ASSERT_INT_EQ(stats_part_waiting(&p), -1);
}

/* A transactional source fully consumed: the group's offset stops before
 * the commit marker, so high - committed is 1; the reader found no record
 * there, and nothing waits. */
static void test_markers_only(void) {
        stats_topic_t t  = {0};
        stats_part_t p[] = {part(0, 11, 10), part(0, 20, 15)};
        stats_topic_depth(&t, p, 2);
        KT_ASSERT_INT_EQ(t.waiting, 1 + 5);
        p[0].rest_unreadable = 1;
        KT_ASSERT_INT_EQ(stats_part_waiting(&p[0]), 0);
        stats_topic_depth(&t, p, 2);
        KT_ASSERT_INT_EQ(t.waiting, 5);
        p[0].committed_ok = 0; /* unknown stays unknown */
        KT_ASSERT_INT_EQ(stats_part_waiting(&p[0]), -1);
}

static void test_depth(void) {
        stats_topic_t t  = {0};
        stats_part_t p[] = {part(0, 7, 2), part(3, 3, -1), part(5, 9, -1)};
        stats_topic_depth(&t, p, 3);
        KT_ASSERT(t.waiting_ok);
        KT_ASSERT_INT_EQ(t.waiting, 5 + 0 + 4);
        p[1].high = -1;
        stats_topic_depth(&t, p, 3);
        KT_ASSERT(!t.waiting_ok);
        stats_topic_depth(&t, p, -1); /* partitions unknown */
        KT_ASSERT(!t.waiting_ok);
}

static void test_oldest(void) {
        stats_topic_t t = {0};
        stats_topic_oldest(&t, AT_MS - 90000, AT_MS);
        KT_ASSERT(t.oldest_ok);
        KT_ASSERT_INT_EQ(t.oldest_age_ms, 90000);
        stats_topic_oldest(&t, AT_MS + 5000, AT_MS); /* clock skew */
        KT_ASSERT_INT_EQ(t.oldest_age_ms, 0);
        stats_topic_oldest(&t, -1, AT_MS); /* nothing waits */
        KT_ASSERT_INT_EQ(t.oldest_ts, -1);
        KT_ASSERT_INT_EQ(t.oldest_age_ms, 0);
}

static void test_rates_and_drain(void) {
        stats_topic_t t  = {0};
        stats_part_t b[] = {part(0, 100, 50), part(0, 40, 20)};
        stats_part_t a[] = {part(0, 110, 70), part(0, 50, 40)};
        stats_topic_depth(&t, a, 2);
        KT_ASSERT_INT_EQ(t.waiting, 40 + 10);
        stats_topic_rates(&t, b, a, 2, 2000);
        KT_ASSERT(t.rates_ok);
        /* 20 arrived, 40 consumed in 2 s: 50 waiting drain at 10/s */
        KT_ASSERT(t.arrival_rate == 10.0);
        KT_ASSERT(t.consume_rate == 20.0);
        KT_ASSERT_INT_EQ(t.drain, STATS_DRAIN_SECONDS);
        KT_ASSERT(t.drain_s == 5.0);

        stats_topic_rates(&t, b, a, 2, 0); /* --window 0 */
        KT_ASSERT(!t.rates_ok);
        KT_ASSERT_INT_EQ(t.drain, STATS_DRAIN_UNKNOWN);

        /* an offset reset backwards is no negative consumption */
        stats_part_t r[] = {part(0, 110, 10), part(0, 50, 40)};
        stats_topic_depth(&t, r, 2);
        stats_topic_rates(&t, b, r, 2, 1000);
        KT_ASSERT(t.consume_rate == 20.0);
        KT_ASSERT(t.arrival_rate == 20.0);
        KT_ASSERT_INT_EQ(t.drain, STATS_DRAIN_NEVER);

        b[0].committed_ok = 0; /* a figure missing in one snapshot */
        stats_topic_depth(&t, a, 2);
        stats_topic_rates(&t, b, a, 2, 1000);
        KT_ASSERT(!t.rates_ok);
        KT_ASSERT_INT_EQ(t.drain, STATS_DRAIN_UNKNOWN);
}

static void test_drain_never(void) {
        double s = -1;
        KT_ASSERT_INT_EQ(stats_drain(10, 5.0, 5.0, &s), STATS_DRAIN_NEVER);
        KT_ASSERT_INT_EQ(stats_drain(10, 5.0, 6.0, &s), STATS_DRAIN_NEVER);
        KT_ASSERT_INT_EQ(stats_drain(10, 0.0, 0.0, &s), STATS_DRAIN_NEVER);
        KT_ASSERT_INT_EQ(stats_drain(0, 0.0, 3.0, &s), STATS_DRAIN_SECONDS);
        KT_ASSERT(s == 0.0); /* nothing waits: drained */
        KT_ASSERT_INT_EQ(stats_drain(10, 7.0, 2.0, &s), STATS_DRAIN_SECONDS);
        KT_ASSERT(s == 2.0);
}

/* A source, two tiers (1s and 10s at +20%) and a DLQ with set figures. */
static stats_topic_t *topics(void) {
        stats_topic_t *v     = calloc(4, sizeof(*v));
        const char *names[]  = {"orders", "orders.retry.1", "orders.retry.2",
                                "orders.dlq"};
        stats_role_t roles[] = {STATS_ROLE_SOURCE, STATS_ROLE_TIER,
                                STATS_ROLE_TIER, STATS_ROLE_DLQ};
        for (int i = 0; i < 4; i++) {
                snprintf(v[i].topic, sizeof(v[i].topic), "%s", names[i]);
                v[i].role       = roles[i];
                v[i].tier       = roles[i] == STATS_ROLE_TIER ? i : 0;
                v[i].partitions = 2;
                v[i].waiting_ok = v[i].oldest_ok = 1;
                v[i].oldest_ts                   = -1;
        }
        v[1].allowance_ms = 1200;
        v[2].allowance_ms = 12000;
        /* source: 120 waiting, oldest 1h old, draining in 60 s */
        v[0].waiting       = 120;
        v[0].oldest_ts     = AT_MS - 3600000;
        v[0].oldest_age_ms = 3600000;
        v[0].rates_ok      = 1;
        v[0].arrival_rate  = 3.0;
        v[0].consume_rate  = 5.0;
        v[0].drain         = STATS_DRAIN_SECONDS;
        v[0].drain_s       = 60.0;
        /* tier 1: nothing waits, no traffic */
        v[1].rates_ok = 1;
        v[1].drain    = STATS_DRAIN_SECONDS;
        /* tier 2: 4 waiting, growing */
        v[2].waiting       = 4;
        v[2].oldest_ts     = AT_MS - 12500;
        v[2].oldest_age_ms = 12500;
        v[2].rates_ok      = 1;
        v[2].arrival_rate  = 0.5;
        v[2].consume_rate  = 0.25;
        v[2].drain         = STATS_DRAIN_NEVER;
        /* DLQ: 3 messages, its committed offsets not answered */
        v[3].waiting       = 3;
        v[3].oldest_ts     = AT_MS - 86400000;
        v[3].oldest_age_ms = 86400000;
        v[3].rates_ok      = 1;
        v[3].arrival_rate  = 0.5;
        v[3].drain         = STATS_DRAIN_NEVER;
        return v;
}

static stats_report_t *report(int64_t dlq_limit, int64_t age_limit) {
        stats_report_t *r = calloc(1, sizeof(*r));
        r->topology       = "orders";
        r->group          = "orders-service";
        r->at_ms          = AT_MS;
        r->window_ms      = 2000;
        r->topics         = topics();
        r->topic_cnt      = 4;
        r->limits         = (stats_limits_t){dlq_limit, age_limit};
        stats_evaluate(r);
        return r;
}

static void report_free(stats_report_t *r) {
        free(r->topics);
        free(r);
}

static const stats_alert_t *
alert(const stats_report_t *r, const char *rule, const char *topic) {
        for (size_t i = 0; i < r->alert_cnt; i++)
                if (!strcmp(r->alerts[i].rule, rule) &&
                    !strcmp(r->alerts[i].topic, topic))
                        return &r->alerts[i];
        return NULL;
}

static int state(const stats_report_t *r, const char *rule, const char *t) {
        const stats_alert_t *a = alert(r, rule, t);
        return a ? (int)a->state : -1;
}

static void test_alerts_dlq_boundary(void) {
        stats_report_t *r = report(3, 0); /* 3 messages, limit 3: fires */
        KT_ASSERT_INT_EQ(r->alert_cnt, 1);
        KT_ASSERT_INT_EQ(state(r, "dlq_messages", "orders.dlq"),
                         STATS_ALERT_FIRING);
        KT_ASSERT_STR_EQ(r->alerts[0].text,
                         "dlq_messages: orders.dlq holds 3 messages (limit 3)");
        report_free(r);
        r = report(4, 0);
        KT_ASSERT_INT_EQ(state(r, "dlq_messages", "orders.dlq"),
                         STATS_ALERT_OK);
        KT_ASSERT_INT_EQ(stats_alert_count(r, STATS_ALERT_FIRING), 0);
        report_free(r);
        r = report(-1, 0); /* no alerts: declared */
        KT_ASSERT_INT_EQ(r->alert_cnt, 0);
        report_free(r);
}

/* dlq_rate: the DLQ's arrival rate (0.5/s here) in messages a minute,
 * at least the limit; unknown without rates. */
static void test_alerts_dlq_rate(void) {
        stats_report_t *r  = report(-1, 0);
        r->limits.dlq_rate = 30;
        stats_evaluate(r);
        KT_ASSERT_INT_EQ(r->alert_cnt, 1);
        KT_ASSERT_INT_EQ(state(r, "dlq_rate", "orders.dlq"),
                         STATS_ALERT_FIRING);
        KT_ASSERT_INT_EQ(r->alerts[0].value, 30);
        KT_ASSERT_STR_EQ(r->alerts[0].text,
                         "dlq_rate: orders.dlq receives 30.0 messages a "
                         "minute (limit 30)");
        r->limits.dlq_rate = 31;
        KT_ASSERT_INT_EQ(stats_evaluate(r), 0);
        KT_ASSERT_INT_EQ(state(r, "dlq_rate", "orders.dlq"), STATS_ALERT_OK);
        r->topics[3].rates_ok = 0;
        r->window_ms          = 0;
        stats_evaluate(r);
        KT_ASSERT_INT_EQ(state(r, "dlq_rate", "orders.dlq"),
                         STATS_ALERT_UNKNOWN);
        KT_ASSERT_STR_EQ(r->alerts[0].text,
                         "dlq_rate: cannot tell how fast messages arrive in "
                         "orders.dlq (no rates: --window 0; limit 31 a "
                         "minute)");
        report_free(r);
}

static void test_alerts_age_boundary(void) {
        /* source exactly 1h old, limit 1h: strictly older only */
        stats_report_t *r = report(-1, 3600000);
        KT_ASSERT_INT_EQ(r->alert_cnt, 3); /* source and both tiers */
        KT_ASSERT_INT_EQ(state(r, "oldest_age", "orders"), STATS_ALERT_OK);
        KT_ASSERT(alert(r, "oldest_age", "orders.dlq") == NULL);
        report_free(r);
        r = report(-1, 3599999);
        KT_ASSERT_INT_EQ(state(r, "oldest_age", "orders"), STATS_ALERT_FIRING);
        KT_ASSERT_STR_EQ(alert(r, "oldest_age", "orders")->text,
                         "oldest_age: orders: 1h old (limit 59m59s999ms)");
        KT_ASSERT_STR_EQ(alert(r, "oldest_age", "orders.retry.1")->text,
                         "oldest_age: orders.retry.1: nothing waits (limit "
                         "59m59s999ms past the tier's 1s200ms delay at "
                         "+jitter)");
        report_free(r);

        /* tier 2: 12.5 s old, allowance 12 s; limit 500 ms: equal, ok */
        r = report(-1, 500);
        KT_ASSERT_INT_EQ(state(r, "oldest_age", "orders.retry.2"),
                         STATS_ALERT_OK);
        KT_ASSERT_INT_EQ(state(r, "oldest_age", "orders.retry.1"),
                         STATS_ALERT_OK); /* nothing waits */
        report_free(r);
        r = report(-1, 499);
        KT_ASSERT_INT_EQ(state(r, "oldest_age", "orders.retry.2"),
                         STATS_ALERT_FIRING);
        KT_ASSERT_INT_EQ(alert(r, "oldest_age", "orders.retry.2")->limit,
                         12499);
        report_free(r);
}

static void test_alerts_unknown(void) {
        stats_report_t *r       = report(1, 0);
        r->topics[3].waiting_ok = 0;
        r->topics[0].oldest_ok  = 0;
        r->limits.oldest_age_ms = 400;
        KT_ASSERT_INT_EQ(stats_evaluate(r), 1); /* tier 2 is overdue */
        KT_ASSERT_INT_EQ(state(r, "dlq_messages", "orders.dlq"),
                         STATS_ALERT_UNKNOWN);
        KT_ASSERT_INT_EQ(state(r, "oldest_age", "orders"), STATS_ALERT_UNKNOWN);
        KT_ASSERT_INT_EQ(stats_alert_count(r, STATS_ALERT_UNKNOWN), 2);
        report_free(r);
}

/* The stream's text; free with free(). */
static char *capture(void (*render)(FILE *, const stats_report_t *),
                     const stats_report_t *r) {
        char *buf  = NULL;
        size_t len = 0;
        FILE *f    = open_memstream(&buf, &len);
        render(f, r);
        fclose(f);
        return buf;
}

static char *slurp(const char *path) {
        FILE *f = fopen(path, "rb");
        if (!f)
                return NULL;
        char *buf = calloc(1, 1 << 16);
        size_t n  = fread(buf, 1, (1 << 16) - 1, f);
        buf[n]    = '\0';
        fclose(f);
        return buf;
}

static void test_prometheus_golden(void) {
        stats_report_t *r      = report(1, 3600000);
        r->topics[3].error[0]  = 'x'; /* the DLQ: not all answered */
        r->topics[3].rates_ok  = 0;
        r->topics[3].drain     = STATS_DRAIN_UNKNOWN;
        r->topics[3].oldest_ok = 0;
        char *got              = capture(stats_render_prometheus, r);
        char *want = slurp(KRETRY_SOURCE_DIR "/tests/stats/prometheus.golden");
        KT_REQUIRE(want != NULL);
        KT_CHECK_MSG(!strcmp(got, want), CU_FALSE,
                     "prometheus text differs from the golden file; got:\n%s",
                     got);
        if (getenv("KRETRY_UPDATE_GOLDEN")) {
                FILE *f = fopen(KRETRY_SOURCE_DIR
                                "/tests/stats/prometheus.golden",
                                "w");
                fputs(got, f);
                fclose(f);
        }
        free(got);
        free(want);
        report_free(r);
}

static void test_prometheus_escaping(void) {
        stats_report_t *r = report(-1, 0);
        r->topology       = "a\"b\\c\nd";
        char *got         = capture(stats_render_prometheus, r);
        KT_ASSERT(strstr(got, "{topology=\"a\\\"b\\\\c\\nd\",topic=\"orders\","
                              "role=\"source\"} 120\n") != NULL);
        free(got);
        report_free(r);
}

static void test_json(void) {
        stats_report_t *r     = report(1, 0);
        r->topics[1].rates_ok = 0;
        r->topics[1].drain    = STATS_DRAIN_UNKNOWN;
        json_t *j             = stats_report_json(r);
        json_t *t             = json_object_get(j, "topics");
        KT_ASSERT_INT_EQ(json_array_size(t), 4);
        json_t *src = json_array_get(t, 0), *t1 = json_array_get(t, 1),
               *t2 = json_array_get(t, 2), *dlq = json_array_get(t, 3);
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(src, "waiting")),
                         120);
        KT_ASSERT_INT_EQ(
                json_integer_value(json_object_get(src, "oldest_timestamp_ms")),
                AT_MS - 3600000);
        KT_ASSERT(json_real_value(json_object_get(src, "drain_seconds")) ==
                  60.0);
        KT_ASSERT(json_is_null(json_object_get(src, "tier")));
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(t2, "tier")), 2);
        KT_ASSERT_STR_EQ(
                json_string_value(json_object_get(t2, "drain_seconds")),
                "never");
        KT_ASSERT(json_is_null(json_object_get(t1, "drain_seconds")));
        KT_ASSERT(json_is_null(json_object_get(t1, "arrival_rate")));
        KT_ASSERT(json_is_null(json_object_get(t1, "oldest_timestamp_ms")));
        KT_ASSERT_INT_EQ(
                json_integer_value(json_object_get(t1, "oldest_age_ms")), 0);
        KT_ASSERT_STR_EQ(json_string_value(json_object_get(dlq, "role")),
                         "dlq");
        json_t *a = json_array_get(json_object_get(j, "alerts"), 0);
        KT_ASSERT_STR_EQ(json_string_value(json_object_get(a, "state")),
                         "alert");
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(a, "value")), 3);
        json_decref(j);
        report_free(r);
}

static void test_table(void) {
        stats_report_t *r       = report(1, 0);
        r->topics[1].waiting_ok = 0;
        r->topics[0].drain_s    = 45.2; /* shown rounded up */
        snprintf(r->topics[1].error, sizeof(r->topics[1].error),
                 "watermarks of partition 0: Local: Timed out");
        char *got = capture(stats_render_table, r);
        KT_ASSERT(strstr(got, "orders         source       2        120"
                              "         1h       3.00       5.00      46s\n"));
        KT_ASSERT(strstr(got, "orders.retry.2 tier 2       2          4"
                              "        12s       0.50       0.25    never\n"));
        KT_ASSERT(strstr(got, "orders.retry.1 tier 1       2          ?"));
        KT_ASSERT(strstr(got, "ALERT   dlq_messages: orders.dlq holds 3 "
                              "messages (limit 1)\n"));
        KT_ASSERT(strstr(got, "not answered:\norders.retry.1: watermarks of "
                              "partition 0: Local: Timed out\n"));
        free(got);
        report_free(r);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_allowance),
                                          KT_TEST(test_part_start),
                                          KT_TEST(test_markers_only),
                                          KT_TEST(test_depth),
                                          KT_TEST(test_oldest),
                                          KT_TEST(test_rates_and_drain),
                                          KT_TEST(test_drain_never),
                                          KT_TEST(test_alerts_dlq_boundary),
                                          KT_TEST(test_alerts_age_boundary),
                                          KT_TEST(test_alerts_dlq_rate),
                                          KT_TEST(test_alerts_unknown),
                                          KT_TEST(test_prometheus_golden),
                                          KT_TEST(test_prometheus_escaping),
                                          KT_TEST(test_json),
                                          KT_TEST(test_table),
                                          KT_END};
        return kt_main("stats_calc", tests, argc, argv);
}
