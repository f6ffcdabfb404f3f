/*
 * Service: the adapter's state (struct kretry_adapter_s), the one object
 * every layer of the engine works on. Data only: the functions on it live
 * with their layer, each with its own header:
 *   loop      adapter.c (life cycle, poll loop, the order of the phases)
 *   phases    intake.c (queues, held messages, pauses), assign.c (an
 *             assignment made and retired), route.c (outcome -> tier/DLQ
 *             copy -> delivery report -> offset), workers.c (handler
 *             threads), keyed.c and restore.c (ordering by key, versions),
 *             txn_open.c (the open transaction route works in), txn.c
 *             (commit, abort, rewind), rebalance.c and drain.c
 *             (assignment, revocation), startup_check.c, stats_emit.c,
 *             msg_api.c (the handler's accessors)
 *   services  part.c (the partition table), commit.c (commit building),
 *             job.h (a handler job), msg.c (the handler's view), stats.c
 *             (counters' document), owned.c, handles.c, clock.c, log.c,
 *             this header
 *   leaves    conf, parse, delay, headers, offsets, keymap, keychain,
 *             versions, breaker, latency, meta, diag, shape, acls, denied,
 *             secret, counters: plain data, no adapter
 * A file includes the headers of its own layer and those below it, calls
 * down or, within a layer, at most back and forth with one other file: no
 * circle of three (scripts/check-layout.sh draws it from includes and
 * calls). This header includes leaves only, and kretry_part_t is only
 * pointed at here: part.c, stats.c, commit.c and log.c include it, not
 * the other way.
 *
 * The threading contract, in one place:
 *   - The polling thread (the one that calls kretry_adapter_poll, _run,
 *     _close and _destroy) owns every field of kretry_adapter_t and
 *     kretry_part_t, and every per-assignment object: the consumer and
 *     producer calls, offsets, gates, chains, versions, held tier messages,
 *     copy records, the breaker. librdkafka's rebalance, delivery-report
 *     and error callbacks run on it (served by its poll calls).
 *   - Any thread: the counters in kretry_stats_t (atomics; the polling
 *     thread writes most, the workers handler_calls), `stop` (an atomic,
 *     also from a signal handler), kretry_test_wall_step_ms.
 *   - librdkafka's threads: only kretry_rdkafka_log_cb, which formats and
 *     forwards to the application's log callback.
 *   - Worker threads (workers.c) run the user's handler on a job's view
 *     (kretry_msg_t), which belongs to that worker during the call, and
 *     read the configuration, which nobody writes after
 *     kretry_adapter_new(). The job queues between them and the polling
 *     thread are guarded by kretry_workers_t.lock (which of a job's fields
 *     are under it is said where kretry_job_t is declared); no lock is held
 *     across a user callback. With handler.thread poll there are no
 *     workers: the polling thread calls the handler itself.
 *   - kretry_msg_complete() and the accessors on a held message's handle
 *     (any thread) take the handle table's lock (handles.c), then, to
 *     complete, the workers' lock: never in the other order.
 */
#ifndef KRETRY_ADAPTER_INT_H
#define KRETRY_ADAPTER_INT_H

#include "breaker.h"
#include "codec.h"
#include "conf.h"
#include "counters.h"
#include "delay.h"
#include "denied.h"
#include "latency.h"
#include "msg.h"
#include "secret.h"

#include <librdkafka/rdkafka.h>
#include <stdatomic.h>

struct kretry_inflight_s;
/* part.h: an assignment of one partition, pointed at only here. */
typedef struct kretry_part_s kretry_part_t;

/* Source messages taken from sq per queue lock (intake.c). */
#define KRETRY_SBUF_MAX 16

/* Owned by the polling thread (the contract above), except: conf (read by
 * the workers too; nobody writes it after kretry_adapter_new()), stop
 * (atomic, any thread), stats (atomics, any thread) and workers (its own
 * lock, kretry_workers_t.lock). */
struct kretry_adapter_s {
        kretry_conf_t *conf;
        int conf_borrowed; /* kretry_adapter_new failed: conf is the caller's */
        /* The configuration's secret values, scrubbed from every log line
         * (librdkafka's too) and from kretry_adapter_new()'s errors.
         * Written once by kretry_adapter_new() before any client exists,
         * then only read, from any thread. */
        kretry_secrets_t secrets;
        char group[256];
        int topic_cnt; /* 1 + tiers */
        char **topics; /* [0] source, [1..T] tiers */
        char *dlq;
        char *versions_topic;  /* NULL when versioning is off */
        char *parked_topic;    /* NULL unless ordering=key with park_key */
        kretry_codec_t *codec; /* value.format avro */
        kretry_breaker_t breaker;
        int breaker_paused; /* every partition paused by the breaker */
        rd_kafka_t *consumer, *producer;
        rd_kafka_t *restorer;    /* reads tiers and changelog on assignment */
        rd_kafka_topic_t **rkts; /* consumer topic handles, per topic */
        rd_kafka_topic_t *
                *prkts;         /* producer handles: [1..T] tiers, [T+1] DLQ */
        rd_kafka_topic_t *vrkt; /* producer handle of the version changelog */
        rd_kafka_queue_t *cq, *pq;
        rd_kafka_queue_t *tq; /* tier partitions' messages, served first */
        /* The commits (at least once, commit.c): one at a time, their
         * answers on kq, so that a commit librdkafka retries never lands
         * after a later one and takes the committed offset back. */
        rd_kafka_queue_t *kq;
        int commit_inflight; /* commits sent and not answered yet */
        /* kretry_commit_sync's commit: answered, and with what. */
        int commit_sync_done;
        rd_kafka_resp_err_t commit_sync_err;
        int commit_dirty; /* an offset stored since the last one */
        /* An outcome was decided above a partition's lowest undecided
         * offset since the last periodic commit: the next one is kretry's
         * own list (commit.c commit_explicit), since librdkafka leaves out
         * of its commits a stored offset it committed already. */
        int decided_dirty;
        int64_t commit_at;      /* kretry_mono_ms: the next may go */
        int commit_interval_ms; /* auto.commit.interval.ms */
        rd_kafka_queue_t *sq;   /* source partitions' messages: cq carries
                                   only the group's events (rebalance.c) */
        /* kretry_mono_ms: the next renewal of the partition forwards (0:
         * none), and when renewals end (rebalance.c kretry_forward_renew) */
        int64_t forward_at, forward_renew_end;
        /* Source messages taken from sq in one batch (one queue lock for up
         * to KRETRY_SBUF_MAX), handed out one at a time (intake.c
         * take_source): librdkafka counts them consumed already, so they
         * are ours to handle unless their assignment ends. Dropped: those
         * of the partitions of a rebalance event (revoked, lost or
         * assigned again: never handled or committed under another
         * assignment), those of a partition at and past where it is
         * sought (refetch_later), all at close and destroy. */
        rd_kafka_message_t *sbuf[KRETRY_SBUF_MAX];
        int sbuf_pos, sbuf_cnt;
        int efd;
        kretry_part_t ***parts; /* [topic][partition] */
        int *part_cap;          /* per topic */
        kretry_part_t *held_list;
        /* While a batch of results or delivery reports is decided
         * (kretry_store_begin/_end), a partition whose committable offset
         * moved is listed here and its offset stored once at the batch's
         * end, not once a message: rd_kafka_offset_store takes two locks.
         * Each listed assignment holds a reference; one retired meanwhile
         * is not stored. */
        int store_defer;
        kretry_part_t *store_list;
        /* When the copies waiting for their source look again
         * (kretry_wait_source; kretry_mono_ms), 0 when none waits. */
        int64_t src_wait_at;
        int behind_stalled; /* a partition has messages behind no held one
                               (max.inflight or the breaker stopped them),
                               or a full buffer waits for the total to fall */
        struct kretry_inflight_s *failed; /* deliveries to retry */
        int inflight;                     /* copies not yet acknowledged */
        int unparks; /* of them, park tombstones (kretry_route_unpark) */
        /* The view being decided on (route.c, keyed.c): msg0, or with
         * handler.concurrency > 1 the view of the job whose outcome is
         * being decided (workers.c). msg0's reserve is the spare one. */
        kretry_msg_t *msg;
        kretry_msg_t msg0;
        kretry_rng_t rng;
        atomic_int stop;
        int closed;
        /* The close's revocation reached revoke.timeout.ms with handler
         * calls running: their messages are not committed, the close was
         * cut short (KRETRY_ERR_TIMED_OUT). */
        int close_abandoned;
        int close_cut; /* leaving the group was cut short at its bound */
        int64_t close_revoked; /* when the close's revocation was done */
        /* The close asked librdkafka to leave the group
         * (rd_kafka_consumer_close_queue): no commit is sent from then on
         * (adapter.c close_consumer, commit.c commit_send). */
        int close_leaving;
        /* The close made its assign or unassign call (rebalance.c): the
         * terminating group took it as a full unassign, and may end. */
        int close_unassigned;
        /* That call, made on a thread of its own (rebalance.c
         * close_call): reaped by the close, or by the destroy once the
         * consumer is gone (kretry_close_call_reap). */
        struct kretry_close_call_s *close_call;
        int synced;     /* the group has assigned partitions (even none) */
        int more;       /* the last poll stopped with work left */
        int tq_flowing; /* tq gave a message at its last look */
        int sq_flowing; /* sq gave a message at its last take */
        int fatal;      /* a client raised a fatal error: stop */
        int kip848;     /* the consumer joins with group.protocol=consumer */
        int producer_fatal; /* the producer's, logged; no copy is made */
        kretry_stats_t stats;
        /* workers.c: the handler's threads */
        struct kretry_workers_s *workers;
        int full; /* max.inflight.messages or .bytes reached: nothing more
                     is taken from tq and sq, nothing is paused */
        /* stats_emit.c, on the adapter's thread */
        kretry_latency_t latency;
        int64_t *topic_consumed; /* per topic */
        int64_t *emit_consumed;  /* at the last emission */
        int64_t emit_at, emit_next;
        /* txn.c: routing=transactional. One transaction at a time on the
         * producer, begun before the first copy, committed with the
         * offsets of every outcome decided in it. */
        struct {
                int on;
                int open;      /* begun, not yet committed or aborted */
                int sent;      /* its offsets sent: only the commit is left */
                int abort;     /* a copy failed: abort, then rewind */
                int aborting;  /* inside the abort: purged copies dropped */
                int64_t since; /* first outcome or copy of the open one
                                  (kretry_mono_ms), 0 none */
                int decided;   /* outcomes decided since */
                /* The partition (tier index, number) whose copy was
                 * refused as too large, -1: none; how long it waits after
                 * the rewind (doubles while it stays too large, up to
                 * 10 s); the soonest blocked_until of any partition, 0:
                 * none. */
                int stuck_tier, stuck_p;
                int stuck_backoff_ms;
                int64_t blocked_at;
                int64_t abort_by; /* the close's bound on an abort, 0 */
                /* Aborted while closing, stopping or fatal, not rewound:
                 * no transaction begins or commits again (kretry_txn_abort) */
                int spent;
        } txn;
        /* When each cause of refusal was last said as an ERROR (denied.h) */
        int64_t denied_said[KRETRY_DENIED_CAUSES];
};

#endif
