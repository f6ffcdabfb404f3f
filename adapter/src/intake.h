/*
 * Phase: intake (intake.c): what the poll loop takes from the queues and
 * where each message goes; held messages, buffers and pause state.
 * Polling thread.
 */
#ifndef KRETRY_INTAKE_H
#define KRETRY_INTAKE_H

#include "kretry/kretry.h"
#include "part.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>

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
void kretry_part_drop_held(kretry_adapter_t *a, kretry_part_t *part);
/* Destroy the batched source messages (a->sbuf) of the partitions of
 * @p l (NULL: all) at or past each element's offset (any offset below 0:
 * all of the partition). */
void kretry_sbuf_drop(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *l);

#endif
