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
        KT_ASSERT_INT_EQ(kretry_due_ts(t, 2, 0, 0, 5000, &rng), 15000);
        /* A hint longer than the (jittered) delay wins. */
        KT_ASSERT_INT_EQ(kretry_due_ts(t, 1, 0, 4000, 5000, &rng), 9000);
        for (int i = 0; i < 1000; i++) {
                int64_t d = kretry_due_ts(t, 1, 0.5, 1200, 0, &rng);
                KT_REQUIRE(d >= 1200 && d <= 1500);
        }
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_jitter_bounds), KT_TEST(test_rng_unit),
                KT_TEST(test_tier_choice), KT_TEST(test_due), KT_END};
        return kt_main("delay", tests, argc, argv);
}
