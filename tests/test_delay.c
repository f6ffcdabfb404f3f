#include "delay.h"
#include "testutil.h"

static void test_jitter_bounds(void) {
        kretry_rng_t rng;
        kretry_rng_seed(&rng, 42);
        int64_t lo = INT64_MAX, hi = 0;
        for (int i = 0; i < 100000; i++) {
                int64_t d = kretry_jittered_delay(1000, 0.2, &rng);
                KT_CHECK_MSG(d >= 800 && d <= 1200, CU_TRUE,
                             "delay %lld outside 800..1200", (long long)d);
                lo = d < lo ? d : lo;
                hi = d > hi ? d : hi;
        }
        /* The whole band is used, not just one side of it. */
        KT_ASSERT(lo < 810);
        KT_ASSERT(hi > 1190);
        KT_ASSERT_INT_EQ(kretry_jittered_delay(1000, 0, &rng), 1000);
        KT_ASSERT_INT_EQ(kretry_jittered_delay(0, 0.5, &rng), 0);
        for (int i = 0; i < 1000; i++)
                KT_REQUIRE(kretry_jittered_delay(1000, 1.0, &rng) >= 0);
}

static void test_rng_unit(void) {
        kretry_rng_t rng;
        kretry_rng_seed(&rng, 0); /* zero seed must not get stuck */
        double sum = 0;
        for (int i = 0; i < 10000; i++) {
                double u = kretry_rng_unit(&rng);
                KT_REQUIRE(u >= 0 && u < 1);
                sum += u;
        }
        KT_ASSERT(sum / 10000 > 0.45 && sum / 10000 < 0.55);
}

static void test_tier_choice(void) {
        const int64_t t[] = {1000, 10000, 60000};
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 1, 0), 1);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 2, 0), 2);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 3, 0), 3);
        /* Past the last tier the message stays in the last tier. */
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 4, 0), 3);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 100, 0), 3);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 0, 0), 1);
        /* The hint picks the first tier whose delay covers it. */
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 1, 5000), 2);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 3, 1000), 1);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 1, 10000), 2);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 1, 10001), 3);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 3, 1, 3600000), 3);
        KT_ASSERT_INT_EQ(kretry_tier_for(t, 1, 7, 0), 1);
}

static void test_due(void) {
        const int64_t t[] = {1000, 10000};
        kretry_rng_t rng;
        kretry_rng_seed(&rng, 7);
        KT_ASSERT_INT_EQ(kretry_due_ts(t, 2, 2, 0, 0, 5000, &rng), 15000);
        /* A hint longer than the (jittered) delay wins. */
        KT_ASSERT_INT_EQ(kretry_due_ts(t, 2, 1, 0, 4000, 5000, &rng), 9000);
        for (int i = 0; i < 1000; i++) {
                int64_t d = kretry_due_ts(t, 2, 1, 0.5, 1200, 0, &rng);
                KT_REQUIRE(d >= 1200 && d <= 1500);
        }
}

/* A hint counts at most as the last tier's delay: an hour's hint on a 10 s
 * last tier is due in 10 s, not in an hour. */
static void test_hint_clamped(void) {
        const int64_t t[] = {1000, 10000};
        kretry_rng_t rng;
        kretry_rng_seed(&rng, 7);
        int tier = kretry_tier_for(t, 2, 1, 3600000);
        KT_ASSERT_INT_EQ(tier, 2);
        KT_ASSERT_INT_EQ(kretry_due_ts(t, 2, tier, 0, 3600000, 5000, &rng),
                         15000);
        /* Jitter still spreads the clamped copies around the last delay. */
        for (int i = 0; i < 1000; i++) {
                int64_t d = kretry_due_ts(t, 2, 2, 0.5, 3600000, 0, &rng);
                KT_REQUIRE(d >= 10000 && d < 15000);
        }
}

/* A hint of INT64_MAX neither wraps the due time into the past (a retry at
 * once) nor goes past the last tier. */
static void test_hint_int64_max(void) {
        const int64_t t[] = {1000, 10000};
        kretry_rng_t rng;
        kretry_rng_seed(&rng, 7);
        int64_t now = 1700000000000LL;
        int tier    = kretry_tier_for(t, 2, 1, INT64_MAX);
        KT_ASSERT_INT_EQ(tier, 2);
        KT_ASSERT_INT_EQ(kretry_due_ts(t, 2, tier, 0, INT64_MAX, now, &rng),
                         now + 10000);
        KT_ASSERT_INT_EQ(
                kretry_due_ts(t, 2, tier, 0.1, INT64_MAX - 1, now, &rng) >= now,
                1);
}

/* Every due-time sum holds at INT64_MAX instead of wrapping. */
static void test_saturation(void) {
        const int64_t t[] = {1000, 10000};
        kretry_rng_t rng;
        kretry_rng_seed(&rng, 7);
        KT_ASSERT_INT_EQ(kretry_add_sat(1, 2), 3);
        KT_ASSERT_INT_EQ(kretry_add_sat(INT64_MAX - 5, 10), INT64_MAX);
        KT_ASSERT_INT_EQ(kretry_add_sat(INT64_MAX, INT64_MAX), INT64_MAX);
        KT_ASSERT_INT_EQ(kretry_add_sat(INT64_MIN + 5, -10), INT64_MIN);
        KT_ASSERT_INT_EQ(kretry_add_sat(-5, 10), 5);
        KT_ASSERT_INT_EQ(kretry_due_ts(t, 2, 2, 0.5, 0, INT64_MAX - 100, &rng),
                         INT64_MAX);
        KT_ASSERT_INT_EQ(kretry_due_bound(t, 2, 0.5, INT64_MAX - 100),
                         INT64_MAX);
        const int64_t huge[] = {INT64_MAX / 2};
        KT_ASSERT_INT_EQ(kretry_due_bound(huge, 1, 1.0, 1000), INT64_MAX);
}

/* The bound a read tier message's kretry-due-ts is held to: the tier's
 * delay plus full jitter, never before what kretry_due_ts gives a copy. */
static void test_due_bound(void) {
        const int64_t t[] = {1000, 10000, 60000};
        KT_ASSERT_INT_EQ(kretry_due_bound(t, 1, 0, 5000), 6000);
        KT_ASSERT_INT_EQ(kretry_due_bound(t, 2, 0.5, 5000), 20000);
        KT_ASSERT_INT_EQ(kretry_due_bound(t, 3, 0.1, 0), 66000);
        kretry_rng_t rng;
        kretry_rng_seed(&rng, 11);
        const int64_t hints[] = {0,     1,     999,   1000,    1001,     10000,
                                 59999, 60000, 60001, 3600000, INT64_MAX};
        for (size_t h = 0; h < sizeof(hints) / sizeof(hints[0]); h++)
                for (int attempt = 1; attempt <= 4; attempt++)
                        for (int i = 0; i < 200; i++) {
                                int tier  = kretry_tier_for(t, 3, attempt,
                                                            hints[h]);
                                int64_t d = kretry_due_ts(t, 3, tier, 0.3,
                                                          hints[h], 0, &rng);
                                KT_REQUIRE(
                                        d >= 0 &&
                                        d <= kretry_due_bound(t, tier, 0.3, 0));
                        }
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_jitter_bounds),
                                          KT_TEST(test_rng_unit),
                                          KT_TEST(test_tier_choice),
                                          KT_TEST(test_due),
                                          KT_TEST(test_hint_clamped),
                                          KT_TEST(test_hint_int64_max),
                                          KT_TEST(test_saturation),
                                          KT_TEST(test_due_bound),
                                          KT_END};
        return kt_main("delay", tests, argc, argv);
}
