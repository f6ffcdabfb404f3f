#include "offsets.h"
#include "testutil.h"

#include <stdlib.h>

static void test_in_order(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), -1);
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 5), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 5), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 6);
        KT_ASSERT_INT_EQ(kretry_offsets_inflight(&t), 0);
        kretry_offsets_free(&t);
}

static void test_out_of_order(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        for (int64_t o = 10; o < 15; o++)
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
        /* 11 and 13 complete first: nothing may be committed past 10. */
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 11), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 13), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), -1);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 10), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 12);
        KT_ASSERT_INT_EQ(kretry_offsets_inflight(&t), 2);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 14), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 12);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 12), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 15);
        /* Twice done, or never tracked. */
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 12), -1);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 99), -1);
        kretry_offsets_free(&t);
}

static void test_gaps_and_order(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        /* Compaction and transaction markers leave gaps. */
        KT_REQUIRE(kretry_offsets_add(&t, 3) == 0);
        KT_REQUIRE(kretry_offsets_add(&t, 7) == 0);
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 7), -1);
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 5), -1);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 7), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 3), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 8);
        /* Below what was already committed is refused too. */
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 6), -1);
        kretry_offsets_clear(&t);
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 6), 0);
        kretry_offsets_free(&t);
}

/* Random completion order over many offsets, with ring growth and wrap. */
static void test_random_completion(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        srand(1);
        int64_t base = 0, next_add = 0;
        for (int round = 0; round < 50; round++) {
                int n = 1 + rand() % 300;
                for (int i = 0; i < n; i++)
                        KT_REQUIRE(kretry_offsets_add(&t, next_add++) == 0);
                int64_t *order =
                        malloc(sizeof(int64_t) * (size_t)(next_add - base));
                int cnt = 0;
                for (int64_t o = base; o < next_add; o++)
                        order[cnt++] = o;
                for (int i = cnt - 1; i > 0; i--) {
                        int j       = rand() % (i + 1);
                        int64_t tmp = order[i];
                        order[i]    = order[j];
                        order[j]    = tmp;
                }
                /* Complete all but the lowest; the commit must not move. */
                int64_t before = kretry_offsets_committable(&t);
                for (int i = 0; i < cnt; i++)
                        if (order[i] != base)
                                kretry_offsets_done(&t, order[i]);
                KT_REQUIRE(kretry_offsets_committable(&t) == before);
                KT_REQUIRE(kretry_offsets_done(&t, base) == 1);
                KT_REQUIRE(kretry_offsets_committable(&t) == next_add);
                base = next_add;
                free(order);
        }
        KT_ASSERT_INT_EQ(kretry_offsets_inflight(&t), 0);
        kretry_offsets_free(&t);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_in_order), KT_TEST(test_out_of_order),
                KT_TEST(test_gaps_and_order), KT_TEST(test_random_completion),
                KT_END};
        return kt_main("offsets", tests, argc, argv);
}
