/*
 * Phase: per-key state and decided offsets restored on assignment
 * (restore.c). Polling thread.
 */
#ifndef KRETRY_RESTORE_H
#define KRETRY_RESTORE_H

#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>

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

/* Test only: when set and it returns nonzero, the group's committed
 * offsets read after an abort (the rewind's and the restore's) are
 * unknown, as while the cluster does not answer. Polling thread. */
extern int (*kretry_test_txn_blind)(void);

/* Test only: how many DLQ partitions restores started to read (park_key's
 * migration reads them, and nothing else may). Polling thread. */
extern int kretry_test_restore_dlq_reads;

/* Test only: asked before each record park_key's migration writes (the
 * parks, then the mark); when set and it returns nonzero, the migration
 * stops there, as a process killed at that point: what it wrote before is
 * flushed, nothing after. Polling thread. */
extern int (*kretry_test_migration_cut)(void);

#endif
