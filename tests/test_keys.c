/* Unit tests of the per-partition key stores: the hash map, the ordering
 * chains and the version store. */
#include "keychain.h"
#include "keymap.h"
#include "restore.h"
#include "testutil.h"
#include "versions.h"

#include <stdlib.h>
#include <string.h>

static void test_keymap_basic(void) {
        kretry_keymap_t m;
        kretry_keymap_init(&m, sizeof(int64_t));
        int created;
        int64_t *v = kretry_keymap_put(&m, "a", 1, &created);
        KT_REQUIRE(v && created);
        *v = 7;
        KT_ASSERT(*(int64_t *)kretry_keymap_put(&m, "a", 1, &created) == 7);
        KT_ASSERT(!created);
        KT_ASSERT(kretry_keymap_get(&m, "b", 1) == NULL);
        /* The empty key and binary keys are keys like any other. */
        KT_REQUIRE(kretry_keymap_put(&m, "", 0, NULL) != NULL);
        KT_REQUIRE(kretry_keymap_put(&m, "a\0b", 3, NULL) != NULL);
        KT_ASSERT(kretry_keymap_get(&m, "a\0c", 3) == NULL);
        KT_ASSERT_INT_EQ(m.cnt, 3);
        KT_ASSERT_INT_EQ(kretry_keymap_del(&m, "a", 1), 1);
        KT_ASSERT_INT_EQ(kretry_keymap_del(&m, "a", 1), 0);
        KT_ASSERT(kretry_keymap_get(&m, "", 0) != NULL);
        kretry_keymap_free(&m);
}

/* Many inserts and deletes against a reference array: the backward-shift
 * deletion must never lose a key that shares a probe cluster. */
static void test_keymap_churn(void) {
        kretry_keymap_t m;
        kretry_keymap_init(&m, sizeof(int));
        enum { K = 5000 };
        static int present[K];
        memset(present, 0, sizeof(present));
        srand(3);
        for (int round = 0; round < 60000; round++) {
                int k = rand() % K;
                char key[16];
                int len = snprintf(key, sizeof(key), "k%d", k);
                if (rand() % 3) {
                        int *v = kretry_keymap_put(&m, key, (size_t)len, NULL);
                        KT_REQUIRE(v != NULL);
                        *v         = k;
                        present[k] = 1;
                } else {
                        KT_REQUIRE(kretry_keymap_del(&m, key, (size_t)len) ==
                                   present[k]);
                        present[k] = 0;
                }
        }
        size_t n = 0;
        for (int k = 0; k < K; k++) {
                char key[16];
                int len = snprintf(key, sizeof(key), "k%d", k);
                int *v  = kretry_keymap_get(&m, key, (size_t)len);
                KT_REQUIRE((v != NULL) == present[k]);
                if (v) {
                        KT_REQUIRE(*v == k);
                        n++;
                }
        }
        KT_ASSERT_INT_EQ(m.cnt, n);
        size_t pos = 0, seen = 0;
        while (kretry_keymap_next(&m, &pos, NULL, NULL))
                seen++;
        KT_ASSERT_INT_EQ(seen, n);
        kretry_keymap_free(&m);
}

static void test_chain_order(void) {
        kretry_chains_t c;
        kretry_chains_init(&c);
        kretry_pending_t head;
        /* No chain: handle. */
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 10, NULL),
                         KRETRY_CHAIN_HANDLE);
        /* 10 failed: it heads K's chain from tier 1. */
        KT_REQUIRE(kretry_chains_add(&c, "K", 1, 10, 1, 1000) == 0);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 10, NULL),
                         KRETRY_CHAIN_HANDLE);
        /* Later K messages park behind the head; other keys flow. */
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 12, &head),
                         KRETRY_CHAIN_PARK);
        KT_ASSERT_INT_EQ(head.orig_offset, 10);
        KT_ASSERT_INT_EQ(head.tier, 1);
        KT_ASSERT_INT_EQ(head.due_ts, 1000);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "L", 1, 11, NULL),
                         KRETRY_CHAIN_HANDLE);
        KT_REQUIRE(kretry_chains_add(&c, "K", 1, 15, 1, 1000) == 0);
        KT_REQUIRE(kretry_chains_add(&c, "K", 1, 12, 1, 1000) == 0);
        KT_ASSERT(kretry_chains_has(&c, "K", 1, 12));
        KT_ASSERT(!kretry_chains_has(&c, "K", 1, 13));
        KT_ASSERT(!kretry_chains_has(&c, "L", 1, 12));
        /* Only the head has nothing pending before it. */
        KT_ASSERT(!kretry_chains_before(&c, "K", 1, 10));
        KT_ASSERT(kretry_chains_before(&c, "K", 1, 12));
        KT_ASSERT(!kretry_chains_before(&c, "L", 1, 12));
        KT_ASSERT_INT_EQ(c.pending, 3);
        /* The head moves to tier 2; re-adding updates, never duplicates. */
        KT_REQUIRE(kretry_chains_add(&c, "K", 1, 10, 2, 5000) == 0);
        KT_ASSERT_INT_EQ(c.pending, 3);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 15, &head),
                         KRETRY_CHAIN_PARK);
        KT_ASSERT_INT_EQ(head.tier, 2);
        /* Head done: 12 (not 15, whichever surfaces first) is next. */
        kretry_chains_remove(&c, "K", 1, 10);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 15, NULL),
                         KRETRY_CHAIN_PARK);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 12, NULL),
                         KRETRY_CHAIN_HANDLE);
        kretry_chains_remove(&c, "K", 1, 12);
        kretry_chains_remove(&c, "K", 1, 15);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 0);
        KT_ASSERT_INT_EQ(c.pending, 0);
        /* Many followers: the inline slot grows into an array. */
        for (int64_t o = 100; o > 0; o--)
                KT_REQUIRE(kretry_chains_add(&c, "M", 1, o, 1, 0) == 0);
        for (int64_t o = 1; o <= 100; o++) {
                KT_REQUIRE(kretry_chains_decide(&c, "M", 1, o + 1, NULL) ==
                           KRETRY_CHAIN_PARK);
                KT_REQUIRE(kretry_chains_decide(&c, "M", 1, o, NULL) ==
                           KRETRY_CHAIN_HANDLE);
                kretry_chains_remove(&c, "M", 1, o);
        }
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "M", 1, 101, NULL),
                         KRETRY_CHAIN_HANDLE);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 0);
        kretry_chains_free(&c);
}

static void test_chain_park_key(void) {
        kretry_chains_t c;
        kretry_chains_init(&c);
        KT_REQUIRE(kretry_chains_add(&c, "K", 1, 1, 1, 0) == 0);
        KT_REQUIRE(kretry_chains_add(&c, "K", 1, 2, 1, 0) == 0);
        KT_REQUIRE(kretry_chains_add(&c, "K", 1, 3, 1, 0) == 0);
        /* The head dead-letters under park_key: two followers pending. */
        KT_ASSERT_INT_EQ(kretry_chains_park(&c, "K", 1, 1), 2);
        kretry_chains_remove(&c, "K", 1, 1);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 2, NULL),
                         KRETRY_CHAIN_DEAD);
        kretry_chains_remove(&c, "K", 1, 2);
        kretry_chains_remove(&c, "K", 1, 3);
        /* Still parked with nothing pending, until replayed. */
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 9, NULL),
                         KRETRY_CHAIN_DEAD);
        kretry_chains_park(&c, "K", 1, 0);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 9, NULL),
                         KRETRY_CHAIN_HANDLE);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 0);
        kretry_chains_free(&c);
}

/* What a new message (offset 20) of @p key gets. */
static kretry_chain_decision_t later(kretry_chains_t *c, const char *key) {
        return kretry_chains_decide(c, key, strlen(key), 20, NULL);
}

/* Parks rebuilt from DLQ copies; a replayed message lifts a park only when
 * it came after the newest copy that parked the key. */
static void test_chain_park_evidence(void) {
        kretry_chains_t c;
        kretry_chains_init(&c);
        KT_ASSERT_INT_EQ(kretry_chains_parked_from(&c), -1);
        /* K: head 3 (parked-followers) and a parked follower 7, read in
         * any order; L: head 5. */
        KT_REQUIRE(kretry_chains_park_evidence(&c, "K", 1, 7) == 0);
        KT_REQUIRE(kretry_chains_park_evidence(&c, "K", 1, 3) == 0);
        KT_REQUIRE(kretry_chains_park_evidence(&c, "L", 1, 5) == 0);
        KT_ASSERT_INT_EQ(kretry_chains_parked_from(&c), 5);
        KT_ASSERT_INT_EQ(later(&c, "K"), KRETRY_CHAIN_DEAD);
        /* A replay of K at 6 came before the follower 7 was parked: the
         * key was parked again since. One at 8 lifted it. */
        kretry_chains_replayed(&c, "K", 1, 6);
        KT_ASSERT_INT_EQ(later(&c, "K"), KRETRY_CHAIN_DEAD);
        kretry_chains_replayed(&c, "K", 1, 8);
        KT_ASSERT_INT_EQ(later(&c, "K"), KRETRY_CHAIN_HANDLE);
        /* A replay of another key lifts nothing. */
        kretry_chains_replayed(&c, "M", 1, 9);
        KT_ASSERT_INT_EQ(later(&c, "L"), KRETRY_CHAIN_DEAD);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 1);
        kretry_chains_free(&c);
}

/* The restore keeps the newest copy of a message and remembers the
 * others, in whatever order the tiers are read. */
static void test_chain_restore_superseded(void) {
        kretry_chains_t c;
        kretry_chains_init(&c);
        /* orig, due, copy offset, tier, attempt */
        const kretry_pending_t t2 = {10, 900, 4, 2, 2};
        const kretry_pending_t t1 = {10, 500, 7, 1, 1};
        KT_REQUIRE(kretry_chains_restore(&c, "K", 1, &t2) == 0);
        KT_REQUIRE(kretry_chains_restore(&c, "K", 1, &t1) == 0);
        kretry_pending_t head;
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "K", 1, 11, &head),
                         KRETRY_CHAIN_PARK);
        KT_ASSERT_INT_EQ(head.tier, 2);
        KT_ASSERT_INT_EQ(head.due_ts, 900);
        KT_ASSERT_INT_EQ(c.pending, 1);
        /* Parked twice into tier 1 with the same attempt: the later
         * offset is current, read first or last. */
        const kretry_pending_t p1 = {12, 500, 8, 1, 0};
        const kretry_pending_t p2 = {12, 900, 9, 1, 0};
        KT_REQUIRE(kretry_chains_restore(&c, "K", 1, &p1) == 0);
        KT_REQUIRE(kretry_chains_restore(&c, "K", 1, &p2) == 0);
        KT_ASSERT_INT_EQ(c.pending, 2);
        /* Superseded: tier 1 offsets 7 and 8, each once; the current
         * copies are not. */
        KT_ASSERT(!kretry_chains_superseded(&c, 2, 4));
        KT_ASSERT(!kretry_chains_superseded(&c, 1, 9));
        KT_ASSERT(!kretry_chains_superseded(&c, 2, 7));
        KT_ASSERT(kretry_chains_superseded(&c, 1, 7));
        KT_ASSERT(kretry_chains_superseded(&c, 1, 8));
        KT_ASSERT(!kretry_chains_superseded(&c, 1, 7));
        /* Across tiers with the same attempt, the later due time wins. */
        const kretry_pending_t q1 = {20, 800, 3, 2, 0};
        const kretry_pending_t q2 = {20, 700, 5, 1, 0};
        KT_REQUIRE(kretry_chains_restore(&c, "L", 1, &q1) == 0);
        KT_REQUIRE(kretry_chains_restore(&c, "L", 1, &q2) == 0);
        KT_ASSERT(kretry_chains_superseded(&c, 1, 5));
        kretry_chains_clear(&c);
        KT_ASSERT_INT_EQ(c.superseded.cnt, 0);
        kretry_chains_free(&c);
}

/* A key's gate and its chain share one entry: the entry lives while either
 * holds it, a gate alone is not counted as a chained key, and an idle gate
 * leaves the chain as it was. */
static void test_chain_gate(void) {
        kretry_chains_t c;
        kretry_chains_init(&c);
        /* Looking a gate up creates nothing. */
        KT_ASSERT(kretry_chains_gate_find(&c, "k", 1) == NULL);
        KT_ASSERT_INT_EQ(c.map.cnt, 0);
        kretry_gate_t *g = kretry_chains_gate(&c, "k", 1);
        KT_REQUIRE(g != NULL);
        KT_ASSERT(kretry_chains_gate_find(&c, "k", 1) == g);
        KT_ASSERT_INT_EQ(g->busy, 0);
        g->busy = 1;
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 0);
        KT_ASSERT_INT_EQ(c.map.cnt, 1);
        /* The same entry, found again, also for a chain. */
        KT_ASSERT(kretry_chains_gate(&c, "k", 1) == g);
        KT_ASSERT_INT_EQ(kretry_chains_add(&c, "k", 1, 10, 1, 100), 0);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 1);
        /* The chain ends while the gate is busy: the entry stays. */
        kretry_chains_remove(&c, "k", 1, 10);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 0);
        KT_ASSERT_INT_EQ(c.map.cnt, 1);
        KT_ASSERT(kretry_chains_gate(&c, "k", 1) == g);
        KT_ASSERT_INT_EQ(g->busy, 1);
        /* Busy, then idle with a chain: the entry stays for the chain. */
        KT_ASSERT_INT_EQ(kretry_chains_add(&c, "k", 1, 11, 1, 100), 0);
        g->busy = 0;
        kretry_chains_gate_idle(&c, g);
        KT_ASSERT_INT_EQ(c.map.cnt, 1);
        KT_ASSERT_INT_EQ(kretry_chains_decide(&c, "k", 1, 12, NULL),
                         KRETRY_CHAIN_PARK);
        kretry_chains_remove(&c, "k", 1, 11);
        KT_ASSERT_INT_EQ(c.map.cnt, 0);
        /* A parked key keeps its entry too; gates are iterated. */
        kretry_chains_park(&c, "p", 1, 1);
        g = kretry_chains_gate(&c, "q", 1);
        KT_REQUIRE(g != NULL);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 1);
        size_t pos = 0;
        int n      = 0;
        while (kretry_chains_next_gate(&c, &pos))
                n++;
        KT_ASSERT_INT_EQ(n, 2);
        kretry_chains_gate_idle(&c, g); /* "q": nothing else holds it */
        KT_ASSERT_INT_EQ(c.map.cnt, 1);
        kretry_chains_park(&c, "p", 1, 0);
        KT_ASSERT_INT_EQ(c.map.cnt, 0);
        KT_ASSERT_INT_EQ(kretry_chains_keys(&c), 0);
        kretry_chains_free(&c);
}

static void test_versions(void) {
        kretry_versions_t v;
        kretry_versions_init(&v);
        /* v3, v1, v2, v5, v4 -> v3 and v5 are handled. */
        const int64_t seq[] = {3, 1, 2, 5, 4};
        int handled[5];
        for (int i = 0; i < 5; i++) {
                handled[i] = !kretry_versions_stale(&v, "K", 1, seq[i], 0);
                if (handled[i])
                        kretry_versions_raise(&v, "K", 1, seq[i]);
        }
        KT_ASSERT(handled[0] && !handled[1] && !handled[2] && handled[3] &&
                  !handled[4]);
        KT_ASSERT_INT_EQ(kretry_versions_stale(&v, "K", 1, 5, 0), 0);
        KT_ASSERT_INT_EQ(kretry_versions_stale(&v, "K", 1, 5, 1), 1);
        KT_ASSERT_INT_EQ(kretry_versions_raise(&v, "K", 1, 4), 0);
        KT_ASSERT_INT_EQ(kretry_versions_raise(&v, "K", 1, 6), 1);
        KT_ASSERT_INT_EQ(kretry_versions_stale(&v, "other", 5, -100, 1), 0);
        kretry_versions_free(&v);
}

static void test_version_codec(void) {
        const int64_t vals[] = {0,  1,   -1,        63,       -64,
                                64, 300, INT64_MAX, INT64_MIN};
        unsigned char buf[10];
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
                size_t n  = kretry_version_encode(vals[i], buf);
                int64_t d = 0;
                KT_REQUIRE(kretry_version_decode(buf, n, &d) == 0);
                KT_ASSERT(d == vals[i]);
        }
        /* Avro's zig-zag: 1 -> 0x02, -1 -> 0x01, 64 -> 0x80 0x01. */
        KT_ASSERT(kretry_version_encode(1, buf) == 1 && buf[0] == 2);
        KT_ASSERT(kretry_version_encode(-1, buf) == 1 && buf[0] == 1);
        KT_ASSERT(kretry_version_encode(64, buf) == 2 && buf[0] == 0x80 &&
                  buf[1] == 1);
        int64_t d;
        KT_ASSERT_INT_EQ(kretry_version_decode("\x80", 1, &d), -1);
        KT_ASSERT_INT_EQ(kretry_version_decode("\x02\x02", 2, &d), -1);
        KT_ASSERT_INT_EQ(kretry_version_decode("", 0, &d), -1);
        KT_ASSERT_INT_EQ(kretry_version_parse("42", 2, &d), 0);
        KT_ASSERT_INT_EQ(d, 42);
        KT_ASSERT_INT_EQ(kretry_version_parse("-7", 2, &d), 0);
        KT_ASSERT_INT_EQ(d, -7);
        KT_ASSERT_INT_EQ(kretry_version_parse("v1", 2, &d), -1);
        KT_ASSERT_INT_EQ(kretry_version_parse("-", 1, &d), -1);
        KT_ASSERT_INT_EQ(kretry_version_parse("99999999999999999999", 20, &d),
                         -1);
}

/* The restore's start in a tier partition holding [lo, hi). */
static void test_restore_start(void) {
        /* From the committed offset; none: from the log start. */
        KT_ASSERT_INT_EQ(kretry_restore_start(12, 10, 20), 12);
        KT_ASSERT_INT_EQ(kretry_restore_start(-1001, 10, 20), 10);
        /* Retention deleted unread copies: clamped to the log start. */
        KT_ASSERT_INT_EQ(kretry_restore_start(3, 10, 20), 10);
        /* Nothing left to read: at the end, past it, or an empty log. */
        KT_ASSERT_INT_EQ(kretry_restore_start(20, 10, 20), -1);
        KT_ASSERT_INT_EQ(kretry_restore_start(25, 10, 20), -1);
        KT_ASSERT_INT_EQ(kretry_restore_start(3, 20, 20), -1);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_keymap_basic),
                KT_TEST(test_keymap_churn),
                KT_TEST(test_chain_order),
                KT_TEST(test_chain_park_key),
                KT_TEST(test_chain_park_evidence),
                KT_TEST(test_chain_restore_superseded),
                KT_TEST(test_chain_gate),
                KT_TEST(test_versions),
                KT_TEST(test_version_codec),
                KT_TEST(test_restore_start),
                KT_END};
        return kt_main("keys", tests, argc, argv);
}
