/*
 * (f) Consumer processes are SIGKILLed mid-stream, repeatedly, at random
 * points, some while the cluster injects faults; a fresh one finishes. Every
 * produced message must be accounted for — handled OK at least once, or in
 * the DLQ. Duplicates are allowed (at least once); the repeated handlings
 * after each kill are reported (kill_harness.h: the machinery).
 *
 * The same kills with routing=transactional, where duplicate copies are not
 * allowed, are it_kill_txn's.
 *
 * The kill points and faults come from a seed printed at the start;
 * KRETRY_TEST_SEED=<seed> repeats the same choices (the timing of the
 * processes still varies); KRETRY_TEST_KILL_FAULTS=0 injects no fault.
 */
#include "kill_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* test_churn's bound on all the handlings repeated in its minute (76-89 on
 * the mock; 11,791 at the old 5 s commits and eager assignor). */
#define CHURN_REPEATS 1000

static void mark_dlq(const rd_kafka_message_t *m, void *opaque) {
        int *dlq = opaque;
        char v[32];
        snprintf(v, sizeof(v), "%.*s", (int)(m->len < 20 ? m->len : 20),
                 (const char *)m->payload);
        int i = atoi(v + 2);
        if (i >= 0 && i < N)
                dlq[i]++;
}

/* The plain stream (it_worker @p mode) under kills at random points:
 * nothing is lost, and a permanent failure never reaches the OK log. */
static void kill_and_resume(const char *prefix, const char *mode) {
        run_t r;
        run_init_plain(&r, prefix, mode);
        r.bound_factor = mode ? 2 : 1; /* "concurrent": 16 handlers */
        run_with_kills(&r);
        for (int p = 0; p < 3; p++)
                fprintf(stderr, "  committed at the end: [%d] %lld\n", p,
                        (long long)kt_committed(r.c, r.grp, r.src, p));
        int dlq[N];
        memset(dlq, 0, sizeof(dlq));
        /* The DLQ may hold duplicates too: read all of it. */
        kt_consume(r.c, r.dlq, N, 4000, mark_dlq, dlq);
        int lost = 0, dups = 0;
        for (int i = 0; i < N; i++) {
                dups += r.seen[i] > 1 ? r.seen[i] - 1 : 0;
                if (!(expected_dlq(i) ? dlq[i] : r.seen[i]) && lost++ < 5)
                        fprintf(stderr, "  lost: n-%d\n", i);
                /* A permanent failure never reaches the OK log. */
                KT_CHECK_MSG(!expected_dlq(i) || !r.seen[i], CU_FALSE,
                             "n-%d handled OK", i);
        }
        fprintf(stderr,
                "  %d OK lines for %d messages; duplicates %d; lost %d\n",
                r.lines, N, dups, lost);
        KT_ASSERT_INT_EQ(lost, 0);
        run_destroy(&r);
}

static void test_kill_and_resume(void) {
        kill_and_resume("kill", NULL);
}

/* handler.concurrency 16, handlers of 0-32 ms finishing out of order: a
 * SIGKILL with many in flight loses nothing (offsets commit only up to the
 * lowest message still in flight). */
static void test_kill_concurrent(void) {
        kill_and_resume("ckill", "concurrent");
}

/* The ordered stream's shape: keys, and messages per key. */
/* ordering=key with ~30% transient failures: consumers are SIGKILLed at
 * random points and a fresh one rebuilds the key chains and finishes; no
 * message is handled before an earlier one of its key, and nothing is
 * lost. */
static void test_kill_ordered(void) {
        run_t r;
        run_init_ordered(&r, "okill", 40, 30);
        for (int i = 0; i < r.nids; i++)
                produce_ordered(&r, i);
        run_with_kills(&r);
        check_ordered_end(&r, 1);
        run_destroy(&r);
}

/* The ordered stream under kills at the same points, once with ordering
 * none and once key; the handlings each kill made the group repeat, per
 * kill. */
static double ordered_repeats(const char *prefix, const char *ordering) {
        static const char *const none[] = {"ordering=none", NULL};
        run_t r;
        run_init_ordered(&r, prefix, 40, 30);
        r.kill_on_commit = 1;
        if (!strcmp(ordering, "none"))
                r.props = none;
        for (int i = 0; i < r.nids; i++)
                produce_ordered(&r, i);
        run_with_kills(&r);
        if (!strcmp(ordering, "key"))
                check_ordered_end(&r, 1);
        else /* nothing lost; the order is not ordering=none's promise */
                KT_ASSERT_INT_EQ(r.missing(&r), 0);
        double per_kill = r.per_kill;
        run_destroy(&r);
        return per_kill;
}

/* What a kill right after a commit may repeat beyond 1.5 times
 * ordering=none's count: the messages in flight and what the handler (1 ms
 * a call) decided between the commit and the kill, which the harness sees
 * within a few ms on a quiet machine and within tens of ms under load
 * (ordering=key 17.3 per kill against none 4.0 while another build ran,
 * one kill of the six 42). */
#define IN_FLIGHT 30

/* ordering=key repeats per SIGKILL within 1.5 times what ordering=none
 * repeats on the same stream (40 keys of 30 messages, ~30 % transient
 * failures) and kill points, two rounds of three kills each, every kill
 * right after a periodic commit: the periodic commits carry the offsets
 * decided above the committed one, so a kill repeats what was decided
 * since the last commit and what was in flight, under either ordering.
 * Without them ordering=key repeated everything decided above a message
 * waiting behind its key (planted: 122 and 125 per kill against 5.5 and
 * 5.7; fixed: 8-13 against 6-19 on a quiet machine, 17.3 against 4.0
 * under load). Real Kafka: the mock refuses commits during a
 * rebalance, which adds repeats unrelated to ordering. */
static void test_kill_key_repeats_as_none(void) {
        if (!kt_real_only("the mock refuses commits during a rebalance"))
                return;
        /* Two rounds, each at the next seed's kill points. */
        enum { ROUNDS = 2 };
        double none = 0, key = 0;
        unsigned first = seed;
        for (int round = 0; round < ROUNDS; round++, seed++) {
                none += ordered_repeats("krn", "none") / ROUNDS;
                key += ordered_repeats("krk", "key") / ROUNDS;
        }
        seed = first;
        fprintf(stderr,
                "  repeated handlings per kill: ordering=key %.1f, "
                "ordering=none %.1f (seed %u)\n",
                key, none, seed);
        KT_CHECK_MSG(key <= 1.5 * none + IN_FLIGHT, CU_FALSE,
                     "ordering=key repeated %.1f handlings per kill, "
                     "ordering=none %.1f (bound 1.5x + %d; seed %u)",
                     key, none, IN_FLIGHT, seed);
}

#define MEMBERS 3
#define CHURN_MS 60000

/* Stop worker @p pid with SIGTERM, bounded; its exit status. */
static int stop_worker(pid_t pid) {
        int st           = 0;
        int64_t deadline = kt_now_ms() + 30000;
        kill(pid, SIGTERM);
        while (waitpid(pid, &st, WNOHANG) == 0 && kt_now_ms() < deadline)
                kt_nap_ms(20);
        if (kt_now_ms() >= deadline) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
        }
        return st;
}

/* Churn: three ordering=key members at kretry's defaults while messages
 * arrive (2,700 in a minute, 90 keys); every 4-8 s one of them, drawn from
 * the seed, is SIGKILLed and started again at once. Nothing is lost, no
 * key's order breaks, and the handlings repeated over the minute are
 * reported: the cost of a group that keeps changing. */
static void test_churn(void) {
        run_t r;
        pid_t member[MEMBERS];
        run_init_ordered(&r, "churn", 90, 30);
        rng = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 7;
        for (int m = 0; m < MEMBERS; m++)
                member[m] = spawn(r.c, r.src, r.grp, r.out, r.mode);
        int64_t t0        = kt_now_ms(),
                next_kill = t0 + 4000 + kt_rand_below(&rng, 4001);
        int sent = 0, kills = 0;
        while (kt_now_ms() < t0 + CHURN_MS) {
                /* Arrivals spread over the minute. */
                int due = (int)((kt_now_ms() - t0) * r.nids / CHURN_MS);
                while (sent < due && sent < r.nids)
                        produce_ordered(&r, sent++);
                if (kt_now_ms() >= next_kill) {
                        int m        = (int)kt_rand_below(&rng, MEMBERS), st;
                        char how[64] = "";
                        int ended    = waitpid(member[m], &st, WNOHANG) != 0;
                        if (ended)
                                describe_status(st, how, sizeof(how));
                        KT_CHECK_MSG(!ended, CU_FALSE,
                                     "member %d ended by itself (%s)",
                                     (int)member[m], how);
                        kill(member[m], SIGKILL);
                        waitpid(member[m], &st, 0);
                        member[m] = spawn(r.c, r.src, r.grp, r.out, r.mode);
                        kills++;
                        next_kill =
                                kt_now_ms() + 4000 + kt_rand_below(&rng, 4001);
                }
                kt_nap_ms(20);
        }
        while (sent < r.nids)
                produce_ordered(&r, sent++);
        int64_t deadline = kt_now_ms() + 120000;
        for (read_log(&r, 0); r.missing(&r) > 0 && kt_now_ms() < deadline;
             read_log(&r, 0))
                kt_nap_ms(50);
        for (int m = 0; m < MEMBERS; m++) {
                int st = stop_worker(member[m]);
                KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, CU_FALSE,
                             "member %d on SIGTERM: status 0x%x",
                             (int)member[m], st);
        }
        read_log(&r, 0);
        fprintf(stderr,
                "  churn: %d kills in %d s; %d handlings repeated for %d "
                "messages (seed %u)\n",
                kills, CHURN_MS / 1000, r.lines - (r.nids - r.missing(&r)),
                r.nids, seed);
        KT_ASSERT(kills >= CHURN_MS / 8000);
        int repeated = r.lines - (r.nids - r.missing(&r));
        KT_CHECK_MSG(repeated < CHURN_REPEATS, CU_FALSE,
                     "churn repeated %d handlings (bound %d)", repeated,
                     CHURN_REPEATS);
        /* Members ran side by side: partitions moved between them, and
         * back, so only the first-OK order is checked. */
        check_ordered_end(&r, 0);
        run_destroy(&r);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_kill_and_resume),
                KT_TEST(test_kill_concurrent),
                KT_TEST(test_kill_ordered),
                KT_TEST(test_kill_key_repeats_as_none),
                KT_TEST(test_churn),
                KT_END};
        return kill_main("it_kill", tests, argc, argv);
}
