/*
 * kretry dlq replay: republish what the filters select from a topology's
 * DLQ to its source (or one of its tiers), rate-limited and in batches.
 *
 * Resumability: positions in the DLQ are committed under the group
 * "<group>.kretry-replay" only after every produce of the batch was
 * acknowledged (idempotent producer, acks=all). A replay killed at any
 * instant therefore resumes at the last committed batch and repeats at most
 * the batch that was in flight. Messages the filters skip are marked done
 * with their batch; --restart reads from the beginning again.
 */
#include "dlq_ops.h"
#include "dlq_reader.h"
#include "ratelimit.h"
#include "replay_headers.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
        const dlq_opts_t *o;
        dlq_replay_ctl_t *ctl; /* the caller's: stop, counters, events */
        const kretry_topology_t *t;
        const char *target;
        int tier; /* of the target, 0: the source */
        int target_parts;
        dlq_reader_t *r;
        rd_kafka_t *producer;
        kretry_bucket_t bucket;
        int64_t read, replayed, in_batch, total;
        int64_t acked, failed; /* delivery reports */
        char dr_err[256];
        int pause_due; /* a batch ended: pause before the next one */
} replay_t;

static int64_t mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void nap_us(int64_t us) {
        struct timespec ts = {(time_t)(us / 1000000),
                              (long)(us % 1000000) * 1000};
        nanosleep(&ts, NULL);
}

static int stopped(const replay_t *rp) {
        return atomic_load(&rp->ctl->stop);
}

/* Why the replay fails, for the caller in ctl->error (the first reason). */
static void fail(replay_t *rp, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (!rp->ctl->error[0])
                snprintf(rp->ctl->error, sizeof(rp->ctl->error), "%s", msg);
}

/* Counters for a watcher. */
static void publish(const replay_t *rp) {
        atomic_store(&rp->ctl->total, rp->total);
        atomic_store(&rp->ctl->read, rp->read);
        atomic_store(&rp->ctl->replayed, rp->replayed);
}

/* Tell the caller, with the counters published first. */
static void
event(replay_t *rp, dlq_replay_event_t ev, const rd_kafka_message_t *m) {
        publish(rp);
        if (rp->ctl->event_cb)
                rp->ctl->event_cb(rp->ctl, ev, m, rp->ctl->opaque);
}

int dlq_replay_tier(const char *to, const kretry_topology_t *t) {
        char *end;
        if (!to || !strcmp(to, "source") || !strcmp(to, t->source))
                return 0;
        if (!strncmp(to, "tier:", 5)) {
                long n = strtol(to + 5, &end, 10);
                return to[5] && !*end && n >= 1 && n <= t->tier_cnt ? (int)n
                                                                    : -1;
        }
        for (int i = 0; i < t->tier_cnt; i++)
                if (!strcmp(to, t->tier_topics[i]))
                        return i + 1;
        return -1;
}

static void
on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        replay_t *rp = opaque;
        (void)rk;
        if (!m->err) {
                rp->acked++;
                return;
        }
        if (!rp->failed++)
                snprintf(rp->dr_err, sizeof(rp->dr_err), "%s [%d]: %s",
                         rd_kafka_topic_name(m->rkt), (int)m->partition,
                         rd_kafka_err2str(m->err));
}

static int producer_new(replay_t *rp, const dlq_target_t *tg) {
        char errstr[1024];
        rd_kafka_conf_t *conf = dlq_client_conf(tg->f, rp->o->bootstrap, 0,
                                                errstr, sizeof(errstr));
        if (conf &&
            (rd_kafka_conf_set(conf, "enable.idempotence", "true", errstr,
                               sizeof(errstr)) ||
             rd_kafka_conf_set(conf, "acks", "all", errstr, sizeof(errstr)))) {
                rd_kafka_conf_destroy(conf);
                conf = NULL;
        }
        if (conf) {
                rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
                rd_kafka_conf_set_opaque(conf, rp);
                rp->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr,
                                            sizeof(errstr));
                if (!rp->producer)
                        rd_kafka_conf_destroy(conf);
        }
        if (!rp->producer)
                fail(rp, "producer: %s", errstr);
        return rp->producer ? 0 : -1;
}

/* The target's partition count, from the cluster. */
static int target_partitions(replay_t *rp) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt =
                rd_kafka_topic_new(rp->producer, rp->target, NULL);
        rd_kafka_resp_err_t err =
                rd_kafka_metadata(rp->producer, 0, rkt, &md, rp->o->timeout_ms);
        if (!err && (md->topic_cnt != 1 || md->topics[0].err))
                err = md->topic_cnt == 1 ? md->topics[0].err
                                         : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
        if (!err)
                rp->target_parts = md->topics[0].partition_cnt;
        if (err)
                fail(rp, "%s: %s", rp->target, rd_kafka_err2str(err));
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        return err || rp->target_parts <= 0 ? -1 : 0;
}

/* Where a replayed message goes: the partition it first entered (tier
 * partitions follow their source partition, and the original producer's
 * partitioner chose it), else the DLQ partition's number, else the
 * partitioner. */
static int32_t target_partition(const replay_t *rp,
                                const rd_kafka_message_t *m,
                                const rd_kafka_headers_t *h) {
        kretry_dlq_info_t info; /* kretry's headers, Spring's or Connect's */
        kretry_dlq_info_decode(h, &info);
        const kretry_chain_t *c = &info.chain;
        if (c->orig_partition_ok && c->orig_partition < rp->target_parts)
                return c->orig_partition;
        if (m->partition < rp->target_parts)
                return m->partition;
        return RD_KAFKA_PARTITION_UA;
}

/* Wait for a token; serves delivery reports meanwhile. */
static void take_token(replay_t *rp) {
        int64_t wait;
        while (!stopped(rp) &&
               (wait = kretry_bucket_take(&rp->bucket, mono_us())) > 0) {
                rd_kafka_poll(rp->producer, 0);
                nap_us(wait < 50000 ? wait : 50000);
        }
}

static int produce(replay_t *rp, const rd_kafka_message_t *m) {
        rd_kafka_headers_t *src = NULL;
        rd_kafka_message_headers(m, &src);
        rd_kafka_headers_t *h = kretry_replay_headers(src, dlq_now_ms(),
                                                      rp->tier, rp->t->source);
        if (!h)
                return -1;
        int32_t part = target_partition(rp, m, src);
        rd_kafka_resp_err_t err;
        while ((err = rd_kafka_producev(
                        rp->producer, RD_KAFKA_V_TOPIC(rp->target),
                        RD_KAFKA_V_PARTITION(part),
                        RD_KAFKA_V_KEY(m->key, m->key_len),
                        RD_KAFKA_V_VALUE(m->payload, m->len),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END)) ==
               RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(rp->producer, 100);
        if (err) {
                rd_kafka_headers_destroy(h);
                fail(rp, "produce to %s: %s", rp->target,
                     rd_kafka_err2str(err));
                return -1;
        }
        return 0;
}

/* Every produce of the batch acknowledged, then its positions committed:
 * the order that bounds a resumed replay's repeats to one batch. */
static int end_batch(replay_t *rp) {
        char errstr[512];
        rd_kafka_resp_err_t err =
                rd_kafka_flush(rp->producer, rp->o->timeout_ms * 6);
        if (err || rp->failed) {
                fail(rp,
                     "not acknowledged: %s; progress not committed for "
                     "this batch",
                     rp->failed ? rp->dr_err : rd_kafka_err2str(err));
                return -1;
        }
        if (dlq_reader_commit(rp->r, errstr, sizeof(errstr))) {
                fail(rp, "%s", errstr);
                return -1;
        }
        rp->in_batch = 0;
        return 0;
}

static void pause_between(replay_t *rp) {
        int64_t until = mono_us() + rp->o->pause_ms * 1000;
        int64_t now;
        while (!stopped(rp) && (now = mono_us()) < until) {
                rd_kafka_poll(rp->producer, 0);
                event(rp, DLQ_REPLAY_PROGRESS, NULL);
                nap_us(until - now < 50000 ? until - now : 50000);
        }
}

/* One message read: replayed (or listed, dry run) when selected; marked
 * done either way. Returns 0, 1 when --max is reached, or -1. */
static int handle(replay_t *rp, const rd_kafka_message_t *m) {
        const dlq_opts_t *o = rp->o;
        rp->read++;
        if (dlq_selected(o, m)) {
                if (o->dry_run) {
                        event(rp, DLQ_REPLAY_LISTED, m);
                } else {
                        if (rp->pause_due) { /* not after the last batch */
                                pause_between(rp);
                                rp->pause_due = 0;
                        }
                        take_token(rp);
                        if (stopped(rp))
                                return 1; /* not produced: not marked */
                        if (produce(rp, m))
                                return -1;
                        rp->in_batch++;
                }
                rp->replayed++;
        }
        dlq_reader_mark(rp->r, m->partition, m->offset);
        if (!o->dry_run && rp->in_batch >= o->batch) {
                if (end_batch(rp))
                        return -1;
                rp->pause_due = o->pause_ms > 0;
        }
        event(rp, DLQ_REPLAY_PROGRESS, NULL);
        return o->max && rp->replayed >= o->max ? 1 : 0;
}

static int run(replay_t *rp) {
        char errstr[1024];
        rd_kafka_message_t *m;
        int rc = 0, got;
        while (!stopped(rp) && rc == 0 &&
               (got = dlq_reader_next(rp->r, &m, errstr, sizeof(errstr))) !=
                       0) {
                if (got < 0) {
                        fail(rp, "%s", errstr);
                        rc = -1;
                        break;
                }
                rc = handle(rp, m);
                rd_kafka_message_destroy(m);
        }
        if (!rp->o->dry_run && rc >= 0 && end_batch(rp))
                rc = -1;
        event(rp, DLQ_REPLAY_ENDED, NULL);
        return rc < 0 ? -1 : 0;
}

static int open_reader(replay_t *rp, const dlq_target_t *tg) {
        char errstr[1024];
        rd_kafka_conf_t *conf = dlq_client_conf(tg->f, rp->o->bootstrap, 1,
                                                errstr, sizeof(errstr));
        if (conf)
                rp->r = dlq_reader_new(conf, rp->t->dlq, rp->ctl->group,
                                       rp->o->timeout_ms, errstr,
                                       sizeof(errstr));
        if (!rp->r || dlq_reader_snapshot(rp->r, !rp->o->restart, errstr,
                                          sizeof(errstr))) {
                fail(rp, "%s", errstr);
                return -1;
        }
        rp->total = dlq_reader_total(rp->r);
        publish(rp);
        return 0;
}

/* Open the clients, then read the snapshot through. */
static int replay(replay_t *rp, const dlq_target_t *tg) {
        const dlq_opts_t *o = rp->o;
        int rc              = 1;
        if ((o->dry_run || !producer_new(rp, tg)) &&
            (o->dry_run || !target_partitions(rp)) && !open_reader(rp, tg)) {
                event(rp, DLQ_REPLAY_STARTED, NULL);
                kretry_bucket_init(&rp->bucket, o->rate, o->rate / 20,
                                   mono_us());
                rc = run(rp) ? 1 : 0;
        }
        return rc;
}

static void replay_close(replay_t *rp) {
        dlq_reader_destroy(rp->r);
        if (rp->producer)
                rd_kafka_destroy(rp->producer);
}

/* The target of --to; 0 when it is one of the topology's. */
static int set_target(replay_t *rp, const dlq_target_t *tg) {
        if ((rp->tier = dlq_replay_tier(rp->o->to, tg->t)) < 0)
                return -1;
        rp->target =
                rp->tier ? tg->t->tier_topics[rp->tier - 1] : tg->t->source;
        rp->ctl->target = rp->target;
        snprintf(rp->ctl->group, sizeof(rp->ctl->group), "%s.kretry-replay",
                 tg->t->group);
        return 0;
}

int dlq_replay_run(const dlq_opts_t *o,
                   const dlq_target_t *tg,
                   dlq_replay_ctl_t *ctl) {
        replay_t rp = {.o = o, .t = tg->t, .ctl = ctl};
        if (set_target(&rp, tg)) {
                fail(&rp, "%s is not a target of topology \"%s\"", o->to,
                     tg->t->name);
                return 2;
        }
        int rc = replay(&rp, tg);
        publish(&rp);
        replay_close(&rp);
        return rc;
}

/* A reader of @p tg's DLQ, snapshotted (from @p group's progress when not
 * NULL); NULL with @p errstr filled. */
static dlq_reader_t *reader_at(const dlq_opts_t *o,
                               const dlq_target_t *tg,
                               const char *group,
                               char *errstr,
                               size_t errstr_size) {
        rd_kafka_conf_t *conf =
                dlq_client_conf(tg->f, o->bootstrap, 1, errstr, errstr_size);
        dlq_reader_t *r =
                conf ? dlq_reader_new(conf, tg->t->dlq, group, o->timeout_ms,
                                      errstr, errstr_size)
                     : NULL;
        if (r && dlq_reader_snapshot(r, group != NULL, errstr, errstr_size)) {
                dlq_reader_destroy(r);
                r = NULL;
        }
        return r;
}

int64_t dlq_replay_before_resume(const dlq_opts_t *o,
                                 const dlq_target_t *tg,
                                 char *errstr,
                                 size_t errstr_size) {
        char group[512];
        rd_kafka_message_t *m;
        int64_t n = 0, *resume = NULL;
        int got = 0;
        snprintf(group, sizeof(group), "%s.kretry-replay", tg->t->group);
        dlq_reader_t *progress = reader_at(o, tg, group, errstr, errstr_size);
        if (!progress)
                return -1;
        int parts = dlq_reader_partition_cnt(progress);
        if (!dlq_reader_skipped_committed(progress) ||
            !(resume = calloc((size_t)parts + 1, sizeof(*resume)))) {
                dlq_reader_destroy(progress);
                return 0; /* nothing before it (or no memory to tell) */
        }
        for (int p = 0; p < parts; p++)
                resume[p] = dlq_reader_start(progress, p);
        dlq_reader_destroy(progress);
        dlq_reader_t *r = reader_at(o, tg, NULL, errstr, errstr_size);
        for (int p = 0; r && p < parts; p++)
                dlq_reader_until(r, p, resume[p] >= 0 ? resume[p] : 0);
        while (r && (got = dlq_reader_next(r, &m, errstr, errstr_size)) == 1) {
                if (dlq_selected(o, m))
                        n++;
                rd_kafka_message_destroy(m);
        }
        dlq_reader_destroy(r);
        free(resume);
        return !r || got < 0 ? -1 : n;
}
