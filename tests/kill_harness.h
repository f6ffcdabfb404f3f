/*
 * The kill tests' machinery, shared by it_kill (the plain kills) and
 * it_kill_txn (routing=transactional, real Kafka): it_worker processes
 * started on a stream and SIGKILLed mid-stream at points drawn from a seed
 * (some under a fault the mock cluster injects), then one that finishes;
 * the OK log they append to, read back; the handlings each kill made the
 * group repeat, reported and bounded.
 *
 * The kill points and faults come from a seed printed at the start;
 * KRETRY_TEST_SEED=<seed> repeats the same choices (the timing of the
 * processes still varies); KRETRY_TEST_KILL_FAULTS=0 injects no fault.
 */
#ifndef KRETRY_KILL_HARNESS_H
#define KRETRY_KILL_HARNESS_H

#include "testutil.h"

#include <sys/types.h>

/* The plain stream's messages ("n-I", I % 3 its partition). */
#define N 1500
#define KILLS 3

/* The suite's seed (KRETRY_TEST_SEED or drawn), and the generator a test
 * draws its kill points and faults from. */
extern unsigned seed;
extern uint64_t rng;

/* The worker log: one line per OK, "<pid> <fields...>". @p id maps a line's
 * fields after the pid to a message id in 0..nids-1, or -1. */
typedef int (*id_fn)(const char *fields);

typedef struct run_s {
        kt_cluster_t *c;
        char src[128], grp[128], dlq[200], out[256], trace[270];
        unsigned failures; /* the suite's failures when the test began */
        const char *mode;  /* it_worker's mode argument, or NULL */
        /* The bound on a kill's repeats, times KILL_REPEATS_PLAIN (plain
         * kills) and KILL_REPEATS_FAULT (under a fault): 1 for the plain
         * stream; 2 at 16 handlers, which decide about twice as many
         * messages in a commit interval (294 in a plain kill after one
         * under a rebalance fault, whose commits the mock refused, in a
         * clean-clone CI); ordering=key kills repeated more as well (250
         * in one plain kill on real Kafka, 2026-12-03), where the fault
         * bound applies to every kill. */
        int bound_factor, ordered;
        id_fn id;
        int nids;
        int *seen; /* OK handlings per id, as last read */
        int lines;
        /* Per kill: where the log stood (bytes), how far its worker got. */
        long kill_at[KILLS];
        int kill_lines[KILLS], kill_missing[KILLS], kills;
        int kill_faulted[KILLS]; /* a fault was injected in that round */
        /* Each round's worker, measured before the fault (and the kill):
         * its messages handled OK per second. */
        double kill_rate[KILLS];
        /* Per kill: how long before it the group's committed offsets last
         * moved (ms), watched from the round's measurement on; -1 when
         * not watched. */
        int64_t kill_stall[KILLS];
        int (*missing)(const void *run); /* ids still to be handled */
        /* The transactional tests: it_worker's extra properties, the
         * version header on the ordered stream, and what is checked after
         * each kill once no worker runs. */
        const char *const *props;
        int versioned;
        int open_kills;  /* kills that left a transaction open */
        double per_kill; /* handlings repeated per kill, once reported */
        /* Each kill right after the group's committed offsets moved. */
        int kill_on_commit;
        void (*settle)(struct run_s *run);
} run_t;

/* Create the cluster (or use KRETRY_TEST_BOOTSTRAP), the source @p prefix
 * with its tier and DLQ (3 partitions each), the group and the log files of
 * a run of it_worker in @p mode (NULL: the plain stream). The caller sets
 * the id, nids, seen and missing fields, and the others it needs. */
void run_init(run_t *r, const char *prefix, const char *mode);
/* Free @p r; its log files are kept when the test failed. */
void run_destroy(run_t *r);

/* KILLS workers killed at random points, then one that finishes and must
 * exit 0 on SIGTERM; the repeats per kill reported and bounded. */
void run_with_kills(run_t *r);

/* Read the log; returns lines written by @p pid (all lines when 0). */
int read_log(run_t *r, pid_t pid);
/* "exit N" or "signal N" for waitpid status @p st. */
void describe_status(int st, char *buf, size_t size);

/* it_worker in @p mode (NULL: the plain stream) with the properties of
 * @p props (NAME=VALUE strings, NULL-terminated; may be NULL); its stderr
 * appended to @p errpath when given. */
pid_t spawn_ex(const kt_cluster_t *c,
               const char *src,
               const char *grp,
               const char *out,
               const char *mode,
               const char *const *props,
               const char *errpath);
pid_t spawn(const kt_cluster_t *c,
            const char *src,
            const char *grp,
            const char *out,
            const char *mode);

/* The plain stream: message I handled OK unless I % 11 == 0 (a permanent
 * failure, dead-lettered: expected_dlq); I % 7 == 0 retried once first. */
int expected_dlq(int i);
/* run_init() for the plain stream (bound factor 1), its N messages
 * produced. */
void run_init_plain(run_t *r, const char *prefix, const char *mode);

/* The ordered stream's shape: keys, and messages per key ("K:Q", key
 * "key-K"), as the last run_init_ordered() set them. */
extern int okeys, oseq;
/* run_init() for the ordered stream (it_worker's mode "ordered",
 * ordering=key) of @p keys keys of @p per_key messages; nothing produced. */
void run_init_ordered(run_t *r, const char *prefix, int keys, int per_key);
/* The ordered stream's message I: key I mod okeys, in rounds; with
 * r->versioned, its seq in the header "version". */
void produce_ordered(run_t *r, int i);
/* Every key's handlings end on its last message, and none came before an
 * earlier one of its key; with @p one_at_a_time, each worker's
 * redeliveries are in order too. */
void check_ordered_end(run_t *r, int one_at_a_time);

/* Print the seed under @p name and run @p tests (kt_main). */
int kill_main(const char *name, const kt_test_t *tests, int argc, char **argv);

#endif
