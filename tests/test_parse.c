#include "parse.h"
#include "testutil.h"

#include <string.h>

static void test_durations(void) {
        char err[256];
        int64_t ms = -1;
        KT_ASSERT_INT_EQ(
                kretry_parse_duration_ms("250ms", &ms, err, sizeof(err)), 0);
        KT_ASSERT_INT_EQ(ms, 250);
        KT_ASSERT_INT_EQ(kretry_parse_duration_ms("10s", &ms, err, sizeof(err)),
                         0);
        KT_ASSERT_INT_EQ(ms, 10000);
        KT_ASSERT_INT_EQ(kretry_parse_duration_ms("2d", &ms, err, sizeof(err)),
                         0);
        KT_ASSERT_INT_EQ(ms, 2LL * 86400000);
        KT_ASSERT_INT_EQ(kretry_parse_duration_ms("0", &ms, err, sizeof(err)),
                         0);
        KT_ASSERT_INT_EQ(ms, 0);
        const char *bad[] = {"",     "s",    "10", "-1s",
                             "1.5s", "10 s", "1w", "99999999999999999999d",
                             "4000d"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                KT_CHECK_MSG(kretry_parse_duration_ms(bad[i], &ms, err,
                                                      sizeof(err)) == -1,
                             CU_FALSE, "\"%s\" must be refused", bad[i]);
}

static void test_format_duration(void) {
        char b[32];
        kretry_format_duration(90000, b, sizeof(b));
        KT_ASSERT_STR_EQ(b, "90s");
        kretry_format_duration(7200000, b, sizeof(b));
        KT_ASSERT_STR_EQ(b, "2h");
        kretry_format_duration(1500, b, sizeof(b));
        KT_ASSERT_STR_EQ(b, "1500ms");
}

static void test_percent(void) {
        char err[256];
        double f = -1;
        KT_ASSERT_INT_EQ(kretry_parse_percent("20%", &f, err, sizeof(err)), 0);
        KT_ASSERT(f > 0.199 && f < 0.201);
        KT_ASSERT_INT_EQ(kretry_parse_percent("150%", &f, err, sizeof(err)),
                         -1);
        KT_ASSERT_STR_EQ(err, "150% is out of range 0%..100%");
        KT_ASSERT_INT_EQ(kretry_parse_percent("20", &f, err, sizeof(err)), -1);
        KT_ASSERT_INT_EQ(kretry_parse_percent("-5%", &f, err, sizeof(err)), -1);
}

static void test_int(void) {
        char err[256];
        int64_t v;
        KT_ASSERT_INT_EQ(kretry_parse_int64("42", 0, 100, &v, err, sizeof(err)),
                         0);
        KT_ASSERT_INT_EQ(v, 42);
        KT_ASSERT_INT_EQ(
                kretry_parse_int64("101", 0, 100, &v, err, sizeof(err)), -1);
        KT_ASSERT_INT_EQ(kretry_parse_int64("4x", 0, 100, &v, err, sizeof(err)),
                         -1);
        KT_ASSERT_INT_EQ(kretry_parse_int64("", 0, 100, &v, err, sizeof(err)),
                         -1);
        KT_ASSERT_INT_EQ(kretry_parse_int64("99999999999999999999", 0,
                                            INT64_MAX, &v, err, sizeof(err)),
                         -1);
}

static void test_list(void) {
        char err[256];
        int64_t d[4];
        KT_ASSERT_INT_EQ(kretry_parse_duration_list("1s, 10s,1m", d, 4, err,
                                                    sizeof(err)),
                         3);
        KT_ASSERT_INT_EQ(d[2], 60000);
        KT_ASSERT_INT_EQ(
                kretry_parse_duration_list("1s,,2s", d, 4, err, sizeof(err)),
                -1);
        KT_ASSERT_INT_EQ(
                kretry_parse_duration_list("1s,", d, 4, err, sizeof(err)), -1);
        KT_ASSERT_INT_EQ(kretry_parse_duration_list("1s,1s,1s,1s,1s", d, 4, err,
                                                    sizeof(err)),
                         -1);
        KT_ASSERT_INT_EQ(kretry_parse_duration_list("", d, 4, err, sizeof(err)),
                         -1);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_durations), KT_TEST(test_format_duration),
                KT_TEST(test_percent),   KT_TEST(test_int),
                KT_TEST(test_list),      KT_END};
        return kt_main("parse", tests, argc, argv);
}
