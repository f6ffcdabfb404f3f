/*
 * Leaf: the adapter's counters (kretry_stats_t), plain atomics any thread
 * reads and adds to; their document and gauges are stats.c's (stats.h).
 */
#ifndef KRETRY_COUNTERS_H
#define KRETRY_COUNTERS_H

#include "denied.h"
#include "kretry/kretry.h"

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

#endif
