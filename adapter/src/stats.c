/* Service: the counters and their JSON document. */
#include "stats.h"
#include "adapter_int.h"
#include "clock.h"
#include "denied.h"
#include "keychain.h"
#include "keymap.h"
#include "log.h"
#include "part.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[KRETRY_CLASS_CNT] = {
        "permanent", "exhausted", "expired", "schema", "parked"};

const char *kretry_class_name(int cls) {
        return cls >= 0 && cls < KRETRY_CLASS_CNT ? class_names[cls]
                                                  : "unknown";
}

static int64_t get(const atomic_llong *v) {
        return atomic_load_explicit(v, memory_order_relaxed);
}

int64_t kretry_denied_now(const kretry_adapter_t *a) {
        const kretry_stats_t *s = &a->stats;
        return get(&s->denied_copies_now) +
               (atomic_load_explicit(&s->commit_denied, memory_order_relaxed) !=
                0) +
               (atomic_load_explicit(&s->read_denied, memory_order_relaxed) !=
                0) +
               (atomic_load_explicit(&s->txn_denied, memory_order_relaxed) !=
                0);
}

int64_t kretry_adapter_counter(const kretry_adapter_t *a,
                               kretry_counter_t counter,
                               int tier) {
        if (!a)
                return -1;
        const kretry_stats_t *s = &a->stats;
        switch (counter) {
        case KRETRY_COUNTER_CONSUMED:
                return get(&s->consumed);
        case KRETRY_COUNTER_OK:
                return get(&s->ok);
        case KRETRY_COUNTER_RETRIED: {
                if (tier > 0)
                        return tier < a->topic_cnt ? get(&s->retried[tier]) : 0;
                int64_t sum = 0;
                for (int t = 1; t < a->topic_cnt; t++)
                        sum += get(&s->retried[t]);
                return sum;
        }
        case KRETRY_COUNTER_DLQ:
                return get(&s->dlq);
        case KRETRY_COUNTER_DLQ_PERMANENT:
        case KRETRY_COUNTER_DLQ_EXHAUSTED:
        case KRETRY_COUNTER_DLQ_EXPIRED:
        case KRETRY_COUNTER_DLQ_SCHEMA:
                return get(&s->dlq_by_class[counter -
                                            KRETRY_COUNTER_DLQ_PERMANENT]);
        case KRETRY_COUNTER_HANDLER_CALLS:
                return get(&s->handler_calls);
        case KRETRY_COUNTER_PRODUCE_ERRORS:
                return get(&s->produce_errors);
        case KRETRY_COUNTER_HELD:
                return get(&s->held);
        case KRETRY_COUNTER_STALE:
                return get(&s->stale);
        case KRETRY_COUNTER_FORWARDED:
                return get(&s->forwarded);
        case KRETRY_COUNTER_DLQ_PARKED:
                return get(&s->dlq_by_class[KRETRY_CLASS_PARKED]);
        case KRETRY_COUNTER_CHAIN_KEYS:
                return get(&s->chain_keys);
        case KRETRY_COUNTER_VERSION_KEYS:
                return get(&s->version_keys);
        case KRETRY_COUNTER_VERSION_BYTES:
                return get(&s->version_bytes);
        case KRETRY_COUNTER_DUPLICATES:
                return get(&s->duplicates);
        case KRETRY_COUNTER_BREAKER_TRIPS:
                return get(&s->breaker_trips);
        case KRETRY_COUNTER_BREAKER_OPEN:
                return get(&s->breaker_open);
        case KRETRY_COUNTER_KEEPALIVES:
                return get(&s->keepalives);
        case KRETRY_COUNTER_INFLIGHT:
                return get(&s->inflight);
        case KRETRY_COUNTER_INFLIGHT_BYTES:
                return get(&s->inflight_bytes);
        case KRETRY_COUNTER_TOO_LARGE:
                return get(&s->too_large);
        case KRETRY_COUNTER_FOREIGN:
                return get(&s->foreign);
        case KRETRY_COUNTER_BUFFERED:
                return get(&s->buffered);
        case KRETRY_COUNTER_BUFFERED_BYTES:
                return get(&s->buffered_bytes);
        case KRETRY_COUNTER_ASSIGNED:
                return get(&s->assigned);
        case KRETRY_COUNTER_ASSIGNMENTS:
                return get(&s->assignments);
        case KRETRY_COUNTER_TXN_COMMITS:
                return get(&s->txn_commits);
        case KRETRY_COUNTER_TXN_ABORTS:
                return get(&s->txn_aborts);
        case KRETRY_COUNTER_DENIED_COPIES:
        case KRETRY_COUNTER_DENIED_COMMITS:
        case KRETRY_COUNTER_DENIED_READS:
                return get(&s->denied[counter - KRETRY_COUNTER_DENIED_COPIES]);
        case KRETRY_COUNTER_DENIED_NOW:
                return kretry_denied_now(a);
        }
        return -1;
}

json_t *kretry_stats_counters(const kretry_adapter_t *a) {
        const kretry_stats_t *s = &a->stats;
        json_t *retried         = json_array();
        for (int t = 1; t < a->topic_cnt; t++)
                json_array_append_new(retried,
                                      json_integer(get(&s->retried[t])));
        json_t *dlq = json_object();
        for (int c = 0; c < KRETRY_CLASS_CNT; c++)
                json_object_set_new(dlq, class_names[c],
                                    json_integer(get(&s->dlq_by_class[c])));
        json_t *o = json_pack(
                "{s:I,s:I,s:I,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,"
                "s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                "consumed", (json_int_t)get(&s->consumed), "ok",
                (json_int_t)get(&s->ok), "handler_calls",
                (json_int_t)get(&s->handler_calls), "retried", retried,
                "dead_lettered", dlq, "produce_errors",
                (json_int_t)get(&s->produce_errors), "held",
                (json_int_t)get(&s->held), "stale", (json_int_t)get(&s->stale),
                "forwarded", (json_int_t)get(&s->forwarded), "chain_keys",
                (json_int_t)get(&s->chain_keys), "version_keys",
                (json_int_t)get(&s->version_keys), "version_bytes",
                (json_int_t)get(&s->version_bytes), "duplicates",
                (json_int_t)get(&s->duplicates), "breaker_trips",
                (json_int_t)get(&s->breaker_trips), "breaker_open",
                (int)get(&s->breaker_open), "inflight",
                (json_int_t)get(&s->inflight), "inflight_bytes",
                (json_int_t)get(&s->inflight_bytes), "too_large",
                (json_int_t)get(&s->too_large), "foreign",
                (json_int_t)get(&s->foreign), "buffered",
                (json_int_t)get(&s->buffered), "buffered_bytes",
                (json_int_t)get(&s->buffered_bytes), "assigned",
                (json_int_t)get(&s->assigned), "assignments",
                (json_int_t)get(&s->assignments), "txn_commits",
                (json_int_t)get(&s->txn_commits), "txn_aborts",
                (json_int_t)get(&s->txn_aborts));
        json_t *denied = json_object();
        for (int c = 0; c < KRETRY_DENIED_CAUSES; c++)
                json_object_set_new(denied, kretry_denied_name(c),
                                    json_integer(get(&s->denied[c])));
        if (o) {
                json_object_set_new(o, "denied", denied);
                json_object_set_new(o, "denied_now",
                                    json_integer(kretry_denied_now(a)));
        } else {
                json_decref(denied);
        }
        return o;
}

size_t kretry_adapter_stats_json(const kretry_adapter_t *a,
                                 char *dest,
                                 size_t dest_size) {
        if (!a)
                return 0;
        json_t *o  = kretry_stats_counters(a);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        size_t len = text ? strlen(text) : 0;
        if (dest && dest_size) {
                size_t n = len < dest_size ? len : dest_size - 1;
                if (text)
                        memcpy(dest, text, n);
                dest[n] = '\0';
        }
        free(text);
        json_decref(o);
        return len;
}

void kretry_stats_gauges(kretry_adapter_t *a) {
        long long chains = 0, versions = 0, bytes = 0;
        for (int p = 0; a->parts && p < a->part_cap[0]; p++) {
                const kretry_part_t *part = a->parts[0][p];
                if (!part || !part->assigned)
                        continue;
                chains += (long long)kretry_chains_keys(&part->chains);
                versions += (long long)part->versions.map.cnt;
                bytes += (long long)kretry_keymap_memory(&part->versions.map);
        }
        atomic_store_explicit(&a->stats.chain_keys, chains,
                              memory_order_relaxed);
        atomic_store_explicit(&a->stats.version_keys, versions,
                              memory_order_relaxed);
        atomic_store_explicit(&a->stats.version_bytes, bytes,
                              memory_order_relaxed);
}
