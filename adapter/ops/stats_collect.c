#include "stats_collect.h"

#include "dlq_reader.h" /* dlq_client_conf(): clients from a topology file */
#include "stats_kafka.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void
topic_init(stats_topic_t *s, const char *name, stats_role_t role, int tier) {
        memset(s, 0, sizeof(*s));
        snprintf(s->topic, sizeof(s->topic), "%s", name);
        s->role       = role;
        s->tier       = tier;
        s->partitions = -1;
        s->waiting    = -1;
        s->oldest_ts  = -1;
}

/* Source, tiers, DLQ, in that order; the limits from alerts:. */
static stats_topic_t *topics_of(const kretry_topology_t *t, stats_report_t *r) {
        stats_topic_t *v = calloc((size_t)t->tier_cnt + 2, sizeof(*v));
        if (!v)
                return NULL;
        topic_init(&v[0], t->source, STATS_ROLE_SOURCE, 0);
        for (int i = 0; i < t->tier_cnt; i++) {
                topic_init(&v[i + 1], t->tier_topics[i], STATS_ROLE_TIER,
                           i + 1);
                v[i + 1].allowance_ms =
                        stats_tier_allowance_ms(t->tiers_ms[i], t->jitter);
        }
        topic_init(&v[t->tier_cnt + 1], t->dlq, STATS_ROLE_DLQ, 0);
        r->topology             = t->name;
        r->group                = t->group;
        r->topics               = v;
        r->topic_cnt            = (size_t)t->tier_cnt + 2;
        r->limits.dlq_messages  = t->alerts ? t->alert_dlq_messages : -1;
        r->limits.oldest_age_ms = t->alerts ? t->alert_oldest_age_ms : 0;
        r->limits.dlq_rate      = t->alerts ? t->alert_dlq_rate : 0;
        return v;
}

/* What the cluster did not answer is reported per topic; librdkafka's
 * connection retries would only repeat it (--verbose shows them). */
static void
quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
        (void)rk;
        (void)level;
        (void)fac;
        (void)buf;
}

static int64_t wall_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms) {
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) == -1)
                ;
}

/* Everything the cluster is asked, into @p r's topics. */
static int gather(stats_io_t *io,
                  stats_report_t *r,
                  int64_t window_ms,
                  char *errstr,
                  size_t errstr_size) {
        stats_part_t **before = NULL, **after = NULL;
        int rc = -1;
        if (stats_io_metadata(io, errstr, errstr_size))
                return -1;
        if (!(before = stats_io_parts_new(io)) ||
            !(after = stats_io_parts_new(io))) {
                snprintf(errstr, errstr_size, "out of memory");
                goto out;
        }
        if (window_ms > 0) {
                stats_io_snapshot(io, before);
                sleep_ms(window_ms);
        }
        stats_io_snapshot(io, after);
        r->at_ms     = wall_ms();
        r->window_ms = window_ms;
        for (size_t i = 0; i < io->topic_cnt; i++)
                stats_topic_depth(&r->topics[i], after[i], io->topics[i].cnt);
        stats_io_oldest(io, after, r->at_ms);
        for (size_t i = 0; i < io->topic_cnt; i++)
                stats_topic_rates(&r->topics[i], before[i], after[i],
                                  io->topics[i].cnt, window_ms);
        rc = 0;
out:
        stats_io_parts_free(io, before);
        stats_io_parts_free(io, after);
        return rc;
}

void stats_report_free(stats_report_t *r) {
        if (!r)
                return;
        free(r->topics);
        free(r);
}

stats_report_t *stats_collect(const kretry_topology_file_t *f,
                              const kretry_topology_t *t,
                              const char *bootstrap,
                              int64_t window_ms,
                              int timeout_ms,
                              int verbose,
                              char *errstr,
                              size_t errstr_size) {
        stats_io_t io         = {0};
        stats_report_t *r     = calloc(1, sizeof(*r));
        rd_kafka_conf_t *conf = NULL;
        int rc                = -1;
        snprintf(errstr, errstr_size, "out of memory");
        if (!r || !topics_of(t, r) ||
            !(io.topics = calloc(r->topic_cnt, sizeof(*io.topics))))
                goto out;
        io.topic_cnt = r->topic_cnt;
        for (size_t i = 0; i < r->topic_cnt; i++)
                io.topics[i].fig = &r->topics[i];
        conf = dlq_client_conf(f, bootstrap, 1, errstr, errstr_size);
        if (conf && !verbose)
                rd_kafka_conf_set_log_cb(conf, quiet_log);
        if (!conf ||
            stats_io_open(&io, conf, t->group, timeout_ms, errstr, errstr_size))
                goto out;
        if (gather(&io, r, window_ms, errstr, errstr_size))
                goto out;
        stats_evaluate(r);
        rc = 0;
out:
        stats_io_close(&io);
        free(io.topics);
        if (rc) {
                stats_report_free(r);
                r = NULL;
        }
        return r;
}
