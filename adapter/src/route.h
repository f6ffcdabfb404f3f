/*
 * Phase: routing (route.c). A consumed message's way through the handler
 * (dispatch, prepare, call, finish) and its outcome: OK, or a copy to a
 * tier, the DLQ or the version changelog, its delivery report, and the
 * offset it makes committable. Polling thread (but kretry_call_handler).
 */
#ifndef KRETRY_ROUTE_H
#define KRETRY_ROUTE_H

#include "headers.h"
#include "kretry/kretry.h"
#include "part.h"

#include <librdkafka/rdkafka.h>

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
        /* park_key: the key's park record (ordering.parked.topic) goes
         * first; the DLQ copy is produced once it is acknowledged. */
        int park_first;
        unsigned char vbuf[10]; /* KRETRY_DEST_VERSIONS: the encoded version */
        size_t vlen;
        size_t reserve_cap; /* > 0: the reserve record (kretry_msg_t), room
                               for this many bytes of strings */
        struct kretry_inflight_s *next_failed;
} kretry_inflight_t;

/* A copy's destination that is the version changelog, not a tier or DLQ. */
#define KRETRY_DEST_VERSIONS (-1)

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
/* park_key: a replayed message lifted the park of @p key (of source
 * partition @p partition): its park record is deleted (a tombstone),
 * counted in a->unparks until acknowledged; no offset is committed
 * meanwhile (commit.c), so that the replay's offset is never committed
 * while the park it lifted could still be restored. */
void kretry_route_unpark(kretry_adapter_t *a,
                         int32_t partition,
                         const void *key,
                         size_t len);
/* The topic a copy record goes to: a tier, the DLQ, the changelog or the
 * parked keys. */
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

#endif
