/*
 * Service: commit building (commit.c): a partition's committable offset with
 * the offsets decided above it as metadata, the periodic commit of the
 * stored offsets, and the answers to commits. Polling thread.
 */
#ifndef KRETRY_COMMIT_H
#define KRETRY_COMMIT_H

#include "kretry/kretry.h"
#include "part.h"

#include <librdkafka/rdkafka.h>

/* commit.c: the answer to a commit, watched for refusals for want of an
 * ACL (KRETRY_COUNTER_DENIED_COMMITS). Every commit of the adapter's is
 * answered on its commit queue (kq). Polling thread. */
void kretry_commit_result(kretry_adapter_t *a,
                          rd_kafka_resp_err_t err,
                          const rd_kafka_topic_partition_list_t *offsets);

/* Add @p part to *@p l (made when NULL) at the offset its commit takes,
 * with the offsets decided above that one as the commit's metadata
 * (offsets.h). Not when it has no such offset, nor, with @p decided_only,
 * when nothing above it was decided. 1 when added, 0 when not, -1 out of
 * memory: not added, or added without its metadata (the offset alone). */
int kretry_commit_add(kretry_adapter_t *a,
                      rd_kafka_topic_partition_list_t **l,
                      const kretry_part_t *part,
                      int decided_only);
/* The periodic commit of the stored offsets, every auto.commit.interval.ms
 * while something new was stored, never two at a time: serves the answer
 * of the one in flight, sends the next when due. kretry_commit_settle
 * waits (until @p deadline, kretry_mono_ms) for the one in flight, so that
 * a commit made after it is the one that stays. Polling thread. */
void kretry_commit_periodic(kretry_adapter_t *a, int64_t mono);
void kretry_commit_settle(kretry_adapter_t *a, int64_t deadline);
/* Commit @p offsets after the commit in flight (waited for until
 * @p deadline, kretry_mono_ms) without waiting for the answer, which the
 * periodic commit serves; the next commit waits for it. Returns what
 * librdkafka refused at once. */
rd_kafka_resp_err_t
kretry_commit_send(kretry_adapter_t *a,
                   const rd_kafka_topic_partition_list_t *offsets,
                   int64_t deadline);
/* Commit @p offsets (NULL: the stored offsets) after the commit in flight
 * and wait for the answer until @p deadline (kretry_mono_ms): its error,
 * or RD_KAFKA_RESP_ERR__TIMED_OUT (rd_kafka_commit() would wait for a
 * group coordinator as long as it takes). Unanswered, it stays in flight:
 * the next periodic commit waits for it. */
rd_kafka_resp_err_t
kretry_commit_sync(kretry_adapter_t *a,
                   const rd_kafka_topic_partition_list_t *offsets,
                   int64_t deadline);
/* When the next periodic commit is due (kretry_mono_ms), -1: none. */
int64_t kretry_commit_next(const kretry_adapter_t *a);

#endif
