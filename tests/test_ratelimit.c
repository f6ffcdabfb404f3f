#include "ratelimit.h"
#include "testutil.h"

/* Take @p n tokens, advancing a simulated clock by each returned wait;
 * returns the simulated time spent. */
static int64_t spend(kretry_bucket_t *b, int n, int64_t *now) {
        int64_t start = *now;
        for (int i = 0; i < n; i++) {
                int64_t w;
                while ((w = kretry_bucket_take(b, *now)) > 0)
                        *now += w;
        }
        return *now - start;
}

static void test_rate(void) {
        kretry_bucket_t b;
        int64_t now = 1000000;
        kretry_bucket_init(&b, 500, 25, now);
        /* 2,000 at 500/s: the first is free, 1,999 more take ~4 s */
        int64_t spent = spend(&b, 2000, &now);
        KT_CHECK_MSG(spent > 3990000 && spent < 4010000, CU_FALSE,
                     "2000 at 500/s took %lld us", (long long)spent);
}

static void test_first_free_then_wait(void) {
        kretry_bucket_t b;
        kretry_bucket_init(&b, 10, 1, 0);
        KT_ASSERT_INT_EQ(kretry_bucket_take(&b, 0), 0);
        int64_t w = kretry_bucket_take(&b, 0);
        KT_CHECK_MSG(w >= 99000 && w <= 100001, CU_FALSE, "wait %lld",
                     (long long)w);
        /* a refused take takes nothing: half-way, half the wait is left */
        w = kretry_bucket_take(&b, 50000);
        KT_CHECK_MSG(w >= 49000 && w <= 50001, CU_FALSE, "wait %lld",
                     (long long)w);
        KT_ASSERT_INT_EQ(kretry_bucket_take(&b, 100001), 0);
}

static void test_burst_bound(void) {
        kretry_bucket_t b;
        kretry_bucket_init(&b, 100, 5, 0);
        KT_ASSERT_INT_EQ(kretry_bucket_take(&b, 0), 0);
        /* an hour idle catches up at most the burst */
        int64_t t      = 3600LL * 1000000;
        int free_takes = 0;
        while (kretry_bucket_take(&b, t) == 0)
                free_takes++;
        KT_ASSERT_INT_EQ(free_takes, 5);
}

static void test_clock_backwards(void) {
        kretry_bucket_t b;
        kretry_bucket_init(&b, 1, 0, 1000000);
        KT_ASSERT_INT_EQ(kretry_bucket_take(&b, 1000000), 0);
        KT_ASSERT(kretry_bucket_take(&b, 0) > 0);
        KT_ASSERT(kretry_bucket_take(&b, 1500000) > 0);
        KT_ASSERT_INT_EQ(kretry_bucket_take(&b, 2000001), 0);
}

static void test_bad_rate(void) {
        kretry_bucket_t b;
        kretry_bucket_init(&b, 0, 0, 0);
        KT_ASSERT(b.rate > 0 && b.burst >= 1);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_rate),        KT_TEST(test_first_free_then_wait),
                KT_TEST(test_burst_bound), KT_TEST(test_clock_backwards),
                KT_TEST(test_bad_rate),    KT_END};
        return kt_main("ratelimit", tests, argc, argv);
}
