/*
 * Phase: the handler's threads.
 *
 * The handler's threads: up to handler.concurrency messages in the handler
 * at once, in the order the ordering allows.
 *
 * Threads (the whole contract is in adapter_int.h). The polling thread
 * owns all Kafka state. With handler.thread worker (the default) a fixed
 * pool of handler.concurrency threads runs only the user's handler, so the
 * polling thread never runs user code and keeps serving the group
 * (heartbeats, rebalances, max.poll.interval.ms) whatever the handlers do. The
 * workers run under SCHED_BATCH (handler.sched batch): a woken worker never
 * preempts the polling thread or librdkafka's threads, which feed it (on two
 * busy cores a fast handler otherwise cost the polling thread a context switch
 * every few messages). With handler.thread poll the polling thread calls the
 * handler itself (an application's event loop that needs no locks; a long
 * call must then hold the message and complete it later).
 *
 * The threads meet at two queues under one lock, never held across a user
 * callback: jobs to the workers, results back to the polling thread (the
 * model is libuv's threadpool: a fixed pool, one queue, an async wake-up of
 * the loop). Hand-offs are batched: the polling thread queues every job it
 * may dispatch under one lock; a worker takes its next job in the same lock
 * as it returns a result; a sleeping worker is woken only when jobs are
 * queued and no awake worker is free to take them (wake_spare: one spare,
 * so a fast handler keeps one or two workers busy, not all of them taking
 * turns at the lock, and slow ones bring every worker in, one wake-up
 * each); the eventfd is written only when the polling thread asked for it
 * (it is about to sleep, or the application's loop waits on
 * kretry_adapter_fd()).
 *
 * A job is one consumed message with its own view (kretry_msg_t, its first
 * member), kept in a pool and reused: nothing is allocated per message once
 * the pool holds what is in flight. Everything around the handler is
 * decided on the polling thread: before it (kretry_prepare: malformed copy,
 * parked behind its key, stale version, undecodable) when the job is
 * dispatched, after it (kretry_finish: OK, tier or DLQ copy, breaker,
 * latency) when its result comes back.
 *
 * What may be dispatched: at most handler.concurrency jobs are in a call or
 * held (kretry_msg_hold) at once; the workers take queued jobs in order as
 * they have room, due retries first (kretry_jobq_t): a retry's promise is
 * its delay, so it waits for a free worker, never behind queued source
 * messages. A job passes a gate first:
 *   ordering=key (and any ordering with versioning): its key's gate, in the
 *     key's entry of its source partition's chains (keychain.h), where the
 *     key's retry chain lives too: one message of a key (per partition
 *     number, tiers included) is dispatched at a time, the others wait in
 *     the gate in consume order while other keys overtake them. Null keys
 *     are ungated. The chain then orders the key across retries: a message
 *     is checked against it when dispatched, after its key's earlier
 *     message was decided.
 *   ordering=partition: its partition's gate (source or tier). While one
 *     message of a partition runs, the next one waiting at the gate, if its
 *     key differs, is prepared as its successor (make_successors), and the
 *     worker that returns the first with OK queues it at once: the
 *     partition's next message starts without a round trip through the
 *     polling thread, still one at a time and in order.
 *   ordering=none: no gate.
 * Jobs through their gate are queued for the workers (prepared first, on
 * the polling thread; with a breaker, at most handler.concurrency ahead of
 * them, none while failures run), so that a worker going back for its next
 * job needs no round trip through the polling thread. An open breaker
 * dispatches nothing more and the workers take no queued job until it
 * closes; the handlers running finish. With handler.thread poll a job is
 * dispatched only when there is room, and called at once.
 *
 * Offsets: every consumed message is tracked in consume order and marked
 * done when its outcome is durable, in any order; the committed offset never
 * passes the lowest one still in flight (offsets.c).
 *
 * Memory: jobs waiting or running are bounded by max.inflight.messages,
 * and the bytes of their keys and values by max.inflight.bytes, copies not
 * yet acknowledged by max.inflight.copies (intake.c copies_full); at any
 * bound no message is taken from the tier and source queues (intake.c
 * consume) while the consumer queue, which carries the group's events, is
 * still served. Nothing is paused: a pause would make librdkafka drop what
 * it prefetched, and the workers would idle while it is fetched again
 * (librdkafka's own prefetch bounds, queued.max.messages.kbytes, hold the
 * rest). A message is taken whenever what is in flight is below both
 * bounds, so the bytes never pass the bound by more than one message, and a
 * message larger than the bound is still taken, at the latest when nothing
 * else is in flight (it never waits for room it cannot get). A tier message
 * held until due (intake.c kretry_intake_due) is handed over when due whatever
 * the bounds: it is already in memory, at most one per tier partition, and
 * holding it longer would only delay its retry.
 *
 * Assignments: a job keeps a reference to its partition's assignment
 * (kretry_part_t), whose gates it passes; a gate lives and dies with its
 * assignment, so nothing a revocation leaves behind (a successor dropped
 * while it held the gate, a result still out) can stall the partition's
 * next assignment. Revocation: the waiting jobs of the revoked partitions
 * are dropped (not done: the next owner consumes them again) and the
 * polling thread waits up to revoke.timeout.ms for their running and held
 * jobs, deciding each result as it arrives (not for a lost assignment,
 * retired first, nor with handler.thread poll, whose held messages are
 * completed by the loop the revocation holds, nor for the jobs of an
 * earlier assignment of the same partition: a revocation waits for the
 * assignments it ends, never by partition number). A result that arrives
 * after its assignment was retired is discarded: never routed, never
 * committed.
 *
 * Held messages: the application gets a handle (handles.h), not the job,
 * since jobs are pooled: a handle outliving its hold is refused, never
 * taken for the job's next message. Destroy joins the workers (waiting for
 * running handlers) and releases what was not decided; a message still
 * held then is abandoned: its key and value are released, its accessors
 * read nothing, and kretry_msg_complete() only frees it.
 */
#define _GNU_SOURCE /* SCHED_BATCH */
#include "workers.h"
#include "adapter_int.h"
#include "breaker.h"
#include "clock.h"
#include "codec.h"
#include "conf.h"
#include "handles.h"
#include "job.h"
#include "keychain.h"
#include "log.h"
#include "msg.h"
#include "offsets.h"
#include "owned.h"
#include "part.h"
#include "route.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Jobs in order. The workers' queue and the polling thread's ready list
 * are two each: due retries (tier partitions' jobs) and source messages.
 * A due retry is taken before any source message queued ahead of it, so
 * it waits for a free worker, never behind the source backlog (up to
 * max.inflight.messages jobs). Per-key and per-partition order hold: a
 * job in either is through its gate, and a gate lets one job of its key
 * (or partition) through at a time; a tier partition has a gate of its
 * own. */
typedef struct {
        kretry_job_t *head, **tail;
} kretry_jobq_t;

enum { KRETRY_Q_RETRY, KRETRY_Q_SOURCE, KRETRY_QS };

typedef struct kretry_workers_s {
        kretry_adapter_t *a;
        int n;       /* handler.concurrency */
        int inline_; /* handler.thread poll: no threads */
        int started;
        pthread_t *threads;
        pthread_mutex_t lock;
        pthread_cond_t work_cond; /* a job queued, or stop */
        pthread_cond_t done_cond; /* a result returned, while waited for */
        int efd;
        /* Under lock. */
        kretry_jobq_t todo[KRETRY_QS];
        kretry_job_t *done, **done_tail;
        atomic_int todo_cnt; /* written under lock, read without */
        int up;              /* worker threads running worker_main */
        int idle;            /* workers waiting for a job */
        int signaled;        /* of those, woken and not yet running */
        int active;          /* jobs in a call or held: at most n */
        int paused;          /* the breaker is open: no job is taken */
        int succ_hold;       /* transient failures run: a successor waits
                                for its predecessor's decision (written by
                                the polling thread only) */
        atomic_int calling;  /* workers in a handler call (lock-free, so
                                that a return counts before the lock) */
        atomic_int has_done; /* done is not empty (read without the lock) */
        int notify;          /* write the eventfd on the next result */
        int waiting;         /* the polling thread waits on done_cond */
        int stop;
        int dead; /* the adapter is gone: held jobs are freed on completion */
        int refs; /* the adapter's, and one per abandoned held job */
        /* The polling thread's own. */
        kretry_jobq_t ready[KRETRY_QS]; /* through their gate */
        kretry_job_t **running;         /* dispatched, not decided */
        int running_cnt, running_cap;
        kretry_job_t *pool; /* free jobs, reused */
        int jobs;           /* waiting + running */
        int64_t bytes;      /* their keys and values */
        int64_t later_at;   /* memory ran out preparing a job: nothing is
                               dispatched before this (kretry_mono_ms) */
} kretry_workers_t;

static kretry_job_t *job_of(kretry_msg_t *m) {
        return (kretry_job_t *)m;
}

static void jobq_init(kretry_jobq_t *q) {
        q->head = NULL;
        q->tail = &q->head;
}

static void jobq_push(kretry_jobq_t *q, kretry_job_t *j) {
        j->next  = NULL;
        *q->tail = j;
        q->tail  = &j->next;
}

static void jobq_push_first(kretry_jobq_t *q, kretry_job_t *j) {
        if (!(j->next = q->head))
                q->tail = &j->next;
        q->head = j;
}

static kretry_job_t *jobq_pop(kretry_jobq_t *q) {
        kretry_job_t *j = q->head;
        if (j && !(q->head = j->next))
                q->tail = &q->head;
        return j;
}

/* The queue of @p j's kind in @p qs: due retries, or source messages. */
static kretry_jobq_t *q_of(kretry_jobq_t *qs, const kretry_job_t *j) {
        return &qs[j->part->tier ? KRETRY_Q_RETRY : KRETRY_Q_SOURCE];
}

/* The first job of @p qs, retries first; NULL when both are empty. */
static kretry_job_t *qs_pop(kretry_jobq_t *qs) {
        kretry_job_t *j = jobq_pop(&qs[KRETRY_Q_RETRY]);
        return j ? j : jobq_pop(&qs[KRETRY_Q_SOURCE]);
}

static int qs_empty(const kretry_jobq_t *qs) {
        return !qs[KRETRY_Q_RETRY].head && !qs[KRETRY_Q_SOURCE].head;
}

/* The jobs of @p qs whose partition is in @p l, taken out and pushed
 * onto the front of @p *out (in reverse); returns how many. */
static int qs_take_in(const kretry_adapter_t *a,
                      kretry_jobq_t *qs,
                      const rd_kafka_topic_partition_list_t *l,
                      kretry_job_t **out);

static void wake_spare(kretry_workers_t *w);

/* Under lock: @p s, prepared and dispatched, goes to the head of the
 * workers' queue of its kind (its partition's turn came: the worker just
 * back from its predecessor takes it). */
static void queue_first(kretry_workers_t *w, kretry_job_t *s) {
        jobq_push_first(q_of(w->todo, s), s);
        atomic_fetch_add_explicit(&w->todo_cnt, 1, memory_order_relaxed);
        wake_spare(w);
}

/* Under lock: @p j's result is ready for the polling thread. Its
 * successor, if it has one and the answer was OK, is queued at once: its
 * partition's next message starts without a round trip through the
 * polling thread. Any other answer leaves the successor to j's decision
 * (decide), which may open the breaker first. */
static void push_done(kretry_workers_t *w, kretry_job_t *j) {
        static const uint64_t one = 1;
        kretry_job_t *s           = j->succ;
        if (s && j->action == KRETRY_OK && !w->succ_hold) {
                j->succ = NULL;
                queue_first(w, s);
        }
        j->next       = NULL;
        *w->done_tail = j;
        w->done_tail  = &j->next;
        atomic_store_explicit(&w->has_done, 1, memory_order_release);
        if (w->waiting)
                pthread_cond_broadcast(&w->done_cond);
        if (w->notify) {
                w->notify  = 0;
                ssize_t wr = write(w->efd, &one, sizeof(one));
                (void)wr; /* a full counter already wakes the loop */
        }
}

/* Under lock: the handler returned @p action for @p j. */
static void
call_returned(kretry_workers_t *w, kretry_job_t *j, kretry_action_t action) {
        j->in_call = 0;
        if (action == KRETRY_ASYNC && j->hold) {
                if (!j->completed) {
                        j->held = 1; /* kretry_msg_complete() delivers it */
                        return;
                }
                w->active--;
                /* Completed during the call: j->action is its answer. */
        } else {
                /* A hold the handler did not answer KRETRY_ASYNC for is
                 * void; its own answer counts. */
                j->hold   = 0;
                j->action = action;
                w->active--;
        }
        push_done(w, j);
}

/* Under lock: one spare worker. While jobs are queued that a worker may
 * take, one awake worker that is not in a handler call must be there to
 * take them, or every worker is in a call: a sleeping one is woken when
 * there is none. Workers are woken one at a time, each by the last one to
 * start a call (or by the polling thread as it queues jobs): slow handlers
 * bring every worker in within a few wake-ups, while a fast handler is
 * served by the one or two workers it needs, and the others sleep instead
 * of taking turns at the lock for every message. */
static void wake_spare(kretry_workers_t *w) {
        if (qs_empty(w->todo) || w->paused || w->active >= w->n ||
            w->idle <= w->signaled)
                return;
        int awake = w->up - w->idle + w->signaled;
        if (awake - atomic_load(&w->calling) > 0)
                return;
        w->signaled++;
        pthread_cond_signal(&w->work_cond);
}

/* The handler on @p j. A hold it did not answer KRETRY_ASYNC for is void:
 * its handle ends before the result can be decided, so that the handle
 * never names the job's next message. */
static kretry_action_t call(kretry_adapter_t *a, kretry_job_t *j) {
        j->us                  = -1;
        kretry_action_t action = kretry_call_handler(a, &j->msg, &j->us);
        if (j->handle && action != KRETRY_ASYNC)
                kretry_handle_end(j->handle);
        return action;
}

static void *worker_main(void *arg) {
        kretry_workers_t *w = arg;
        /* Named for top -H, perf and gdb, as librdkafka names its rdk:*
         * threads. */
        prctl(PR_SET_NAME, "kretry:worker", 0, 0, 0);
        /* handler.sched batch: a woken worker waits for a free core or the
         * next tick instead of preempting the thread that runs there, most
         * often the polling thread or librdkafka's, which feed it. Best
         * effort: where the system refuses, the inherited policy stays. */
        if (!w->a->conf->handler_sched_inherit) {
                struct sched_param sp = {0};
                (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
        }
        pthread_mutex_lock(&w->lock);
        w->up++;
        for (;;) {
                while (!w->stop &&
                       (qs_empty(w->todo) || w->paused || w->active >= w->n)) {
                        w->idle++;
                        pthread_cond_wait(&w->work_cond, &w->lock);
                        w->idle--;
                        if (w->signaled > 0)
                                w->signaled--;
                }
                if (w->stop)
                        break;
                kretry_job_t *j = qs_pop(w->todo);
                atomic_fetch_sub_explicit(&w->todo_cnt, 1,
                                          memory_order_relaxed);
                w->active++;
                j->in_call = 1;
                atomic_fetch_add(&w->calling, 1);
                wake_spare(w);
                pthread_mutex_unlock(&w->lock);
                kretry_action_t action = call(w->a, j);
                atomic_fetch_sub(&w->calling, 1);
                pthread_mutex_lock(&w->lock);
                call_returned(w, j, action);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int kretry_workers_start(kretry_adapter_t *a) {
        kretry_workers_t *w = calloc(1, sizeof(*w));
        if (!w)
                return -1;
        w->a       = a;
        w->n       = a->conf->concurrency;
        w->inline_ = a->conf->handler_poll_thread;
        w->efd     = a->efd;
        w->refs    = 1;
        for (int q = 0; q < KRETRY_QS; q++) {
                jobq_init(&w->todo[q]);
                jobq_init(&w->ready[q]);
        }
        w->done_tail   = &w->done;
        w->running_cap = w->n;
        w->running     = calloc((size_t)w->n, sizeof(*w->running));
        w->threads =
                w->inline_ ? NULL : calloc((size_t)w->n, sizeof(pthread_t));
        if (!w->running || (!w->inline_ && !w->threads)) {
                free(w->running);
                free(w->threads);
                free(w);
                return -1;
        }
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->work_cond, NULL);
        /* Its waits are bounded by revoke.timeout.ms: on the monotonic
         * clock, which a step of the wall clock does not stretch. */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->done_cond, &ca);
        pthread_condattr_destroy(&ca);
        a->workers = w;
        for (; !w->inline_ && w->started < w->n; w->started++)
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

/* Back to the pool: its view keeps its buffers, its reserve record. */
static void job_free(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_workers_t *w = a->workers;
        if (j->follow)
                j->follow->pred = NULL;
        if (j->pred)
                j->pred->follow = NULL;
        j->follow = j->pred = NULL;
        count(a, j, -1);
        j->rkm = NULL;
        kretry_part_unref(j->part);
        j->part = NULL;
        j->next = w->pool;
        w->pool = j;
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

static void job_release(kretry_job_t *j) {
        if (j->has_value)
                avro_value_decref(&j->value);
        kretry_msg_free(&j->msg); /* its reserve record too */
        free(j);
}

static void workers_free(kretry_workers_t *w) {
        pthread_cond_destroy(&w->done_cond);
        pthread_cond_destroy(&w->work_cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

/* The jobs waiting in the gates of @p part (its own, and with a source
 * partition its keys'), dropped. */
static void drop_gated(kretry_adapter_t *a, kretry_part_t *part) {
        kretry_gate_t *g = &part->gate;
        size_t pos       = 0;
        do {
                drop_list(a, g->head);
                g->head = g->tail = NULL;
        } while (part->tier == 0 &&
                 (g = kretry_chains_next_gate(&part->chains, &pos)));
}

void kretry_workers_retire(kretry_adapter_t *a, kretry_part_t *part) {
        if (a->workers)
                drop_gated(a, part);
}

static void for_each_part(kretry_adapter_t *a,
                          void (*fn)(kretry_adapter_t *, kretry_part_t *)) {
        for (int t = 0; a->parts && t < a->topic_cnt; t++)
                for (int p = 0; p < a->part_cap[t]; p++)
                        if (a->parts[t][p])
                                fn(a, a->parts[t][p]);
}

void kretry_workers_stop(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        w->stop = 1;
        pthread_cond_broadcast(&w->work_cond);
        pthread_mutex_unlock(&w->lock);
        for (int i = 0; i < w->started; i++)
                pthread_join(w->threads[i], NULL);
        /* No handler runs now: every job is queued, returned, held, or
         * waiting on the polling thread's side. */
        pthread_mutex_lock(&w->lock);
        kretry_job_t *done = w->done, *succ = NULL;
        kretry_jobq_t todo[KRETRY_QS];
        memcpy(todo, w->todo, sizeof(todo));
        for (int q = 0; q < KRETRY_QS; q++)
                jobq_init(&w->todo[q]);
        w->done       = NULL;
        w->dead       = 1;
        int abandoned = 0;
        for (int i = 0; i < w->running_cnt; i++) {
                kretry_job_t *j = w->running[i];
                if (j->succ) {
                        j->succ->next = succ;
                        succ          = j->succ;
                        j->succ       = NULL;
                }
                /* Unlinked now: an abandoned job may be freed by
                 * kretry_msg_complete() on another thread at any time
                 * from here on, so no job_free() below may reach it. */
                if (j->follow) {
                        j->follow->pred = NULL;
                        j->follow       = NULL;
                }
                if (!j->held)
                        continue;
                /* Its handler's application still has it: only
                 * kretry_msg_complete() may touch it now, and frees it. */
                kretry_rkm_destroy(j->rkm);
                j->rkm = j->msg.rkm = NULL;
                /* What pointed into the adapter or the message goes with
                 * them: the accessors then read nothing (msg.c). */
                j->msg.topic = j->msg.orig_topic = NULL;
                j->msg.hdrs                      = NULL;
                j->msg.hdrs_loaded               = 1;
                kretry_part_unref(j->part);
                j->part = NULL;
                abandoned++;
        }
        w->refs += abandoned;
        pthread_mutex_unlock(&w->lock);
        if (abandoned)
                kretry_log(a, KRETRY_LOG_WARNING, "DESTROY",
                           "%d held message(s) not completed: abandoned, not "
                           "committed; the next owner handles them again",
                           abandoned);
        for (int q = 0; q < KRETRY_QS; q++) {
                drop_list(a, todo[q].head);
                drop_list(a, w->ready[q].head);
                jobq_init(&w->ready[q]);
        }
        drop_list(a, done);
        drop_list(a, succ);
        for_each_part(a, drop_gated);
        while (w->pool) {
                kretry_job_t *j = w->pool;
                w->pool         = j->next;
                job_release(j);
        }
        free(w->threads);
        free(w->running);
        a->workers = NULL;
        pthread_mutex_lock(&w->lock);
        int last = --w->refs == 0;
        pthread_mutex_unlock(&w->lock);
        if (last)
                workers_free(w);
}

/* Whether a message of @p part with key @p rkm must pass a gate. */
static int gated(const kretry_adapter_t *a, const rd_kafka_message_t *rkm) {
        return a->conf->ordering == KRETRY_ORDER_PARTITION ||
               ((a->conf->ordering == KRETRY_ORDER_KEY || a->versions_topic) &&
                rkm->key);
}

/* The gate a message of @p part must pass; NULL when out of memory. */
static kretry_gate_t *
gate_of(kretry_adapter_t *a, kretry_part_t *part, rd_kafka_message_t *rkm) {
        if (a->conf->ordering == KRETRY_ORDER_PARTITION)
                return &part->gate;
        kretry_part_t *src = kretry_part_find(a, 0, part->partition);
        return src ? kretry_chains_gate(&src->chains, rkm->key, rkm->key_len)
                   : NULL;
}

static void to_ready(kretry_workers_t *w, kretry_job_t *j) {
        jobq_push(q_of(w->ready, j), j);
}

/* @p j is decided: the next job waiting at its gate goes through. Done
 * before its outcome (which may release its key's bytes): the next job is
 * prepared only after this one's outcome is decided, on this thread. */
static void gate_pass(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_gate_t *g = j->gate;
        if (!g)
                return;
        j->gate = NULL;
        if (!j->part->assigned)
                return; /* revoked: the gate went with its assignment */
        kretry_job_t *next = g->head;
        if (next) {
                if (!(g->head = next->next))
                        g->tail = NULL;
                to_ready(a->workers, next);
                return;
        }
        g->busy = 0;
        if (g != &j->part->gate) {
                kretry_part_t *src = kretry_part_find(a, 0, j->part->partition);
                kretry_chains_gate_idle(&src->chains, g);
        }
}

/* The decoded record (the codec's, which the next decode overwrites: the
 * next job is prepared while this one waits, runs, or is held) copied into
 * the job's own; 0, or -1 when memory is short. */
static int own_value(kretry_adapter_t *a, kretry_job_t *j) {
        if (!j->msg.value_avro)
                return 0;
        if (!j->has_value) {
                if (kretry_codec_value_new(a->codec, &j->value))
                        return -1;
                j->has_value = 1;
        }
        avro_value_reset(&j->value);
        if ((kretry_test_alloc_fails && kretry_test_alloc_fails("avro-copy")) ||
            avro_value_copy(&j->value, j->msg.value_avro))
                return -1;
        j->msg.value_avro = &j->value;
        return 0;
}

/* How long dispatching pauses when memory ran out preparing a job. */
#define KRETRY_NO_MEM_LATER_MS 100

/* Bind the job's view and decide what needs no handler; 1 when decided,
 * -1 when memory is short: nothing is decided, the job keeps its place and
 * its gate, and dispatching pauses for KRETRY_NO_MEM_LATER_MS (a job
 * prepared later must not overtake it). */
static int prepare(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_workers_t *w = a->workers;
        a->msg              = &j->msg;
        int rc              = kretry_prepare(a, j->part, j->rkm);
        a->msg              = &a->msg0;
        if (!rc && own_value(a, j))
                rc = -1;
        if (rc < 0) {
                if (!w->later_at)
                        kretry_log(a, KRETRY_LOG_ERR, "MEMORY",
                                   "out of memory preparing %s [%d] offset "
                                   "%lld for the handler; dispatching again "
                                   "in %d ms, nothing committed past it "
                                   "meanwhile",
                                   a->topics[j->part->tier],
                                   (int)j->part->partition,
                                   (long long)j->rkm->offset,
                                   KRETRY_NO_MEM_LATER_MS);
                w->later_at = kretry_mono_ms() + KRETRY_NO_MEM_LATER_MS;
        }
        return rc;
}

/* @p j is no longer dispatched. */
static void unslot(kretry_workers_t *w, kretry_job_t *j) {
        if (j->slot < 0)
                return;
        kretry_job_t *last  = w->running[--w->running_cnt];
        w->running[j->slot] = last;
        last->slot          = j->slot;
        j->slot             = -1;
}

static void decide(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_workers_t *w = a->workers;
        unslot(w, j);
        kretry_part_t *part = j->part;
        /* Its result was pushed: no other thread touches it now. */
        kretry_job_t *s = j->succ;
        j->succ         = NULL;
        gate_pass(a, j);
        if (!part->assigned) {
                /* Revoked since: the new owner handles it again. */
                if (s) {
                        unslot(w, s);
                        job_drop(a, s);
                }
                job_drop(a, j);
                return;
        }
        a->msg = &j->msg;
        kretry_finish(a, part, j->action, j->us);
        a->msg = &a->msg0;
        job_free(a, j);
        if (s) { /* not queued when j returned: its turn is now */
                pthread_mutex_lock(&w->lock);
                queue_first(w, s);
                pthread_mutex_unlock(&w->lock);
        }
}

/* Decide every result returned; returns how many. */
static int reap(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        /* Nothing returned: no lock taken (a result pushed meanwhile is
         * reaped on the next step, which its eventfd write or the
         * polling thread's own check before sleeping brings). */
        if (!atomic_load_explicit(&w->has_done, memory_order_acquire))
                return 0;
        pthread_mutex_lock(&w->lock);
        kretry_job_t *j = w->done;
        w->done         = NULL;
        w->done_tail    = &w->done;
        atomic_store_explicit(&w->has_done, 0, memory_order_relaxed);
        w->notify = 0;
        pthread_mutex_unlock(&w->lock);
        int n   = 0;
        int was = kretry_store_begin(a);
        for (kretry_job_t *next; j; j = next, n++) {
                next = j->next;
                decide(a, j);
        }
        kretry_store_end(a, was);
        return n;
}

/* handler.thread poll: the call, here. */
static void call_here(kretry_adapter_t *a, kretry_job_t *j) {
        kretry_workers_t *w = a->workers;
        pthread_mutex_lock(&w->lock);
        j->in_call = 1;
        w->active++;
        pthread_mutex_unlock(&w->lock);
        kretry_action_t action = call(a, j);
        pthread_mutex_lock(&w->lock);
        call_returned(w, j, action);
        pthread_mutex_unlock(&w->lock);
        reap(a);
}

/* handler.thread poll: 1 while fewer than handler.concurrency messages
 * are in a call or held. */
static int inline_room(kretry_workers_t *w) {
        pthread_mutex_lock(&w->lock);
        int room = w->active < w->n;
        pthread_mutex_unlock(&w->lock);
        return room;
}

/* Room in running[] for one more dispatched job; 0 when memory is short. */
static int slot_room(kretry_workers_t *w) {
        if (w->running_cnt < w->running_cap)
                return 1;
        int cap           = w->running_cap * 2;
        kretry_job_t **nr = realloc(w->running, sizeof(*nr) * (size_t)cap);
        if (!nr)
                return 0;
        w->running     = nr;
        w->running_cap = cap;
        return 1;
}

/* Jobs queued for the workers, not yet taken. */
static int queued(kretry_workers_t *w) {
        return atomic_load_explicit(&w->todo_cnt, memory_order_relaxed);
}

/* @p j is dispatched: in running[] until decided. */
static void slot(kretry_workers_t *w, kretry_job_t *j) {
        j->slot                      = w->running_cnt;
        w->running[w->running_cnt++] = j;
        j->hold = j->completed = j->held = 0;
        j->handle                        = 0;
        j->next                          = NULL;
        j->succ                          = NULL;
}

/* Whether @p s may be prepared before @p j, dispatched ahead of it in
 * their partition, is decided: their keys differ (or one is null), so
 * that j's outcome (its key's retry chain, park or version) cannot change
 * what s's preparation decides. */
static int independent(const kretry_job_t *j, const kretry_job_t *s) {
        const rd_kafka_message_t *x = j->rkm, *y = s->rkm;
        return !x->key || !y->key || x->key_len != y->key_len ||
               memcmp(x->key, y->key, x->key_len);
}

/* ordering=partition: each dispatched job whose partition has a job
 * waiting at its gate gets that job, prepared now, as its successor, which
 * the worker returning the job with OK queues at once (push_done): one
 * message of the partition in the handler at a time still, and in order,
 * but the next one starts without a round trip through this thread. The
 * gate passes to the successor. Not done for a waiting job with the same
 * key (its preparation depends on the first's outcome), nor for a
 * successor whose predecessor is not decided yet (the next one would
 * depend on two outcomes), nor while transient failures run under a
 * breaker (pump's strict rule). */
static void make_successors(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        for (int i = 0, cnt = w->running_cnt; i < cnt; i++) {
                kretry_job_t *j  = w->running[i], *s;
                kretry_gate_t *g = j->gate;
                if (!g || !g->head || j->pred || !j->part->assigned)
                        continue;
                while ((s = g->head) && independent(j, s) && slot_room(w)) {
                        if (!(g->head = s->next))
                                g->tail = NULL;
                        int rc = prepare(a, s);
                        if (rc < 0) { /* back in the gate's head */
                                if (!(s->next = g->head))
                                        g->tail = s;
                                g->head = s;
                                return;
                        }
                        if (rc) { /* its message decided */
                                s->gate = NULL;
                                job_free(a, s);
                                continue;
                        }
                        j->gate = NULL; /* s holds the gate now */
                        slot(w, s);
                        j->follow = s;
                        s->pred   = j;
                        pthread_mutex_lock(&w->lock);
                        j->succ = s;
                        pthread_mutex_unlock(&w->lock);
                        break;
                }
        }
}

/* Dispatch, in order, every job through its gate that may go: to the
 * workers' queue (a worker back from a call takes its next job with no
 * round trip through this thread), or with handler.thread poll, while fewer
 * than handler.concurrency are in a call or held, called here. */
static void pump(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        kretry_jobq_t batch[KRETRY_QS];
        for (int q = 0; q < KRETRY_QS; q++)
                jobq_init(&batch[q]);
        if (w->later_at) { /* memory ran out: a pause, then again */
                if (kretry_mono_ms() < w->later_at)
                        return;
                w->later_at = 0;
        }
        int cnt = 0, ahead = w->inline_ || qs_empty(w->ready) ? 0 : queued(w);
        /* With a breaker, at most handler.concurrency jobs wait ahead of the
         * workers, and while transient failures run (or it is half-open)
         * none does: a call that starts after the result that opens the
         * breaker is a call it should have stopped. Without one, every job
         * that may go is queued. */
        const kretry_breaker_t *b = &a->breaker;
        int strict                = b->failures > 0 &&
                     (b->run > 0 || b->state != KRETRY_BREAKER_CLOSED);
        int depth = b->failures > 0 ? w->n : INT_MAX;
        if (strict != w->succ_hold) { /* this thread's own write */
                pthread_mutex_lock(&w->lock);
                w->succ_hold = strict;
                pthread_mutex_unlock(&w->lock);
        }
        while (!qs_empty(w->ready) && !a->breaker_paused &&
               (w->inline_ ? inline_room(w)
                : strict   ? w->running_cnt < w->n
                           : ahead + cnt < depth) &&
               slot_room(w)) {
                kretry_job_t *j = qs_pop(w->ready);
                int rc          = prepare(a, j);
                if (rc < 0) { /* back at the head: nothing overtakes it */
                        jobq_push_first(q_of(w->ready, j), j);
                        break;
                }
                if (rc) { /* its message decided */
                        gate_pass(a, j);
                        job_free(a, j);
                        continue;
                }
                slot(w, j);
                if (w->inline_) {
                        call_here(a, j);
                        continue;
                }
                jobq_push(q_of(batch, j), j);
                cnt++;
        }
        if (a->conf->ordering == KRETRY_ORDER_PARTITION && !w->inline_ &&
            !strict && !a->breaker_paused)
                make_successors(a);
        if (!cnt)
                return;
        pthread_mutex_lock(&w->lock);
        for (int q = 0; q < KRETRY_QS; q++)
                if (batch[q].head) {
                        *w->todo[q].tail = batch[q].head;
                        w->todo[q].tail  = batch[q].tail;
                }
        atomic_fetch_add_explicit(&w->todo_cnt, cnt, memory_order_relaxed);
        wake_spare(w);
        pthread_mutex_unlock(&w->lock);
}

/* At max.inflight.messages or max.inflight.bytes nothing more is taken
 * (intake.c kretry_intake_consume); nothing is paused. */
static void update_full(kretry_adapter_t *a) {
        const kretry_workers_t *w = a->workers;
        a->full                   = w->jobs >= a->conf->max_inflight ||
                  w->bytes >= a->conf->max_inflight_bytes;
}

static kretry_job_t *job_new(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        kretry_job_t *j     = w->pool;
        if (j) {
                w->pool = j->next;
                return j;
        }
        if (!(j = calloc(1, sizeof(*j))))
                return NULL;
        if (kretry_msg_init(&j->msg, (size_t)a->conf->error_max_length)) {
                free(j);
                return NULL;
        }
        j->w    = w;
        j->slot = -1;
        return j;
}

void kretry_workers_submit(kretry_adapter_t *a,
                           kretry_part_t *part,
                           rd_kafka_message_t *rkm) {
        kretry_workers_t *w = a->workers;
        kretry_job_t *j     = job_new(a);
        kretry_gate_t *g    = NULL;
        if (j && !j->msg.reserve)
                j->msg.reserve = kretry_reserve_take(a);
        if (!j || !j->msg.reserve ||
            (gated(a, rkm) && !(g = gate_of(a, part, rkm)))) {
                if (j) {
                        j->next = w->pool;
                        w->pool = j;
                }
                kretry_retry_later(a, part, rkm, "queueing for the handler");
                return;
        }
        int waits = g && g->busy;
        /* A message waiting behind its key may wait long while the rest of
         * the Fetch response it came in is done: copied into kretry's
         * memory, it does not keep that response allocated, and its
         * bytes are what it really takes. (A partition's gate is passed in
         * offset order: what waits there is the response itself.) */
        if (waits && g != &part->gate)
                rkm = kretry_rkm_own(rkm); /* or rkm itself: no memory */
        j->part  = kretry_part_ref(part);
        j->rkm   = rkm;
        j->bytes = kretry_rkm_owned(rkm)
                           ? (int64_t)kretry_rkm_size(rkm)
                           : (int64_t)rkm->key_len + (int64_t)rkm->len;
        j->gate  = g;
        count(a, j, +1);
        if (waits) {
                j->next = NULL;
                if (g->tail)
                        ((kretry_job_t *)g->tail)->next = j;
                else
                        g->head = j;
                g->tail = j;
        } else {
                if (g)
                        g->busy = 1;
                to_ready(w, j);
        }
        update_full(a);
}

void kretry_workers_flush(kretry_adapter_t *a) {
        if (!a->workers)
                return;
        pump(a);
        update_full(a);
}

int kretry_workers_reap(kretry_adapter_t *a) {
        if (!a->workers)
                return 0;
        int n = reap(a);
        kretry_workers_flush(a);
        return n;
}

void kretry_workers_pause(kretry_adapter_t *a, int paused) {
        kretry_workers_t *w = a->workers;
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        w->paused = paused;
        if (!paused)
                pthread_cond_broadcast(&w->work_cond);
        pthread_mutex_unlock(&w->lock);
}

int64_t kretry_workers_later_at(const kretry_adapter_t *a) {
        return a->workers ? a->workers->later_at : 0;
}

int kretry_workers_idle(kretry_adapter_t *a) {
        kretry_workers_t *w = a->workers;
        if (!w)
                return 1;
        pthread_mutex_lock(&w->lock);
        int idle = !w->done;
        if (idle)
                w->notify = 1;
        pthread_mutex_unlock(&w->lock);
        return idle;
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

static int qs_take_in(const kretry_adapter_t *a,
                      kretry_jobq_t *qs,
                      const rd_kafka_topic_partition_list_t *l,
                      kretry_job_t **out) {
        int n = 0;
        for (int q = 0; q < KRETRY_QS; q++) {
                kretry_job_t **pp = &qs[q].head;
                while (*pp) {
                        kretry_job_t *j = *pp;
                        if (!in_list(a, j->part, l)) {
                                pp = &j->next;
                                continue;
                        }
                        *pp     = j->next;
                        j->next = *out;
                        *out    = j;
                        n++;
                }
                qs[q].tail = pp;
        }
        return n;
}

/* The calls and held messages a revocation of @p l waits for: those of
 * the assignments it ends — assigned still, or retired just before it
 * (lost, or rewound after an abort) — not those of an earlier assignment
 * of the same partition that another revocation dealt with (a call of a
 * lost assignment may run on for long after the partition came back). */
static int running_in(const kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *l) {
        const kretry_workers_t *w = a->workers;
        int n                     = 0;
        for (int i = 0; i < w->running_cnt; i++) {
                const kretry_part_t *part = w->running[i]->part;
                n += !part->awaited && in_list(a, part, l);
        }
        return n;
}

/* The revocation of @p l is done with the calls still running of the
 * assignments it ends: their results are discarded when they come. */
static void awaited(kretry_adapter_t *a,
                    const rd_kafka_topic_partition_list_t *l) {
        const kretry_workers_t *w = a->workers;
        for (int i = 0; i < w->running_cnt; i++)
                if (in_list(a, w->running[i]->part, l))
                        w->running[i]->part->awaited = 1;
}

void kretry_workers_revoke(kretry_adapter_t *a,
                           const rd_kafka_topic_partition_list_t *l,
                           int64_t deadline) {
        kretry_workers_t *w = a->workers;
        if (!w)
                return;
        kretry_job_t *ready = NULL;
        qs_take_in(a, w->ready, l, &ready);
        drop_list(a, ready);
        for (int i = 0; i < l->cnt; i++) {
                kretry_part_t *part = kretry_part_of(a, &l->elems[i]);
                if (part)
                        drop_gated(a, part);
        }
        /* Queued for a worker, not started: taken back. */
        kretry_job_t *back = NULL;
        pthread_mutex_lock(&w->lock);
        atomic_fetch_sub_explicit(&w->todo_cnt,
                                  qs_take_in(a, w->todo, l, &back),
                                  memory_order_relaxed);
        /* Successors not queued yet: taken back too. */
        for (int i = 0; i < w->running_cnt; i++) {
                kretry_job_t *j = w->running[i], *s = j->succ;
                if (s && in_list(a, s->part, l)) {
                        j->succ = NULL;
                        s->next = back;
                        back    = s;
                }
        }
        pthread_mutex_unlock(&w->lock);
        for (kretry_job_t *next; back; back = next) {
                next = back->next;
                unslot(w, back);
                job_drop(a, back);
        }
        int n;
        while (reap(a), (n = running_in(a, l)) > 0) {
                if (w->inline_ || !deadline) {
                        /* handler.thread poll: only held messages can be
                         * left, and the loop that completes them is this
                         * thread, which the revocation holds. Lost: the
                         * results would be discarded anyway. */
                        kretry_log(a, KRETRY_LOG_NOTICE, "REVOKE",
                                   "%d %s of %s partitions not waited for; "
                                   "their results will be discarded (the "
                                   "next owner handles them again)",
                                   n,
                                   w->inline_ ? "held message(s)"
                                              : "handler call(s) or held "
                                                "message(s)",
                                   deadline ? "revoked" : "lost");
                        break;
                }
                int wait = kretry_left_ms(deadline, 100);
                if (!wait) {
                        kretry_log(a, KRETRY_LOG_WARNING, "REVOKE",
                                   "%d handler call(s) or held message(s) of "
                                   "revoked partitions still undecided after "
                                   "%d ms; their results will be discarded",
                                   n, a->conf->revoke_timeout_ms);
                        if (a->closed)
                                a->close_abandoned = 1;
                        break;
                }
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += (long)(wait % 1000) * 1000000;
                ts.tv_sec += (time_t)(wait / 1000) + ts.tv_nsec / 1000000000;
                ts.tv_nsec %= 1000000000;
                pthread_mutex_lock(&w->lock);
                w->waiting = 1;
                if (!w->done)
                        pthread_cond_timedwait(&w->done_cond, &w->lock, &ts);
                w->waiting = 0;
                pthread_mutex_unlock(&w->lock);
        }
        awaited(a, l);
        pump(a); /* what other partitions had waiting */
}

kretry_msg_t *kretry_msg_hold(kretry_msg_t *msg) {
        if (!msg || kretry_handle_is(msg))
                return kretry_handle_get((kretry_handle_t)msg) ? msg : NULL;
        kretry_job_t *j = job_of(msg);
        if (!j->handle && !(j->handle = kretry_handle_new(j)))
                return NULL; /* no memory: not held */
        j->hold = 1;
        return (kretry_msg_t *)j->handle;
}

const kretry_msg_t *kretry_msg_resolve(const kretry_msg_t *msg) {
        if (!kretry_handle_is(msg))
                return msg;
        const kretry_job_t *j = kretry_handle_get((kretry_handle_t)msg);
        return j ? &j->msg : NULL;
}

/* Under the handle table's lock, with the hold's handle ended: the
 * answer for the job @p obj. */
static int complete_job(void *obj, void *arg) {
        kretry_job_t *j        = obj;
        kretry_action_t action = *(const kretry_action_t *)arg;
        kretry_workers_t *w    = j->w;
        pthread_mutex_lock(&w->lock);
        if (j->in_call && j->hold && !j->completed) {
                j->completed = 1;
                j->action    = action;
                pthread_mutex_unlock(&w->lock);
                return 0;
        }
        if (!j->held) {
                pthread_mutex_unlock(&w->lock);
                return -1; /* cannot be: a valid handle is a hold's */
        }
        j->held = 0;
        w->active--;
        wake_spare(w);
        if (w->dead) {
                int last = --w->refs == 0;
                pthread_mutex_unlock(&w->lock);
                job_release(j);
                if (last)
                        workers_free(w);
                return 0;
        }
        j->action = action;
        push_done(w, j);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

int kretry_msg_complete(kretry_msg_t *msg, kretry_action_t action) {
        return kretry_handle_take((kretry_handle_t)msg, complete_job, &action);
}

void kretry_breaker_apply(kretry_adapter_t *a, int paused) {
        a->breaker_paused = paused;
        kretry_workers_pause(a, paused);
        atomic_store_explicit(&a->stats.breaker_open, paused,
                              memory_order_relaxed);
        kretry_update_pause_all(a);
        if (paused)
                kretry_log(a, KRETRY_LOG_WARNING, "BREAKER",
                           "circuit open: %d transient failures in a row "
                           "across %d or more keys; consumption paused for "
                           "%lld ms",
                           a->conf->breaker_failures, a->conf->breaker_keys,
                           (long long)a->breaker.cooldown_cur_ms);
        else
                kretry_log(a, KRETRY_LOG_NOTICE, "BREAKER",
                           "circuit half-open: consuming again; one success "
                           "closes it");
}
