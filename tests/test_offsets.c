#include "offsets.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Where a new owner resumes: before anything is done, the lowest offset
 * tracked (the first one, done or not, once it leaves the ring). */
static void test_resume_at(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        KT_ASSERT_INT_EQ(kretry_offsets_resume_at(&t), -1);
        for (int64_t o = 7; o < 10; o++)
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
        KT_ASSERT_INT_EQ(kretry_offsets_resume_at(&t), 7);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 8), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_resume_at(&t), 7);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 7), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_resume_at(&t), 9);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 9), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_resume_at(&t), 10);
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
        /* A new assignment starts a new tracker. */
        kretry_offsets_free(&t);
        kretry_offsets_init(&t);
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

/* Offsets with gaps (1-3 apart), completed in random order: a gap's
 * offset, or one done twice, is refused wherever the slot it would have
 * without gaps lies; the commit moves only once the lowest is done. */
static void test_random_gaps(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        srand(2);
        int64_t next_add = 100;
        for (int round = 0; round < 30; round++) {
                int n              = 1 + rand() % 200;
                int64_t order[200] = {0};
                for (int i = 0; i < n; i++) {
                        order[i] = next_add;
                        KT_REQUIRE(kretry_offsets_add(&t, next_add) == 0);
                        next_add += 1 + rand() % 3;
                }
                int64_t lowest = order[0], last = order[n - 1];
                for (int i = n - 1; i > 0; i--) {
                        int j       = rand() % (i + 1);
                        int64_t tmp = order[i];
                        order[i]    = order[j];
                        order[j]    = tmp;
                }
                int64_t before = kretry_offsets_committable(&t);
                for (int i = 0; i < n; i++) {
                        if (order[i] == lowest)
                                continue;
                        KT_REQUIRE(kretry_offsets_done(&t, order[i]) == 0);
                        KT_REQUIRE(kretry_offsets_done(&t, order[i]) == -1);
                }
                for (int64_t o = lowest; o <= last; o++)
                        if (!kretry_offsets_pending(&t, o) && o != lowest)
                                KT_REQUIRE(kretry_offsets_done(&t, o) == -1);
                KT_REQUIRE(kretry_offsets_committable(&t) == before);
                KT_REQUIRE(kretry_offsets_done(&t, lowest) == 1);
                KT_REQUIRE(kretry_offsets_committable(&t) == last + 1);
        }
        KT_ASSERT_INT_EQ(kretry_offsets_inflight(&t), 0);
        kretry_offsets_free(&t);
}

static int fail_offsets;

static int fail_growth(const char *site) {
        return fail_offsets && !strcmp(site, "offsets");
}

/* The ring cannot grow: the add says "no memory", not "out of order";
 * nothing changes, so the untracked offset is never passed by the
 * committable one; once memory is back the same offset is tracked. */
static void test_no_memory(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        kretry_test_alloc_fails = fail_growth;
        fail_offsets            = 1;
        /* The very first add allocates the ring. */
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 0), KRETRY_OFFSETS_NO_MEM);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), -1);
        KT_ASSERT_INT_EQ(kretry_offsets_pending(&t, 0), 0);
        fail_offsets = 0;
        for (int64_t o = 0; o < 64; o++)
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
        /* Full: 64 needs a bigger ring. */
        fail_offsets = 1;
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 64), KRETRY_OFFSETS_NO_MEM);
        /* Out of order is still told apart while memory is short. */
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 63),
                         KRETRY_OFFSETS_OUT_OF_ORDER);
        KT_ASSERT_INT_EQ(kretry_offsets_pending(&t, 64), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_inflight(&t), 64);
        for (int64_t o = 63; o >= 0; o--)
                KT_REQUIRE(kretry_offsets_done(&t, o) >= 0);
        /* Everything tracked is done: commit up to 64, not past it. */
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 64);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 64), -1);
        fail_offsets = 0;
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 64), 0);
        KT_ASSERT_INT_EQ(kretry_offsets_pending(&t, 64), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 64);
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 64), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 65);
        kretry_test_alloc_fails = NULL;
        kretry_offsets_free(&t);
}

/* Growth failing with offsets in flight and completed out of order keeps
 * every tracked one as it was. */
static void test_no_memory_keeps_ring(void) {
        kretry_offsets_t t;
        kretry_offsets_init(&t);
        for (int64_t o = 100; o < 164; o++)
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
        for (int64_t o = 101; o < 164; o += 2)
                KT_REQUIRE(kretry_offsets_done(&t, o) == 0);
        kretry_test_alloc_fails = fail_growth;
        fail_offsets            = 1;
        KT_ASSERT_INT_EQ(kretry_offsets_add(&t, 164), KRETRY_OFFSETS_NO_MEM);
        kretry_test_alloc_fails = NULL;
        for (int64_t o = 100; o < 164; o++)
                KT_REQUIRE(kretry_offsets_pending(&t, o) == (o % 2 == 0));
        KT_ASSERT_INT_EQ(kretry_offsets_done(&t, 100), 1);
        KT_ASSERT_INT_EQ(kretry_offsets_committable(&t), 102);
        kretry_offsets_free(&t);
}

/* The offsets decided above the lowest undecided one, written as commit
 * metadata and read back by the next owner: the same set, relative to the
 * offset committed; gaps inside a decided run stay in its range. */
static void test_decided_round_trip(void) {
        kretry_offsets_t t;
        char md[256];
        int64_t base;
        kretry_offsets_init(&t);
        KT_ASSERT_INT_EQ(
                (int)kretry_offsets_decided(&t, NULL, &base, md, sizeof(md)),
                0);
        for (int64_t o = 10; o < 20; o++)
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
        KT_REQUIRE(kretry_offsets_add(&t, 22) == 0); /* 20, 21: a gap */
        KT_REQUIRE(kretry_offsets_add(&t, 23) == 0);
        /* 10 done, 11 waits, 12-13 done, 14 waits, 15-19 and 22 done, 23
         * waits. */
        int64_t done[] = {10, 12, 13, 15, 16, 17, 18, 19, 22};
        for (size_t i = 0; i < sizeof(done) / sizeof(done[0]); i++)
                KT_REQUIRE(kretry_offsets_done(&t, done[i]) >= 0);
        size_t len = kretry_offsets_decided(&t, NULL, &base, md, sizeof(md));
        KT_ASSERT_INT_EQ((int)base, 11);
        KT_ASSERT_STR_EQ(md, "kretry-decided:1+2,4+8");
        KT_ASSERT_INT_EQ((int)len, (int)strlen(md));

        kretry_decided_t d = {0};
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, base, INT64_MAX, md, len), 0);
        for (int64_t o = 0; o < 30; o++)
                KT_ASSERT_INT_EQ(kretry_decided_has(&d, o),
                                 (o >= 12 && o < 14) || (o >= 15 && o < 23));
        kretry_decided_free(&d);

        /* Cut to the room there is: the first ranges only. */
        len = kretry_offsets_decided(&t, NULL, &base, md, 20);
        KT_ASSERT_STR_EQ(md, "kretry-decided:1+2");
        kretry_offsets_free(&t);
}

/* Metadata that is not kretry's decided set reads as nothing; malformed
 * sets are refused whole (their offsets are handled again). */
static void test_decided_parse(void) {
        kretry_decided_t d = {0};
        const char *bad[]  = {"kretry-decided:",        "kretry-decided:1",
                              "kretry-decided:1+0",     "kretry-decided:5+2,1+1",
                              "kretry-decided:1+2;3",   "kretry-decided:-1+2",
                              "kretry-decided:1+2,,3+1"};
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 5, INT64_MAX,
                                              "kretry: copy refused", 20),
                         0);
        KT_ASSERT_INT_EQ((int)d.cnt, 0);
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 5, INT64_MAX, NULL, 0), 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 5, INT64_MAX, bad[i],
                                                      strlen(bad[i])),
                                 KRETRY_DECIDED_MALFORMED);
                KT_ASSERT_INT_EQ((int)d.cnt, 0);
        }
        const char *ok = "kretry-decided:0+1,3+2";
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 100, 105, ok, strlen(ok)), 0);
        KT_ASSERT_INT_EQ((int)d.cnt, 2);
        KT_ASSERT_INT_EQ(kretry_decided_has(&d, 100), 1);
        KT_ASSERT_INT_EQ(kretry_decided_has(&d, 101), 0);
        KT_ASSERT_INT_EQ(kretry_decided_has(&d, 104), 1);
        KT_ASSERT_INT_EQ(kretry_decided_has(&d, 105), 0);
        kretry_decided_free(&d);
}

/* What the previous owner decided above the committed offset and this
 * owner has not consumed again is carried into its own commit, joined with
 * what it decided itself: owner A commits 1+3,5+5 above 0; owner B, behind
 * a backlog, consumed 0 to 4 (0 done, 1-3 skipped as decided, 4 waits):
 * its commit at 4 still says 5-9 were decided. */
static void test_decided_inherited(void) {
        kretry_offsets_t t;
        char md[256];
        int64_t base;
        kretry_decided_t a = {0};
        const char *from_a = "kretry-decided:1+3,5+5";
        KT_REQUIRE(kretry_decided_parse(&a, 0, 10, from_a, strlen(from_a)) ==
                   0);
        kretry_offsets_init(&t);
        /* Nothing consumed yet: no base, nothing to commit. */
        KT_ASSERT_INT_EQ(
                (int)kretry_offsets_decided(&t, &a, &base, md, sizeof(md)), 0);
        for (int64_t o = 0; o <= 4; o++)
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
        for (int64_t o = 0; o <= 3; o++)
                KT_REQUIRE(kretry_offsets_done(&t, o) >= 0);
        size_t len = kretry_offsets_decided(&t, &a, &base, md, sizeof(md));
        KT_ASSERT_INT_EQ((int)base, 4);
        KT_ASSERT_STR_EQ(md, "kretry-decided:1+5");
        KT_ASSERT_INT_EQ((int)len, (int)strlen(md));
        /* 4 done too: the commit moves to 5, 5-9 still decided above it
         * until consumed again. */
        KT_REQUIRE(kretry_offsets_done(&t, 4) == 1);
        kretry_offsets_decided(&t, &a, &base, md, sizeof(md));
        KT_ASSERT_INT_EQ((int)base, 5);
        KT_ASSERT_STR_EQ(md, "kretry-decided:0+5");
        /* Consumed and skipped as decided: nothing above the commit. */
        for (int64_t o = 5; o <= 9; o++) {
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
                KT_REQUIRE(kretry_offsets_done(&t, o) == 1);
        }
        KT_ASSERT_INT_EQ(
                (int)kretry_offsets_decided(&t, &a, &base, md, sizeof(md)), 0);
        KT_ASSERT_INT_EQ((int)base, 10);
        kretry_offsets_free(&t);

        /* Touching ranges are joined: 11 and 12 done here, 13-14 and
         * 16 inherited. */
        kretry_decided_t b = {0};
        const char *from_b = "kretry-decided:3+2,6+1";
        KT_REQUIRE(kretry_decided_parse(&b, 10, 20, from_b, strlen(from_b)) ==
                   0);
        kretry_offsets_init(&t);
        for (int64_t o = 10; o <= 12; o++)
                KT_REQUIRE(kretry_offsets_add(&t, o) == 0);
        KT_REQUIRE(kretry_offsets_done(&t, 11) == 0);
        KT_REQUIRE(kretry_offsets_done(&t, 12) == 0);
        kretry_offsets_decided(&t, &b, &base, md, sizeof(md));
        KT_ASSERT_INT_EQ((int)base, 10);
        KT_ASSERT_STR_EQ(md, "kretry-decided:1+4,6+1");
        kretry_offsets_free(&t);
        kretry_decided_free(&a);
        kretry_decided_free(&b);
}

/* Untrusted metadata: a range past the partition's end when it was
 * assigned (no owner can have decided what did not exist), a text longer
 * than kretry writes, or numbers that would overflow are refused whole:
 * nothing is acknowledged on its word. */
static void test_decided_bounds(void) {
        kretry_decided_t d = {0};
        const char *huge   = "kretry-decided:0+999999999999999999";
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 7, 50, huge, strlen(huge)),
                         KRETRY_DECIDED_BEYOND);
        KT_ASSERT_INT_EQ((int)d.cnt, 0);
        const char *past = "kretry-decided:1+2,40+4";
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 7, 50, past, strlen(past)),
                         KRETRY_DECIDED_BEYOND);
        KT_ASSERT_INT_EQ((int)d.cnt, 0);
        /* Ending exactly at the end offset is possible. */
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 7, 51, past, strlen(past)),
                         0);
        KT_ASSERT_INT_EQ((int)d.cnt, 2);
        KT_ASSERT_INT_EQ(kretry_decided_has(&d, 50), 1);
        kretry_decided_free(&d);
        /* A committed offset past the end: nothing above it can be true. */
        const char *one = "kretry-decided:0+1";
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 60, 50, one, strlen(one)),
                         KRETRY_DECIDED_BEYOND);
        /* Near INT64_MAX: no overflow, refused. */
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, INT64_MAX - 5, INT64_MAX,
                                              huge, strlen(huge)),
                         KRETRY_DECIDED_BEYOND);
        /* Longer than kretry ever writes. */
        static char long_md[KRETRY_DECIDED_MAX + 64];
        size_t len = (size_t)snprintf(long_md, sizeof(long_md), "%s",
                                      KRETRY_DECIDED_METADATA);
        for (int i = 0; len + 8 < sizeof(long_md); i++)
                len += (size_t)snprintf(long_md + len, sizeof(long_md) - len,
                                        "%s%d+1", i ? "," : "", 2 * i);
        KT_ASSERT_INT_EQ(kretry_decided_parse(&d, 0, INT64_MAX, long_md, len),
                         KRETRY_DECIDED_MALFORMED);
        KT_ASSERT_INT_EQ((int)d.cnt, 0);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_in_order),
                                          KT_TEST(test_out_of_order),
                                          KT_TEST(test_resume_at),
                                          KT_TEST(test_gaps_and_order),
                                          KT_TEST(test_random_completion),
                                          KT_TEST(test_random_gaps),
                                          KT_TEST(test_no_memory),
                                          KT_TEST(test_no_memory_keeps_ring),
                                          KT_TEST(test_decided_round_trip),
                                          KT_TEST(test_decided_parse),
                                          KT_TEST(test_decided_inherited),
                                          KT_TEST(test_decided_bounds),
                                          KT_END};
        return kt_main("offsets", tests, argc, argv);
}
