/*
 * kretry benchmarks: what the orchestrator (kretry_bench.c) and the
 * processes it forks (bench_workers.c) share.
 *
 * The orchestrator never touches librdkafka, so it has a single thread and
 * every fork is safe. Each run forks: a broker (librdkafka's mock cluster,
 * unless KRETRY_BENCH_BOOTSTRAP names a real one), an input producer, and
 * one process per side measured (kretry, raw librdkafka), so that each
 * side's peak RSS is its own (wait4's ru_maxrss).
 */
#ifndef KRETRY_BENCH_H
#define KRETRY_BENCH_H

#include <stdint.h>

#define BENCH_PARTITIONS 8
#define BENCH_KEYS 10000
#define BENCH_VALUE_SIZE 100

typedef enum {
        BENCH_HAPPY,
        BENCH_RETRY_HOP,
        BENCH_DEAD_LETTER,
        BENCH_DELAY
} bench_kind_t;

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
        long n;          /* input messages */
        int rate;        /* BENCH_DELAY: arrivals per second */
        int timeout_s;   /* a side gives up this long after "go" */
} bench_job_t;

/* What a side reports to the orchestrator, through a pipe. */
typedef struct {
        int ok;
        long done;    /* messages completed */
        double secs;  /* first message seen -> last one completed */
        double cpu_s; /* this process's CPU time (all threads), same
                         window: robust when other work shares the
                         machine */
        double p50_ms, p99_ms, max_ms; /* BENCH_DELAY lateness */
        long early;                    /* BENCH_DELAY: handled before due */
        long rss_kb; /* filled by the orchestrator (ru_maxrss) */
        char err[200];
} bench_result_t;

/*
 * Process bodies. Each returns the exit status of its process.
 * Sides write 'R' to @p out_fd once their clients exist and have subscribed,
 * wait for one byte on @p go_fd, (delay scenario: write 'A' once assigned),
 * work, close their clients, then write one bench_result_t.
 */
int bench_broker(const bench_job_t *job, int out_fd, int ctl_fd);
int bench_produce(const bench_job_t *job);
int bench_kretry_side(const bench_job_t *job, int go_fd, int out_fd);
int bench_raw_side(const bench_job_t *job, int go_fd, int out_fd);

/* Monotonic seconds. */
double bench_mono(void);
/* CPU seconds used by this process, all threads. */
double bench_cpu(void);

#endif
