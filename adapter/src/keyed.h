/*
 * Phase: keyed ordering and versions around the handler (keyed.c).
 * Polling thread.
 */
#ifndef KRETRY_KEYED_H
#define KRETRY_KEYED_H

#include "kretry/kretry.h"
#include "part.h"

#include <librdkafka/rdkafka.h>

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

/* How often copies waiting for their source look again. */
#define KRETRY_SOURCE_WAIT_MS 50
/* Keep @p rkm, a tier copy of @p part (taken), until its source partition
 * was consumed past it (kretry_keyed_source_behind), looked at again with
 * the held messages; then it goes to kretry_dispatch. 0, or -1 when there
 * was no memory to keep it (@p rkm is still the caller's). */
int kretry_wait_source(kretry_adapter_t *a,
                       kretry_part_t *part,
                       rd_kafka_message_t *rkm);

#endif
