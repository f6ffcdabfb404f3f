/*
 * handler.concurrency > 1: many messages in the handler at once.
 *
 * Threading contract. One thread, the polling thread (the one that calls
 * kretry_adapter_poll / _run), owns all Kafka state: the consumer, the
 * producer, the offset trackers, the key chains, the version store, held
 * tier messages, the breaker and the pause state. A fixed pool of N worker
 * threads (N = handler.concurrency) runs only the user's handler. The
 * threads meet at two queues under one lock, never held across a user
 * callback: jobs to the workers, results back to the polling thread, which
 * the worker wakes through the adapter's eventfd (the model is libuv's
 * threadpool: a fixed pool, one queue, an async wake-up of the loop).
 *
 * A job is one consumed message with its own view (kretry_msg_t), so the
 * handler's view stays valid until the handler returns whatever else is in
 * flight. Everything around the handler is decided on the polling thread:
 * before it (kretry_prepare: malformed copy, parked behind its key, stale
 * version) when the job is dispatched, after it (kretry_finish: OK, tier or
 * DLQ copy, breaker, latency) when its result comes back. The polling thread
 * never runs the handler, so it keeps polling the consumer — heartbeats,
 * rebalances and max.poll.interval.ms are served whatever the handlers do.
 *
 * What may be dispatched: at most N jobs run. Consumed jobs wait in one
 * FIFO in kretry's memory; each dispatch scans it in consume order and takes
 * every job that its ordering allows:
 *   ordering=key (and any ordering with versioning): at most one message
 *     of a key (per partition number, tiers included) in the handler; a
 *     later message of a busy key waits, messages of other keys overtake it;
 *     null keys are unordered. The retry chains (keyed.c) then order the
 *     key across retries, as with one handler: a message is checked against
 *     its key's chain only when it is dispatched, after its key's earlier
 *     message was decided.
 *   ordering=partition: one message per partition (source or tier) at a
 *     time.
 *   ordering=none: any message.
 * An open breaker dispatches nothing; the handlers running finish.
 *
 * Offsets: every consumed message is tracked in consume order and marked
 * done when its outcome is durable, in any order; the committed offset never
 * passes the lowest one still in flight (offsets.c).
 *
 * Memory: jobs waiting or running are bounded by max.inflight.messages,
 * and the bytes of their keys and values by max.inflight.bytes; at either
 * bound every assigned partition is paused (the consumer is still polled,
 * so the group is served) until a quarter of each bound has drained. A
 * message is taken whenever what is in flight is below both bounds, so
 * the bytes never pass the bound by more than one message, and a message
 * larger than the bound is still taken, at the latest when nothing else is
 * in flight (it never waits for room it cannot get). A tier message held until
 * due (adapter.c dispatch_due) is handed over when due whatever the bounds: it
 * is already in memory, at most one per tier partition, and holding it longer
 * would only delay its retry.
 *
 * Revocation: the waiting jobs of the revoked partitions are dropped (not
 * done: the next owner consumes them again) and the polling thread waits up
 * to revoke.timeout.ms for their running handlers, deciding each result as
 * it arrives. A result that arrives after its partition was revoked (its
 * generation changed) is discarded: never routed, never committed. Destroy
 * joins the workers (waiting for running handlers) and releases what was
 * not decided.
 *
 * handler.concurrency 1 does not start this pool: the handler runs on the
 * polling thread (route.c dispatch) and keepalive.c holds the membership
 * during a long call.
 */
#include "adapter_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct kretry_job_s {
        kretry_msg_t msg; /* the handler's view, this job's own */
        kretry_part_t *part;
        uint64_t gen;
        rd_kafka_message_t *rkm; /* owned until decided */
        int64_t bytes;           /* its key and value */
        kretry_action_t action;  /* the handler's answer */
        int64_t us;              /* the handler's duration, -1 unknown */
        struct kretry_job_s *next;
} kretry_job_t;

typedef struct kretry_workers_s {
        kretry_adapter_t *a;
        int n, started;
        pthread_t *threads;
        pthread_mutex_t lock;
        pthread_cond_t work_cond; /* a job queued, or stop */
        pthread_cond_t done_cond; /* a result returned */
        /* Under lock. */
        kretry_job_t *todo, **todo_tail;
        kretry_job_t *done; /* newest first */
        int stop;
        /* The polling thread's own. */
        kretry_job_t *wait, **wait_tail;
        kretry_job_t **running; /* dispatched, result not decided */
        int running_cnt;
        int jobs;      /* waiting + running */
        int64_t bytes; /* their keys and values */
} kretry_workers_t;

static void *worker_main(void *arg) {
        kretry_workers_t *w       = arg;
        static const uint64_t one = 1;
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->stop && !w->todo)
                        pthread_cond_wait(&w->work_cond, &w->lock);
                if (w->stop)
                        break;
                kretry_job_t *j = w->todo;
                if (!(w->todo = j->next))
                        w->todo_tail = &w->todo;
                pthread_mutex_unlock(&w->lock);
                j->us     = -1;
                j->action = kretry_call_handler(w->a, &j->msg, &j->us);
                pthread_mutex_lock(&w->lock);
                j->next = w->done;
                w->done = j;
                pthread_cond_broadcast(&w->done_cond);
                /* The eventfd is written under the lock: stop() closes
                 * nothing before it joined every worker anyway. */
                ssize_t wr = write(w->a->efd, &one, sizeof(one));
                (void)wr; /* a full counter already wakes the loop */
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int kretry_workers_start(kretry_adapter_t *a) {
        kretry_workers_t *w = calloc(1, sizeof(*w));
        if (!w)
                return -1;
        w->a         = a;
        w->n         = a->conf->concurrency;
        w->todo_tail = &w->todo;
        w->wait_tail = &w->wait;
        w->threads   = calloc((size_t)w->n, sizeof(*w->threads));
        w->running   = calloc((size_t)w->n, sizeof(*w->running));
        a->workers   = w;
        if (!w->threads || !w->running)
                return -1;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->work_cond, NULL);
        pthread_cond_init(&w->done_cond, NULL);
        for (; w->started < w->n; w->started++)
                if (pthread_create(&w->threads[w->started], NULL, worker_main,
                                   w))
                        return -1;
        return 0;
}

/* A job enters (+1) or leaves (-1) the in-flight figures and gauges. */
static void count(kretry_adapter_t *a, const kretry_job_t *j, int sign) {
        kretry_workers_t *w = a->workers;
        w->jobs += sign;
        w->bytes += sign * j->bytes;
        atomic_store_explicit(&a->stats.inflight, w->jobs,
                              memory_order_relaxed);
        atomic_store_explicit(&a->stats.inflight_bytes, w->bytes,
                              memory_order_relaxed);
}

static void job_free(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_reserve_put(a, j->msg.reserve);
        j->msg.reserve = NULL;
        kretry_msg_free(&j->msg);
        count(a, j, -1);
        free(j);
}

/* A job not decided: its message is released, its offset not done. */
static void job_drop(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_rkm_destroy(j->rkm);
        job_free(a, j);
}

static void drop_list(kretry_adapter_t *a, kretry_job_t *j) {
        while (j) {
                kretry_job_t *next = j->next;
                job_drop(a, j);
                j = next;
        }
}

void kretry_workers_stop(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        if (!w)
                return;
        if (w->started) {
                pthread_mutex_lock(&w->lock);
                w->stop = 1;
                pthread_cond_broadcast(&w->work_cond);
                pthread_mutex_unlock(&w->lock);
                for (int i = 0; i < w->started; i++)
                        pthread_join(w->threads[i], NULL);
        }
        if (w->threads && w->running) {
                pthread_cond_destroy(&w->done_cond);
                pthread_cond_destroy(&w->work_cond);
                pthread_mutex_destroy(&w->lock);
        }
        /* Every running job is queued or returned now. */
        drop_list(a, w->todo);
        drop_list(a, w->done);
        drop_list(a, w->wait);
        free(w->threads);
        free(w->running);
        free(w);
        a->workers = NULL;
}

static int same_key(const rd_kafka_message_t *x, const rd_kafka_message_t *y) {
        return x->key && y->key && x->key_len == y->key_len &&
               !memcmp(x->key, y->key, x->key_len);
}

/* 1 when @p j's ordering keeps it waiting behind a running job. */
static int busy(const kretry_adapter_t *a, const kretry_job_t *j) {
        const kretry_workers_t *w = a->workers;
        int by_part               = a->conf->ordering == KRETRY_ORDER_PARTITION;
        int by_key = a->conf->ordering == KRETRY_ORDER_KEY || a->versions_topic;
        for (int i = 0; i < w->running_cnt; i++) {
                const kretry_job_t *r = w->running[i];
                if (by_part && r->part == j->part)
                        return 1;
                if (by_key && r->part->partition == j->part->partition &&
                    same_key(r->rkm, j->rkm))
                        return 1;
        }
        return 0;
}

/* Bind the job's view and decide what needs no handler; 1 when decided. */
static int prepare(kretry_adapter_t *a, kretry_job_t *j) {
        a->msg      = &j->msg;
        int decided = kretry_prepare(a, j->part, j->rkm);
        a->msg      = &a->msg0;
        return decided;
}

static void run(kretry_workers_t *w, kretry_job_t *j) {
        w->running[w->running_cnt++] = j;
        j->next                      = NULL;
        pthread_mutex_lock(&w->lock);
        *w->todo_tail = j;
        w->todo_tail  = &j->next;
        pthread_cond_signal(&w->work_cond);
        pthread_mutex_unlock(&w->lock);
}

/* Dispatch, in consume order, every waiting job its ordering allows. */
static void pump(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        kretry_job_t **pp   = &w->wait;
        while (*pp && w->running_cnt < w->n && !a->breaker_paused) {
                kretry_job_t *j = *pp;
                if (busy(a, j)) {
                        pp = &j->next;
                        continue;
                }
                if (!(*pp = j->next))
                        w->wait_tail = pp;
                if (prepare(a, j))
                        job_free(a, j); /* its message decided */
                else
                        run(w, j);
        }
}

/* 1 when @p n in flight is at @p max, or (@p paused) has not drained a
 * quarter of it yet. */
static int at_bound(int64_t n, int64_t max, int paused) {
        return paused ? n > max - (max + 3) / 4 : n >= max;
}

/* Pause every partition at max.inflight.messages or max.inflight.bytes,
 * resume once a quarter of both drained. */
static void update_full(kretry_adapter_t *a) {
        const kretry_workers_t *w = a->workers;
        int paused                = a->full_paused;
        int full = at_bound(w->jobs, a->conf->max_inflight, paused) ||
                   at_bound(w->bytes, a->conf->max_inflight_bytes, paused);
        if (full == a->full_paused)
                return;
        a->full_paused = full;
        kretry_update_pause_all(a);
}

void kretry_workers_submit(kretry_adapter_t *a,
                           kretry_part_t *part,
                           rd_kafka_message_t *rkm) {
        kretry_workers_t *w = a->workers;
        kretry_job_t *j     = calloc(1, sizeof(*j));
        if (!j || kretry_msg_init(&j->msg, (size_t)a->conf->error_max_length) ||
            !(j->msg.reserve = kretry_reserve_take(a))) {
                if (j)
                        kretry_msg_free(&j->msg);
                free(j);
                kretry_retry_later(a, part, rkm, "queueing for a worker");
                return;
        }
        j->part       = part;
        j->gen        = part->gen;
        j->rkm        = rkm;
        j->bytes      = (int64_t)rkm->key_len + (int64_t)rkm->len;
        *w->wait_tail = j;
        w->wait_tail  = &j->next;
        count(a, j, +1);
        pump(a);
        update_full(a);
}

static void decide(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_workers_t *w = a->workers;
        for (int i = 0; i < w->running_cnt; i++)
                if (w->running[i] == j) {
                        w->running[i] = w->running[--w->running_cnt];
                        break;
                }
        kretry_part_t *part = j->part;
        if (!part->assigned || part->gen != j->gen) {
                /* Revoked since: the new owner handles it again. */
                job_drop(a, j);
                return;
        }
        a->msg = &j->msg;
        kretry_finish(a, part, j->action, j->us);
        a->msg = &a->msg0;
        job_free(a, j);
}

int kretry_workers_reap(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        if (!w)
                return 0;
        pthread_mutex_lock(&w->lock);
        kretry_job_t *done = w->done, *fifo = NULL;
        w->done = NULL;
        pthread_mutex_unlock(&w->lock);
        int n = 0;
        while (done) { /* in the order the handlers returned */
                kretry_job_t *next = done->next;
                done->next         = fifo;
                fifo               = done;
                done               = next;
        }
        while (fifo) {
                kretry_job_t *next = fifo->next;
                decide(a, fifo);
                fifo = next;
                n++;
        }
        pump(a);
        update_full(a);
        return n;
}

static int in_list(const kretry_adapter_t *a,
                   const kretry_part_t *part,
                   const rd_kafka_topic_partition_list_t *l) {
        for (int i = 0; i < l->cnt; i++)
                if (l->elems[i].partition == part->partition &&
                    !strcmp(l->elems[i].topic, a->topics[part->tier]))
                        return 1;
        return 0;
}

static int running_in(const kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *l) {
        const kretry_workers_t *w = a->workers;
        int n                     = 0;
        for (int i = 0; i < w->running_cnt; i++)
                n += in_list(a, w->running[i]->part, l);
        return n;
}

void kretry_workers_revoke(kretry_adapter_t *a,
                           const rd_kafka_topic_partition_list_t *l,
                           int64_t deadline) {
        kretry_workers_t *w = a->workers;
        if (!w)
                return;
        for (kretry_job_t **pp = &w->wait; *pp;) {
                kretry_job_t *j = *pp;
                if (!in_list(a, j->part, l)) {
                        pp = &j->next;
                        continue;
                }
                *pp = j->next;
                job_drop(a, j);
        }
        w->wait_tail = &w->wait;
        while (*w->wait_tail)
                w->wait_tail = &(*w->wait_tail)->next;
        int n;
        while (kretry_workers_reap(a), (n = running_in(a, l)) > 0) {
                int wait = kretry_left_ms(deadline, 100);
                if (!wait) {
                        kretry_log(a, KRETRY_LOG_WARNING, "REVOKE",
                                   "%d handler call(s) of revoked partitions "
                                   "still running after %d ms; their results "
                                   "will be discarded",
                                   n, a->conf->revoke_timeout_ms);
                        return;
                }
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += (long)(wait % 1000) * 1000000;
                ts.tv_sec += (time_t)(wait / 1000) + ts.tv_nsec / 1000000000;
                ts.tv_nsec %= 1000000000;
                pthread_mutex_lock(&w->lock);
                if (!w->done)
                        pthread_cond_timedwait(&w->done_cond, &w->lock, &ts);
                pthread_mutex_unlock(&w->lock);
        }
}
