/*
 * tier_mem: the memory of an adapter while messages wait in a tier. The
 * processes of one run (bench/README.md):
 *
 * - a router: a kretry adapter whose handler answers RETRY, with one long
 *   tier (1h, no jitter), so every input message becomes a tier copy that
 *   will not be due for an hour; it exits once every copy is acknowledged
 *   and its source offsets are committed;
 * - a waiting adapter: fresh, in the router's group, same configuration; it
 *   joins, holds the head of every tier partition (KRETRY_COUNTER_HELD ==
 *   partitions) and finds nothing left on the source; once its RSS has
 *   settled it reads VmRSS and VmHWM from /proc/self/status. The same
 *   process on an empty source and tier (its own group, same partition
 *   count) is the baseline;
 * - a watermark check: high minus low watermark over the tier's partitions,
 *   the messages the mock really kept.
 *
 * Both adapters run with kretry's default client settings, plus
 * KRETRY_BENCH_KRETRY_PROPS for experiments.
 */
#include "bench.h"
#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A settled RSS: this many 200 ms samples in a row within SETTLE_KB of one
 * another, and at least SETTLE_MIN_S seconds after the heads were held. */
#define SETTLE_SAMPLES 5
#define SETTLE_KB 16
#define SETTLE_MIN_S 2.0
#define SETTLE_MAX_S 8.0

typedef struct {
        const bench_job_t *job;
        long routed;        /* router: copies acknowledged in the tier */
        long other;         /* router: any other outcome (none expected) */
        atomic_int parts;   /* partitions in the last assignment */
        atomic_int assigns; /* assignments seen */
} mside_t;

static kretry_action_t m_handler(kretry_msg_t *msg, void *opaque) {
        (void)msg, (void)opaque;
        return KRETRY_RETRY;
}

static void m_route(const char *topic,
                    int32_t partition,
                    int64_t offset,
                    kretry_route_t route,
                    int tier,
                    const char *cls,
                    int attempt,
                    void *opaque) {
        (void)topic, (void)partition, (void)offset, (void)cls, (void)attempt;
        mside_t *m = opaque;
        if (route == KRETRY_ROUTE_RETRY && tier == 1)
                m->routed++;
        else
                m->other++;
}

/* "assigned N partition(s): ..." (INFO, REBALANCE) */
static void m_log(kretry_log_level_t level,
                  const char *fac,
                  const char *msg,
                  void *opaque) {
        mside_t *m = opaque;
        if (!strcmp(fac, "REBALANCE") && !strncmp(msg, "assigned ", 9)) {
                atomic_store(&m->parts, atoi(msg + 9));
                atomic_fetch_add(&m->assigns, 1);
        }
        if (level <= KRETRY_LOG_WARNING || getenv("KRETRY_BENCH_DEBUG"))
                fprintf(stderr, "  [kretry mem %d %s] %s\n", (int)level, fac,
                        msg);
}

/* The router's and the waiting adapter's configuration: kretry's defaults
 * but for the topics, the group and one long tier. */
static kretry_adapter_t *
m_adapter(const bench_job_t *job, mside_t *m, char *err, size_t err_size) {
        char group[128];
        snprintf(group, sizeof(group), "%s-%s", job->group,
                 job->empty ? "e" : "m");
        kretry_conf_t *conf    = kretry_conf_new();
        const char *props[][2] = {
                {"bootstrap.servers", job->bootstrap},
                {"group.id", group},
                {"source.topic", job->empty ? job->empty_source : job->source},
                {"retry.tiers", "1h"},
                {"retry.jitter", "0%"},
                /* The one client setting changed: the waiting adapter joins
                 * the group the router just left, which the mock holds in
                 * a rebalance for session.timeout.ms - 1 s (44 s at the
                 * default 45 s). */
                {"session.timeout.ms", "6000"},
        };
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
                if (kretry_conf_set(conf, props[i][0], props[i][1], err,
                                    err_size))
                        goto fail;
        if (bench_kretry_extra_props(conf, err, err_size))
                goto fail;
        kretry_conf_set_handler(conf, m_handler, m);
        kretry_conf_set_route_cb(conf, m_route);
        kretry_conf_set_log_cb(conf, m_log, m);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, err_size);
        if (a)
                return a;
fail:
        kretry_conf_destroy(conf);
        return NULL;
}

/* A process's state, its result and its adapter (NULL: res.err says why). */
static kretry_adapter_t *
m_start(const bench_job_t *job, mside_t *m, bench_result_t *res) {
        memset(res, 0, sizeof(*res));
        memset(m, 0, sizeof(*m));
        m->job = job;
        return m_adapter(job, m, res->err, sizeof(res->err));
}

int bench_mem_router(const bench_job_t *job, int go_fd, int out_fd) {
        bench_result_t res;
        mside_t m;
        (void)go_fd;
        kretry_adapter_t *a = m_start(job, &m, &res);
        if (!a)
                return bench_write_all(out_fd, &res, sizeof(res)), 1;
        double t0 = bench_mono(), deadline = t0 + job->timeout_s;
        kretry_err_t err = KRETRY_ERR_OK;
        while (m.routed + m.other < job->n && !err && bench_mono() < deadline)
                err = kretry_adapter_poll(a, 100);
        res.secs = bench_mono() - t0;
        /* Commits the source offsets synchronously and leaves the group. */
        kretry_err_t cerr = kretry_adapter_close(a);
        res.done          = m.routed;
        res.ok            = m.routed == job->n && !m.other && !err && !cerr;
        if (!res.ok)
                snprintf(res.err, sizeof(res.err),
                         "router: %ld of %ld copies in the tier, %ld other "
                         "outcomes (%s)",
                         m.routed, job->n, m.other,
                         err    ? kretry_err2str(err)
                         : cerr ? kretry_err2str(cerr)
                                : "timed out");
        kretry_adapter_destroy(a);
        return bench_write_all(out_fd, &res, sizeof(res)) || !res.ok;
}

/* VmRSS and VmHWM of this process, KB. */
static int proc_mem(long *rss_kb, long *hwm_kb) {
        char line[256];
        int found = 0;
        FILE *f   = fopen("/proc/self/status", "r");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f)) {
                if (!strncmp(line, "VmRSS:", 6) && ++found)
                        *rss_kb = atol(line + 6);
                else if (!strncmp(line, "VmHWM:", 6) && ++found)
                        *hwm_kb = atol(line + 6);
        }
        fclose(f);
        return found == 2 ? 0 : -1;
}

/* Serve the adapter for @p ms (poll returns early when it did work). */
static kretry_err_t serve(kretry_adapter_t *a, int ms) {
        double until     = bench_mono() + ms / 1e3;
        kretry_err_t err = KRETRY_ERR_OK;
        double left;
        while (!err && (left = until - bench_mono()) > 0)
                err = kretry_adapter_poll(a, (int)(left * 1e3) + 1);
        return err;
}

int bench_mem_waiting(const bench_job_t *job, int go_fd, int out_fd) {
        bench_result_t res;
        mside_t m;
        (void)go_fd;
        long want_held      = job->empty ? 0 : job->want_held;
        kretry_adapter_t *a = m_start(job, &m, &res);
        if (!a)
                return bench_write_all(out_fd, &res, sizeof(res)), 1;
        double t0 = bench_mono(), deadline = t0 + job->timeout_s;
        kretry_err_t err = KRETRY_ERR_OK;
        /* Assigned (source and tier partitions), every head held. */
        while (!err && bench_mono() < deadline &&
               (atomic_load(&m.parts) < 2 * job->partitions ||
                kretry_adapter_counter(a, KRETRY_COUNTER_HELD, 0) < want_held))
                err = kretry_adapter_poll(a, 100);
        double t_held = bench_mono();
        res.secs      = t_held - t0;
        /* Settle: 200 ms samples until RSS stops moving. */
        long samples[SETTLE_SAMPLES], hwm = 0;
        int cnt = 0, settled = 0;
        while (!err && bench_mono() < deadline &&
               bench_mono() - t_held < SETTLE_MAX_S) {
                err = serve(a, 200);
                if (proc_mem(&samples[cnt % SETTLE_SAMPLES], &hwm))
                        break;
                cnt++;
                long lo = samples[0], hi = samples[0];
                for (int i = 1; i < SETTLE_SAMPLES && i < cnt; i++) {
                        lo = samples[i] < lo ? samples[i] : lo;
                        hi = samples[i] > hi ? samples[i] : hi;
                }
                if (cnt >= SETTLE_SAMPLES && hi - lo <= SETTLE_KB &&
                    bench_mono() - t_held >= SETTLE_MIN_S) {
                        settled = 1;
                        break;
                }
        }
        res.settle_s = bench_mono() - t_held;
        proc_mem(&res.vm_rss_kb, &res.vm_hwm_kb);
        res.held = (long)kretry_adapter_counter(a, KRETRY_COUNTER_HELD, 0);
        res.handler_calls = (long)kretry_adapter_counter(
                a, KRETRY_COUNTER_HANDLER_CALLS, 0);
        res.consumed =
                (long)kretry_adapter_counter(a, KRETRY_COUNTER_CONSUMED, 0);
        res.assigned = atomic_load(&m.parts);
        res.settled  = settled;
        /* An RSS still moving after SETTLE_MAX_S is read anyway and
         * reported as such (a sanitizer's allocator never settles). */
        res.ok = !err && res.held == want_held && res.handler_calls == 0 &&
                 res.assigned == 2 * job->partitions;
        if (!res.ok)
                snprintf(res.err, sizeof(res.err),
                         "%s adapter: %d partitions assigned, held %ld of "
                         "%ld, handler calls %ld, %s (%s)",
                         job->empty ? "baseline" : "waiting", res.assigned,
                         res.held, want_held, res.handler_calls,
                         settled ? "settled" : "RSS not settled",
                         err ? kretry_err2str(err) : "-");
        kretry_adapter_destroy(a);
        return bench_write_all(out_fd, &res, sizeof(res)) || !res.ok;
}

int bench_mem_baseline(const bench_job_t *job, int go_fd, int out_fd) {
        bench_job_t empty = *job;
        empty.empty       = 1;
        return bench_mem_waiting(&empty, go_fd, out_fd);
}

/* Sum over the tier's partitions of high minus low watermark: what the
 * mock kept (it drops the oldest data of a full partition silently). */
int bench_mem_watermarks(const bench_job_t *job, int go_fd, int out_fd) {
        bench_result_t res;
        char errstr[256];
        (void)go_fd;
        memset(&res, 0, sizeof(res));
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "bootstrap.servers", job->bootstrap, NULL, 0);
        rd_kafka_conf_set(conf, "log_level", "4", NULL, 0);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk) {
                snprintf(res.err, sizeof(res.err), "watermarks: %.180s",
                         errstr);
                return bench_write_all(out_fd, &res, sizeof(res)), 1;
        }
        rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
        for (int p = 0; p < job->partitions && !e; p++) {
                int64_t lo = 0, hi = 0;
                e = rd_kafka_query_watermark_offsets(rk, job->tier, p, &lo, &hi,
                                                     10000);
                res.waiting += (long)(hi - lo);
                if (hi > lo)
                        res.nonempty_parts++;
                if (hi - lo > res.max_part)
                        res.max_part = (long)(hi - lo);
                if (lo > 0)
                        res.dropped_parts++;
        }
        rd_kafka_destroy(rk);
        res.ok = !e;
        if (e)
                snprintf(res.err, sizeof(res.err), "watermarks: %s",
                         rd_kafka_err2str(e));
        return bench_write_all(out_fd, &res, sizeof(res)) || !res.ok;
}
