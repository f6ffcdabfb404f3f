/*
 * kretry_bench [--quick] [--output table|json] [--runs N] [--messages N]
 *              [--keys N] [--rate N] [--only NAME] [--members N]
 *
 * Scenarios (bench/README.md): happy, retry_hop, dead_letter (kretry
 * against a raw librdkafka loop doing the same work, same input, same
 * process run, alternating which side goes first), delay (lateness of
 * messages through a 1 s tier), delay_default (the same at librdkafka's
 * default fetch.wait.max.ms) and delay_backlog (retries through the 1 s
 * tier while a source backlog waits for the handler: 2 ms a source
 * message, 1 in 10 retried once), and ordered_versioned: kretry with
 * ordering=key and versioning against kretry with both off (same input,
 * same 5 % transient failures); its ratio is kretry-with-both over
 * kretry-with-neither, not over raw librdkafka. tier_mem: the RSS of an
 * adapter holding the heads of a tier in which N messages wait (1h),
 * against the same adapter on an empty source and tier (bench_mem.c);
 * --mem-partitions N: the partitions of its topics (256 by default; on the
 * mock, whose partitions keep 5 MiB each, enough for N copies).
 * happy_c16: happy with handler.concurrency=16. parallel: N messages in one
 * partition, a handler sleeping 0-5 ms by offset, for ordering none, key
 * and partition at 1, 4, 16 and 64 handlers, beside the ideal (issue 13).
 * retry_hop_txn, dead_letter_txn (--only txn: both, delay_txn and
 * hop_txn): kretry with routing=transactional against kretry at least once
 * (its ratio, target 0.5) and raw librdkafka, three sides of one run;
 * delay_txn and hop_txn: the lateness of a retry through a 1 s and a 0 ms
 * tier in both modes. Real Kafka only (KRETRY_BENCH_BOOTSTRAP): on the mock
 * they are reported as skipped. --txn-interval MS: their
 * transaction.interval.ms (default 100). --retry-percent P (1-99):
 * retry_hop retries only P percent of the source messages (by partition
 * and offset, the same on both sides), the rest handled OK at once: the
 * happy path with P % failures; 100 (the default): every one. --rate N:
 * the delay scenarios'
 * input rate, messages a second (default 10,000). happy_paced (only with
 * --only): the happy path, every message OK on its first call, its input
 * paced at --rate (--messages of it) from once the adapter is assigned;
 * reported: the window and kretry's CPU over it, at that steady rate
 * (bench/peers: CPU at a moderate rate). --value-bytes N (16-16384): the
 * input values' size, 100 by default. KRETRY_BENCH_QUEUED_MIN:
 * queued.min.messages on both sides instead of 1,000,000. --members N
 * (1-8; happy, retry_hop and dead_letter; real Kafka only): each side runs
 * as N processes in one consumer group, one side after the other, each on
 * topics and an input of its own; the members join while the source is
 * empty and hold once the group's assignment is whole, then the input is
 * produced and all go; the side's window runs from the first message any
 * member saw to the side's last completion (bench/run --scale's members
 * curve).
 *
 * This process stays single-threaded and never calls librdkafka: the broker,
 * the producer and each measured side are forked children.
 */
#include "bench.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 15

typedef struct {
        const char *name;
        bench_kind_t kind;
        long n, n_quick;
        double target;   /* kretry/raw at least this */
        int concurrency; /* kretry's handler.concurrency (0: default 1) */
        /* kretry with routing=transactional against kretry at least once
         * (the ratio, target) and raw librdkafka: three sides. Real Kafka
         * only. */
        int txn;
} scenario_t;

static const scenario_t scenarios[] = {
        {"happy", BENCH_HAPPY, 200000, 100000, 0.95},
        /* Issue 13: the same with 16 handler workers (ordering none); run
         * with --only parallel too. */
        {"happy_c16", BENCH_HAPPY, 50000, 10000, 0.80, 16},
        /* Tier copies carry ~12 kretry-* headers (~0.55 KB a record): 60,000
         * keep each partition under the mock's 5 MiB. */
        {"retry_hop", BENCH_RETRY_HOP, 60000, 30000, 0.85},
        {"dead_letter", BENCH_DEAD_LETTER, 60000, 30000, 0.85},
        /* Input records carry a third header (~190 bytes a record): 100,000
         * is ~2.4 MiB a partition, plus the versions changelog and the
         * tier's 5 %. No target: the baseline is kretry itself. */
        {"ordered_versioned", BENCH_ORDERED_VERSIONED, 100000, 30000, 0},
        /* Issue 33: the target is transactional >= 0.5 x at least once at
         * the default transaction.interval.ms. */
        {"retry_hop_txn", BENCH_RETRY_HOP, 60000, 30000, 0.5, 0, 1},
        {"dead_letter_txn", BENCH_DEAD_LETTER, 60000, 30000, 0.5, 0, 1},
};
#define SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

typedef struct {
        int quick, json, runs, warmup;
        const char *only;
        long messages; /* overrides every scenario's count when > 0 */
        long keys;     /* distinct keys in the input */
        long delay_n;
        int delay_rate;
        long mem_n;    /* tier_mem: messages waiting in the tier */
        int mem_parts; /* tier_mem: partitions of its topics (--mem-partitions)
                        */
        int txn_ms;    /* the *_txn scenarios' transaction.interval.ms */
        int members;   /* --members: processes a side (0: run_pair's one) */
} opts_t;

typedef struct {
        pid_t pid;
        int go_fd, out_fd;
} child_t;

static int run_seq;
static long input_keys = BENCH_KEYS; /* --keys */
static int value_bytes;              /* --value-bytes (0: 100) */
static int retry_pct; /* --retry-percent: retry_hop's share retried (0: all) */

static int real_cluster(void) {
        const char *real = getenv("KRETRY_BENCH_BOOTSTRAP");
        return real && *real;
}

/* Why the *_txn scenarios do not run here, or NULL. */
static const char *txn_skipped(void) {
        return real_cluster() ? NULL
                              : "needs a real Kafka cluster "
                                "(KRETRY_BENCH_BOOTSTRAP=host:port); the mock "
                                "cluster's transactions are not real";
}

static int read_all(int fd, void *buf, size_t len) {
        char *p = buf;
        while (len > 0) {
                ssize_t r = read(fd, p, len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return -1;
                p += r;
                len -= (size_t)r;
        }
        return 0;
}

/* Fork @p body with a go pipe and an out pipe. Every other descriptor the
 * child inherited is closed, so the broker sees EOF when we close ours. */
static int child_start(child_t *c,
                       int (*body)(const bench_job_t *, int, int),
                       const bench_job_t *job) {
        int go[2], out[2];
        if (pipe(go) || pipe(out))
                return -1;
        fflush(NULL);
        c->pid = fork();
        if (c->pid < 0)
                return -1;
        if (c->pid == 0) {
                for (int fd = 3; fd < 1024; fd++)
                        if (fd != go[0] && fd != out[1])
                                close(fd);
                _exit(body(job, go[0], out[1]));
        }
        close(go[0]);
        close(out[1]);
        c->go_fd  = go[1];
        c->out_fd = out[0];
        return 0;
}

static int child_expect(child_t *c, char want) {
        char got;
        return read_all(c->out_fd, &got, 1) || got != want ? -1 : 0;
}

static int child_go(child_t *c) {
        char g = 'G';
        return write(c->go_fd, &g, 1) == 1 ? 0 : -1;
}

/* --members: stop joining; the member answers once it polls no more. */
static int child_hold(child_t *c) {
        char h = 'H';
        return write(c->go_fd, &h, 1) == 1 ? child_expect(c, 'H') : -1;
}

/* Read the result, reap the child, fill its peak RSS. */
static int child_finish(child_t *c, bench_result_t *res) {
        memset(res, 0, sizeof(*res));
        /* A side still waiting for "go" sees EOF and gives up. */
        close(c->go_fd);
        int rc = read_all(c->out_fd, res, sizeof(*res));
        if (rc)
                snprintf(res->err, sizeof(res->err), "side died early");
        close(c->out_fd);
        struct rusage ru;
        int status;
        if (wait4(c->pid, &status, 0, &ru) == c->pid)
                res->rss_kb = ru.ru_maxrss;
        return rc || !res->ok ? -1 : 0;
}

static int body_broker(const bench_job_t *job, int go_fd, int out_fd) {
        return bench_broker(job, out_fd, go_fd);
}

static int body_produce(const bench_job_t *job, int go_fd, int out_fd) {
        (void)go_fd, (void)out_fd;
        return bench_produce(job);
}

static int reap(pid_t pid) {
        int status;
        if (waitpid(pid, &status, 0) != pid)
                return -1;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The run's input, all of it, in a producer process. */
static int produce_input(const bench_job_t *job) {
        child_t p;
        if (child_start(&p, body_produce, job) ||
            (close(p.go_fd), close(p.out_fd), reap(p.pid))) {
                fprintf(stderr, "bench: producing the input failed\n");
                return -1;
        }
        return 0;
}

/* Start the mock broker for @p job (no-op with a real cluster). */
static int broker_start(child_t *b, bench_job_t *job) {
        b->pid = 0;
        if (job->real) /* before any side subscribes: none may create them */
                return bench_create_real_topics(job);
        if (child_start(b, body_broker, job) ||
            read_all(b->out_fd, job->bootstrap, sizeof(job->bootstrap)))
                return -1;
        return 0;
}

/* Stop the mock broker; on a real cluster, delete the run's topics. */
static void broker_stop(child_t *b, const bench_job_t *job) {
        if (job->real)
                bench_delete_real_topics(job);
        if (b->pid <= 0)
                return;
        close(b->go_fd);
        close(b->out_fd);
        reap(b->pid);
        b->pid = 0;
}

/* Partitions of every topic of a run: BENCH_PARTITIONS, or
 * KRETRY_BENCH_PARTITIONS (bench/run --scale's throughput curve). */
static int bench_partitions(void) {
        const char *e = getenv("KRETRY_BENCH_PARTITIONS");
        int p         = e ? atoi(e) : 0;
        return p >= 1 && p <= 4096 ? p : BENCH_PARTITIONS;
}

static void job_init(bench_job_t *job, bench_kind_t kind, long n) {
        const char *real = getenv("KRETRY_BENCH_BOOTSTRAP");
        memset(job, 0, sizeof(*job));
        job->kind        = kind;
        job->n           = n;
        job->keys        = input_keys;
        job->value_bytes = value_bytes;
        job->real        = real && *real;
        if (job->real)
                snprintf(job->bootstrap, sizeof(job->bootstrap), "%s", real);
        run_seq++;
        snprintf(job->source, sizeof(job->source), "kb-%d-%d-src",
                 (int)getpid(), run_seq);
        snprintf(job->tier, sizeof(job->tier), "%s.retry.1", job->source);
        snprintf(job->dlq, sizeof(job->dlq), "%s.dlq", job->source);
        snprintf(job->copy, sizeof(job->copy), "%s.copy", job->source);
        snprintf(job->group, sizeof(job->group), "kb-%d-%d", (int)getpid(),
                 run_seq);
        snprintf(job->plain_tier, sizeof(job->plain_tier), "%s.n.retry.1",
                 job->source);
        snprintf(job->plain_dlq, sizeof(job->plain_dlq), "%s.n.dlq",
                 job->source);
        /* versioning.topic's default, {group}.{source}.versions, for the
         * "-k" side's group */
        snprintf(job->versions, sizeof(job->versions), "%s-k.%s.versions",
                 job->group, job->source);
        job->timeout_s  = 120;
        job->partitions = bench_partitions();
        snprintf(job->empty_source, sizeof(job->empty_source), "%s-empty",
                 job->source);
        snprintf(job->empty_tier, sizeof(job->empty_tier), "%s.retry.1",
                 job->empty_source);
        snprintf(job->empty_dlq, sizeof(job->empty_dlq), "%s.dlq",
                 job->empty_source);
}

/* One run of a throughput scenario: produce the input, start the sides
 * (they join their groups concurrently), then let one side work, then the
 * next. Sides: kretry and its baseline (raw librdkafka; kretry with
 * ordering and versions off for ordered_versioned; kretry at least once
 * for a *_txn scenario, whose kretry side is transactional), and for a
 * *_txn scenario raw librdkafka third. @p kretry_first: in that order,
 * else in the reverse one. */
static int run_pair(const scenario_t *sc,
                    long n,
                    int kretry_first,
                    int txn_ms,
                    bench_result_t *kres,
                    bench_result_t *rres,
                    bench_result_t *wres) {
        bench_job_t job;
        child_t b, c[3];
        bench_result_t *res[3] = {kres, rres, wres};
        int (*body[3])(const bench_job_t *, int,
                       int)    = {bench_kretry_side,
                               sc->kind == BENCH_ORDERED_VERSIONED || sc->txn
                                          ? bench_kretry_plain_side
                                          : bench_raw_side,
                                  bench_raw_side};
        int cnt = sc->txn ? 3 : 2, started, bad = 0, rc = -1;
        job_init(&job, sc->kind, n);
        job.concurrency = sc->concurrency;
        job.txn_ms      = sc->txn ? txn_ms : 0;
        job.hop_pct     = sc->kind == BENCH_RETRY_HOP ? retry_pct : 0;
        snprintf(job.ordering, sizeof(job.ordering), "none");
        for (int i = 0; i < 3; i++)
                memset(res[i], 0, sizeof(*res[i]));
        if (broker_start(&b, &job))
                goto out;
        if (produce_input(&job))
                goto out;
        for (started = 0; started < cnt; started++)
                if (child_start(&c[started], body[started], &job))
                        break;
        bad          = started < cnt;
        int ready[3] = {0};
        for (int i = 0; i < started; i++) {
                ready[i] = !child_expect(&c[i], 'R');
                bad |= !ready[i];
        }
        if (bad) {
                for (int i = 0; i < started; i++) {
                        child_finish(&c[i], res[i]);
                        if (ready[i]) /* it was only told to give up */
                                res[i]->err[0] = '\0';
                }
                goto out;
        }
        for (int j = 0; j < cnt; j++) {
                int i = kretry_first ? j : cnt - 1 - j;
                bad |= child_go(&c[i]);
                bad |= child_finish(&c[i], res[i]);
        }
        rc = bad ? -1 : 0;
out:
        broker_stop(&b, &job);
        return rc;
}

/* --members: every member of the side holds source partitions and
 * together they hold all of them, for a second on end (a rebalance revokes
 * before it assigns, eagerly or incrementally). 0, or -1 after
 * @p timeout_s. */
static int
members_settled(bench_group_t *g, int members, int parts, double timeout_s) {
        double end = bench_mono() + timeout_s, since = 0;
        for (;;) {
                int sum = 0, each = 1;
                for (int i = 0; i < members; i++) {
                        int a = atomic_load(&g->assigned[i]);
                        sum += a;
                        each &= a > 0;
                }
                double now = bench_mono();
                if (!each || sum != parts)
                        since = 0;
                else if (!since)
                        since = now;
                else if (now - since >= 1)
                        return 0;
                if (now > end)
                        return -1;
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

/* --members: one side of a run as @p members processes of one group, on
 * topics and an input of its own: the members join while the source is
 * empty, hold once the group's assignment is whole, the input is produced,
 * and all go at once. @p res: the window from the first message any member
 * saw to the side's last completion, every member's CPU summed, the
 * largest member's peak RSS. */
static int run_members_side(const scenario_t *sc,
                            long n,
                            int members,
                            int (*body)(const bench_job_t *, int, int),
                            bench_result_t *res) {
        bench_job_t job;
        child_t b, c[BENCH_MAX_MEMBERS];
        int started = 0, bad = 0, rc = -1;
        double t_first = 0, t_last = 0;
        bench_group_t *g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (g == MAP_FAILED)
                return -1;
        memset(g, 0, sizeof(*g));
        job_init(&job, sc->kind, n);
        job.hop_pct = sc->kind == BENCH_RETRY_HOP ? retry_pct : 0;
        snprintf(job.ordering, sizeof(job.ordering), "none");
        job.shared  = g;
        job.members = members;
        if (broker_start(&b, &job)) {
                snprintf(res->err, sizeof(res->err),
                         "the run's topics were not made");
                goto out;
        }
        for (; started < members; started++) {
                job.member = started;
                if (child_start(&c[started], body, &job))
                        break;
        }
        bad = started < members;
        for (int i = 0; i < started; i++)
                bad |= child_expect(&c[i], 'R');
        if (!bad && members_settled(g, members, job.partitions, 120)) {
                snprintf(res->err, sizeof(res->err),
                         "%d members did not share the %d partitions in "
                         "120 s",
                         members, job.partitions);
                bad = 1;
        }
        for (int i = 0; i < started && !bad; i++)
                if (child_hold(&c[i])) {
                        snprintf(res->err, sizeof(res->err),
                                 "member %d did not stop polling", i);
                        bad = 1;
                }
        if (!bad && produce_input(&job)) {
                snprintf(res->err, sizeof(res->err),
                         "producing the input failed");
                bad = 1;
        }
        for (int i = 0; i < started && !bad; i++)
                bad |= child_go(&c[i]);
        for (int i = 0; i < started; i++) {
                bench_result_t m;
                if (child_finish(&c[i], &m)) {
                        /* a member's own reason before "side died early",
                         * what one told to give up says */
                        if (!res->err[0] ||
                            !strcmp(res->err, "side died early"))
                                memcpy(res->err, m.err, sizeof(res->err));
                        bad = 1;
                        continue;
                }
                if (getenv("KRETRY_BENCH_DEBUG"))
                        fprintf(stderr,
                                "  [member %d] %ld done, first message at "
                                "%.3f, last of the side at %.3f, CPU %.3f "
                                "s\n",
                                i, m.done, m.t_first, m.t_last, m.cpu_s);
                if (m.t_first > 0 && (!t_first || m.t_first < t_first))
                        t_first = m.t_first;
                if (m.t_last > t_last)
                        t_last = m.t_last;
                res->cpu_s += m.cpu_s;
                res->done += m.done;
                if (m.rss_kb > res->rss_kb)
                        res->rss_kb = m.rss_kb;
        }
        if (!bad && t_first > 0 && t_last > t_first) {
                res->ok   = 1;
                res->secs = t_last - t_first;
                rc        = 0;
        } else if (!bad)
                snprintf(res->err, sizeof(res->err),
                         "no member completed the side's last message");
out:
        broker_stop(&b, &job);
        munmap(g, sizeof(*g));
        return rc;
}

/* --members: a run of a throughput scenario with @p members processes a
 * side, one side after the other (@p kretry_first: kretry first). */
static int run_members(const scenario_t *sc,
                       long n,
                       int members,
                       int kretry_first,
                       bench_result_t *kres,
                       bench_result_t *rres) {
        bench_result_t *res[2]                        = {kres, rres};
        int (*body[2])(const bench_job_t *, int, int) = {bench_kretry_side,
                                                         bench_raw_side};
        memset(kres, 0, sizeof(*kres));
        memset(rres, 0, sizeof(*rres));
        for (int j = 0; j < 2; j++)
                if (run_members_side(sc, n, members,
                                     body[kretry_first ? j : 1 - j],
                                     res[kretry_first ? j : 1 - j]))
                        return -1;
        return 0;
}

static int run_delay(const opts_t *o,
                     long n,
                     int fetch_default,
                     int backlog_ms,
                     int txn_ms,
                     int hop,
                     int at_once,
                     bench_result_t *kres) {
        bench_job_t job;
        child_t b, p, k;
        int rc = -1;
        job_init(&job, BENCH_DELAY, n);
        job.rate          = o->delay_rate;
        job.fetch_default = fetch_default;
        job.backlog_ms    = backlog_ms;
        job.txn_ms        = txn_ms;
        job.hop           = hop;
        job.at_once       = at_once;
        memset(kres, 0, sizeof(*kres));
        if (broker_start(&b, &job) || child_start(&k, bench_kretry_side, &job))
                goto out;
        if (child_expect(&k, 'R') || child_go(&k) || child_expect(&k, 'A')) {
                child_finish(&k, kres);
                goto out;
        }
        /* Arrivals start once the adapter owns its partitions. */
        if (child_start(&p, body_produce, &job)) {
                child_finish(&k, kres);
                goto out;
        }
        close(p.go_fd);
        close(p.out_fd);
        rc = child_finish(&k, kres);
        if (reap(p.pid))
                rc = -1;
out:
        broker_stop(&b, &job);
        return rc;
}

/* One run of tier_mem: the input, the router putting all of it into the
 * tier, the watermark check, then the waiting adapter and the baseline
 * (concurrently: each joins its own group, the mock holds both first joins
 * 3 s at once, and each process's memory is its own). */
static int run_tier_mem(long n,
                        int partitions,
                        bench_result_t *router,
                        bench_result_t *wm,
                        bench_result_t *w,
                        bench_result_t *e) {
        bench_job_t job;
        child_t b, p, r, c, cw, ce;
        int rc = -1;
        job_init(&job, BENCH_TIER_MEM, n);
        job.partitions = partitions;
        job.timeout_s  = 120 + (int)(n / 5000);
        memset(router, 0, sizeof(*router));
        memset(wm, 0, sizeof(*wm));
        memset(w, 0, sizeof(*w));
        memset(e, 0, sizeof(*e));
        if (broker_start(&b, &job))
                goto out;
        /* The router joins its group (the mock holds a first join 3 s)
         * while the input is produced; on a real cluster only once the
         * producer created the topics. */
        r.pid = 0;
        if (!job.real && child_start(&r, bench_mem_router, &job))
                goto out;
        if (child_start(&p, body_produce, &job) ||
            (close(p.go_fd), close(p.out_fd), reap(p.pid))) {
                fprintf(stderr, "bench: producing the input failed\n");
                if (r.pid > 0) {
                        kill(r.pid, SIGKILL);
                        child_finish(&r, router);
                }
                goto out;
        }
        if ((job.real && child_start(&r, bench_mem_router, &job)) ||
            child_finish(&r, router))
                goto out;
        if (child_start(&c, bench_mem_watermarks, &job) || child_finish(&c, wm))
                goto out;
        if (wm->waiting != n || wm->dropped_parts) {
                snprintf(wm->err, sizeof(wm->err),
                         "the tier holds %ld of %ld copies (%ld partitions "
                         "lost their oldest)",
                         wm->waiting, n, wm->dropped_parts);
                goto out;
        }
        job.want_held = wm->nonempty_parts;
        if (child_start(&cw, bench_mem_waiting, &job))
                goto out;
        if (child_start(&ce, bench_mem_baseline, &job)) {
                child_finish(&cw, w);
                goto out;
        }
        int ew = child_finish(&cw, w), ee = child_finish(&ce, e);
        rc = ew || ee ? -1 : 0;
out:
        broker_stop(&b, &job);
        return rc;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
        if (n <= 0)
                return 0;
        qsort(v, (size_t)n, sizeof(double), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct {
        const char *name;
        int ok, runs;
        double kretry, raw, ratio, target;
        double k_cpu_us, r_cpu_us; /* CPU per message, all threads */
        double k_rss, r_rss;
        double load_max; /* 1-minute load average, highest seen at a start */
        /* ordered_versioned: medians of kretry's counters (the "raw" fields
         * above are then kretry with ordering and versions off) */
        double forwarded, stale, retried, dlq, plain_retried;
        double version_keys, version_bytes;
        /* *_txn: "kretry" above is transactional, "raw" kretry at least
         * once; the third side, raw librdkafka, and the ratios of both
         * kretry sides to it; transactions committed (median) and aborted
         * (all runs) */
        int txn, txn_ms;
        double w, w_cpu_us, w_rss, ratio_w, alo_w, commits;
        long aborts;
        const char *skipped; /* not run, and why */
        char err[200];
        int members; /* --members: processes a side */
        /* each measured run: kretry's and raw's msgs/s, the ratio, the
         * load at its start */
        double run_k[MAX_RUNS], run_r[MAX_RUNS], run_ratio[MAX_RUNS];
        double run_load[MAX_RUNS];
} summary_t;

/* --members: why @p sc does not run with it here, or NULL. */
static const char *members_skipped(const scenario_t *sc) {
        if (sc->txn || sc->concurrency || sc->kind == BENCH_ORDERED_VERSIONED)
                return "--members runs happy, retry_hop and dead_letter only";
        return real_cluster() ? NULL
                              : "--members needs a real Kafka cluster "
                                "(KRETRY_BENCH_BOOTSTRAP=host:port): the mock "
                                "cluster holds every join to a running group "
                                "for session.timeout.ms";
}

static void run_scenario(const opts_t *o, const scenario_t *sc, summary_t *s) {
        double kr[MAX_RUNS], rr[MAX_RUNS], ks[MAX_RUNS], rs[MAX_RUNS];
        double kc[MAX_RUNS], rc[MAX_RUNS], ratio[MAX_RUNS];
        double fw[MAX_RUNS], st[MAX_RUNS], rt[MAX_RUNS], dl[MAX_RUNS];
        double prt[MAX_RUNS], vk[MAX_RUNS], vb[MAX_RUNS];
        double wr[MAX_RUNS], wc[MAX_RUNS], ws[MAX_RUNS], rw[MAX_RUNS];
        double aw[MAX_RUNS], cm[MAX_RUNS];
        int ov = sc->kind == BENCH_ORDERED_VERSIONED;
        long n = o->messages > 0 ? o->messages : o->quick ? sc->n_quick : sc->n;
        memset(s, 0, sizeof(*s));
        s->name    = sc->name;
        s->target  = sc->target;
        s->txn     = sc->txn;
        s->txn_ms  = o->txn_ms;
        s->members = o->members;
        if ((sc->txn && (s->skipped = txn_skipped())) ||
            (o->members && (s->skipped = members_skipped(sc)))) {
                fprintf(stderr, "bench %s: skipped: %s\n", sc->name,
                        s->skipped);
                return;
        }
        for (int i = -o->warmup; i < o->runs; i++) {
                bench_result_t k, r, w;
                int kfirst  = (i & 1) == 0;
                double load = bench_loadavg();
                if (load > s->load_max)
                        s->load_max = load;
                memset(&w, 0, sizeof(w));
                if (o->members
                            ? run_members(sc, n, o->members, kfirst, &k, &r)
                            : run_pair(sc, n, kfirst, o->txn_ms, &k, &r, &w)) {
                        snprintf(s->err, sizeof(s->err), "%s",
                                 k.err[0]   ? k.err
                                 : r.err[0] ? r.err
                                 : w.err[0] ? w.err
                                            : "run failed");
                        fprintf(stderr, "bench %s: %s\n", sc->name, s->err);
                        return;
                }
                fprintf(stderr,
                        "bench %-12s %s %d (%s first, load %.2f): kretry "
                        "%8.0f/s %5.2f us cpu/msg, raw %8.0f/s %5.2f us "
                        "cpu/msg, rss %ld/%ld KB\n",
                        sc->name, i < 0 ? "warm-up" : "run", i + 1,
                        kfirst ? "kretry" : "raw", load, (double)n / k.secs,
                        k.cpu_s * 1e6 / (double)n, (double)n / r.secs,
                        r.cpu_s * 1e6 / (double)n, k.rss_kb, r.rss_kb);
                if (sc->txn)
                        fprintf(stderr,
                                "bench %-12s   (kretry routes "
                                "transactionally, \"raw\" is kretry at least "
                                "once) raw librdkafka %8.0f/s %5.2f us "
                                "cpu/msg, rss %ld KB; transactions %ld "
                                "committed, %ld aborted\n",
                                sc->name, (double)n / w.secs,
                                w.cpu_s * 1e6 / (double)n, w.rss_kb,
                                k.txn_commits, k.txn_aborts);
                if (ov)
                        fprintf(stderr,
                                "bench %-12s   (\"raw\" is kretry with "
                                "ordering and versions off) forwarded %ld, "
                                "stale %ld, retried %ld / %ld, dlq %ld, "
                                "version keys %ld (%ld bytes)\n",
                                sc->name, k.forwarded, k.stale, k.retried,
                                r.retried, k.dlq + r.dlq, k.version_keys,
                                k.version_bytes);
                if (i < 0)
                        continue;
                kr[s->runs]    = (double)n / k.secs;
                rr[s->runs]    = (double)n / r.secs;
                ratio[s->runs] = r.secs / k.secs; /* same input, back to back */
                kc[s->runs]    = k.cpu_s * 1e6 / (double)n;
                rc[s->runs]    = r.cpu_s * 1e6 / (double)n;
                ks[s->runs]    = (double)k.rss_kb;
                rs[s->runs]    = (double)r.rss_kb;
                fw[s->runs]    = (double)k.forwarded;
                st[s->runs]    = (double)k.stale;
                rt[s->runs]    = (double)k.retried;
                dl[s->runs]    = (double)(k.dlq + r.dlq);
                prt[s->runs]   = (double)r.retried;
                vk[s->runs]    = (double)k.version_keys;
                vb[s->runs]    = (double)k.version_bytes;
                if (sc->txn) {
                        wr[s->runs] = (double)n / w.secs;
                        wc[s->runs] = w.cpu_s * 1e6 / (double)n;
                        ws[s->runs] = (double)w.rss_kb;
                        rw[s->runs] = w.secs / k.secs;
                        aw[s->runs] = w.secs / r.secs;
                        cm[s->runs] = (double)k.txn_commits;
                        s->aborts += k.txn_aborts;
                }
                s->run_k[s->runs]     = kr[s->runs];
                s->run_r[s->runs]     = rr[s->runs];
                s->run_ratio[s->runs] = ratio[s->runs];
                s->run_load[s->runs]  = load;
                s->runs++;
        }
        s->kretry        = median(kr, s->runs);
        s->raw           = median(rr, s->runs);
        s->ratio         = median(ratio, s->runs);
        s->k_cpu_us      = median(kc, s->runs);
        s->r_cpu_us      = median(rc, s->runs);
        s->k_rss         = median(ks, s->runs);
        s->r_rss         = median(rs, s->runs);
        s->forwarded     = median(fw, s->runs);
        s->stale         = median(st, s->runs);
        s->retried       = median(rt, s->runs);
        s->dlq           = median(dl, s->runs);
        s->plain_retried = median(prt, s->runs);
        s->version_keys  = median(vk, s->runs);
        s->version_bytes = median(vb, s->runs);
        if (sc->txn) {
                s->w        = median(wr, s->runs);
                s->w_cpu_us = median(wc, s->runs);
                s->w_rss    = median(ws, s->runs);
                s->ratio_w  = median(rw, s->runs);
                s->alo_w    = median(aw, s->runs);
                s->commits  = median(cm, s->runs);
        }
        s->ok = 1;
}

/* delay, delay_default: the same at librdkafka's default
 * fetch.wait.max.ms, and delay_backlog: a source backlog of 2 ms handler
 * calls while the retries come due (target: p99 within one handler call
 * of the 20 ms); happy_paced (at_once): the paced input handled OK at
 * once, its window and CPU. */
typedef struct {
        const char *name;
        int fetch_default, backlog_ms, at_once, ran;
        long n;
        int ok, runs;
        double p50, p99, max, rss, load_max;
        double secs, cpu_s; /* medians: the window and the CPU over it */
        long early;
        char err[200];
} delay_summary_t;
#define DELAYS 4

/* A delay scenario's p99 target, ms: 20, plus one handler call where the
 * source's calls queue up. */
static double delay_target(const delay_summary_t *d) {
        return 20 + d->backlog_ms;
}

typedef struct {
        int ok, runs, partitions;
        long n, waiting;
        double rss_empty, rss_waiting, hwm_empty, hwm_waiting, bytes_per_msg;
        double growth_kb; /* median over runs of waiting - empty */
        double router_s, load_max;
        int unsettled; /* runs read while RSS was still moving */
        char err[200];
} mem_summary_t;

static void run_mem_scenario(const opts_t *o, mem_summary_t *m) {
        double re[MAX_RUNS], rw[MAX_RUNS], he[MAX_RUNS], hw[MAX_RUNS];
        double bpm[MAX_RUNS], rs[MAX_RUNS], gr[MAX_RUNS];
        memset(m, 0, sizeof(*m));
        m->n          = o->mem_n;
        m->partitions = o->mem_parts;
        /* No warm-up: every run starts fresh processes, whose memory a
         * warm-up does not change, and a run of 1,000,000 takes ~40 s. */
        for (int i = 0; i < o->runs; i++) {
                bench_result_t r, wm, w, e;
                double load = bench_loadavg();
                if (load > m->load_max)
                        m->load_max = load;
                if (run_tier_mem(m->n, m->partitions, &r, &wm, &w, &e)) {
                        snprintf(m->err, sizeof(m->err), "%s",
                                 r.err[0]    ? r.err
                                 : wm.err[0] ? wm.err
                                 : w.err[0]  ? w.err
                                 : e.err[0]  ? e.err
                                             : "run failed");
                        fprintf(stderr, "bench tier_mem: %s\n", m->err);
                        return;
                }
                double b = (double)(w.vm_rss_kb - e.vm_rss_kb) * 1024 /
                           (double)m->n;
                fprintf(stderr,
                        "bench tier_mem     %s %d (load %.2f): router %.1f "
                        "s; tier holds %ld in %ld partitions (at most %ld "
                        "in one); waiting: held %ld, consumed %ld, handler "
                        "calls %ld, RSS %ld KB (HWM %ld KB, %s %.1f s); "
                        "empty: RSS %ld KB (HWM %ld KB); %.1f bytes/msg\n",
                        i < 0 ? "warm-up" : "run", i + 1, load, r.secs,
                        wm.waiting, wm.nonempty_parts, wm.max_part, w.held,
                        w.consumed, w.handler_calls, w.vm_rss_kb, w.vm_hwm_kb,
                        w.settled && e.settled ? "settled"
                                               : "still moving after",
                        w.settle_s, e.vm_rss_kb, e.vm_hwm_kb, b);
                if (i >= 0 && !(w.settled && e.settled))
                        m->unsettled++;
                if (i < 0)
                        continue;
                re[m->runs]  = (double)e.vm_rss_kb;
                rw[m->runs]  = (double)w.vm_rss_kb;
                he[m->runs]  = (double)e.vm_hwm_kb;
                hw[m->runs]  = (double)w.vm_hwm_kb;
                bpm[m->runs] = b;
                gr[m->runs]  = (double)(w.vm_rss_kb - e.vm_rss_kb);
                rs[m->runs]  = r.secs;
                m->waiting   = wm.waiting;
                m->runs++;
        }
        m->rss_empty     = median(re, m->runs);
        m->rss_waiting   = median(rw, m->runs);
        m->hwm_empty     = median(he, m->runs);
        m->hwm_waiting   = median(hw, m->runs);
        m->bytes_per_msg = median(bpm, m->runs);
        m->growth_kb     = median(gr, m->runs);
        m->router_s      = median(rs, m->runs);
        m->ok            = 1;
}

static void run_delay_scenario(const opts_t *o, delay_summary_t *d) {
        double p50[MAX_RUNS], p99[MAX_RUNS], mx[MAX_RUNS], rss[MAX_RUNS];
        double secs[MAX_RUNS], cpu[MAX_RUNS];
        d->ran = 1;
        for (int i = 0; i < o->runs; i++) {
                bench_result_t k;
                double load = bench_loadavg();
                if (load > d->load_max)
                        d->load_max = load;
                if (run_delay(o, d->n, d->fetch_default, d->backlog_ms, 0, 0,
                              d->at_once, &k)) {
                        snprintf(d->err, sizeof(d->err), "%s",
                                 k.err[0] ? k.err : "run failed");
                        fprintf(stderr, "bench %s: %s\n", d->name, d->err);
                        return;
                }
                fprintf(stderr,
                        "bench %-13s run %d (load %.2f): lateness p50 "
                        "%.2f ms, p99 %.2f ms, max %.2f ms, early %ld, rss %ld "
                        "KB, window %.2f s, CPU %.3f s\n",
                        d->name, i + 1, load, k.p50_ms, k.p99_ms, k.max_ms,
                        k.early, k.rss_kb, k.secs, k.cpu_s);
                secs[i] = k.secs;
                cpu[i]  = k.cpu_s;
                p50[i]  = k.p50_ms;
                p99[i]  = k.p99_ms;
                mx[i]   = k.max_ms;
                rss[i]  = (double)k.rss_kb;
                d->early += k.early;
                d->runs++;
        }
        d->p50   = median(p50, d->runs);
        d->p99   = median(p99, d->runs);
        d->max   = median(mx, d->runs);
        d->rss   = median(rss, d->runs);
        d->secs  = median(secs, d->runs);
        d->cpu_s = median(cpu, d->runs);
        d->ok    = 1;
}

/* delay_txn (1 s tier) and hop_txn (0 ms tier: lateness is the whole
 * hop, from the RETRY decision to the second handler call): the delay
 * scenario at least once and with routing=transactional, alternating
 * which goes first. [0]: at least once, [1]: transactional. */
typedef struct {
        const char *name;
        int hop, ran, ok, runs, txn_ms;
        long n;
        double p50[2], p99[2], max[2], load_max;
        double add_p50, add_p99; /* medians of each run's txn - alo */
        long early[2], aborts;
        double commits;
        const char *skipped;
        char err[200];
} tdelay_summary_t;
#define TDELAYS 2

static void run_tdelay_scenario(const opts_t *o, tdelay_summary_t *d) {
        double p50[2][MAX_RUNS], p99[2][MAX_RUNS], mx[2][MAX_RUNS];
        double a50[MAX_RUNS], a99[MAX_RUNS], cm[MAX_RUNS];
        d->ran    = 1;
        d->n      = o->delay_n;
        d->txn_ms = o->txn_ms;
        if ((d->skipped = txn_skipped())) {
                fprintf(stderr, "bench %s: skipped: %s\n", d->name, d->skipped);
                return;
        }
        for (int i = 0; i < o->runs; i++) {
                bench_result_t k[2];
                double load = bench_loadavg();
                if (load > d->load_max)
                        d->load_max = load;
                for (int j = 0; j < 2; j++) {
                        int m = (i & 1) ? 1 - j : j; /* alo first in run 1 */
                        if (run_delay(o, d->n, 0, 0, m ? o->txn_ms : 0, d->hop,
                                      0, &k[m])) {
                                snprintf(d->err, sizeof(d->err), "%s",
                                         k[m].err[0] ? k[m].err : "run failed");
                                fprintf(stderr, "bench %s: %s\n", d->name,
                                        d->err);
                                return;
                        }
                }
                fprintf(stderr,
                        "bench %-13s run %d (%s first, load %.2f): lateness "
                        "at least once p50 %.2f ms, p99 %.2f ms, max %.2f "
                        "ms; transactional p50 %.2f ms, p99 %.2f ms, max "
                        "%.2f ms (%ld commits, %ld aborts); early %ld/%ld\n",
                        d->name, i + 1, (i & 1) ? "transactional" : "alo", load,
                        k[0].p50_ms, k[0].p99_ms, k[0].max_ms, k[1].p50_ms,
                        k[1].p99_ms, k[1].max_ms, k[1].txn_commits,
                        k[1].txn_aborts, k[0].early, k[1].early);
                for (int m = 0; m < 2; m++) {
                        p50[m][i] = k[m].p50_ms;
                        p99[m][i] = k[m].p99_ms;
                        mx[m][i]  = k[m].max_ms;
                        d->early[m] += k[m].early;
                }
                a50[i] = k[1].p50_ms - k[0].p50_ms;
                a99[i] = k[1].p99_ms - k[0].p99_ms;
                cm[i]  = (double)k[1].txn_commits;
                d->aborts += k[1].txn_aborts;
                d->runs++;
        }
        for (int m = 0; m < 2; m++) {
                d->p50[m] = median(p50[m], d->runs);
                d->p99[m] = median(p99[m], d->runs);
                d->max[m] = median(mx[m], d->runs);
        }
        d->add_p50 = median(a50, d->runs);
        d->add_p99 = median(a99, d->runs);
        d->commits = median(cm, d->runs);
        d->ok      = 1;
}

static void json_string(const char *s);

/* ---- parallel (issue 13): Parallel Consumer's shape ---- */

static const char *const par_orderings[] = {"none", "key", "partition"};
#define PAR_ORDERINGS 3
static const int par_concs[] = {1, 4, 16, 64};
#define PAR_CONCS 4
#define PAR_BATCH 4 /* sides started (and joining their groups) at once */

typedef struct {
        int ord, conc; /* indexes into par_orderings, par_concs */
} par_combo_t;

typedef struct {
        int ok, runs, ncombos;
        long n;
        double mean_us; /* mean of the seeded sleeps over offsets 0..n-1 */
        par_combo_t combos[PAR_ORDERINGS * PAR_CONCS];
        double secs[PAR_ORDERINGS * PAR_CONCS][MAX_RUNS];
        /* measured mean sleep a message, us (median over runs) */
        double work_us[PAR_ORDERINGS * PAR_CONCS][MAX_RUNS];
        double work_med[PAR_ORDERINGS * PAR_CONCS];
        double med[PAR_ORDERINGS * PAR_CONCS], lo[PAR_ORDERINGS * PAR_CONCS],
                hi[PAR_ORDERINGS * PAR_CONCS];
        double key_none[PAR_CONCS]; /* median over runs of none s / key s */
        double load_max;
        char err[200];
} par_summary_t;

/* One run: one broker and input (n messages, one partition, 1,000 keys),
 * then one kretry process per combination, each in its own group; a batch
 * joins at once (the mock holds each first join 3 s), then its sides go one
 * after another. @p secs[i]: combination i, first handler call to the last
 * one's return. */
static int run_parallel(long n,
                        const par_combo_t *combos,
                        int cnt,
                        double *secs,
                        double *work_us) {
        bench_job_t job;
        child_t b, p, sides[PAR_BATCH];
        bench_job_t jobs[PAR_BATCH];
        int rc = -1;
        job_init(&job, BENCH_PARALLEL, n);
        job.partitions = 1;
        job.keys       = BENCH_PAR_KEYS;
        /* ordering partition at one handler: n x 2.5 ms on average */
        job.timeout_s = 60 + (int)(n * BENCH_PAR_WORK_MAX_US / 1000000);
        if (broker_start(&b, &job))
                goto out;
        if (child_start(&p, body_produce, &job) ||
            (close(p.go_fd), close(p.out_fd), reap(p.pid))) {
                fprintf(stderr, "bench: producing the input failed\n");
                goto out;
        }
        for (int at = 0; at < cnt; at += PAR_BATCH) {
                int nb  = cnt - at < PAR_BATCH ? cnt - at : PAR_BATCH, started;
                int bad = 0;
                for (started = 0; started < nb; started++) {
                        const par_combo_t *c = &combos[at + started];
                        bench_job_t *j       = &jobs[started];
                        *j                   = job;
                        j->concurrency       = par_concs[c->conc];
                        snprintf(j->ordering, sizeof(j->ordering), "%s",
                                 par_orderings[c->ord]);
                        if (snprintf(j->group, sizeof(j->group), "%s-%d",
                                     job.group,
                                     at + started) >= (int)sizeof(j->group) ||
                            child_start(&sides[started], bench_kretry_side, j))
                                break;
                }
                for (int i = 0; i < started; i++)
                        bad |= child_expect(&sides[i], 'R');
                bad |= started < nb;
                for (int i = 0; i < started; i++) {
                        bench_result_t res;
                        if (!bad && child_go(&sides[i]))
                                bad = 1;
                        if (child_finish(&sides[i], &res)) {
                                if (!bad || res.err[0])
                                        fprintf(stderr,
                                                "bench parallel %s x %d: "
                                                "%s\n",
                                                jobs[i].ordering,
                                                jobs[i].concurrency,
                                                res.err[0] ? res.err
                                                           : "failed");
                                bad = 1;
                        }
                        secs[at + i]    = res.secs;
                        work_us[at + i] = res.work_s * 1e6 / (double)n;
                }
                if (bad)
                        goto out;
        }
        rc = 0;
out:
        broker_stop(&b, &job);
        return rc;
}

static void
par_median(const double *v, int n, double *med, double *lo, double *hi) {
        double t[MAX_RUNS];
        memcpy(t, v, sizeof(double) * (size_t)n);
        *med = median(t, n);
        *lo  = t[0];
        *hi  = t[n - 1];
}

/* Ideal wall time of a combination: every message's work spread over the
 * handlers, or (ordering partition, one partition) one after another. */
static double par_ideal(const par_summary_t *ps, const par_combo_t *c) {
        double work = (double)ps->n * ps->mean_us / 1e6;
        return c->ord == 2 ? work : work / par_concs[c->conc];
}

static int par_find(const par_summary_t *ps, int ord, int conc) {
        for (int i = 0; i < ps->ncombos; i++)
                if (ps->combos[i].ord == ord && ps->combos[i].conc == conc)
                        return i;
        return -1;
}

static void run_parallel_scenario(const opts_t *o, par_summary_t *ps) {
        memset(ps, 0, sizeof(*ps));
        ps->n = o->messages > 0 ? o->messages : o->quick ? 1000 : 10000;
        for (long i = 0; i < ps->n; i++)
                ps->mean_us += (double)bench_work_us(i);
        ps->mean_us /= (double)ps->n;
        /* Quick: the three orderings at 16 handlers only (partition at one
         * handler alone takes n x 2.5 ms). */
        for (int r = 0; r < PAR_ORDERINGS; r++)
                for (int c = 0; c < PAR_CONCS; c++)
                        if (!o->quick || par_concs[c] == 16)
                                ps->combos[ps->ncombos++] = (par_combo_t){r, c};
        /* No warm-up: the window is the handlers' sleeps. */
        for (int i = 0; i < o->runs; i++) {
                double secs[PAR_ORDERINGS * PAR_CONCS];
                double work[PAR_ORDERINGS * PAR_CONCS];
                double load = bench_loadavg();
                if (load > ps->load_max)
                        ps->load_max = load;
                if (run_parallel(ps->n, ps->combos, ps->ncombos, secs, work)) {
                        snprintf(ps->err, sizeof(ps->err), "run failed");
                        fprintf(stderr, "bench parallel: %s\n", ps->err);
                        return;
                }
                fprintf(stderr, "bench parallel     run %d (load %.2f):", i + 1,
                        load);
                for (int j = 0; j < ps->ncombos; j++) {
                        ps->secs[j][i]    = secs[j];
                        ps->work_us[j][i] = work[j];
                        fprintf(stderr, " %s/%d %.3f s",
                                par_orderings[ps->combos[j].ord],
                                par_concs[ps->combos[j].conc], secs[j]);
                }
                fprintf(stderr, "\n");
                ps->runs++;
        }
        for (int j = 0; j < ps->ncombos; j++) {
                double lo, hi;
                par_median(ps->secs[j], ps->runs, &ps->med[j], &ps->lo[j],
                           &ps->hi[j]);
                par_median(ps->work_us[j], ps->runs, &ps->work_med[j], &lo,
                           &hi);
        }
        for (int c = 0; c < PAR_CONCS; c++) {
                int in = par_find(ps, 0, c), ik = par_find(ps, 1, c);
                double r[MAX_RUNS];
                if (in < 0 || ik < 0)
                        continue;
                for (int i = 0; i < ps->runs; i++)
                        r[i] = ps->secs[in][i] / ps->secs[ik][i];
                ps->key_none[c] = median(r, ps->runs);
        }
        ps->ok = 1;
}

/* A combination's target, as text ("" when it has none), and whether the
 * median meets it. */
static const char *
par_target(const par_summary_t *ps, int j, char *buf, size_t sz, int *met) {
        const par_combo_t *c = &ps->combos[j];
        *met                 = 1;
        buf[0]               = '\0';
        if (c->ord == 1 && par_concs[c->conc] == 16 && ps->n == 10000) {
                snprintf(buf, sz, "<= 1.75 s");
                *met = ps->med[j] <= 1.75;
        } else if (c->ord == 2) {
                snprintf(buf, sz, "<= ideal +5%%");
                *met = ps->med[j] <= par_ideal(ps, c) * 1.05;
        }
        return buf;
}

/* A failed scenario's line: 1 if it failed (and was printed). */
static int print_failed(const char *name, int ok, const char *err) {
        if (!ok)
                printf("\n%s: FAILED: %s\n", name, err);
        return !ok;
}

static void print_parallel(const par_summary_t *ps) {
        if (print_failed("parallel", ps->ok, ps->err))
                return;
        printf("\nparallel (%ld msgs in one partition, %d keys, handler "
               "sleeps 0-%d us by offset, mean %.1f us; seconds from the "
               "first handler call to the last, median (min-max) of %d "
               "run(s); load %.2f)\n",
               ps->n, BENCH_PAR_KEYS, BENCH_PAR_WORK_MAX_US, ps->mean_us,
               ps->runs, ps->load_max);
        printf("%-10s %5s %8s %17s %8s %12s %8s %s\n", "ordering", "conc",
               "median", "(min-max)", "ideal", "ideal/median", "slept us",
               "target");
        for (int j = 0; j < ps->ncombos; j++) {
                char t[32];
                int met;
                const par_combo_t *c = &ps->combos[j];
                double ideal         = par_ideal(ps, c);
                par_target(ps, j, t, sizeof(t), &met);
                printf("%-10s %5d %8.3f   (%6.3f-%6.3f) %8.3f %12.3f %8.1f "
                       "%s%s\n",
                       par_orderings[c->ord], par_concs[c->conc], ps->med[j],
                       ps->lo[j], ps->hi[j], ideal, ideal / ps->med[j],
                       ps->work_med[j], t, met ? "" : "  MISS");
        }
        for (int c = 0; c < PAR_CONCS; c++)
                if (ps->key_none[c] > 0)
                        printf("key / none throughput at %d: %.3f%s\n",
                               par_concs[c], ps->key_none[c],
                               par_concs[c] < 16 ? ""
                               : ps->key_none[c] >= 0.95
                                       ? " (target >= 0.95)"
                                       : " (target >= 0.95)  MISS");
        printf("(ideal: msgs x mean work / concurrency; partition: msgs x "
               "mean work, one message of the partition at a time; slept us: "
               "a handler's sleep as measured, mean a message, median over "
               "runs: what nanosleep adds to the %.1f us asked)\n",
               ps->mean_us);
}

static void print_parallel_json(const par_summary_t *ps) {
        printf(", \"parallel\": ");
        if (!ps->ok) {
                printf("{\"error\": ");
                json_string(ps->err);
                printf("}");
                return;
        }
        printf("{\"messages\": %ld, \"partitions\": 1, \"keys\": %d, "
               "\"mean_work_us\": %.1f, \"runs\": %d, \"load_max\": %.2f, "
               "\"combinations\": [",
               ps->n, BENCH_PAR_KEYS, ps->mean_us, ps->runs, ps->load_max);
        for (int j = 0; j < ps->ncombos; j++) {
                char t[32];
                int met;
                const par_combo_t *c = &ps->combos[j];
                par_target(ps, j, t, sizeof(t), &met);
                printf("%s{\"ordering\": \"%s\", \"concurrency\": %d, "
                       "\"secs\": %.3f, \"secs_min\": %.3f, \"secs_max\": "
                       "%.3f, \"ideal_secs\": %.3f, \"slept_us_per_msg\": "
                       "%.1f, \"target\": ",
                       j ? ", " : "", par_orderings[c->ord], par_concs[c->conc],
                       ps->med[j], ps->lo[j], ps->hi[j], par_ideal(ps, c),
                       ps->work_med[j]);
                json_string(t);
                printf(", \"met\": %s}", met ? "true" : "false");
        }
        printf("], \"key_over_none\": {");
        for (int c = 0, k = 0; c < PAR_CONCS; c++)
                if (ps->key_none[c] > 0)
                        printf("%s\"%d\": %.3f", k++ ? ", " : "", par_concs[c],
                               ps->key_none[c]);
        printf("}}");
}

/* @p s as a JSON string, quotes included. */
static void json_string(const char *s) {
        putchar('"');
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '"' || c == '\\')
                        printf("\\%c", c);
                else if (c < 0x20)
                        printf("\\u%04x", c);
                else
                        putchar(c);
        }
        putchar('"');
}

/* A *_txn scenario: transactional against at least once, and both
 * against raw librdkafka. */
static void print_txn_json(const summary_t *s) {
        printf("{\"name\": \"%s\", \"transaction_interval_ms\": %d, "
               "\"kretry_msgs_per_s\": %.0f, "
               "\"baseline\": \"kretry, routing at_least_once\", "
               "\"baseline_msgs_per_s\": %.0f, \"ratio\": %.3f, "
               "\"target\": %.2f, \"raw_msgs_per_s\": %.0f, "
               "\"ratio_raw\": %.3f, \"baseline_ratio_raw\": %.3f, "
               "\"peak_rss_kb\": %.0f, \"baseline_peak_rss_kb\": %.0f, "
               "\"raw_peak_rss_kb\": %.0f, "
               "\"kretry_cpu_us_per_msg\": %.3f, "
               "\"baseline_cpu_us_per_msg\": %.3f, "
               "\"raw_cpu_us_per_msg\": %.3f, "
               "\"transactions_committed\": %.0f, "
               "\"transactions_aborted\": %ld, \"load_max\": %.2f}",
               s->name, s->txn_ms, s->kretry, s->raw, s->ratio, s->target, s->w,
               s->ratio_w, s->alo_w, s->k_rss, s->r_rss, s->w_rss, s->k_cpu_us,
               s->r_cpu_us, s->w_cpu_us, s->commits, s->aborts, s->load_max);
}

static void print_tdelay_json(const tdelay_summary_t *d, const opts_t *o) {
        printf(", \"%s\": ", d->name);
        if (d->skipped || !d->ok) {
                printf("{\"%s\": ", d->skipped ? "skipped" : "error");
                json_string(d->skipped ? d->skipped : d->err);
                printf("}");
                return;
        }
        printf("{\"messages\": %ld, \"rate_per_s\": %d, \"tier\": \"%s\", "
               "\"transaction_interval_ms\": %d, "
               "\"at_least_once\": {\"p50_ms\": %.2f, \"p99_ms\": %.2f, "
               "\"max_ms\": %.2f, \"early\": %ld}, "
               "\"transactional\": {\"p50_ms\": %.2f, \"p99_ms\": %.2f, "
               "\"max_ms\": %.2f, \"early\": %ld, "
               "\"transactions_committed\": %.0f, "
               "\"transactions_aborted\": %ld}, "
               "\"added_p50_ms\": %.2f, \"added_p99_ms\": %.2f, "
               "\"load_max\": %.2f}",
               d->n, o->delay_rate, d->hop ? "0ms" : "1s", d->txn_ms, d->p50[0],
               d->p99[0], d->max[0], d->early[0], d->p50[1], d->p99[1],
               d->max[1], d->early[1], d->commits, d->aborts, d->add_p50,
               d->add_p99, d->load_max);
}

static void
print_txn_table(const summary_t *s, int cnt, const tdelay_summary_t *td) {
        for (int i = 0; i < cnt; i++) {
                if (!s[i].ok || !s[i].txn)
                        continue;
                printf("\n%s (kretry routing=transactional, "
                       "transaction.interval.ms %d, against kretry "
                       "at_least_once and raw librdkafka, same input):\n"
                       "  transactional %.0f msg/s, %.2f us/msg, RSS %.0f "
                       "KB; at least once %.0f msg/s, %.2f us/msg, RSS %.0f "
                       "KB; raw %.0f msg/s, %.2f us/msg, RSS %.0f KB\n"
                       "  ratio transactional/at least once %.3f (target "
                       ">= %.2f%s); against raw: transactional %.3f, at "
                       "least once %.3f; transactions %.0f a run, %ld "
                       "aborted; load %.2f\n",
                       s[i].name, s[i].txn_ms, s[i].kretry, s[i].k_cpu_us,
                       s[i].k_rss, s[i].raw, s[i].r_cpu_us, s[i].r_rss, s[i].w,
                       s[i].w_cpu_us, s[i].w_rss, s[i].ratio, s[i].target,
                       s[i].ratio >= s[i].target ? "" : ": MISS", s[i].ratio_w,
                       s[i].alo_w, s[i].commits, s[i].aborts, s[i].load_max);
        }
        for (int i = 0; i < TDELAYS; i++) {
                const tdelay_summary_t *d = &td[i];
                if (!d->ran)
                        continue;
                if (d->skipped || !d->ok) {
                        printf("\n%s: %s%s\n", d->name,
                               d->skipped ? "skipped: " : "FAILED: ",
                               d->skipped ? d->skipped : d->err);
                        continue;
                }
                printf("\n%s (%ld msgs at 10000/s through a %s tier, "
                       "transaction.interval.ms %d): lateness at least once "
                       "p50 %.2f ms, p99 %.2f ms, max %.2f ms; "
                       "transactional p50 %.2f ms, p99 %.2f ms, max %.2f ms "
                       "(%.0f transactions a run, %ld aborted); added p50 "
                       "%.2f ms, p99 %.2f ms; early %ld/%ld, load %.2f\n",
                       d->name, d->n, d->hop ? "0ms" : "1s", d->txn_ms,
                       d->p50[0], d->p99[0], d->max[0], d->p50[1], d->p99[1],
                       d->max[1], d->commits, d->aborts, d->add_p50, d->add_p99,
                       d->early[0], d->early[1], d->load_max);
        }
}

static void print_json(const opts_t *o,
                       const summary_t *s,
                       int cnt,
                       const delay_summary_t *d,
                       const tdelay_summary_t *td,
                       const mem_summary_t *m,
                       int mem_ran,
                       const par_summary_t *ps,
                       int par_ran) {
        printf("{\"quick\": %s, \"runs\": %d, \"partitions\": %d, "
               "\"keys\": %ld, \"retry_percent\": %d, \"scenarios\": [",
               o->quick ? "true" : "false", o->runs, bench_partitions(),
               o->keys, retry_pct ? retry_pct : 100);
        for (int i = 0; i < cnt; i++) {
                if (i > 0)
                        printf(", ");
                if (s[i].skipped) {
                        printf("{\"name\": \"%s\", \"kretry_msgs_per_s\": "
                               "null, \"raw_msgs_per_s\": null, \"ratio\": "
                               "null, \"peak_rss_kb\": null, \"skipped\": ",
                               s[i].name);
                        json_string(s[i].skipped);
                        printf("}");
                        continue;
                }
                if (!s[i].ok) {
                        printf("{\"name\": \"%s\", \"kretry_msgs_per_s\": "
                               "null, \"raw_msgs_per_s\": null, \"ratio\": "
                               "null, \"peak_rss_kb\": null, \"error\": ",
                               s[i].name);
                        json_string(s[i].err);
                        printf("}");
                        continue;
                }
                if (!strcmp(s[i].name, "ordered_versioned")) {
                        printf("{\"name\": \"%s\", \"available\": true, "
                               "\"kretry_msgs_per_s\": %.0f, "
                               "\"raw_msgs_per_s\": null, "
                               "\"baseline\": \"kretry, ordering and "
                               "versioning off\", "
                               "\"baseline_msgs_per_s\": %.0f, "
                               "\"ratio\": %.3f, \"peak_rss_kb\": %.0f, "
                               "\"baseline_peak_rss_kb\": %.0f, "
                               "\"kretry_cpu_us_per_msg\": %.3f, "
                               "\"baseline_cpu_us_per_msg\": %.3f, "
                               "\"forwarded\": %.0f, \"stale\": %.0f, "
                               "\"retried\": %.0f, "
                               "\"baseline_retried\": %.0f, "
                               "\"dead_lettered\": %.0f, "
                               "\"version_keys\": %.0f, "
                               "\"version_bytes\": %.0f, "
                               "\"load_max\": %.2f}",
                               s[i].name, s[i].kretry, s[i].raw, s[i].ratio,
                               s[i].k_rss, s[i].r_rss, s[i].k_cpu_us,
                               s[i].r_cpu_us, s[i].forwarded, s[i].stale,
                               s[i].retried, s[i].plain_retried, s[i].dlq,
                               s[i].version_keys, s[i].version_bytes,
                               s[i].load_max);
                        continue;
                }
                if (s[i].txn) {
                        print_txn_json(&s[i]);
                        continue;
                }
                printf("{\"name\": \"%s\", \"kretry_msgs_per_s\": %.0f, "
                       "\"raw_msgs_per_s\": %.0f, \"ratio\": %.3f, "
                       "\"target\": %.2f, \"peak_rss_kb\": %.0f, "
                       "\"raw_peak_rss_kb\": %.0f, "
                       "\"kretry_cpu_us_per_msg\": %.3f, "
                       "\"raw_cpu_us_per_msg\": %.3f, \"load_max\": %.2f",
                       s[i].name, s[i].kretry, s[i].raw, s[i].ratio,
                       s[i].target, s[i].k_rss, s[i].r_rss, s[i].k_cpu_us,
                       s[i].r_cpu_us, s[i].load_max);
                if (s[i].members)
                        printf(", \"members\": %d", s[i].members);
                printf(", \"runs\": [");
                for (int j = 0; j < s[i].runs; j++)
                        printf("%s{\"kretry_msgs_per_s\": %.0f, "
                               "\"raw_msgs_per_s\": %.0f, \"ratio\": %.3f, "
                               "\"load\": %.2f}",
                               j ? ", " : "", s[i].run_k[j], s[i].run_r[j],
                               s[i].run_ratio[j], s[i].run_load[j]);
                printf("]}");
        }
        printf("]");
        for (int i = 0; i < DELAYS; i++, d++) {
                if (d->at_once && !d->ran) /* happy_paced: only by name */
                        continue;
                if (d->ran && d->ok && d->at_once) {
                        printf(", \"%s\": {\"messages\": %ld, "
                               "\"rate_per_s\": %d, \"value_bytes\": %d, "
                               "\"secs\": %.3f, \"cpu_s\": %.3f, "
                               "\"cpu_us_per_msg\": %.3f, "
                               "\"peak_rss_kb\": %.0f, \"load_max\": %.2f}",
                               d->name, d->n, o->delay_rate,
                               value_bytes ? value_bytes : BENCH_VALUE_SIZE,
                               d->secs, d->cpu_s, d->cpu_s * 1e6 / (double)d->n,
                               d->rss, d->load_max);
                        continue;
                }
                if (d->ran && d->ok) {
                        printf(", \"%s\": {\"messages\": %ld, "
                               "\"rate_per_s\": %d, \"tier\": \"1s\", "
                               "\"fetch_wait_max_ms\": %d, "
                               "\"source_handler_ms\": %d, \"p50_ms\": %.2f, "
                               "\"p99_ms\": %.2f, \"p99_target_ms\": %.0f, "
                               "\"max_ms\": %.2f, \"early\": %ld, "
                               "\"peak_rss_kb\": %.0f, \"load_max\": %.2f}",
                               d->name, d->n, o->delay_rate,
                               d->fetch_default ? 500 : 10, d->backlog_ms,
                               d->p50, d->p99, delay_target(d), d->max,
                               d->early, d->rss, d->load_max);
                        continue;
                }
                printf(", \"%s\": {\"p50_ms\": null, \"p99_ms\": null, "
                       "\"max_ms\": null, \"early\": null",
                       d->name);
                if (d->ran) {
                        printf(", \"error\": ");
                        json_string(d->err);
                }
                printf("}");
        }
        for (int i = 0; i < TDELAYS; i++)
                if (td[i].ran)
                        print_tdelay_json(&td[i], o);
        printf(", \"tier_memory\": ");
        if (mem_ran && m->ok)
                printf("{\"messages\": %ld, \"partitions\": %d, "
                       "\"waiting\": %ld, \"rss_empty_kb\": %.0f, "
                       "\"rss_waiting_kb\": %.0f, "
                       "\"bytes_per_waiting_msg\": %.1f, "
                       "\"rss_growth_kb\": %.0f, "
                       "\"hwm_empty_kb\": %.0f, \"hwm_waiting_kb\": %.0f, "
                       "\"target_bytes_per_msg\": 100, \"load_max\": %.2f, "
                       "\"runs_unsettled\": %d}",
                       m->n, m->partitions, m->waiting, m->rss_empty,
                       m->rss_waiting, m->bytes_per_msg, m->growth_kb,
                       m->hwm_empty, m->hwm_waiting, m->load_max, m->unsettled);
        else {
                printf("{\"rss_empty_kb\": null, \"rss_waiting_kb\": null, "
                       "\"bytes_per_waiting_msg\": null");
                if (mem_ran) {
                        printf(", \"error\": ");
                        json_string(m->err);
                }
                printf("}");
        }
        if (par_ran)
                print_parallel_json(ps);
        else
                printf(", \"parallel\": null");
        printf("}\n");
}

static void print_mem(const mem_summary_t *m) {
        if (print_failed("tier_mem", m->ok, m->err))
                return;
        printf("\ntier_mem (%ld msgs waiting in a 1h tier, %d partitions, "
               "waiting checked: %ld): RSS empty %.0f KB (HWM %.0f KB), "
               "waiting %.0f KB (HWM %.0f KB), growth %.0f KB: %.1f bytes "
               "per waiting msg%s, load %.2f%s\n",
               m->n, m->partitions, m->waiting, m->rss_empty, m->hwm_empty,
               m->rss_waiting, m->hwm_waiting, m->growth_kb, m->bytes_per_msg,
               m->bytes_per_msg <= 100 ? "" : " (MISS: target <= 100)",
               m->load_max,
               m->unsettled ? " (RSS still moving in some runs: not a "
                              "measurement)"
                            : "");
}

static void print_table(const opts_t *o,
                        const summary_t *s,
                        int cnt,
                        const delay_summary_t *d,
                        const tdelay_summary_t *td,
                        const mem_summary_t *m,
                        int mem_ran,
                        const par_summary_t *ps,
                        int par_ran) {
        printf("kretry benchmarks: %s, median of %d run(s), %d partitions, "
               "%ld keys",
               o->quick ? "quick" : "full", o->runs, bench_partitions(),
               o->keys);
        if (o->members)
                printf(", %d member processes a side in one group", o->members);
        printf("\n\n");
        printf("%-12s %12s %12s %6s %7s %9s %9s %10s %10s %5s\n", "scenario",
               "kretry msg/s", "raw msg/s", "ratio", "target", "kretry us",
               "raw us", "kretry RSS", "raw RSS", "load");
        for (int i = 0; i < cnt; i++) {
                if (s[i].skipped) {
                        printf("%-12s skipped: %s\n", s[i].name, s[i].skipped);
                        continue;
                }
                if (!s[i].ok) {
                        printf("%-12s FAILED: %s\n", s[i].name, s[i].err);
                        continue;
                }
                if (!strcmp(s[i].name, "ordered_versioned") || s[i].txn)
                        continue; /* below: its baseline is not raw */
                printf("%-12s %12.0f %12.0f %6.3f %3s%.2f %9.2f %9.2f %7.0f KB "
                       "%7.0f KB %5.2f%s\n",
                       s[i].name, s[i].kretry, s[i].raw, s[i].ratio,
                       ">=", s[i].target, s[i].k_cpu_us, s[i].r_cpu_us,
                       s[i].k_rss, s[i].r_rss, s[i].load_max,
                       s[i].ratio >= s[i].target ? "" : "  MISS");
        }
        printf("(ratio: median over runs of kretry/raw msgs/s, each run both "
               "sides on the same input; us: CPU microseconds per message, all "
               "threads of that side's process; load: highest 1-min load "
               "average at a run's start)\n");
        for (int i = 0; i < cnt; i++) {
                if (!s[i].ok || strcmp(s[i].name, "ordered_versioned"))
                        continue;
                printf("\nordered_versioned (kretry with ordering=key and "
                       "versioning against kretry with both off, same input, "
                       "%d %% transient failures):\n"
                       "  with both %.0f msg/s, %.2f us/msg, RSS %.0f KB; "
                       "neither %.0f msg/s, %.2f us/msg, RSS %.0f KB; "
                       "ratio %.3f, load %.2f\n"
                       "  forwarded (parked) %.0f, stale %.0f, retried %.0f "
                       "(neither: %.0f), dead-lettered %.0f, version store "
                       "%.0f keys, %.0f bytes\n",
                       BENCH_FAIL_PERCENT, s[i].kretry, s[i].k_cpu_us,
                       s[i].k_rss, s[i].raw, s[i].r_cpu_us, s[i].r_rss,
                       s[i].ratio, s[i].load_max, s[i].forwarded, s[i].stale,
                       s[i].retried, s[i].plain_retried, s[i].dlq,
                       s[i].version_keys, s[i].version_bytes);
        }
        print_txn_table(s, cnt, td);
        for (int i = 0; i < DELAYS; i++, d++) {
                if (!d->ran)
                        continue;
                if (!d->ok) {
                        printf("\n%s: FAILED: %s\n", d->name, d->err);
                        continue;
                }
                if (d->at_once) {
                        printf("\n%s (%ld msgs at %d/s, each OK at once): "
                               "window %.2f s, CPU %.3f s (%.3f us/msg), "
                               "RSS %.0f KB, load %.2f\n",
                               d->name, d->n, o->delay_rate, d->secs, d->cpu_s,
                               d->cpu_s * 1e6 / (double)d->n, d->rss,
                               d->load_max);
                        continue;
                }
                char miss[48] = "";
                if (d->p99 > delay_target(d))
                        snprintf(miss, sizeof(miss), " (MISS: target <= %.0f)",
                                 delay_target(d));
                printf("\n%s (%ld msgs at %d/s through a 1s tier, "
                       "fetch.wait.max.ms %d",
                       d->name, d->n, o->delay_rate,
                       d->fetch_default ? 500 : 10);
                if (d->backlog_ms)
                        printf(", source handler %d ms, 1 in %d retried",
                               d->backlog_ms, BENCH_BACKLOG_EVERY);
                printf("): lateness p50 %.2f ms, p99 %.2f ms%s, max %.2f ms, "
                       "early %ld, RSS %.0f KB, load %.2f\n",
                       d->p50, d->p99, miss, d->max, d->early, d->rss,
                       d->load_max);
        }
        if (mem_ran)
                print_mem(m);
        if (par_ran)
                print_parallel(ps);
}

static void usage(FILE *f) {
        fprintf(f, "usage: kretry_bench [--quick] [--output table|json] "
                   "[--runs N] [--messages N] [--keys N] [--rate N]\n"
                   "                    [--only happy|happy_c16|retry_hop|"
                   "dead_letter|ordered_versioned|delay|delay_default|"
                   "delay_backlog|happy_paced|tier_mem|"
                   "parallel|\n"
                   "                     retry_hop_txn|dead_letter_txn|"
                   "delay_txn|hop_txn|txn]\n"
                   "                    [--txn-interval MS] "
                   "[--retry-percent P] [--value-bytes N]\n"
                   "                    [--mem-partitions N] (tier_mem)\n"
                   "                    [--members N] (happy, retry_hop, "
                   "dead_letter; real Kafka)\n");
}

static int parse_opts(int argc, char **argv, opts_t *o) {
        memset(o, 0, sizeof(*o));
        int runs = 0, rate = 0;
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (!strcmp(a, "--quick"))
                        o->quick = 1;
                else if (!strcmp(a, "--output") && i + 1 < argc)
                        o->json = !strcmp(argv[++i], "json");
                else if (!strcmp(a, "--runs") && i + 1 < argc)
                        runs = atoi(argv[++i]);
                else if (!strcmp(a, "--messages") && i + 1 < argc)
                        o->messages = atol(argv[++i]);
                else if (!strcmp(a, "--rate") && i + 1 < argc)
                        rate = atoi(argv[++i]);
                else if (!strcmp(a, "--keys") && i + 1 < argc)
                        o->keys = atol(argv[++i]);
                else if (!strcmp(a, "--only") && i + 1 < argc)
                        o->only = argv[++i];
                else if (!strcmp(a, "--txn-interval") && i + 1 < argc)
                        o->txn_ms = atoi(argv[++i]);
                else if (!strcmp(a, "--retry-percent") && i + 1 < argc)
                        retry_pct = atoi(argv[++i]);
                else if (!strcmp(a, "--members") && i + 1 < argc) {
                        o->members = atoi(argv[++i]);
                        if (o->members < 1 || o->members > BENCH_MAX_MEMBERS) {
                                fprintf(stderr,
                                        "kretry_bench: --members: 1 to %d\n",
                                        BENCH_MAX_MEMBERS);
                                return -1;
                        }
                } else if (!strcmp(a, "--mem-partitions") && i + 1 < argc) {
                        o->mem_parts = atoi(argv[++i]);
                        if (o->mem_parts < 1 || o->mem_parts > 4096) {
                                fprintf(stderr,
                                        "kretry_bench: "
                                        "--mem-partitions: 1 to 4096\n");
                                return -1;
                        }
                } else if (!strcmp(a, "--value-bytes") && i + 1 < argc) {
                        value_bytes = atoi(argv[++i]);
                        if (value_bytes < 16 || value_bytes > BENCH_VALUE_MAX) {
                                fprintf(stderr,
                                        "kretry_bench: --value-bytes: 16 to "
                                        "%d\n",
                                        BENCH_VALUE_MAX);
                                return -1;
                        }
                } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                        usage(stdout);
                        exit(0);
                } else {
                        usage(stderr);
                        return -1;
                }
        }
        o->runs    = runs > 0 ? runs : o->quick ? 1 : 5;
        o->warmup  = o->quick ? 0 : 1;
        o->delay_n = o->messages > 0 ? o->messages : o->quick ? 20000 : 100000;
        o->delay_rate = rate > 0 ? rate : 10000;
        o->mem_n = o->messages > 0 ? o->messages : o->quick ? 100000 : 1000000;
        if (o->mem_parts <= 0)
                o->mem_parts = BENCH_MEM_PARTITIONS;
        if (o->keys <= 0)
                o->keys = BENCH_KEYS;
        if (o->txn_ms <= 0)
                o->txn_ms = 100; /* transaction.interval.ms's default */
        if (o->runs > MAX_RUNS)
                o->runs = MAX_RUNS;
        return 0;
}

int main(int argc, char **argv) {
        opts_t o;
        summary_t s[SCENARIOS];
        delay_summary_t d[DELAYS] = {
                {.name = "delay"},
                {.name = "delay_default", .fetch_default = 1},
                {.name = "delay_backlog", .fetch_default = 1, .backlog_ms = 2},
                {.name = "happy_paced", .at_once = 1}};
        tdelay_summary_t td[TDELAYS] = {{.name = "delay_txn"},
                                        {.name = "hop_txn", .hop = 1}};
        mem_summary_t m;
        static par_summary_t ps;
        int cnt = 0, mem_ran = 0, par_ran = 0, failed = 0;
        if (parse_opts(argc, argv, &o))
                return 64;
        /* delay_backlog: 2 ms a source message at one handler, so that a
         * run stays within ~10 s. */
        for (int i = 0; i < DELAYS; i++)
                d[i].n = !d[i].backlog_ms ? o.delay_n
                         : o.messages > 0 ? o.messages
                         : o.quick        ? 2000
                                          : 5000;
        signal(SIGPIPE, SIG_IGN);
        input_keys = o.keys;
        for (size_t i = 0; i < SCENARIOS; i++) {
                /* --only parallel: happy_c16 too */
                if (o.only && strcmp(o.only, scenarios[i].name) &&
                    !(!strcmp(o.only, "parallel") &&
                      scenarios[i].concurrency > 1) &&
                    !(!strcmp(o.only, "txn") && scenarios[i].txn))
                        continue;
                run_scenario(&o, &scenarios[i], &s[cnt]);
                failed |= !s[cnt].ok && !s[cnt].skipped;
                cnt++;
        }
        for (int i = 0; i < DELAYS; i++) /* happy_paced only by name */
                if ((!o.only && !d[i].at_once) ||
                    (o.only && !strcmp(o.only, d[i].name))) {
                        run_delay_scenario(&o, &d[i]);
                        failed |= !d[i].ok;
                }
        for (int i = 0; i < TDELAYS; i++)
                if (!o.only || !strcmp(o.only, td[i].name) ||
                    !strcmp(o.only, "txn")) {
                        run_tdelay_scenario(&o, &td[i]);
                        failed |= !td[i].ok && !td[i].skipped;
                }
        memset(&m, 0, sizeof(m));
        if (!o.only || !strcmp(o.only, "tier_mem")) {
                mem_ran = 1;
                run_mem_scenario(&o, &m);
                failed |= !m.ok;
        }
        if (!o.only || !strcmp(o.only, "parallel")) {
                par_ran = 1;
                run_parallel_scenario(&o, &ps);
                failed |= !ps.ok;
        }
        if (o.json)
                print_json(&o, s, cnt, d, td, &m, mem_ran, &ps, par_ran);
        else
                print_table(&o, s, cnt, d, td, &m, mem_ran, &ps, par_ran);
        return failed ? 1 : 0;
}
