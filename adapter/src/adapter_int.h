/*
 * Internals of kretry_adapter_t, shared by the files of the engine:
 * adapter.c (life cycle and poll loop), intake.c (the queues, held
 * messages and pauses), rebalance.c (assignment: tier
 * partitions follow their source partition), route.c (handler outcome ->
 * tier/DLQ copy -> delivery report -> offset), keyed.c (ordering key and
 * versions), workers.c (the handler's threads), msg.c (the handler's view),
 * handles.c (held messages' handles), stats.c (counters), startup_check.c
 * (the topology check before any client exists, with shape.c and meta.c).
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
#include "clock.h"
#include "codec.h"
#include "conf.h"
#include "delay.h"
#include "denied.h"
#include "headers.h"
#include "keychain.h"
#include "latency.h"
#include "log.h"
#include "offsets.h"
#include "owned.h"
#include "part.h"
#include "secret.h"
#include "versions.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>

/* One copy on its way to a tier or the DLQ. It borrows the consumed message's
 * key and value (no copy) and keeps the message until the broker
 * acknowledged the copy. */
typedef struct kretry_inflight_s {
        kretry_part_t *part; /* a reference (kretry_part_ref) */
        rd_kafka_message_t *rkm;
        int dest; /* destination tier, 0 = DLQ, KRETRY_DEST_VERSIONS */
        kretry_route_t route;
        kretry_copy_info_t info; /* strings below live after the record */
        char *orig_topic, *error_code, *error;
        int handler_attempt;
        int64_t retry_at; /* failed delivery: when to produce again */
        int backoff_ms;
        int failed; /* counted in its partition's produce_failures */
        int stuck;  /* refused as too large or for want of an ACL:
                       counted in copies_stuck */
        int denied; /* refused for want of an ACL: in denied_copies_now */
        unsigned char vbuf[10]; /* KRETRY_DEST_VERSIONS: the encoded version */
        size_t vlen;
        size_t reserve_cap; /* > 0: the reserve record (kretry_msg_t), room
                               for this many bytes of strings */
        struct kretry_inflight_s *next_failed;
} kretry_inflight_t;

struct kretry_msg_s {
        rd_kafka_message_t *rkm;
        rd_kafka_headers_t *hdrs; /* borrowed from rkm once loaded, may be
                                     NULL: read it with kretry_msg_hdrs() */
        int hdrs_loaded;
        const char *topic;
        int tier;
        int attempt; /* handler attempt, 1-based */
        kretry_chain_t chain;
        /* Original coordinates resolved: from the chain or from rkm. */
        const char *orig_topic;
        int32_t orig_partition;
        int64_t orig_offset;
        int64_t orig_ts;
        int64_t first_failure_ts;
        /* The handler's answer details. */
        char code[128];
        int has_code;
        char *error; /* error_max_length + 1 bytes */
        int has_error;
        size_t error_cap;
        int64_t retry_after_ms;
        int64_t version; /* versioning: parsed from the header */
        int has_version;
        avro_value_t *value_avro; /* value.format avro: the decoded record */
        /* A copy record big enough for any message, allocated before the
         * message's outcome is decided: the copy it decides on never waits
         * for memory (route.c). NULL while in use. */
        struct kretry_inflight_s *reserve;
};

/* A copy's destination that is the version changelog, not a tier or DLQ. */
#define KRETRY_DEST_VERSIONS (-1)

#define KRETRY_CLASS_CNT 5

typedef struct {
        atomic_llong consumed, ok, dlq, produce_errors, held;
        /* Written by the workers on every call: kept off the cache lines
         * of the counters the polling thread writes on every message. */
        char pad_calls0[64];
        atomic_llong handler_calls;
        char pad_calls1[64];
        atomic_llong stale, forwarded, chain_keys, version_keys, version_bytes;
        atomic_llong duplicates, breaker_trips, breaker_open, keepalives;
        atomic_llong buffered, buffered_bytes; /* behind held messages */
        atomic_llong too_large;                /* copies refused as too large */
        atomic_llong txn_commits, txn_aborts;  /* txn.c */
        /* denied.h: refusals by cause; copies refused now (route.c), the
         * last commit refused (commit.c), a consumed topic refused
         * (intake.c: its index + 2, 1 unknown, 0 none), a copy of the
         * transaction refused since the last one committed (txn.c) */
        atomic_llong denied[KRETRY_DENIED_CAUSES];
        atomic_llong denied_copies_now;
        atomic_int commit_denied, read_denied, txn_denied;
        atomic_llong foreign;        /* tier copies of another group, skipped */
        atomic_llong inflight;       /* workers.c: jobs waiting or running */
        atomic_llong inflight_bytes; /* workers.c: their keys and values */
        /* rebalance.c: source partitions assigned now, and assignments
         * received (an empty one too: the member has joined the group) */
        atomic_llong assigned, assignments;
        /* permanent, exhausted, expired, schema, parked */
        atomic_llong dlq_by_class[KRETRY_CLASS_CNT];
        atomic_llong retried[KRETRY_MAX_TIERS + 1]; /* [0] unused */
} kretry_stats_t;

enum {
        KRETRY_CLASS_PERMANENT,
        KRETRY_CLASS_EXHAUSTED,
        KRETRY_CLASS_EXPIRED,
        KRETRY_CLASS_SCHEMA,
        KRETRY_CLASS_PARKED
};

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
        /* The periodic commit (at least once, commit.c): one at a time, its
         * answer on kq, so that a commit librdkafka retries never lands
         * after a later one and takes the committed offset back. */
        rd_kafka_queue_t *kq;
        int commit_inflight;
        int commit_dirty;       /* an offset stored since the last one */
        int64_t commit_at;      /* kretry_mono_ms: the next may go */
        int commit_interval_ms; /* auto.commit.interval.ms */
        rd_kafka_queue_t *sq;   /* source partitions' messages: cq carries
                                   only the group's events (rebalance.c) */
        int64_t forward_at;     /* next renewal of the partition forwards */
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
        kretry_inflight_t *failed; /* deliveries to retry */
        int inflight;              /* copies not yet acknowledged */
        /* The view being decided on (route.c, keyed.c): msg0, or with
         * handler.concurrency > 1 the view of the job whose outcome is
         * being decided (workers.c). msg0's reserve is the spare one. */
        kretry_msg_t *msg;
        kretry_msg_t msg0;
        kretry_rng_t rng;
        atomic_int stop;
        int closed;
        int close_cut; /* leaving the group was cut short at its bound */
        int64_t close_revoked; /* when the close's revocation was done */
        /* The close made its assign or unassign call (rebalance.c): the
         * terminating group took it as a full unassign, and may end. */
        int close_unassigned;
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

/* commit.c: the answer to a commit, watched for refusals for want of an
 * ACL (KRETRY_COUNTER_DENIED_COMMITS); kretry_commit_cb is the consumer's
 * offset_commit_cb (the answers of commits made without a queue). Polling
 * thread. */
void kretry_commit_result(kretry_adapter_t *a,
                          rd_kafka_resp_err_t err,
                          const rd_kafka_topic_partition_list_t *offsets);
void kretry_commit_cb(rd_kafka_t *rk,
                      rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets,
                      void *opaque);

/* stats.c: a refusal of @p cause for want of an ACL, counted; said as an
 * ERROR once per cause and minute (denied.h), else at DEBUG: "@p what:
 * @p err; ..." with what an operator must grant. */
void kretry_denied_note(kretry_adapter_t *a,
                        kretry_denied_cause_t cause,
                        rd_kafka_resp_err_t err,
                        const char *what);

/* intake.c: what the poll loop takes from the queues, and where it goes.
 * Each returns how many messages it handed on: held messages due at
 * @p now (wall clock) and copies whose source caught up; messages kept
 * behind a held one whose turn came while they were stopped; one batch of
 * consumed messages. */
int kretry_intake_due(kretry_adapter_t *a, int64_t now);
int kretry_intake_stalled(kretry_adapter_t *a);
int kretry_intake_consume(kretry_adapter_t *a);
/* A new assignment of partition @p p of topic @p tier (the one before, if
 * any, retired); NULL when memory is short. */
kretry_part_t *kretry_part_assign(kretry_adapter_t *a, int tier, int32_t p);
/* The assignment ends: nothing of it is routed or committed any more; it is
 * freed when its last job and copy record are gone. */
void kretry_part_retire(kretry_adapter_t *a, kretry_part_t *part);
void kretry_part_update_pause(kretry_adapter_t *a, kretry_part_t *part);
/* kretry_part_update_pause for every partition: after the breaker or the
 * in-flight bound changed what every partition should be. */
void kretry_update_pause_all(kretry_adapter_t *a);
void kretry_part_drop_held(kretry_adapter_t *a, kretry_part_t *part);
/* Destroy the batched source messages (a->sbuf) of the partitions of
 * @p l (NULL: all) at or past each element's offset (any offset below 0:
 * all of the partition). */
void kretry_sbuf_drop(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *l);
/* Keep @p rkm, a tier copy of @p part (taken), until its source partition
 * was consumed past it (kretry_keyed_source_behind), looked at again with
 * the held messages; then it goes to kretry_dispatch. 0, or -1 when there
 * was no memory to keep it (@p rkm is still the caller's). */
int kretry_wait_source(kretry_adapter_t *a,
                       kretry_part_t *part,
                       rd_kafka_message_t *rkm);
/* Pause (1) or resume (0) every assigned partition for the breaker. */
void kretry_breaker_apply(kretry_adapter_t *a, int paused);

/* rebalance.c */
void kretry_rebalance_cb(rd_kafka_t *rk,
                         rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts,
                         void *opaque);
/* Point the partitions of @p l (or every assigned one) at a->tq (tiers)
 * and a->sq (source). */
void kretry_forward_parts(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *l);
void kretry_forward_parts_all(kretry_adapter_t *a);
/* Every assigned partition (source and tiers) but those of @p except
 * (NULL: none); the caller destroys it. */
rd_kafka_topic_partition_list_t *
kretry_assigned_list(kretry_adapter_t *a,
                     const rd_kafka_topic_partition_list_t *except);
/* Add @p part to *@p l (made when NULL) at the offset its commit takes,
 * with the offsets decided above that one as the commit's metadata
 * (offsets.h). Not when it has no such offset, nor, with @p decided_only,
 * when nothing above it was decided. 1 when added, 0 when not, -1 out of
 * memory: not added, or added without its metadata (the offset alone). */
int kretry_commit_add(kretry_adapter_t *a,
                      rd_kafka_topic_partition_list_t **l,
                      const kretry_part_t *part,
                      int decided_only);
/* The periodic commit of the stored offsets, every auto.commit.interval.ms
 * while something new was stored, never two at a time: serves the answer
 * of the one in flight, sends the next when due. kretry_commit_settle
 * waits (until @p deadline, kretry_mono_ms) for the one in flight, so that
 * a commit made after it is the one that stays. Polling thread. */
void kretry_commit_periodic(kretry_adapter_t *a, int64_t mono);
void kretry_commit_settle(kretry_adapter_t *a, int64_t deadline);
/* When the next periodic commit is due (kretry_mono_ms), -1: none. */
int64_t kretry_commit_next(const kretry_adapter_t *a);

/* Finish the in-flight copies of the partitions of @p l (those refused as
 * too large aside) until @p deadline, commit synchronously (for a close: at
 * most KRETRY_COMMIT_GRACE_MS once the copies are done, however early that
 * is). */
void kretry_drain_and_commit(kretry_adapter_t *a,
                             const rd_kafka_topic_partition_list_t *l,
                             int64_t deadline);

/* What kretry_route_copy() sends where. */
typedef struct {
        int dest; /* tier, 0 = DLQ, KRETRY_DEST_VERSIONS */
        const char *cls;
        int64_t due_ts;
        kretry_route_t route;
        int parked;        /* forwarded without a new failure */
        int no_attempt;    /* dead-lettered before the handler: no attempt
                              spent */
        int64_t followers; /* park_key: followers of a dead-lettered head */
        int64_t version;   /* KRETRY_DEST_VERSIONS */
} kretry_copy_t;

/* route.c */
void kretry_route_copy(kretry_adapter_t *a,
                       kretry_part_t *part,
                       const kretry_copy_t *cp);
void kretry_route_cb(kretry_adapter_t *a,
                     kretry_part_t *part,
                     const rd_kafka_message_t *rkm,
                     kretry_route_t route,
                     int tier,
                     const char *cls,
                     int attempt);
/* @p offset of @p part is decided and durable: done, stored for commit
 * (nothing when the assignment was retired). */
void kretry_complete(kretry_adapter_t *a, kretry_part_t *part, int64_t offset);

/* value.format avro: decode the bound message into a->msg.value_avro, or
 * dead-letter it (class schema). Returns 1 when decoded. */
int kretry_decode_value(kretry_adapter_t *a, kretry_part_t *part);

/* keyed.c: ordering key and versioning around the handler. */
/* Before the handler: 1 when the message was parked, dead-lettered after its
 * key, or skipped as stale (it must not reach the handler); -1 when memory
 * is short (nothing decided: prepare it again later). */
int kretry_keyed_before(kretry_adapter_t *a, kretry_part_t *part);
/* After OK: 1 when completion waits for the version changelog record. */
int kretry_keyed_ok(kretry_adapter_t *a, kretry_part_t *part);
/* On RETRY (dest tier, due) or DLQ (dest 0): update the key's chain;
 * returns the followers to report on a dead-lettered head, or -1. */
int64_t kretry_keyed_failed(kretry_adapter_t *a,
                            kretry_part_t *part,
                            int dest,
                            int64_t due_ts);
/* 1 while @p rkm, a copy that waited for its source (kretry_wait_source),
 * must wait on: its source partition has not been consumed past it yet. */
int kretry_keyed_source_behind(kretry_adapter_t *a,
                               kretry_part_t *part,
                               const rd_kafka_message_t *rkm);
void kretry_process(kretry_adapter_t *a,
                    kretry_part_t *part,
                    rd_kafka_message_t *rkm);
/* The counts kretry_process keeps of a consumed message, for one kept
 * behind a held message instead (intake.c). */
void kretry_count_consumed(kretry_adapter_t *a,
                           kretry_part_t *part,
                           const rd_kafka_message_t *rkm);
void kretry_dispatch(kretry_adapter_t *a,
                     kretry_part_t *part,
                     rd_kafka_message_t *rkm);
/* The parts of a dispatch, for the workers (workers.c), on the view
 * a->msg. Before the handler: bind, and decide what needs no handler (a
 * malformed copy, parked, stale, undecodable); 1 when decided, -1 when
 * memory is short (nothing decided: prepare it again later). */
int kretry_prepare(kretry_adapter_t *a,
                   kretry_part_t *part,
                   rd_kafka_message_t *rkm);
/* The user's handler on @p m; *usp gets its duration (µs) when stats are
 * on. Touches nothing of the adapter but its configuration and the
 * handler-calls counter (an atomic). */
kretry_action_t
kretry_call_handler(kretry_adapter_t *a, kretry_msg_t *m, int64_t *usp);
/* After the handler: the outcome of @p action (OK, tier or DLQ copy);
 * @p us >= 0 is recorded as the handler's latency. */
void kretry_finish(kretry_adapter_t *a,
                   kretry_part_t *part,
                   kretry_action_t action,
                   int64_t us);
/* Out of memory before @p rkm's outcome was decided: hold it (its partition
 * paused) and try again shortly. */
void kretry_retry_later(kretry_adapter_t *a,
                        kretry_part_t *part,
                        rd_kafka_message_t *rkm,
                        const char *what);
void kretry_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);
/* A produce error that means too large for the topic (or the producer's
 * own message.max.bytes). */
int kretry_too_large(rd_kafka_resp_err_t err);
/* The topic a copy record goes to: a tier, the DLQ or the changelog. */
const char *kretry_dest_topic(const kretry_adapter_t *a,
                              const kretry_inflight_t *r);
/* Produce again the copies whose delivery failed and whose backoff passed;
 * returns ms until the next one is due, or -1. */
int64_t kretry_retry_failed(kretry_adapter_t *a, int64_t now);
void kretry_inflight_free(kretry_adapter_t *a, kretry_inflight_t *r);
/* A reserve copy record (see kretry_msg_t.reserve): the spare one, or a new
 * one; NULL when memory is short. Put: back as the spare, or freed. */
kretry_inflight_t *kretry_reserve_take(kretry_adapter_t *a);
void kretry_reserve_put(kretry_adapter_t *a, kretry_inflight_t *r);
/* 1 once the producer raised a fatal error (an idempotent producer whose
 * sequence broke): nothing it sends can be acknowledged any more, so the
 * adapter stops (a->fatal); logged once, with librdkafka's reason. */
int kretry_producer_fatal(kretry_adapter_t *a);

/* msg.c */
int kretry_msg_init(kretry_msg_t *msg, size_t error_cap);
void kretry_msg_free(kretry_msg_t *msg);
/* The message's headers, parsed on first use (NULL when none). */
rd_kafka_headers_t *kretry_msg_hdrs(kretry_msg_t *msg);
/* Fill the view for @p rkm consumed from @p tier. */
void kretry_msg_bind(kretry_msg_t *msg,
                     rd_kafka_message_t *rkm,
                     const char *topic,
                     int tier);

/* txn.c: routing=transactional. */
/* Before the clients exist: the consumer commits nothing itself and reads
 * committed records only; the producer gets its transactional.id. */
kretry_err_t
kretry_txn_conf(kretry_adapter_t *a, char *errstr, size_t errstr_size);
/* Once the producer exists: fence an earlier instance of the same id. */
kretry_err_t
kretry_txn_init(kretry_adapter_t *a, char *errstr, size_t errstr_size);
/* Before a copy is produced: a transaction is open (begun now if none);
 * -1 while none can be (committing, aborting, fatal): produce later. */
int kretry_txn_begin(kretry_adapter_t *a);
/* An outcome of @p part was decided (its offset done). */
void kretry_txn_note(kretry_adapter_t *a, kretry_part_t *part);
/* A copy in the open transaction failed: it is given up and the
 * transaction aborted at the next step (its messages decided again). */
void kretry_txn_copy_failed(kretry_adapter_t *a,
                            kretry_inflight_t *r,
                            rd_kafka_resp_err_t err);
/* From the poll loop: abort what must be, commit what is due; returns ms
 * until the next commit is due, or -1. */
int64_t kretry_txn_step(kretry_adapter_t *a, int64_t mono);
/* Commit the open transaction now, waiting for its copies until
 * @p deadline (revoke, close); on failure it is aborted and every assigned
 * partition but those of @p except (NULL: none) rewound. 0 when
 * committed (or nothing was open). */
int kretry_txn_commit_now(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *except,
                          int64_t deadline);
/* Resume the partitions whose blocked_until passed at @p mono; the next
 * one's time to blocked_at. */
void kretry_txn_unblock(kretry_adapter_t *a, int64_t mono);
/* Test only, never set in production: when set and it returns nonzero, the
 * transaction being committed fails as a broker's refusal would (it is
 * aborted and its partitions rewound). Polling thread. */
extern int (*kretry_test_txn_fails)(void);
/* Test only: when set and it returns nonzero, the group's committed
 * offsets read after an abort (the rewind's and the restore's) are
 * unknown, as while the cluster does not answer. Polling thread. */
extern int (*kretry_test_txn_blind)(void);
/* Test only: when set and it returns nonzero, begin_transaction fails with
 * a retriable error (the call is made again at the next step). Polling
 * thread. */
extern int (*kretry_test_txn_begin_fails)(void);
/* Abort the open transaction (a lost assignment, a close cut short) and
 * rewind every assigned partition but those of @p except (none while
 * closing: the next owner starts from the committed state). */
void kretry_txn_abort(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *except);

/* stats.c */
const char *kretry_class_name(int cls);
/* Every counter as a JSON object (kretry_adapter_stats_json's document);
 * the caller owns the reference. */
json_t *kretry_stats_counters(const kretry_adapter_t *a);
/* KRETRY_COUNTER_DENIED_NOW (kretry.h). Thread-safe. */
int64_t kretry_denied_now(const kretry_adapter_t *a);
/* Refresh the per-key gauges (keys in chains and in the version store). */
void kretry_stats_gauges(kretry_adapter_t *a);

/* stats_emit.c: call the stats callback when its interval has passed;
 * returns ms until the next emission, or -1 when there is none. */
int64_t kretry_stats_maybe_emit(kretry_adapter_t *a, int64_t now);

/* workers.c: the handler's threads. */
int kretry_workers_start(kretry_adapter_t *a);
/* Join the workers and release every message not decided (destroy). */
void kretry_workers_stop(kretry_adapter_t *a);
/* Queue @p rkm (tracked) for a worker; dispatched when its ordering allows. */
void kretry_workers_submit(kretry_adapter_t *a,
                           kretry_part_t *part,
                           rd_kafka_message_t *rkm);
/* Decide the results the workers returned, then dispatch what may run;
 * returns the results decided. */
int kretry_workers_reap(kretry_adapter_t *a);
/* The breaker opened (1) or closed (0): workers take no queued job while
 * it is open; the calls running finish. */
void kretry_workers_pause(kretry_adapter_t *a, int paused);
/* Dispatch what was submitted and may run now. */
void kretry_workers_flush(kretry_adapter_t *a);

/* Whether a message of @p src (a source partition) with key @p key and an
 * offset below @p offset waits in the key's gate: consumed, but not yet
 * placed in the key's chain. */
int kretry_workers_source_waits(kretry_adapter_t *a,
                                kretry_part_t *src,
                                const void *key,
                                size_t len,
                                int64_t offset);
/* When dispatching resumes after memory ran out (kretry_mono_ms), or 0. */
int64_t kretry_workers_later_at(const kretry_adapter_t *a);
/* 1 when no result waits: the next one then writes the eventfd (call
 * before the polling thread sleeps or returns to the application). */
int kretry_workers_idle(kretry_adapter_t *a);
/* The assignment @p part ends: the messages waiting in its gates are
 * dropped (not done). */
void kretry_workers_retire(kretry_adapter_t *a, kretry_part_t *part);
/* The view a held message's handle (kretry_msg_hold) names, @p msg itself
 * when it is not a handle, or NULL for a handle no longer valid. */
const kretry_msg_t *kretry_msg_resolve(const kretry_msg_t *msg);
/* Revocation of @p l: drop its waiting messages and wait, until
 * @p deadline, for its messages in the handler, deciding their results.
 * @p deadline 0 (a lost assignment, already retired), or with
 * handler.thread poll: no wait. */
void kretry_workers_revoke(kretry_adapter_t *a,
                           const rd_kafka_topic_partition_list_t *l,
                           int64_t deadline);

/* startup_check.c: the cluster's topics fit the topology (every tier, the
 * DLQ and the changelog exist with the source's partitions, the changelog
 * is compacted), read without creating any; by topology.check. Before the
 * clients exist. KRETRY_ERR_TOPOLOGY with every problem in @p errstr. */
kretry_err_t
kretry_startup_check(kretry_adapter_t *a, char *errstr, size_t errstr_size);

/* startup_check.c: "missing ACL: Write on topic orders.dlq (why):
 * `kretry topology acls FILE --principal User:NAME --apply` grants it"
 * for binding @p b (an acls.h kretry_acl_t) into @p dest. */
struct kretry_acl_s;
void kretry_acl_hint(const kretry_adapter_t *a,
                     const struct kretry_acl_s *b,
                     char *dest,
                     size_t size);

/* restore.c: rebuild ordering chains and the version store of the source
 * partitions in @p l before any of their messages is handled. */
void kretry_restore(kretry_adapter_t *a,
                    const rd_kafka_topic_partition_list_t *l);
void kretry_restore_destroy(kretry_adapter_t *a);
/* restore.c: without per-key state to rebuild, the offsets the previous
 * owners decided above the committed ones of the source partitions in @p l
 * and their tier partitions (read from the commits' metadata, asked with
 * the group's own consumer), before any of their messages is handled. */
void kretry_restore_decided(kretry_adapter_t *a,
                            const rd_kafka_topic_partition_list_t *l);
/* Where the restore reads a partition whose log holds [@p lo, @p hi) from,
 * given the group's @p committed offset (< 0: none): the committed offset,
 * clamped to the log start when retention deleted what it points at (as
 * kretry stats counts), or -1 when nothing is left to read (also a
 * committed offset at or past the end). */
int64_t kretry_restore_start(int64_t committed, int64_t lo, int64_t hi);

#endif
