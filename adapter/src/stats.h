/*
 * Service: the counters (kretry_stats_t, counters.h: atomics, any thread),
 * their JSON document (stats.c) and the stats callback (stats_emit.c).
 */
#ifndef KRETRY_STATS_H
#define KRETRY_STATS_H

#include "conf.h"
#include "denied.h"
#include "kretry/kretry.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdatomic.h>

#include "counters.h"

enum {
        KRETRY_CLASS_PERMANENT,
        KRETRY_CLASS_EXHAUSTED,
        KRETRY_CLASS_EXPIRED,
        KRETRY_CLASS_SCHEMA,
        KRETRY_CLASS_PARKED
};

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
