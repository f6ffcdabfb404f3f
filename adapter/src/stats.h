/*
 * Service: the counters (kretry_stats_t: atomics, any thread), their JSON
 * document (stats.c) and the stats callback (stats_emit.c).
 */
#ifndef KRETRY_STATS_H
#define KRETRY_STATS_H

#include "conf.h"
#include "denied.h"
#include "kretry/kretry.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdatomic.h>

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

/* stats.c: a refusal of @p cause for want of an ACL, counted; said as an
 * ERROR once per cause and minute (denied.h), else at DEBUG: "@p what:
 * @p err; ..." with what an operator must grant. */
void kretry_denied_note(kretry_adapter_t *a,
                        kretry_denied_cause_t cause,
                        rd_kafka_resp_err_t err,
                        const char *what);

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

#endif
