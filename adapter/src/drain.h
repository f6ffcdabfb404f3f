/*
 * Phase: a handover's last step (drain.c): the copies of revoked or closing
 * partitions finished, the offsets committed synchronously. Polling
 * thread.
 */
#ifndef KRETRY_DRAIN_H
#define KRETRY_DRAIN_H

#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>

/* Finish the in-flight copies of the partitions of @p l (those refused as
 * too large aside) until @p deadline, commit synchronously (for a close: at
 * most KRETRY_COMMIT_GRACE_MS once the copies are done, however early that
 * is). */
void kretry_drain_and_commit(kretry_adapter_t *a,
                             const rd_kafka_topic_partition_list_t *l,
                             int64_t deadline);

#endif
