/* The circuit breaker's state machine. */
#include "breaker.h"
#include "testutil.h"

static int fail(kretry_breaker_t *b, const char *key, int64_t now) {
        return kretry_breaker_record(b, 1, key, 2, now);
}

static void test_opens_on_run_across_keys(void) {
        kretry_breaker_t b;
        kretry_breaker_init(&b, 4, 3, 1000);
        /* Four failures of two keys: a message problem, not the dependency. */
        KT_ASSERT_INT_EQ(fail(&b, "k1", 0) + fail(&b, "k2", 0) +
                                 fail(&b, "k1", 0) + fail(&b, "k2", 0),
                         0);
        KT_ASSERT_INT_EQ(kretry_breaker_is_open(&b, 0), 0);
        /* A third key while the run is long enough: open. */
        KT_ASSERT_INT_EQ(fail(&b, "k3", 10), 1);
        KT_ASSERT_INT_EQ(b.trips, 1);
        KT_ASSERT_INT_EQ(kretry_breaker_is_open(&b, 500), 1);
        KT_ASSERT_INT_EQ(kretry_breaker_is_open(&b, 1009), 1);
        /* Cool-down over: half-open, consuming again. */
        KT_ASSERT_INT_EQ(kretry_breaker_is_open(&b, 1010), 0);
        KT_ASSERT_INT_EQ(b.state, KRETRY_BREAKER_HALF_OPEN);
        /* The probe fails: open again, twice as long. */
        KT_ASSERT_INT_EQ(fail(&b, "k9", 1100), 1);
        KT_ASSERT_INT_EQ(b.open_until, 1100 + 2000);
        KT_ASSERT_INT_EQ(kretry_breaker_is_open(&b, 3099), 1);
        KT_ASSERT_INT_EQ(kretry_breaker_is_open(&b, 3100), 0);
        /* A success closes it and resets the cool-down. */
        KT_ASSERT_INT_EQ(kretry_breaker_record(&b, 0, "k", 1, 3200), 0);
        KT_ASSERT_INT_EQ(b.state, KRETRY_BREAKER_CLOSED);
        KT_ASSERT_INT_EQ(b.cooldown_cur_ms, 1000);
        KT_ASSERT_INT_EQ(b.trips, 2);
}

static void test_success_resets_run(void) {
        kretry_breaker_t b;
        kretry_breaker_init(&b, 3, 1, 100);
        fail(&b, "a", 0);
        fail(&b, "b", 0);
        kretry_breaker_record(&b, 0, "c", 1, 0);
        KT_ASSERT_INT_EQ(fail(&b, "d", 0), 0);
        KT_ASSERT_INT_EQ(fail(&b, "e", 0), 0);
        KT_ASSERT_INT_EQ(fail(&b, "f", 0), 1);
}

static void test_cooldown_cap_and_off(void) {
        kretry_breaker_t b;
        kretry_breaker_init(&b, 1, 1, 100);
        int64_t now = 0;
        for (int i = 0; i < 10; i++) {
                KT_REQUIRE(fail(&b, "x", now) == 1);
                now = b.open_until;
                KT_REQUIRE(kretry_breaker_is_open(&b, now) == 0);
        }
        KT_ASSERT_INT_EQ(b.cooldown_cur_ms, 1600); /* 16 x 100 at most */
        kretry_breaker_init(&b, 0, 1, 100);        /* off */
        for (int i = 0; i < 100; i++)
                KT_REQUIRE(fail(&b, "x", 0) == 0);
        /* Null keys count as one key. */
        kretry_breaker_init(&b, 2, 2, 100);
        KT_ASSERT_INT_EQ(kretry_breaker_record(&b, 1, NULL, 0, 0) +
                                 kretry_breaker_record(&b, 1, NULL, 0, 0),
                         0);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_opens_on_run_across_keys),
                KT_TEST(test_success_resets_run),
                KT_TEST(test_cooldown_cap_and_off), KT_END};
        return kt_main("breaker", tests, argc, argv);
}
