/*
 * Loop: the life cycle and the poll loop, which calls the phases in order.
 *
 * The adapter's life cycle and poll loop. One consumer (the source topic by
 * subscription, every tier by assignment alongside it) and one idempotent
 * producer (copies to tiers and the DLQ). Both clients signal an eventfd when
 * they have something for us, so waiting never spins: the loop sleeps in
 * poll(2) until an event, the next due message, or the caller's timeout.
 */
#include "adapter_int.h"
#include "assign.h"
#include "breaker.h"
#include "clock.h"
#include "codec.h"
#include "commit.h"
#include "conf.h"
#include "delay.h"
#include "intake.h"
#include "log.h"
#include "msg.h"
#include "part.h"
#include "rebalance.h"
#include "restore.h"
#include "route.h"
#include "secret.h"
#include "startup_check.h"
#include "stats.h"
#include "txn.h"
#include "workers.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The secret values of both clients' configurations (secret.h's list),
 * whole whatever their size (a PEM key). */
static kretry_err_t secrets_collect(kretry_adapter_t *a) {
        const rd_kafka_conf_t *confs[] = {a->conf->consumer, a->conf->producer};
        for (size_t c = 0; c < 2; c++)
                for (size_t i = 0; kretry_secret_names[i]; i++) {
                        const char *name = kretry_secret_names[i];
                        size_t n         = 0;
                        if (rd_kafka_conf_get(confs[c], name, NULL, &n) !=
                                    RD_KAFKA_CONF_OK ||
                            n <= 1)
                                continue; /* unknown to librdkafka, or unset */
                        char *v = malloc(n);
                        int rc  = !v ||
                                 rd_kafka_conf_get(confs[c], name, v, &n) !=
                                         RD_KAFKA_CONF_OK ||
                                 kretry_secrets_add(&a->secrets, name, v);
                        free(v);
                        if (rc)
                                return KRETRY_ERR_NO_MEM;
                }
        return KRETRY_ERR_OK;
}

/* The producer's errors. Without this callback librdkafka only logs them; a
 * fatal one (idempotence broken) must stop the adapter. Served by
 * rd_kafka_poll() on the adapter's thread. */
static void
producer_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
        kretry_adapter_t *a = opaque;
        if (err == RD_KAFKA_RESP_ERR__FATAL && kretry_producer_fatal(a))
                return;
        kretry_log(a, KRETRY_LOG_ERR, "rdkafka.ERROR", "%s: %s",
                   rd_kafka_name(rk), reason);
}

static char *topic_name(const char *pattern, const char *source, int n) {
        char buf[512];
        if (kretry_conf_topic_name(pattern, source, n, buf, sizeof(buf)))
                return NULL;
        return strdup(buf);
}

/* A topic of the group's own (the version changelog, the parked keys):
 * @p pattern with {group} and {source} filled in, into *@p out (@p prop
 * names the property, for the error). */
static kretry_err_t group_topic(kretry_adapter_t *a,
                                const char *prop,
                                const char *pattern,
                                char **out,
                                char *errstr,
                                size_t errstr_size) {
        char buf[512];
        if (kretry_conf_topic_name_group(pattern, a->conf->source_topic,
                                         a->group, 0, buf, sizeof(buf))) {
                snprintf(errstr, errstr_size,
                         "%s \"%s\" with group.id \"%s\" makes no valid "
                         "Kafka topic name (1..249 of a-z A-Z 0-9 . _ -)",
                         prop, pattern, a->group);
                return KRETRY_ERR_INVALID_VALUE;
        }
        return (*out = strdup(buf)) ? KRETRY_ERR_OK : KRETRY_ERR_NO_MEM;
}

static kretry_err_t
setup_topics(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        const kretry_conf_t *c = a->conf;
        a->topic_cnt           = 1 + c->tier_cnt;
        a->topics              = calloc((size_t)a->topic_cnt, sizeof(char *));
        a->parts    = calloc((size_t)a->topic_cnt, sizeof(kretry_part_t **));
        a->part_cap = calloc((size_t)a->topic_cnt, sizeof(int));
        a->rkts     = calloc((size_t)a->topic_cnt, sizeof(rd_kafka_topic_t *));
        a->prkts = calloc((size_t)a->topic_cnt + 1, sizeof(rd_kafka_topic_t *));
        a->topic_consumed = calloc((size_t)a->topic_cnt, sizeof(int64_t));
        a->emit_consumed  = calloc((size_t)a->topic_cnt, sizeof(int64_t));
        if (!a->topics || !a->parts || !a->part_cap || !a->rkts || !a->prkts ||
            !a->topic_consumed || !a->emit_consumed)
                return KRETRY_ERR_NO_MEM;
        a->topics[0] = strdup(c->source_topic);
        for (int t = 1; t < a->topic_cnt; t++)
                a->topics[t] = topic_name(c->retry_pattern, c->source_topic, t);
        a->dlq = topic_name(c->dlq_topic, c->source_topic, 0);
        for (int t = 0; t < a->topic_cnt; t++)
                if (!a->topics[t])
                        return KRETRY_ERR_NO_MEM;
        if (!a->dlq)
                return KRETRY_ERR_NO_MEM;
        kretry_err_t err = KRETRY_ERR_OK;
        if (*c->version_header || *c->version_field)
                err = group_topic(a, "versioning.topic", c->versions_topic,
                                  &a->versions_topic, errstr, errstr_size);
        if (!err && c->ordering == KRETRY_ORDER_KEY && c->park_key)
                err = group_topic(a, "ordering.parked.topic", c->parked_topic,
                                  &a->parked_topic, errstr, errstr_size);
        if (err)
                return err;
        for (int t = 0; t < a->topic_cnt; t++) {
                if (!strcmp(a->topics[t], a->dlq) ||
                    kretry_topic_index(a, a->topics[t]) != t) {
                        snprintf(errstr, errstr_size,
                                 "topic \"%s\" is used twice: the source, "
                                 "each tier and the DLQ need distinct names",
                                 a->topics[t]);
                        return KRETRY_ERR_INVALID_VALUE;
                }
        }
        return KRETRY_ERR_OK;
}

static rd_kafka_t *client_new(kretry_adapter_t *a,
                              rd_kafka_type_t type,
                              const rd_kafka_conf_t *base,
                              char *errstr,
                              size_t errstr_size) {
        rd_kafka_conf_t *rc = rd_kafka_conf_dup(base);
        rd_kafka_conf_set_opaque(rc, a);
        rd_kafka_conf_set_log_cb(rc, kretry_rdkafka_log_cb);
        if (type == RD_KAFKA_CONSUMER) {
                kretry_conf_consumer_defaults(a->conf, rc);
                rd_kafka_conf_set_rebalance_cb(rc, kretry_rebalance_cb);
        } else {
                rd_kafka_conf_set_dr_msg_cb(rc, kretry_dr_cb);
                rd_kafka_conf_set_error_cb(rc, producer_error_cb);
        }
        rd_kafka_t *rk = rd_kafka_new(type, rc, errstr, errstr_size);
        if (!rk)
                rd_kafka_conf_destroy(rc);
        return rk;
}

static kretry_err_t
setup_clients(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        a->kip848 = kretry_conf_consumer_protocol(a->conf->consumer);
        char ms[32];
        size_t ms_size = sizeof(ms);
        a->commit_interval_ms =
                rd_kafka_conf_get(a->conf->consumer, "auto.commit.interval.ms",
                                  ms, &ms_size) == RD_KAFKA_CONF_OK
                        ? atoi(ms)
                        : 100;
        /* As librdkafka's auto-commit: the first one interval after the
         * start. */
        a->commit_at = kretry_mono_ms() + a->commit_interval_ms;
        a->consumer  = client_new(a, RD_KAFKA_CONSUMER, a->conf->consumer,
                                  errstr, errstr_size);
        if (!a->consumer)
                return KRETRY_ERR_KAFKA;
        a->producer = client_new(a, RD_KAFKA_PRODUCER, a->conf->producer,
                                 errstr, errstr_size);
        if (!a->producer)
                return KRETRY_ERR_KAFKA;
        rd_kafka_poll_set_consumer(a->consumer);
        for (int t = 0; t < a->topic_cnt; t++) {
                rd_kafka_topic_conf_t *tc = NULL;
                if (t > 0) {
                        /* A tier holds only kretry's own copies: a group
                         * without a committed offset there must read it all. */
                        tc = rd_kafka_topic_conf_new();
                        rd_kafka_topic_conf_set(tc, "auto.offset.reset",
                                                "earliest", NULL, 0);
                }
                a->rkts[t] = rd_kafka_topic_new(a->consumer, a->topics[t], tc);
                if (!a->rkts[t]) {
                        snprintf(errstr, errstr_size, "topic %s: %s",
                                 a->topics[t],
                                 rd_kafka_err2str(rd_kafka_last_error()));
                        return KRETRY_ERR_KAFKA;
                }
        }
        /* Producer handles for every destination make librdkafka look up
         * their leaders now, not on the first failure. */
        for (int t = 0; t <= a->topic_cnt; t++) {
                const char *name = t < a->topic_cnt ? a->topics[t] : a->dlq;
                a->prkts[t] =
                        t ? rd_kafka_topic_new(a->producer, name, NULL) : NULL;
        }
        if (a->versions_topic)
                a->vrkt = rd_kafka_topic_new(a->producer, a->versions_topic,
                                             NULL);
        a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (a->efd < 0) {
                snprintf(errstr, errstr_size, "eventfd: %s", strerror(errno));
                return KRETRY_ERR_IO;
        }
        static const uint64_t one = 1;
        a->cq                     = rd_kafka_queue_get_consumer(a->consumer);
        a->pq                     = rd_kafka_queue_get_main(a->producer);
        a->tq                     = rd_kafka_queue_new(a->consumer);
        a->sq                     = rd_kafka_queue_new(a->consumer);
        a->kq                     = rd_kafka_queue_new(a->consumer);
        if (!a->cq || !a->tq || !a->sq || !a->kq) {
                /* The consumer queue is NULL without a group (librdkafka
                 * makes none): never here, a group is required. */
                snprintf(errstr, errstr_size,
                         "cannot get the consumer, tier and source "
                         "queues");
                return KRETRY_ERR_NO_MEM;
        }
        rd_kafka_queue_io_event_enable(a->tq, a->efd, &one, sizeof(one));
        rd_kafka_queue_io_event_enable(a->sq, a->efd, &one, sizeof(one));
        rd_kafka_queue_io_event_enable(a->cq, a->efd, &one, sizeof(one));
        rd_kafka_queue_io_event_enable(a->pq, a->efd, &one, sizeof(one));
        rd_kafka_queue_io_event_enable(a->kq, a->efd, &one, sizeof(one));
        return KRETRY_ERR_OK;
}

static kretry_err_t
subscribe(kretry_adapter_t *a, char *errstr, size_t errstr_size) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, a->topics[0],
                                          RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t err = rd_kafka_subscribe(a->consumer, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err) {
                snprintf(errstr, errstr_size, "subscribe to %s: %s",
                         a->topics[0], rd_kafka_err2str(err));
                return KRETRY_ERR_KAFKA;
        }
        return KRETRY_ERR_OK;
}

kretry_adapter_t *
kretry_adapter_new(kretry_conf_t *conf, char *errstr, size_t errstr_size) {
        char dummy[8];
        if (!errstr || !errstr_size) {
                errstr      = dummy;
                errstr_size = sizeof(dummy);
        }
        errstr[0] = '\0';
        if (!conf) {
                snprintf(errstr, errstr_size, "conf is required");
                return NULL;
        }
        if (kretry_rdkafka_check(errstr, errstr_size) ||
            kretry_conf_check(conf, errstr, errstr_size))
                return NULL;
        kretry_adapter_t *a = calloc(1, sizeof(*a));
        if (!a) {
                snprintf(errstr, errstr_size, "out of memory");
                return NULL;
        }
        a->conf     = conf;
        a->msg      = &a->msg0;
        a->efd      = -1;
        size_t size = sizeof(a->group);
        rd_kafka_conf_get(conf->consumer, "group.id", a->group, &size);
        kretry_breaker_init(&a->breaker, conf->breaker_failures,
                            conf->breaker_keys, conf->breaker_cooldown_ms);
        kretry_rng_seed(&a->rng, (uint64_t)kretry_now_ms() ^
                                         ((uint64_t)getpid() << 32) ^
                                         (uint64_t)(uintptr_t)a);
        kretry_err_t err = secrets_collect(a);
        if (!err)
                err = setup_topics(a, errstr, errstr_size);
        if (!err)
                err = kretry_startup_check(a, errstr, errstr_size);
        if (!err && kretry_msg_init(&a->msg0, (size_t)conf->error_max_length))
                err = KRETRY_ERR_NO_MEM;
        if (!err && conf->value_avro &&
            !(a->codec = kretry_codec_new(
                      "avro", conf->value_schema,
                      conf->value_confluent ? "confluent" : "raw",
                      conf->value_schema_ids, errstr, errstr_size)))
                err = KRETRY_ERR_INVALID_VALUE;
        if (!err && a->codec && *conf->version_field &&
            kretry_codec_check_int_field(a->codec, conf->version_field, errstr,
                                         errstr_size))
                err = KRETRY_ERR_INVALID_VALUE;
        if (!err)
                err = kretry_txn_conf(a, errstr, errstr_size);
        if (!err)
                err = setup_clients(a, errstr, errstr_size);
        if (!err)
                err = kretry_txn_init(a, errstr, errstr_size);
        if (!err)
                err = subscribe(a, errstr, errstr_size);
        if (!err && kretry_workers_start(a)) {
                snprintf(errstr, errstr_size,
                         "cannot start %d handler worker threads",
                         conf->concurrency);
                err = KRETRY_ERR_NO_MEM;
        }
        if (err) {
                if (!errstr[0])
                        snprintf(errstr, errstr_size, "%s",
                                 kretry_err2str(err));
                kretry_secrets_scrub(&a->secrets, errstr, errstr_size);
                a->conf_borrowed = 1; /* the caller keeps conf */
                a->closed        = 1;
                kretry_adapter_destroy(a);
                return NULL;
        }
        return a;
}

/* Under the consumer group protocol (KIP-848) a member given no partition
 * receives no assignment at all (librdkafka calls the rebalance callback
 * for a change only): the first member epoch the coordinator hands out
 * counts as the empty assignment a classic group gives, so that joined
 * (KRETRY_COUNTER_ASSIGNMENTS above 0, kretry run's /readyz) means the same
 * under both protocols. Asked until then only. */
static void note_joined(kretry_adapter_t *a) {
        if (!a->kip848 || atomic_load(&a->stats.assignments) > 0)
                return;
        rd_kafka_consumer_group_metadata_t *md =
                rd_kafka_consumer_group_metadata(a->consumer);
        if (!md)
                return;
        if (rd_kafka_consumer_group_metadata_generation_id(md) > 0)
                atomic_fetch_add(&a->stats.assignments, 1);
        rd_kafka_consumer_group_metadata_destroy(md);
}

static int step(kretry_adapter_t *a) {
        a->more = 0;
        note_joined(a);
        int was = kretry_store_begin(a);
        int n   = rd_kafka_poll(a->producer, 0);
        kretry_store_end(a, was);
        int64_t now = kretry_now_ms(), mono = kretry_mono_ms();
        kretry_txn_step(a, mono);
        if (a->txn.blocked_at && mono >= a->txn.blocked_at)
                kretry_txn_unblock(a, mono);
        if (a->breaker_paused && !kretry_breaker_is_open(&a->breaker, mono))
                kretry_breaker_apply(a, 0);
        n += kretry_workers_reap(a); /* results, then what may run now */
        kretry_forward_renew(a, mono);
        kretry_retry_failed(a, mono);
        n += kretry_intake_due(a, now);
        n += kretry_intake_stalled(a);
        n += kretry_intake_consume(a);
        kretry_workers_flush(a); /* what was consumed goes to the handler */
        kretry_commit_periodic(a, mono);
        if (n && (a->versions_topic || a->conf->ordering == KRETRY_ORDER_KEY))
                kretry_stats_gauges(a);
        kretry_stats_maybe_emit(a, now);
        return n;
}

/* The sooner of two waits in ms: @p next (-1: none yet) and @p in (at least
 * 0). */
static int64_t sooner(int64_t next, int64_t in) {
        if (in < 0)
                in = 0;
        return next < 0 || in < next ? in : next;
}

int kretry_adapter_next_timeout_ms(kretry_adapter_t *a) {
        if (!a)
                return -1;
        if (a->more)
                return 0; /* the last poll stopped at its batch limit */
        /* Due times and the stats interval are on the wall clock (due
         * times come from Kafka timestamps), the rest on the monotonic
         * one: each wait is measured on its own clock. */
        int64_t now = kretry_now_ms(), mono = kretry_mono_ms(), next = -1;
        /* Held messages wait for an open breaker too (kretry_intake_due): its
         * end is the time that counts then, not a due time already past. */
        for (kretry_part_t *p = a->breaker_paused ? NULL : a->held_list; p;
             p                = p->next_held)
                next = sooner(next, p->held_due - now);
        if (!a->breaker_paused && a->src_wait_at)
                next = sooner(next, a->src_wait_at - mono);
        for (kretry_inflight_t *r = a->failed; r; r = r->next_failed)
                next = sooner(next, r->retry_at - mono);
        if (a->emit_next > 0)
                next = sooner(next, a->emit_next - now);
        if (a->txn.since)
                next = sooner(next,
                              a->txn.since + a->conf->txn_interval_ms - mono);
        if (a->txn.blocked_at)
                next = sooner(next, a->txn.blocked_at - mono);
        if (a->breaker_paused)
                next = sooner(next, a->breaker.open_until - mono);
        int64_t later = kretry_workers_later_at(a);
        if (later)
                next = sooner(next, later - mono);
        int64_t commit = kretry_commit_next(a);
        if (commit >= 0)
                next = sooner(next, commit - mono);
        /* Partition forwards are renewed every second for a while after
         * a rebalance. */
        if (a->forward_at > 0)
                next = sooner(next, a->forward_at - mono);
        if (next < 0)
                return -1;
        return (int)(next > 86400000 ? 86400000 : next);
}

/* Consume the eventfd's signal. Done before serving, so no wake-up is
 * lost: what is signalled after it is served now or signals again. */
static void drain_fd(kretry_adapter_t *a) {
        uint64_t v;
        while (read(a->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
                ;
}

static void wait_event(kretry_adapter_t *a, int timeout_ms) {
        int next = kretry_adapter_next_timeout_ms(a);
        if (next >= 0 && (timeout_ms < 0 || next < timeout_ms))
                timeout_ms = next;
        if (!kretry_workers_idle(a))
                return; /* a result came back since the last step */
        struct pollfd pfd = {.fd = a->efd, .events = POLLIN};
        if (poll(&pfd, 1, timeout_ms) > 0)
                drain_fd(a);
}

kretry_err_t kretry_adapter_poll(kretry_adapter_t *a, int timeout_ms) {
        if (!a)
                return KRETRY_ERR_INVALID_ARG;
        if (a->fatal)
                return KRETRY_ERR_FATAL;
        if (atomic_load(&a->stop))
                return KRETRY_ERR_STOPPED;
        if (a->closed)
                return KRETRY_ERR_STATE;
        /* An application's own loop polls the fd and calls us with 0: the
         * fd must not stay readable once its work is served, or that loop
         * spins. */
        drain_fd(a);
        if (step(a) == 0 && !a->more && timeout_ms != 0 &&
            !atomic_load(&a->stop)) {
                wait_event(a, timeout_ms);
                step(a);
        }
        /* A result that comes back from now on writes the fd; one that
         * came back since the last step makes it readable now. */
        if (!kretry_workers_idle(a)) {
                uint64_t one = 1;
                ssize_t w    = write(a->efd, &one, sizeof(one));
                (void)w;
        }
        if (a->fatal)
                return KRETRY_ERR_FATAL;
        return atomic_load(&a->stop) ? KRETRY_ERR_STOPPED : KRETRY_ERR_OK;
}

kretry_err_t kretry_adapter_run(kretry_adapter_t *a) {
        if (!a)
                return KRETRY_ERR_INVALID_ARG;
        kretry_err_t err;
        while ((err = kretry_adapter_poll(a, 1000)) == KRETRY_ERR_OK)
                ;
        kretry_err_t cerr = kretry_adapter_close(a);
        if (err == KRETRY_ERR_STOPPED)
                err = cerr;
        return err;
}

void kretry_adapter_stop(kretry_adapter_t *a) {
        if (!a)
                return;
        atomic_store(&a->stop, 1);
        if (a->efd >= 0) {
                uint64_t one = 1;
                /* Async-signal-safe: a flag and a write(2). */
                ssize_t w = write(a->efd, &one, sizeof(one));
                (void)w; /* a full counter already wakes the loop */
        }
}

int kretry_adapter_fd(const kretry_adapter_t *a) {
        return a ? a->efd : -1;
}

/* Give up every copy still queued: the producer reports each as purged, so
 * every record (and the message it borrows from) is released. */
static void purge_producer(kretry_adapter_t *a) {
        if (!a->producer)
                return;
        rd_kafka_purge(a->producer,
                       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        for (int i = 0; i < 50 && a->inflight > 0; i++)
                rd_kafka_poll(a->producer, 100);
        kretry_inflight_t *r;
        while ((r = a->failed)) {
                a->failed = r->next_failed;
                kretry_inflight_free(a, r);
        }
}

/* How long a close may take beyond revoke.timeout.ms (the drain of copies in
 * flight) for the commit and the LeaveGroup. */
#define KRETRY_CLOSE_GRACE_MS 5000

/* The close's bound: @p deadline, or KRETRY_CLOSE_GRACE_MS after its
 * revocation was done when that is sooner. */
static int64_t close_deadline(const kretry_adapter_t *a, int64_t deadline) {
        if (a->close_revoked > 0 &&
            a->close_revoked + KRETRY_CLOSE_GRACE_MS < deadline)
                return a->close_revoked + KRETRY_CLOSE_GRACE_MS;
        return deadline;
}

/* The consumer lives on past the adapter: from now on it must not reach
 * the adapter through the log callback, nor its eventfd. */
static void silence_consumer(kretry_adapter_t *a) {
        rd_kafka_set_log_level(a->consumer, -1);
        rd_kafka_queue_io_event_enable(a->cq, -1, NULL, 0);
        rd_kafka_queue_io_event_enable(a->tq, -1, NULL, 0);
        rd_kafka_queue_io_event_enable(a->sq, -1, NULL, 0);
        rd_kafka_queue_io_event_enable(a->kq, -1, NULL, 0);
}

/* Leave the group, bounded: librdkafka's own consumer close waits for the
 * group coordinator as long as it takes, which is forever when the cluster
 * went away with us.
 *
 * Every partition is revoked first (kretry_revoke_for_close: handler calls
 * and copies awaited, offsets committed synchronously), while the group is
 * not terminating; only then is librdkafka asked to leave, and no commit
 * is sent after that (a->close_leaving). librdkafka aborts the process in
 * its close (rd_kafka_cgrp_terminated: assert
 * !rd_kafka_assignment_in_progress, its issue 4027) when an offset commit
 * reaches its group after the group decided to terminate and before it
 * terminated: the commit counts as an assignment operation in progress,
 * which the group's last step asserts there is none of. Whether a commit
 * made in the close's rebalance callback can come that late depends on
 * the callback's event: the revocation the close itself asks for keeps
 * the group waiting for the callback's unassign call, made after its
 * commit; but an event queued before the close (a rebalance that came
 * while the application was not polling, eager or cooperative) no longer
 * holds the group, which the close sets to unassign and leave at once,
 * and may terminate while the callback still drains and commits.
 *
 * The close runs in librdkafka's background; its rebalance callback (only
 * retiring what is left and making the unassign call, on a thread of its
 * own: librdkafka may drop it unanswered, see rebalance.c close_call) is
 * served here until it finishes or revoke.timeout.ms +
 * KRETRY_CLOSE_GRACE_MS have passed since the close began (@p t0), and
 * once the revocation is done (a->close_revoked), at most
 * KRETRY_CLOSE_GRACE_MS more: what is left is the LeaveGroup, which needs
 * no more than that from a cluster that answers. Returns 0 when it
 * finished. */
static int close_consumer(kretry_adapter_t *a, int64_t t0) {
        kretry_sbuf_drop(a, NULL); /* not handled: the next owner's */
        int64_t deadline =
                t0 + a->conf->revoke_timeout_ms + KRETRY_CLOSE_GRACE_MS;
        kretry_revoke_for_close(a);
        rd_kafka_queue_t *q = rd_kafka_queue_new(a->consumer);
        a->close_leaving    = 1;
        rd_kafka_error_t *e =
                q ? rd_kafka_consumer_close_queue(a->consumer, q) : NULL;
        if (e) {
                kretry_log(a, KRETRY_LOG_WARNING, "CLOSE", "consumer close: %s",
                           rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
        }
        int left;
        while (q && !e && !rd_kafka_consumer_closed(a->consumer) &&
               (left = kretry_left_ms(close_deadline(a, deadline), 100)) > 0) {
                rd_kafka_message_t *rkm = rd_kafka_consume_queue(q, left);
                if (rkm)
                        rd_kafka_message_destroy(rkm);
        }
        int done = !q || e || rd_kafka_consumer_closed(a->consumer);
        if (q)
                rd_kafka_queue_destroy(q);
        /* Its unassign call, if it returned (else the destroy's). */
        kretry_close_call_reap(a, 0);
        if (!done) {
                /* Its destroy goes on past the adapter's life (see
                 * destroy_consumer). */
                a->close_cut = 1;
                silence_consumer(a);
                kretry_log(a, KRETRY_LOG_ERR, "CLOSE",
                           "leaving the group cut short after %lld ms "
                           "(revoke.timeout.ms %d + %d at most, %d after the "
                           "revocation): the cluster does not "
                           "answer; offsets not committed are consumed again "
                           "by the next owner, which the group assigns once "
                           "session.timeout.ms has passed",
                           (long long)(kretry_mono_ms() - t0),
                           a->conf->revoke_timeout_ms, KRETRY_CLOSE_GRACE_MS,
                           KRETRY_CLOSE_GRACE_MS);
        }
        return done ? 0 : -1;
}

kretry_err_t kretry_adapter_close(kretry_adapter_t *a) {
        if (!a)
                return KRETRY_ERR_INVALID_ARG;
        if (a->closed)
                return KRETRY_ERR_OK;
        a->closed = 1;
        /* One bound for both: revoke.timeout.ms + KRETRY_CLOSE_GRACE_MS. */
        int64_t t0 = kretry_mono_ms();
        /* Leaving the group revokes every partition: the rebalance callback
         * drains the producer and commits synchronously; a transaction it
         * cannot commit is aborted within the close's bound too. */
        a->txn.abort_by =
                t0 + a->conf->revoke_timeout_ms + KRETRY_CLOSE_GRACE_MS;
        int cut = close_consumer(a, t0);
        /* Cut short: nothing of it is committed; aborted within what is
         * left of the close's bound. */
        a->txn.abort_by = close_deadline(a, t0 + a->conf->revoke_timeout_ms +
                                                    KRETRY_CLOSE_GRACE_MS);
        kretry_txn_abort(a, NULL);
        int timed_out =
                cut || a->close_abandoned || a->inflight > 0 || a->failed;
        purge_producer(a);
        return timed_out ? KRETRY_ERR_TIMED_OUT : KRETRY_ERR_OK;
}

static void *destroy_consumer_main(void *rk) {
        rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        return NULL;
}

/* Closed already, bounded (close_consumer), so librdkafka must not close it
 * again. After a close cut short, librdkafka still waits for the commits it
 * has pending until session.timeout.ms ends the membership, and its destroy
 * waits with it: that wait runs on a detached thread of its own, so that
 * shutdown stays bounded and the consumer is still freed in the end. */
static void destroy_consumer(kretry_adapter_t *a) {
        pthread_attr_t attr;
        pthread_t t;
        if (a->close_cut && !pthread_attr_init(&attr)) {
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                int rc = pthread_create(&t, &attr, destroy_consumer_main,
                                        a->consumer);
                pthread_attr_destroy(&attr);
                if (!rc)
                        return;
        }
        destroy_consumer_main(a->consumer);
}

static void free_parts(kretry_adapter_t *a) {
        for (int t = 0; a->parts && t < a->topic_cnt; t++) {
                for (int p = 0; p < a->part_cap[t]; p++) {
                        kretry_part_t *part = a->parts[t][p];
                        if (!part)
                                continue;
                        part->paused = 0; /* the consumer is closed */
                        kretry_part_retire(a, part);
                }
                free(a->parts[t]);
        }
        free(a->parts);
        free(a->part_cap);
}

void kretry_adapter_destroy(kretry_adapter_t *a) {
        if (!a)
                return;
        if (a->consumer && !a->closed)
                kretry_adapter_close(a);
        kretry_sbuf_drop(a, NULL); /* before the consumer goes */
        /* Joined before anything their jobs point at is released. */
        kretry_workers_stop(a);
        purge_producer(a);
        for (int t = 0; a->prkts && t <= a->topic_cnt; t++)
                if (a->prkts[t])
                        rd_kafka_topic_destroy(a->prkts[t]);
        free(a->prkts);
        if (a->vrkt)
                rd_kafka_topic_destroy(a->vrkt);
        if (a->pq)
                rd_kafka_queue_destroy(a->pq);
        if (a->producer)
                rd_kafka_destroy(a->producer);
        kretry_restore_destroy(a);
        /* Consumed messages hold references into the consumer: release
         * them before it is destroyed. */
        free_parts(a);
        for (int t = 0; a->rkts && t < a->topic_cnt; t++)
                if (a->rkts[t])
                        rd_kafka_topic_destroy(a->rkts[t]);
        if (a->tq)
                rd_kafka_queue_destroy(a->tq);
        if (a->sq)
                rd_kafka_queue_destroy(a->sq);
        if (a->kq)
                rd_kafka_queue_destroy(a->kq);
        if (a->cq)
                rd_kafka_queue_destroy(a->cq);
        if (a->consumer)
                destroy_consumer(a);
        /* The consumer is gone (or going on a thread of its own): a close
         * call still waiting has nothing left to answer it. */
        kretry_close_call_reap(a, 1);
        if (a->efd >= 0)
                close(a->efd);
        kretry_msg_free(&a->msg0);
        kretry_codec_destroy(a->codec);
        for (int t = 0; a->topics && t < a->topic_cnt; t++)
                free(a->topics[t]);
        free(a->topics);
        free(a->rkts);
        free(a->dlq);
        free(a->versions_topic);
        free(a->parked_topic);
        free(a->topic_consumed);
        free(a->emit_consumed);
        if (!a->conf_borrowed)
                kretry_conf_destroy(a->conf);
        kretry_secrets_clear(&a->secrets);
        free(a);
}
