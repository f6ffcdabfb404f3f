/*
 * The two sides measured, each in its own process: kretry (an adapter with
 * a trivial handler) and the raw librdkafka loop doing the same work
 * without kretry. Both time from the first message they see to the last
 * one completed; group joins and closes are outside the window.
 */
#include "bench.h"
#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Properties both sides use (kretry passes them through to librdkafka). */
static const char *const common_props[][2] = {
        {"socket.nagle.disable", "true"},
        {"consumer.queued.min.messages", "1000000"},
        {"consumer.fetch.wait.max.ms", "10"},
        {"consumer.auto.offset.reset", "earliest"},
        {"log_level", "4"},
};
#define COMMON_PROPS (sizeof(common_props) / sizeof(common_props[0]))

/* A common property's value: KRETRY_BENCH_QUEUED_MIN replaces
 * queued.min.messages' 1000000 on both sides (bench/peers runs them at
 * librdkafka's default, 100000, as the Java clients beside them have no such
 * setting). */
static const char *common_value(size_t i) {
        const char *q = getenv("KRETRY_BENCH_QUEUED_MIN");
        if (q && *q && strstr(common_props[i][0], "queued.min.messages"))
                return q;
        return common_props[i][1];
}

/* Setup failed: say so instead of 'R', then report why. */
static int setup_failed(int out_fd, const bench_result_t *res) {
        char c = 'E';
        if (!bench_write_all(out_fd, &c, 1))
                bench_write_all(out_fd, res, sizeof(*res));
        return 1;
}

/* 'R', then (members) @p join, which polls the side's clients for a
 * moment and returns the source partitions this member holds, until the
 * orchestrator says hold ('H', answered with 'H': this member polls no
 * more), then the byte that says go. */
static int wait_go(const bench_job_t *job,
                   int go_fd,
                   int out_fd,
                   int (*join)(void *),
                   void *opaque) {
        char c = 'R';
        if (bench_write_all(out_fd, &c, 1))
                return -1;
        if (job->shared) {
                struct pollfd pfd = {.fd = go_fd, .events = POLLIN};
                while (poll(&pfd, 1, 0) == 0)
                        atomic_store(&job->shared->assigned[job->member],
                                     join(opaque));
                if (read(go_fd, &c, 1) != 1 || bench_write_all(out_fd, &c, 1))
                        return -1;
        }
        return read(go_fd, &c, 1) == 1 ? 0 : -1;
}

/* This process completed one more message, @p own in all: the side's
 * count, every member's together with --members. */
static long side_count(const bench_job_t *job, long own) {
        return job->shared ? atomic_fetch_add(&job->shared->done, 1) + 1 : own;
}

/* Another member completed the side's last message. */
static int side_done_elsewhere(const bench_job_t *job) {
        return job->shared && atomic_load(&job->shared->done) >= job->n;
}

/* A side's window in one process: its first message, the side's last. */
typedef struct {
        double t_first, t_last, c_first, c_last;
} window_t;

/* The side is done: this process's window into @p res. A member that did
 * not complete the side's last message (@p last 0) stops its CPU clock
 * now and has no end time; one that saw no message reports none. */
static void
window_report(window_t *w, int started, int last, bench_result_t *res) {
        res->ok = 1;
        if (!started)
                return;
        if (!last) {
                w->t_last = 0;
                w->c_last = bench_cpu();
        }
        res->t_first = w->t_first;
        res->t_last  = w->t_last;
        res->secs    = last ? w->t_last - w->t_first : 0;
        res->cpu_s   = w->c_last - w->c_first;
}

static double realtime_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* ---- kretry ---- */

typedef struct {
        const bench_job_t *job;
        /* atomic: with handler.concurrency > 1 the handler runs on workers */
        atomic_long done;
        window_t w;
        atomic_int started;
        atomic_llong work_ns; /* BENCH_PARALLEL: measured sleeps */
        double *late;         /* BENCH_DELAY: lateness per retry, ms */
        long late_n, early;
        atomic_int assigned;
        atomic_int ended; /* t_last and c_last are written */
        /* routing transactional, BENCH_DEAD_LETTER: the last DLQ copy is
         * acknowledged but visible (read_committed) only once its
         * transaction commits, the next commit after this count */
        kretry_adapter_t *a;
        long long commits_at;
        int await_commit;
} kside_t;

static void k_complete(kside_t *k) {
        long done = side_count(k->job, ++k->done);
        if (done == k->job->n && k->job->txn_ms && !k->job->plain &&
            k->job->kind == BENCH_DEAD_LETTER) {
                k->commits_at = kretry_adapter_counter(
                        k->a, KRETRY_COUNTER_TXN_COMMITS, 0);
                k->await_commit = 1;
        } else if (done == k->job->n) {
                k->w.t_last = bench_mono();
                k->w.c_last = bench_cpu();
                atomic_store(&k->ended, 1); /* after them, for the loop */
        }
}

/* The transaction holding the last copy has committed: the window ends. */
static void k_committed(kside_t *k) {
        if (k->await_commit &&
            kretry_adapter_counter(k->a, KRETRY_COUNTER_TXN_COMMITS, 0) >
                    k->commits_at) {
                k->await_commit = 0;
                k->w.t_last     = bench_mono();
                k->w.c_last     = bench_cpu();
                atomic_store(&k->ended, 1);
        }
}

static void k_lateness(kside_t *k, kretry_msg_t *msg) {
        const void *v;
        size_t n;
        char buf[32];
        double now = realtime_ms();
        if (kretry_msg_header(msg, "kretry-due-ts", &v, &n) || n >= sizeof(buf))
                return;
        memcpy(buf, v, n);
        buf[n]      = '\0';
        double late = now - (double)strtoll(buf, NULL, 10);
        if (late < 0)
                k->early++;
        if (k->late_n < k->job->n)
                k->late[k->late_n++] = late;
}

/* BENCH_ORDERED_VERSIONED: does this attempt fail? A hash of the key, the
 * message's sequence number (the value's first 15 digits) and the attempt:
 * the same answers on both sides and in every run. */
static int k_fails(kretry_msg_t *msg) {
        size_t kl = 0, vl = 0;
        const unsigned char *key = kretry_msg_key(msg, &kl);
        const char *val          = kretry_msg_value(msg, &vl);
        uint64_t h               = 1469598103934665603ull; /* FNV-1a */
        for (size_t i = 0; key && i < kl; i++)
                h = (h ^ key[i]) * 1099511628211ull;
        long seq = 0;
        for (size_t i = 0; val && i < vl && i < 15; i++)
                seq = seq * 10 + (val[i] - '0');
        h ^= (uint64_t)seq * 0x9e3779b97f4a7c15ull;
        h ^= (uint64_t)kretry_msg_attempt(msg) * 0xc2b2ae3d27d4eb4full;
        h ^= h >> 33; /* splitmix64's finalizer */
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        return h % 100 < BENCH_FAIL_PERCENT;
}

static kretry_action_t k_handler(kretry_msg_t *msg, void *opaque) {
        kside_t *k = opaque;
        if (!atomic_load(&k->started)) {
                double t = bench_mono(), c = bench_cpu();
                if (!atomic_exchange(&k->started, 1)) {
                        k->w.t_first = t;
                        k->w.c_first = c;
                }
        }
        switch (k->job->kind) {
        case BENCH_HAPPY:
                break;
        case BENCH_PARALLEL: {
                /* The work is the sleep asked for: the thread's timer slack
                 * at 1 ns, not Linux's default 50 us, which every sleep
                 * would add to the work (once per worker thread). */
                static _Thread_local int precise;
                if (!precise)
                        precise = !prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
                long us            = bench_work_us(kretry_msg_offset(msg));
                struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
                double t0          = bench_mono();
                while (nanosleep(&ts, &ts))
                        ;
                atomic_fetch_add(&k->work_ns,
                                 (long long)((bench_mono() - t0) * 1e9));
                break;
        }
        case BENCH_DEAD_LETTER:
                return KRETRY_FAIL; /* completes in k_route, once durable */
        case BENCH_RETRY_HOP:
                if (kretry_msg_attempt(msg) == 1 &&
                    bench_hop_chosen(k->job->hop_pct, kretry_msg_partition(msg),
                                     kretry_msg_offset(msg)))
                        return KRETRY_RETRY;
                break;
        case BENCH_DELAY:
                if (k->job->at_once) /* happy_paced */
                        break;
                if (kretry_msg_attempt(msg) > 1) {
                        k_lateness(k, msg);
                        break;
                }
                if (!k->job->backlog_ms ||
                    kretry_msg_offset(msg) % BENCH_BACKLOG_EVERY == 0)
                        return KRETRY_RETRY;
                /* delay_backlog: the source's work, which queues up */
                struct timespec ts = {0, k->job->backlog_ms * 1000000L};
                while (nanosleep(&ts, &ts))
                        ;
                break;
        case BENCH_ORDERED_VERSIONED:
                /* completes in k_route: a new version is durable only once
                 * its changelog record is */
                return k_fails(msg) ? KRETRY_RETRY : KRETRY_OK;
        case BENCH_TIER_MEM: /* its own processes (bench_mem.c) */
                break;
        }
        k_complete(k);
        return KRETRY_OK;
}

static void k_route(const char *topic,
                    int32_t partition,
                    int64_t offset,
                    kretry_route_t route,
                    int tier,
                    const char *cls,
                    int attempt,
                    void *opaque) {
        (void)topic, (void)partition, (void)offset, (void)tier, (void)cls;
        (void)attempt;
        kside_t *k = opaque;
        if (route == KRETRY_ROUTE_DLQ && k->job->kind == BENCH_DEAD_LETTER)
                k_complete(k);
        /* Each message ends once: handled OK, skipped as stale, or (after
         * retry.max.attempts) dead-lettered. */
        if (k->job->kind == BENCH_ORDERED_VERSIONED &&
            (route == KRETRY_ROUTE_OK || route == KRETRY_ROUTE_STALE ||
             route == KRETRY_ROUTE_DLQ))
                k_complete(k);
}

static void k_log(kretry_log_level_t level,
                  const char *fac,
                  const char *msg,
                  void *opaque) {
        kside_t *k = opaque;
        if (!strcmp(fac, "REBALANCE") && !strncmp(msg, "assigned", 8))
                atomic_store(&k->assigned, 1);
        if (level <= KRETRY_LOG_WARNING || getenv("KRETRY_BENCH_DEBUG"))
                fprintf(stderr, "  [kretry %d %s] %s\n", (int)level, fac, msg);
}

static kretry_adapter_t *
k_adapter(const bench_job_t *job, kside_t *k, char *err, size_t err_size) {
        char group[128];
        snprintf(group, sizeof(group), "%s-%s", job->group,
                 job->plain ? "n" : "k");
        kretry_conf_t *conf    = kretry_conf_new();
        const char *props[][2] = {
                {"bootstrap.servers", job->bootstrap},
                {"group.id", group},
                {"source.topic", job->source},
                /* The "tier delay 0": an immediate retry. */
                {"retry.tiers",
                 job->kind == BENCH_DELAY && !job->hop ? "1s" : "0ms"},
                {"retry.jitter", "0%"},
        };
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
                if (kretry_conf_set(conf, props[i][0], props[i][1], err,
                                    err_size))
                        goto fail;
        if (job->concurrency > 0) {
                char c[16];
                snprintf(c, sizeof(c), "%d", job->concurrency);
                if (kretry_conf_set(conf, "handler.concurrency", c, err,
                                    err_size) ||
                    kretry_conf_set(conf, "ordering", job->ordering, err,
                                    err_size))
                        goto fail;
        }
        if (job->kind == BENCH_ORDERED_VERSIONED) {
                /* 5 % of attempts fail: 10 attempts make a dead letter
                 * (5 %^9) practically impossible. */
                const char *ov[][2] = {
                        {"retry.max.attempts", "10"},
                        {"ordering", job->plain ? "none" : "key"},
                        {"versioning.header", job->plain ? "" : "version"},
                        {"versioning.topic", job->versions},
                        {"retry.topic.pattern", job->plain
                                                        ? "{source}.n.retry.{n}"
                                                        : "{source}.retry.{n}"},
                        {"dlq.topic", job->plain ? job->plain_dlq : job->dlq},
                };
                for (size_t i = 0; i < sizeof(ov) / sizeof(ov[0]); i++)
                        if (kretry_conf_set(conf, ov[i][0], ov[i][1], err,
                                            err_size))
                                goto fail;
        }
        if (job->txn_ms > 0 && !job->plain) {
                char ms[16];
                snprintf(ms, sizeof(ms), "%d", job->txn_ms);
                if (kretry_conf_set(conf, "routing", "transactional", err,
                                    err_size) ||
                    kretry_conf_set(conf, "transaction.interval.ms", ms, err,
                                    err_size))
                        goto fail;
        } else if (job->txn_ms > 0 &&
                   (kretry_conf_set(conf, "retry.topic.pattern",
                                    "{source}.n.retry.{n}", err, err_size) ||
                    kretry_conf_set(conf, "dlq.topic", job->plain_dlq, err,
                                    err_size)))
                goto fail; /* at least once, beside it: its own topics */
        for (size_t i = 0; i < COMMON_PROPS; i++)
                if (!(job->fetch_default &&
                      !strcmp(common_props[i][0],
                              "consumer.fetch.wait.max.ms")) &&
                    kretry_conf_set(conf, common_props[i][0], common_value(i),
                                    err, err_size))
                        goto fail;
        if (bench_kretry_extra_props(conf, err, err_size))
                goto fail;
        kretry_conf_set_handler(conf, k_handler, k);
        kretry_conf_set_route_cb(conf, k_route);
        kretry_conf_set_log_cb(conf, k_log, k);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, err_size);
        if (a)
                return a;
fail:
        kretry_conf_destroy(conf);
        return NULL;
}

static void k_delay_stats(kside_t *k, bench_result_t *res) {
        long n = k->late_n;
        if (n == 0)
                return;
        qsort(k->late, (size_t)n, sizeof(double), cmp_double);
        res->p50_ms = k->late[(n - 1) / 2];
        long i99    = (long)((double)n * 0.99 + 0.999999) - 1;
        res->p99_ms = k->late[i99 < 0 ? 0 : i99];
        res->max_ms = k->late[n - 1];
        res->early  = k->early;
}

/* Members: joining, on the empty source. */
static int k_join(void *opaque) {
        kside_t *k = opaque;
        kretry_adapter_poll(k->a, 50);
        return (int)kretry_adapter_counter(k->a, KRETRY_COUNTER_ASSIGNED, 0);
}

int bench_kretry_side(const bench_job_t *job, int go_fd, int out_fd) {
        bench_result_t res;
        kside_t k;
        memset(&res, 0, sizeof(res));
        memset(&k, 0, sizeof(k));
        k.job = job;
        if (job->kind == BENCH_DELAY &&
            !(k.late = calloc((size_t)job->n, sizeof(double))))
                return 1;
        kretry_adapter_t *a = k_adapter(job, &k, res.err, sizeof(res.err));
        k.a                 = a;
        if (!a) {
                free(k.late);
                return setup_failed(out_fd, &res);
        }
        if (wait_go(job, go_fd, out_fd, k_join, &k)) { /* it gave up */
                kretry_adapter_destroy(a);
                free(k.late);
                return 1;
        }
        double deadline  = bench_mono() + job->timeout_s;
        int told         = 0;
        kretry_err_t err = KRETRY_ERR_OK;
        int trace        = job->kind == BENCH_ORDERED_VERSIONED &&
                    getenv("KRETRY_BENCH_DEBUG");
        double t_trace = 0;
        /* Until the last message's times are written, not only counted:
         * with workers, the count comes first. */
        while (!atomic_load(&k.ended) && !side_done_elsewhere(job) && !err &&
               bench_mono() < deadline) {
                err = kretry_adapter_poll(a, 100);
                k_committed(&k);
                if (trace && bench_mono() - t_trace >= 0.05) {
                        /* the key chains over time (ordering=key) */
                        t_trace = bench_mono();
                        fprintf(stderr,
                                "  [kretry%s] done %ld consumed %lld "
                                "forwarded %lld retried %lld chain keys "
                                "%lld held %lld\n",
                                job->plain ? " neither" : "", k.done,
                                (long long)kretry_adapter_counter(
                                        a, KRETRY_COUNTER_CONSUMED, 0),
                                (long long)kretry_adapter_counter(
                                        a, KRETRY_COUNTER_FORWARDED, 0),
                                (long long)kretry_adapter_counter(
                                        a, KRETRY_COUNTER_RETRIED, 0),
                                (long long)kretry_adapter_counter(
                                        a, KRETRY_COUNTER_CHAIN_KEYS, 0),
                                (long long)kretry_adapter_counter(
                                        a, KRETRY_COUNTER_HELD, 0));
                }
                if (job->kind == BENCH_DELAY && !told &&
                    atomic_load(&k.assigned)) {
                        char c = 'A';
                        told   = !bench_write_all(out_fd, &c, 1);
                }
        }
        res.done   = k.done;
        res.work_s = (double)atomic_load(&k.work_ns) / 1e9;
        if (atomic_load(&k.ended) || side_done_elsewhere(job))
                window_report(&k.w, atomic_load(&k.started),
                              atomic_load(&k.ended), &res);
        else
                snprintf(res.err, sizeof(res.err),
                         "kretry: %ld of %ld done (%s)", k.done, job->n,
                         err ? kretry_err2str(err) : "timed out");
        if (job->kind == BENCH_DELAY)
                k_delay_stats(&k, &res);
        res.forwarded =
                (long)kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED, 0);
        res.stale = (long)kretry_adapter_counter(a, KRETRY_COUNTER_STALE, 0);
        res.retried =
                (long)kretry_adapter_counter(a, KRETRY_COUNTER_RETRIED, 0);
        res.dlq = (long)kretry_adapter_counter(a, KRETRY_COUNTER_DLQ, 0);
        res.version_keys =
                (long)kretry_adapter_counter(a, KRETRY_COUNTER_VERSION_KEYS, 0);
        res.version_bytes = (long)kretry_adapter_counter(
                a, KRETRY_COUNTER_VERSION_BYTES, 0);
        res.txn_commits =
                (long)kretry_adapter_counter(a, KRETRY_COUNTER_TXN_COMMITS, 0);
        res.txn_aborts =
                (long)kretry_adapter_counter(a, KRETRY_COUNTER_TXN_ABORTS, 0);
        if (job->kind == BENCH_DELAY && !told) {
                char c = 'E'; /* instead of the 'A' the orchestrator awaits */
                bench_write_all(out_fd, &c, 1);
        }
        kretry_adapter_destroy(a);
        free(k.late);
        return bench_write_all(out_fd, &res, sizeof(res)) || !res.ok;
}

int bench_kretry_plain_side(const bench_job_t *job, int go_fd, int out_fd) {
        bench_job_t plain = *job;
        plain.plain       = 1;
        return bench_kretry_side(&plain, go_fd, out_fd);
}

/* ---- raw librdkafka ---- */

typedef struct {
        const bench_job_t *job;
        rd_kafka_t *c, *p;
        rd_kafka_topic_t *copy_rkt; /* held so its metadata is known early */
        long done, failed, consumed;
        window_t w;
        double t_consumed;
        int started, ended;
        int assigned; /* source partitions held (members join on them) */
        /* KRETRY_BENCH_RAW_HEADERS=contract: copies carry the header set a
         * kretry copy carries (DESIGN §3), and the retry_hop copy's due time
         * and attempt are read back when consumed, as a retry consumer
         * must. A diagnostic: how much of the gap is the size of the
         * header contract under librdkafka's header API. */
        int contract;
        long seen_due; /* bytes of the header values read back */
} rside_t;

static void r_complete(rside_t *r) {
        if (side_count(r->job, ++r->done) == r->job->n) {
                r->w.t_last = bench_mono();
                r->w.c_last = bench_cpu();
                r->ended    = 1;
        }
}

/* Done: this process completed the side's last message, or another
 * member did. */
static int r_finished(const rside_t *r) {
        return r->ended || side_done_elsewhere(r->job);
}

static void r_rebalance(rd_kafka_t *rk,
                        rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t *parts,
                        void *opaque) {
        rside_t *r = opaque;
        int assign = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
        rd_kafka_assign(rk, assign ? parts : NULL);
        r->assigned = 0;
        for (int i = 0; assign && i < parts->cnt; i++)
                r->assigned += !strcmp(parts->elems[i].topic, r->job->source);
}

/* The copy's delivery report: store the source offset (it is durable). */
static void r_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        rside_t *r              = opaque;
        rd_kafka_message_t *src = m->_private;
        if (m->err) {
                r->failed++;
        } else {
                rd_kafka_offset_store(src->rkt, src->partition, src->offset);
                if (r->job->kind == BENCH_DEAD_LETTER)
                        r_complete(r);
        }
        rd_kafka_message_destroy(src);
}

static rd_kafka_conf_t *
r_conf(const bench_job_t *job, rside_t *r, int consumer) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "bootstrap.servers", job->bootstrap, NULL, 0);
        for (size_t i = 0; i < COMMON_PROPS; i++) {
                const char *n = common_props[i][0];
                if (!strncmp(n, "consumer.", 9)) {
                        if (!consumer)
                                continue;
                        n += 9;
                }
                rd_kafka_conf_set(conf, n, common_value(i), NULL, 0);
        }
        rd_kafka_conf_set_opaque(conf, r);
        if (consumer) {
                char group[128];
                snprintf(group, sizeof(group), "%s-r", job->group);
                rd_kafka_conf_set(conf, "group.id", group, NULL, 0);
                rd_kafka_conf_set(conf, "enable.auto.offset.store", "false",
                                  NULL, 0);
                rd_kafka_conf_set_rebalance_cb(conf, r_rebalance);
        } else {
                /* The durability kretry's producer is fixed to. */
                rd_kafka_conf_set(conf, "enable.idempotence", "true", NULL, 0);
                rd_kafka_conf_set(conf, "acks", "all", NULL, 0);
                rd_kafka_conf_set_dr_msg_cb(conf, r_dr);
        }

        return conf;
}

static int r_setup(const bench_job_t *job, rside_t *r, char *err, size_t sz) {
        r->c = rd_kafka_new(RD_KAFKA_CONSUMER, r_conf(job, r, 1), err, sz);
        if (!r->c)
                return -1;
        rd_kafka_poll_set_consumer(r->c);
        if (job->kind != BENCH_HAPPY &&
            !(r->p = rd_kafka_new(RD_KAFKA_PRODUCER, r_conf(job, r, 0), err,
                                  sz)))
                return -1;
        /* Like kretry's producer: know the destination before the first
         * copy, or the first copies wait for a metadata refresh. */
        if (r->p)
                r->copy_rkt = rd_kafka_topic_new(r->p, job->copy, NULL);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(2);
        rd_kafka_topic_partition_list_add(l, job->source,
                                          RD_KAFKA_PARTITION_UA);
        if (job->kind == BENCH_RETRY_HOP)
                rd_kafka_topic_partition_list_add(l, job->copy,
                                                  RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(r->c, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (e)
                snprintf(err, sz, "subscribe: %s", rd_kafka_err2str(e));
        return e ? -1 : 0;
}

static void r_add_num(rd_kafka_headers_t *h, const char *name, int64_t v) {
        char b[24];
        int n = snprintf(b, sizeof(b), "%lld", (long long)v);
        rd_kafka_header_add(h, name, -1, b, n);
}

/* The chain headers a kretry copy of @p m carries (its first failure). */
static void r_add_contract(const rside_t *r,
                           rd_kafka_headers_t *h,
                           const rd_kafka_message_t *m,
                           int64_t now) {
        int tier = r->job->kind == BENCH_RETRY_HOP;
        char id[256];
        int n = snprintf(id, sizeof(id), "%s/%d/%lld", r->job->source,
                         (int)m->partition, (long long)m->offset);
        r_add_num(h, "kretry-attempt", 1);
        if (tier) {
                r_add_num(h, "kretry-tier", 1);
                r_add_num(h, "kretry-due-ts", now + 1);
        }
        rd_kafka_header_add(h, "kretry-original-topic", -1, r->job->source, -1);
        r_add_num(h, "kretry-original-partition", m->partition);
        r_add_num(h, "kretry-original-offset", m->offset);
        r_add_num(h, "kretry-original-timestamp",
                  rd_kafka_message_timestamp(m, NULL));
        r_add_num(h, "kretry-first-failure-ts", now);
        r_add_num(h, "kretry-last-failure-ts", now);
        rd_kafka_header_add(h, "kretry-error-class", -1,
                            tier ? "transient" : "permanent", -1);
        rd_kafka_header_add(h, "kretry-group", -1, r->job->group, -1);
        rd_kafka_header_add(h, "kretry-correlation-id", -1, id, n);
}

/* Produce a copy of @p m with three added headers (or the contract's),
 * borrowing its key and value until the delivery report. */
static void r_copy(rside_t *r, rd_kafka_message_t *m, const char *topic) {
        rd_kafka_headers_t *src, *h;
        h = rd_kafka_message_headers(m, &src) ? rd_kafka_headers_new(3)
                                              : rd_kafka_headers_copy(src);
        if (r->contract) {
                r_add_contract(r, h, m, realtime_ms());
        } else {
                r_add_num(h, "retry-attempt", 1);
                r_add_num(h, "retry-due-ts", realtime_ms() + 1);
                r_add_num(h, "retry-original-offset", m->offset);
        }
        for (;;) {
                rd_kafka_resp_err_t err = rd_kafka_producev(
                        r->p, RD_KAFKA_V_TOPIC(topic),
                        RD_KAFKA_V_PARTITION(m->partition),
                        RD_KAFKA_V_KEY(m->key, m->key_len),
                        RD_KAFKA_V_VALUE(m->payload, m->len),
                        RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_HEADERS(h),
                        RD_KAFKA_V_OPAQUE(m), RD_KAFKA_V_END);
                if (!err)
                        return;
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        rd_kafka_headers_destroy(h);
                        rd_kafka_message_destroy(m);
                        r->failed++;
                        return;
                }
                rd_kafka_poll(r->p, 10);
        }
}

static void r_handle(rside_t *r, rd_kafka_message_t *m) {
        if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                        fprintf(stderr, "  [raw] %s\n",
                                rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                return;
        }
        if (!r->started) {
                r->started   = 1;
                r->w.t_first = bench_mono();
                r->w.c_first = bench_cpu();
        }
        const bench_job_t *job = r->job;
        if (++r->consumed == job->n)
                r->t_consumed = bench_mono();
        if (job->kind == BENCH_HAPPY ||
            (job->kind == BENCH_RETRY_HOP &&
             (!strcmp(rd_kafka_topic_name(m->rkt), job->copy) ||
              !bench_hop_chosen(job->hop_pct, m->partition, m->offset)))) {
                rd_kafka_headers_t *h;
                const void *v;
                size_t n;
                if (r->contract && !rd_kafka_message_headers(m, &h)) {
                        /* What a retry consumer reads before handling. */
                        if (!rd_kafka_header_get_last(h, "kretry-due-ts", &v,
                                                      &n))
                                r->seen_due += n;
                        if (!rd_kafka_header_get_last(h, "kretry-attempt", &v,
                                                      &n))
                                r->seen_due += n;
                }
                rd_kafka_offset_store(m->rkt, m->partition, m->offset);
                rd_kafka_message_destroy(m);
                r_complete(r);
                return;
        }
        r_copy(r, m, job->copy);
}

/* Members: joining, on the empty source. */
static int r_join(void *opaque) {
        rside_t *r            = opaque;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(r->c, 50);
        if (m)
                r_handle(r, m);
        return r->assigned;
}

/* Consume -> produce: like kretry, wait on an eventfd both clients signal,
 * then serve consumer messages and delivery reports without blocking. */
static void r_loop_produce(rside_t *r, double deadline) {
        static const uint64_t one = 1;
        int efd                   = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        rd_kafka_queue_t *cq      = rd_kafka_queue_get_consumer(r->c);
        rd_kafka_queue_t *pq      = rd_kafka_queue_get_main(r->p);
        rd_kafka_queue_io_event_enable(cq, efd, &one, sizeof(one));
        rd_kafka_queue_io_event_enable(pq, efd, &one, sizeof(one));
        while (!r_finished(r) && !r->failed && bench_mono() < deadline) {
                int work = rd_kafka_poll(r->p, 0);
                for (int i = 0; i < 500; i++) {
                        if (i > 0 && i % 16 == 0)
                                work += rd_kafka_poll(r->p, 0);
                        rd_kafka_message_t *m = rd_kafka_consumer_poll(r->c, 0);
                        if (!m)
                                break;
                        work++;
                        r_handle(r, m);
                }
                if (work)
                        continue;
                struct pollfd pfd = {.fd = efd, .events = POLLIN};
                uint64_t v;
                if (poll(&pfd, 1, 100) > 0)
                        while (read(efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
                                ;
        }
        rd_kafka_queue_io_event_enable(cq, -1, NULL, 0);
        rd_kafka_queue_io_event_enable(pq, -1, NULL, 0);
        rd_kafka_queue_destroy(cq);
        rd_kafka_queue_destroy(pq);
        close(efd);
}

int bench_raw_side(const bench_job_t *job, int go_fd, int out_fd) {
        bench_result_t res;
        rside_t r;
        memset(&res, 0, sizeof(res));
        memset(&r, 0, sizeof(r));
        r.job          = job;
        const char *hs = getenv("KRETRY_BENCH_RAW_HEADERS");
        r.contract     = hs && !strcmp(hs, "contract");
        if (hs && *hs && !r.contract) {
                snprintf(res.err, sizeof(res.err),
                         "KRETRY_BENCH_RAW_HEADERS=%s: only \"contract\" is "
                         "known",
                         hs);
                return setup_failed(out_fd, &res);
        }
        if (r_setup(job, &r, res.err, sizeof(res.err)))
                return setup_failed(out_fd, &res);
        if (wait_go(job, go_fd, out_fd, r_join, &r))
                return 1; /* the orchestrator gave up */
        double deadline = bench_mono() + job->timeout_s;
        if (job->kind == BENCH_HAPPY) {
                while (!r_finished(&r) && bench_mono() < deadline) {
                        rd_kafka_message_t *m =
                                rd_kafka_consumer_poll(r.c, 100);
                        if (m)
                                r_handle(&r, m);
                }
        } else {
                r_loop_produce(&r, deadline);
        }
        res.done = r.done;
        if (getenv("KRETRY_BENCH_DEBUG"))
                fprintf(stderr,
                        "  [raw] %ld consumed, %ld done (all %ld consumed "
                        "%.3f s after the first, or 0: not here)\n",
                        r.consumed, r.done, job->n,
                        r.t_consumed ? r.t_consumed - r.w.t_first : 0.0);
        if (r_finished(&r) && !r.failed)
                window_report(&r.w, r.started, r.ended, &res);
        else
                snprintf(res.err, sizeof(res.err),
                         "raw: %ld of %ld done, %ld copies failed", r.done,
                         job->n, r.failed);
        if (r.p) {
                rd_kafka_flush(r.p, 10000);
                if (r.copy_rkt)
                        rd_kafka_topic_destroy(r.copy_rkt);
                rd_kafka_destroy(r.p);
        }
        rd_kafka_consumer_close(r.c);
        rd_kafka_destroy(r.c);
        return bench_write_all(out_fd, &res, sizeof(res)) || !res.ok;
}
