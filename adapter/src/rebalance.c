/*
 * Phase: assignment and revocation.
 *
 * Assignment: the group assigns source partitions; the adapter adds, for
 * each source partition p, partition p of every tier ("tier partitions follow
 * their source partition"), whatever assignor the group uses, eager or
 * cooperative. Each assignment of a partition is an object of its own
 * (kretry_part_t: offsets, held message, gates, chains, versions, pause),
 * made on assignment and retired on revocation, after the revoked
 * partitions' handlers and in-flight copies were awaited and done offsets
 * committed synchronously; on a lost assignment it is retired at once,
 * nothing of it routed or committed. Nothing is carried across a
 * rebalance. A close revokes its partitions here before it asks
 * librdkafka to leave the group (kretry_revoke_for_close), and sends no
 * commit after that.
 */
#include "rebalance.h"
#include "adapter_int.h"
#include "assign.h"
#include "clock.h"
#include "conf.h"
#include "drain.h"
#include "intake.h"
#include "log.h"
#include "part.h"
#include "restore.h"
#include "txn.h"
#include "workers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The source partitions of @p parts plus the same partition of every tier. */
static rd_kafka_topic_partition_list_t *
with_tiers(kretry_adapter_t *a, const rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(parts->cnt * a->topic_cnt);
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                if (strcmp(tp->topic, a->topics[0])) {
                        rd_kafka_topic_partition_list_add(l, tp->topic,
                                                          tp->partition);
                        continue;
                }
                for (int t = 0; t < a->topic_cnt; t++)
                        rd_kafka_topic_partition_list_add(l, a->topics[t],
                                                          tp->partition);
        }
        return l;
}

static void assign_parts(kretry_adapter_t *a,
                         const rd_kafka_topic_partition_list_t *l) {
        for (int i = 0; i < l->cnt; i++)
                if (!kretry_part_assign(
                            a, kretry_topic_index(a, l->elems[i].topic),
                            l->elems[i].partition))
                        kretry_log(a, KRETRY_LOG_ERR, "REBALANCE",
                                   "%s [%d]: out of memory: its messages are "
                                   "not handled until the next assignment",
                                   l->elems[i].topic,
                                   (int)l->elems[i].partition);
}

/* Tier partitions deliver to the adapter's tier queue, served before the
 * source's; source partitions to the source queue, so that the consumer
 * queue carries only the group's events and can be served while no message
 * is taken (max.inflight.messages reached: fetching stops without a pause,
 * which would drop what librdkafka prefetched). The forward is set by the
 * application: librdkafka keeps it when it starts fetching, and drops it
 * when it stops fetching the partition — which, after a revocation, may
 * happen after the partition was assigned again (seen once under load). So
 * it is set on every assignment and renewed every second for
 * kretry_forward_renew_ms after each rebalance event (kretry_forward_renew):
 * a dropped forward would otherwise leave a tier partition's messages in its
 * own queue, never served, and send a source partition's to the consumer
 * queue (still served, see intake.c next_message). Only a stop drops a
 * forward, and librdkafka stops fetching a partition only when it is
 * unassigned (or the consumer closes), which only kretry's own calls in the
 * rebalance callback do: past the window no stop is pending, and an idle
 * adapter has no timer of its own (at 512 source partitions with two tiers
 * the renewal was 1,536 lookups a second). */
void kretry_forward_parts(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *l) {
        rd_kafka_t *rk = a->consumer;
        for (int i = 0; i < l->cnt; i++) {
                int tier = kretry_topic_index(a, l->elems[i].topic);
                if (tier < 0)
                        continue;
                rd_kafka_queue_t *pq = rd_kafka_queue_get_partition(
                        rk, l->elems[i].topic, l->elems[i].partition);
                if (!pq)
                        continue;
                rd_kafka_queue_forward(pq, tier ? a->tq : a->sq);
                rd_kafka_queue_destroy(pq);
        }
}

static void forward_parts_all(kretry_adapter_t *a) {
        rd_kafka_topic_partition_list_t *l = kretry_assigned_list(a, NULL);
        kretry_forward_parts(a, l);
        rd_kafka_topic_partition_list_destroy(l);
}

/* librdkafka's main thread serves a stop soon after the unassign that
 * asked for it (the partition's operations go to its queue; milliseconds
 * on an idle machine); 10 s leaves room for a loaded one, and is short
 * enough that an idle instance is quiet soon after it joined. */
int kretry_forward_renew_ms = 10000;

/* A rebalance event: renewals every second from now on, until
 * kretry_forward_renew_ms after it. */
static void renew_window(kretry_adapter_t *a) {
        int64_t mono         = kretry_mono_ms();
        a->forward_renew_end = mono + kretry_forward_renew_ms;
        if (!a->forward_at)
                a->forward_at = mono + 1000;
}

void kretry_forward_renew(kretry_adapter_t *a, int64_t mono) {
        if (!a->forward_at || mono < a->forward_at)
                return;
        forward_parts_all(a);
        a->forward_at = mono + 1000 <= a->forward_renew_end ? mono + 1000 : 0;
}

static void revoke_parts(kretry_adapter_t *a,
                         const rd_kafka_topic_partition_list_t *l) {
        for (int i = 0; i < l->cnt; i++) {
                kretry_part_t *part = kretry_part_of(a, &l->elems[i]);
                if (part)
                        kretry_part_retire(a, part);
        }
}

static void log_parts(kretry_adapter_t *a,
                      const char *what,
                      const rd_kafka_topic_partition_list_t *l) {
        char buf[512];
        size_t len = 0;
        buf[0]     = '\0';
        for (int i = 0; i < l->cnt && len < sizeof(buf); i++)
                len += (size_t)snprintf(
                        buf + len, sizeof(buf) - len, "%s%s[%d]", i ? " " : "",
                        l->elems[i].topic, (int)l->elems[i].partition);
        kretry_log(a, KRETRY_LOG_INFO, "REBALANCE", "%s %d partition(s): %s",
                   what, l->cnt, buf);
}

/* The gauge of source partitions assigned now, for any thread. */
static void count_assigned(kretry_adapter_t *a) {
        int64_t n = 0;
        for (int p = 0; p < a->part_cap[0]; p++)
                n += a->parts[0][p] && a->parts[0][p]->assigned;
        atomic_store(&a->stats.assigned, n);
}

/* The partitions of @p l end their assignment: their handler calls and
 * copies are awaited and their offsets committed, then they are retired.
 * Not on a lost assignment, nor once a close asked librdkafka to leave the
 * group (kretry_revoke_for_close already revoked every partition then, and
 * nothing is committed any more): retired at once, nothing of them routed
 * or committed. */
static void release(kretry_adapter_t *a,
                    rd_kafka_t *rk,
                    const rd_kafka_topic_partition_list_t *l) {
        int64_t deadline = kretry_mono_ms() + a->conf->revoke_timeout_ms;
        if (a->close_leaving || rd_kafka_assignment_lost(rk)) {
                /* Another member may own these partitions already (or,
                 * leaving, the close's revocation took what was left):
                 * nothing of them is routed or committed. Retired first,
                 * so that a result coming back is discarded; the calls
                 * running are not waited for. */
                revoke_parts(a, l);
                kretry_workers_revoke(a, l, 0);
                /* Its copies must not become visible; the other
                 * partitions' are decided again. */
                kretry_txn_abort(a, l);
        } else {
                /* Handlers of these partitions finish first: their outcomes
                 * are copies the drain waits for. One bound,
                 * revoke.timeout.ms, for both. */
                kretry_workers_revoke(a, l, deadline);
                kretry_drain_and_commit(a, l, deadline);
                revoke_parts(a, l);
        }
        count_assigned(a);
}

/* Whether the group rebalances cooperatively (1), eagerly (0), or -1 when
 * librdkafka answers NULL: the group's thread no longer serves requests
 * (a close terminating the group, the very time the close's revocation is
 * served), so an assign or unassign call, which waits for that thread
 * without a timeout, would never return; the terminating group releases
 * the partitions itself. "NONE" (before a join): the configured assignors
 * say it (librdkafka refuses a mix of eager and cooperative ones). Once a
 * close asked the group to leave, librdkafka is not asked: the question
 * is a request to the group's thread like an assign call, and may be
 * dropped unanswered the same way (see close_call); the assignors say it
 * then too. */
static int cooperative(kretry_adapter_t *a, rd_kafka_t *rk) {
        const char *proto =
                a->close_leaving ? "NONE" : rd_kafka_rebalance_protocol(rk);
        if (!proto)
                return -1;
        if (strcmp(proto, "NONE"))
                return !strcmp(proto, "COOPERATIVE");
        /* The consumer group protocol (KIP-848) is always incremental. */
        if (kretry_conf_consumer_protocol(rd_kafka_conf(rk)))
                return 1;
        char v[512];
        size_t n = sizeof(v);
        return rd_kafka_conf_get(rd_kafka_conf(rk),
                                 "partition.assignment.strategy", v,
                                 &n) == RD_KAFKA_CONF_OK &&
               strstr(v, "cooperative");
}

/*
 * A close (kretry_adapter_close) has asked the group to terminate before
 * its events are served, so librdkafka takes the first assign or unassign
 * call made from here on as a full unassign, after which the group may
 * terminate at once. Events queued before it (an assignment the member was
 * given while nobody polled it, the revocation of partitions that
 * unassign already released) are still served here, and once the group
 * has terminated any such call, rd_kafka_rebalance_protocol() included,
 * waits for an answer that never comes: librdkafka drops the request
 * unanswered (its issue #4884), and the close would hang for good. So a
 * close makes one call, and the events after it only update kretry's own
 * state.
 */
static int close_call_done(kretry_adapter_t *a, rd_kafka_t *rk) {
        return a->close_leaving &&
               (a->close_unassigned || rd_kafka_consumer_closed(rk));
}

/*
 * That one call is still not safe: librdkafka's group thread serves the
 * requests of the application's calls from its queue in batches, and
 * decides to terminate in one batch (the LeaveGroup's answer, the last
 * partition stopped) and terminates after it. A request queued meanwhile
 * is served after the group terminated, and dropped without an answer:
 * the call waits for good. Seen for the unassign call of a revocation
 * queued before the close (eager assignors): the group no longer waits for
 * that call, it unassigns and leaves by itself, and the call comes when
 * it will. No librdkafka call tells whether the group still waits for the
 * call; so, once the close asked the group to leave, the call is made on a
 * thread of its own, and the close goes on serving its queue until the
 * group ended (as it does for a call that returns). A call the group
 * waits for returns at once; one that librdkafka dropped never returns:
 * its thread is left blocked (the destroy detaches it once the consumer is
 * gone, kretry_close_call_reap), and the close and the destroy end.
 *
 * The call's thread owns the structure until it sets state; it touches
 * nothing of the adapter.
 */
enum { CALL_RUNNING, CALL_RETURNED, CALL_ABANDONED };

typedef struct kretry_close_call_s kretry_close_call_t;
struct kretry_close_call_s {
        pthread_t thread;
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *l; /* NULL: assign(NULL) */
        int incremental;
        int assign;       /* an assignment served while closing */
        int64_t at;       /* kretry_mono_ms() when it was made */
        char err[256];    /* its error, if it failed */
        atomic_int state; /* CALL_*: who frees it */
};

/* The call, on its own thread or on the polling one: its error into
 * c->err. */
static void close_call_make(kretry_close_call_t *c) {
        rd_kafka_error_t *error  = NULL;
        rd_kafka_resp_err_t aerr = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (c->incremental)
                error = c->assign ? rd_kafka_incremental_assign(c->rk, c->l)
                                  : rd_kafka_incremental_unassign(c->rk, c->l);
        else
                aerr = rd_kafka_assign(c->rk, c->l);
        if (error) {
                snprintf(c->err, sizeof(c->err), "%s",
                         rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
        } else if (aerr) {
                snprintf(c->err, sizeof(c->err), "%s", rd_kafka_err2str(aerr));
        }
}

static void close_call_free(kretry_close_call_t *c) {
        if (c->l)
                rd_kafka_topic_partition_list_destroy(c->l);
        free(c);
}

static void *close_call_main(void *arg) {
        kretry_close_call_t *c = arg;
        close_call_make(c);
        int running = CALL_RUNNING;
        /* Abandoned: nobody joins this thread, nor reads c. */
        if (!atomic_compare_exchange_strong(&c->state, &running, CALL_RETURNED))
                close_call_free(c);
        return NULL;
}

/* The close's one call, incremental (1) or not (0): of an assignment
 * served while closing (@p assign), or of a revocation; @p l the event's
 * partitions with their tiers. Without a thread, made here. */
static void close_call(kretry_adapter_t *a,
                       rd_kafka_t *rk,
                       const rd_kafka_topic_partition_list_t *l,
                       int incremental,
                       int assign) {
        kretry_close_call_t *c = calloc(1, sizeof(*c));
        a->close_unassigned    = 1;
        if (!c) {
                kretry_log(a, KRETRY_LOG_ERR, "REBALANCE",
                           "closing: out of memory: no unassign call; the "
                           "terminating group unassigns by itself");
                return;
        }
        c->rk          = rk;
        c->incremental = incremental;
        c->assign      = assign;
        c->at          = kretry_mono_ms();
        atomic_init(&c->state, CALL_RUNNING);
        /* An eager revocation is assign(NULL); the rest name the
         * partitions (a full unassign to a terminating group all the
         * same). */
        if (incremental || assign)
                c->l = rd_kafka_topic_partition_list_copy(l);
        if (!pthread_create(&c->thread, NULL, close_call_main, c)) {
                a->close_call = c;
                return;
        }
        /* No thread: the call here, as before a close. */
        close_call_make(c);
        if (c->err[0])
                kretry_log(a, KRETRY_LOG_ERR, "REBALANCE", "%s", c->err);
        close_call_free(c);
}

/* What an assign or unassign call answered, if it failed (@p error is
 * destroyed). */
static void assign_failed(kretry_adapter_t *a,
                          rd_kafka_error_t *error,
                          rd_kafka_resp_err_t aerr) {
        if (error) {
                kretry_log(a, KRETRY_LOG_ERR, "REBALANCE", "%s",
                           rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
        } else if (aerr) {
                kretry_log(a, KRETRY_LOG_ERR, "REBALANCE", "%s",
                           rd_kafka_err2str(aerr));
        }
}

/* An assignment served while closing: librdkafka takes the call as a full
 * unassign (close_call_done); nothing of it is taken on. */
static void close_assign(kretry_adapter_t *a,
                         rd_kafka_t *rk,
                         rd_kafka_topic_partition_list_t *l,
                         int incremental) {
        rd_kafka_error_t *error  = NULL;
        rd_kafka_resp_err_t aerr = RD_KAFKA_RESP_ERR_NO_ERROR;
        log_parts(a, "closing: not taking the assignment of", l);
        if (a->close_leaving && incremental >= 0)
                close_call(a, rk, l, incremental, 1);
        else if (incremental > 0)
                error = rd_kafka_incremental_assign(rk, l);
        else if (!incremental)
                aerr = rd_kafka_assign(rk, l);
        assign_failed(a, error, aerr);
}

void kretry_rebalance_cb(rd_kafka_t *rk,
                         rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts,
                         void *opaque) {
        kretry_adapter_t *a = opaque;
        int incremental     = close_call_done(a, rk) ? -1 : cooperative(a, rk);
        rd_kafka_topic_partition_list_t *l = with_tiers(a, parts);
        rd_kafka_error_t *error            = NULL;
        rd_kafka_resp_err_t aerr           = RD_KAFKA_RESP_ERR_NO_ERROR;

        renew_window(a);

        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && a->closed) {
                close_assign(a, rk, l, incremental);
                rd_kafka_topic_partition_list_destroy(l);
                return;
        }

        /* Source messages batched for this thread (intake.c take_source)
         * of these partitions belong to the assignment that ends, or ended
         * unseen: never handled nor committed under another one (l's
         * offsets are unset: all of each partition's). */
        kretry_sbuf_drop(a, l);

        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                a->synced = 1;
                log_parts(a, "assigned", l);
                assign_parts(a, l);
                count_assigned(a);
                atomic_fetch_add(&a->stats.assignments, 1);
                /* Per-key state and the offsets decided above the
                 * committed ones first: no message of these partitions may
                 * be handled before they are known. */
                if (a->conf->ordering == KRETRY_ORDER_KEY ||
                    a->versions_topic || a->txn.on)
                        kretry_restore(a, parts);
                else
                        kretry_restore_decided(a, parts);
                if (incremental > 0)
                        error = rd_kafka_incremental_assign(rk, l);
                else if (!incremental)
                        aerr = rd_kafka_assign(rk, l);
                kretry_forward_parts(a, l);
                /* An open breaker holds new partitions back as well. */
                for (int i = 0; a->breaker_paused && i < l->cnt; i++) {
                        kretry_part_t *p = kretry_part_of(a, &l->elems[i]);
                        if (p)
                                kretry_part_update_pause(a, p);
                }
        } else {
                if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
                        log_parts(a, "revoking", l);
                else
                        kretry_log(a, KRETRY_LOG_ERR, "REBALANCE", "%s",
                                   rd_kafka_err2str(err));
                release(a, rk, l);
                if (a->closed)
                        a->close_revoked = kretry_mono_ms();
                /* The drain and commit took time: the group may have
                 * terminated meanwhile (close_call_done). */
                if (close_call_done(a, rk))
                        incremental = -1;
                if (a->close_leaving && incremental >= 0)
                        close_call(a, rk, l, incremental, 0);
                else if (incremental > 0)
                        error = rd_kafka_incremental_unassign(rk, l);
                else if (!incremental)
                        aerr = rd_kafka_assign(rk, NULL);
        }
        assign_failed(a, error, aerr);
        rd_kafka_topic_partition_list_destroy(l);
}

void kretry_revoke_for_close(kretry_adapter_t *a) {
        rd_kafka_topic_partition_list_t *l = kretry_assigned_list(a, NULL);
        if (l->cnt) {
                log_parts(a, "closing: revoking", l);
                release(a, a->consumer, l);
                a->close_revoked = kretry_mono_ms();
        }
        rd_kafka_topic_partition_list_destroy(l);
}

void kretry_close_call_reap(kretry_adapter_t *a, int final) {
        kretry_close_call_t *c = a->close_call;
        if (!c)
                return;
        int running = CALL_RUNNING;
        if (!final && atomic_load(&c->state) == CALL_RUNNING)
                return;
        /* A call answered just before the group ended may not have seen
         * its answer yet: a moment for it. */
        for (int i = 0; i < 10 && atomic_load(&c->state) == CALL_RUNNING; i++) {
                struct timespec ts = {0, 10 * 1000000L};
                nanosleep(&ts, NULL);
        }
        a->close_call = NULL;
        /* Read before it is abandoned: the thread frees c if the call
         * ever returns. */
        const char *what = c->assign ? "assign" : "unassign";
        int64_t ago      = kretry_mono_ms() - c->at;
        pthread_t thread = c->thread;
        if (atomic_compare_exchange_strong(&c->state, &running,
                                           CALL_ABANDONED)) {
                pthread_detach(thread);
                kretry_log(a, KRETRY_LOG_WARNING, "CLOSE",
                           "closing: the %s call made %lld ms ago is "
                           "unanswered as the consumer ends (librdkafka "
                           "drops a request its group thread serves after "
                           "the group terminated): the thread waiting for "
                           "it is left blocked",
                           what, (long long)ago);
                return;
        }
        pthread_join(c->thread, NULL);
        if (c->err[0])
                kretry_log(a, KRETRY_LOG_ERR, "REBALANCE", "%s", c->err);
        close_call_free(c);
}
