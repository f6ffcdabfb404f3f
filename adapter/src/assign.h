/*
 * Phase: an assignment's life in the partition table (assign.c): made,
 * retired, its batched source messages dropped. Polling thread.
 */
#ifndef KRETRY_ASSIGN_H
#define KRETRY_ASSIGN_H

#include "adapter_int.h"
#include "kretry/kretry.h"
#include "part.h"

#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdint.h>

/* A new assignment of partition @p p of topic @p tier (the one before, if
 * any, retired); NULL when memory is short. */
kretry_part_t *kretry_part_assign(kretry_adapter_t *a, int tier, int32_t p);
/* The assignment ends: nothing of it is routed or committed any more; it is
 * freed when its last job and copy record are gone. */
void kretry_part_retire(kretry_adapter_t *a, kretry_part_t *part);
/* What @p part holds in kretry's memory (its held message, the messages
 * behind it, the copies waiting for their source), destroyed. */
void kretry_part_drop_held(kretry_adapter_t *a, kretry_part_t *part);
/* Destroy the batched source messages (a->sbuf) of the partitions of
 * @p l (NULL: all) at or past each element's offset (any offset below 0:
 * all of the partition). */
void kretry_sbuf_drop(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *l);

/* The gauges of the messages kept behind held ones (all partitions'
 * buffers together): @p cnt more messages taking @p bytes more. */
static inline void
kretry_count_buffered(kretry_adapter_t *a, int64_t cnt, int64_t bytes) {
        atomic_fetch_add_explicit(&a->stats.buffered, cnt,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&a->stats.buffered_bytes, bytes,
                                  memory_order_relaxed);
}

#endif
