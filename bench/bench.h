/*
 * kretry benchmarks: what the orchestrator (kretry_bench.c) and the
 * processes it forks (bench_io.c, bench_sides.c) share.
 *
 * The orchestrator never touches librdkafka, so it has a single thread and
 * every fork is safe. Each run forks: a broker (librdkafka's mock cluster,
 * unless KRETRY_BENCH_BOOTSTRAP names a real one), an input producer, and
 * one process per side measured (kretry, raw librdkafka), so that each
 * side's peak RSS is its own (wait4's ru_maxrss).
 */
#ifndef KRETRY_BENCH_H
#define KRETRY_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_PARTITIONS 8
#define BENCH_KEYS 10000     /* distinct keys in the input, unless --keys */
#define BENCH_VALUE_SIZE 100 /* input values' bytes, unless --value-bytes */
#define BENCH_VALUE_MAX 16384

typedef enum {
        BENCH_HAPPY,
        BENCH_RETRY_HOP,
        BENCH_DEAD_LETTER,
        BENCH_DELAY,
        /* kretry with ordering=key and versioning against kretry with both
         * off: same input (a version header per key), same 5 % transient
         * failures (by key, sequence and attempt). */
        BENCH_ORDERED_VERSIONED,
        /* RSS of an adapter while N messages wait in a tier (bench_mem.c) */
        BENCH_TIER_MEM,
        /* Parallel Consumer's shape: N messages in one partition, a handler
         * sleeping bench_work_us(offset), at an ordering and a
         * handler.concurrency; no raw side (its baseline is the ideal). */
        BENCH_PARALLEL
} bench_kind_t;

/* BENCH_PARALLEL: the source's one partition, its distinct keys, and the
 * work a message's handler call sleeps: uniform 0..5,000 us, a function of
 * the message's offset only (the same in every run and combination). */
#define BENCH_PAR_KEYS 1000
#define BENCH_PAR_WORK_MAX_US 5000
static inline long bench_work_us(int64_t offset) {
        uint64_t h = (uint64_t)offset * 0x9e3779b97f4a7c15ull; /* splitmix64 */
        h ^= h >> 30;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 27;
        h *= 0x94d049bb133111ebull;
        h ^= h >> 31;
        return (long)(h % (BENCH_PAR_WORK_MAX_US + 1));
}

/* BENCH_RETRY_HOP with hop_pct 1-99: is the source message at @partition
 * and @offset one of the hop_pct percent retried once? A hash of both: the
 * same answer on both sides and in every run. */
static inline int
bench_hop_chosen(int hop_pct, int32_t partition, int64_t offset) {
        if (hop_pct <= 0 || hop_pct >= 100)
                return 1;
        return bench_work_us(offset * 64 + partition) % 100 < hop_pct;
}

/* BENCH_TIER_MEM: partitions of its topics. A tier copy is ~0.55 KB: the
 * mock's 5 MiB a partition holds ~9,500, so 1,000,000 need at least 106
 * (more with the key hashing's uneven spread). */
#define BENCH_MEM_PARTITIONS 256

/* delay_backlog: 1 in this many source messages fails once. */
#define BENCH_BACKLOG_EVERY 10

/* BENCH_ORDERED_VERSIONED: share of handler attempts that return RETRY. */
#define BENCH_FAIL_PERCENT 5

/* kretry_bench --members N: N processes a side in one consumer group.
 * What the members of a side share, in memory the orchestrator maps
 * (MAP_SHARED) before it forks them. */
#define BENCH_MAX_MEMBERS 8
typedef struct {
        atomic_long done; /* messages completed, every member's together */
        /* source partitions each member holds now, published while the
         * members join (the orchestrator waits for the whole assignment) */
        atomic_int assigned[BENCH_MAX_MEMBERS];
} bench_group_t;

/* One run of one scenario: everything a forked process needs. */
typedef struct {
        bench_kind_t kind;
        char bootstrap[512];
        int real;        /* bootstrap is a real cluster (topics via admin) */
        char source[96]; /* kretry's tier 1 and DLQ derive from it */
        char tier[128];  /* <source>.retry.1 */
        char dlq[128];   /* <source>.dlq */
        char copy[128];  /* the raw loop's copy topic */
        char group[96];  /* "-k" / "-r" appended per side */
        /* BENCH_ORDERED_VERSIONED: the plain kretry side's own tier and DLQ
         * (a tier is shared by every group reading it), and the version
         * changelog of the "-k" side (same partition count as the source). */
        char plain_tier[128];
        char plain_dlq[128];
        char versions[208];
        int plain; /* this kretry side runs with ordering and versions off
                      (BENCH_ORDERED_VERSIONED), or at least once (txn_ms) */
        /* > 0: the "-k" kretry side routes with routing=transactional and
         * this transaction.interval.ms; its baseline (plain) is kretry at
         * least once, with its own tier and DLQ (plain_tier, plain_dlq).
         * Real Kafka only: the mock cluster's transactions are not real. */
        int txn_ms;
        int hop;     /* BENCH_DELAY: retry.tiers=0ms instead of 1s (lateness is
                        then the whole retry hop, decision to handler call) */
        int hop_pct; /* BENCH_RETRY_HOP: the percent of source messages
                        retried once (bench_hop_chosen); 0: every one */
        long n;      /* input messages */
        long keys;   /* distinct keys: message i has key i mod keys */
        int rate;    /* BENCH_DELAY: arrivals per second */
        int at_once; /* BENCH_DELAY (happy_paced): every message OK on its
                        first call, none retried: the happy path's CPU at
                        the paced input rate */
        int value_bytes;   /* input values' size (0: BENCH_VALUE_SIZE) */
        int fetch_default; /* BENCH_DELAY: kretry at librdkafka's default
                              fetch.wait.max.ms (500 ms), not 10 ms */
        int backlog_ms;    /* BENCH_DELAY (delay_backlog): a source
                              message's handler call takes this long and
                              only 1 in BENCH_BACKLOG_EVERY (by offset)
                              fails once, so retries come due while a
                              source backlog waits; 0: every message fails
                              once and costs nothing */
        int timeout_s;     /* a side gives up this long after "go" */
        int partitions;    /* of every topic of the run */
        /* handler.concurrency (0: not set, the default 1) and ordering of
         * the kretry side (BENCH_PARALLEL; happy_c16) */
        int concurrency;
        char ordering[16];
        /* BENCH_TIER_MEM: the baseline's source (and its tier and DLQ),
         * never written to; which pair this adapter reads; and how many
         * tier partitions hold messages (the heads it must hold). */
        char empty_source[104];
        char empty_tier[128];
        char empty_dlq[128];
        int empty;
        long want_held;
        /* --members: this side runs as @members processes (this one is
         * number @member) sharing @shared; they join while the source is
         * still empty and publish what they hold until told to hold, and
         * each stops once the side's count in @shared reaches n. NULL: one
         * process a side, done at its own count. */
        bench_group_t *shared;
        int members, member;
} bench_job_t;

/* What a side reports to the orchestrator, through a pipe. */
typedef struct {
        int ok;
        long done;   /* messages completed */
        double secs; /* first message seen -> last one completed */
        /* bench_mono() at this process's first message (0: it saw none)
         * and, in the process that completed the side's last message, at
         * that (0 in the other members) */
        double t_first, t_last;
        double cpu_s; /* this process's CPU time (all threads), same
                         window: robust when other work shares the
                         machine */
        double p50_ms, p99_ms, max_ms; /* BENCH_DELAY lateness */
        long early;                    /* BENCH_DELAY: handled before due */
        double work_s; /* BENCH_PARALLEL: the handlers' sleeps as measured
                          (each overshoots what it asked for) */
        /* kretry's counters at the end (BENCH_ORDERED_VERSIONED) */
        long forwarded, stale, retried, dlq, version_keys, version_bytes;
        long txn_commits, txn_aborts; /* routing transactional */
        long rss_kb; /* filled by the orchestrator (ru_maxrss) */
        /* BENCH_TIER_MEM: the waiting adapter (or baseline) once settled */
        long vm_rss_kb, vm_hwm_kb; /* /proc/self/status */
        long held, handler_calls, consumed;
        int assigned;    /* partitions (source and tier) */
        double settle_s; /* from every head held to the reading */
        int settled;     /* RSS stopped moving before the reading (it may
                            not under a sanitizer's allocator) */
        /* BENCH_TIER_MEM: the tier's watermarks */
        long waiting;        /* sum of high - low */
        long nonempty_parts; /* partitions holding messages */
        long dropped_parts;  /* partitions whose low watermark moved */
        long max_part;       /* most messages in one partition */
        char err[200];
} bench_result_t;

/*
 * Process bodies. Each returns the exit status of its process.
 * Sides write 'R' to @p out_fd once their clients exist and have subscribed,
 * (members: poll, joining, until a byte 'H' on @p go_fd, then answer 'H'
 * and poll no more,) wait for one byte on @p go_fd, (delay scenario: write
 * 'A' once assigned), work, close their clients, then write one
 * bench_result_t.
 */
int bench_broker(const bench_job_t *job, int out_fd, int ctl_fd);
int bench_produce(const bench_job_t *job);
/* A real cluster: create the run's topics (a mock broker makes them; one
 * that exists already is fine: the delay scenario creates them before its
 * adapter starts, bench_produce again), or delete them. Call from the
 * orchestrator only with no other librdkafka handle alive: the handle is
 * destroyed, its threads joined, before the next fork. */
int bench_create_real_topics(const bench_job_t *job);
void bench_delete_real_topics(const bench_job_t *job);
int bench_kretry_side(const bench_job_t *job, int go_fd, int out_fd);
int bench_raw_side(const bench_job_t *job, int go_fd, int out_fd);
/* BENCH_ORDERED_VERSIONED's baseline: kretry with ordering and versions off. */
int bench_kretry_plain_side(const bench_job_t *job, int go_fd, int out_fd);
/* BENCH_TIER_MEM (no go protocol: each writes its bench_result_t when done):
 * the router puts every input message into the tier; the waiting adapter
 * (the baseline: on the empty pair) holds the heads and reads its memory;
 * the watermark check counts what the tier holds. */
int bench_mem_router(const bench_job_t *job, int go_fd, int out_fd);
int bench_mem_waiting(const bench_job_t *job, int go_fd, int out_fd);
int bench_mem_baseline(const bench_job_t *job, int go_fd, int out_fd);
int bench_mem_watermarks(const bench_job_t *job, int go_fd, int out_fd);

/* Write all of @p buf to @p fd: 0, or -1. */
int bench_write_all(int fd, const void *buf, size_t len);

/* KRETRY_BENCH_KRETRY_PROPS="name=value,...": extra kretry properties for
 * every kretry adapter of a run, for experiments (e.g.
 * consumer.fetch.wait.max.ms=1). 0, or -1 with @p err filled. */
struct kretry_conf_s;
int bench_kretry_extra_props(struct kretry_conf_s *conf,
                             char *err,
                             size_t err_size);

/* Monotonic seconds. */
double bench_mono(void);
/* The 1-minute load average (-1: unknown): other work on the machine skews
 * wall-clock rates, so every run reports it. */
double bench_loadavg(void);
/* CPU seconds used by this process, all threads. */
double bench_cpu(void);

#endif
