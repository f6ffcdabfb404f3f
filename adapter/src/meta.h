/*
 * Leaf: what the cluster holds: topics and configs.
 *
 * What the cluster holds, as kretry needs it: a metadata snapshot (the
 * topics that exist, their partitions and the configuration that matters
 * to a chain) and the two look-ups that fill it beyond Metadata, which the
 * adapter's startup check and the topology's admin layer both make. The
 * snapshot itself is plain data (tests build it with kretry_meta_add());
 * the look-ups are admin requests, bounded by their timeout.
 */
#ifndef KRETRY_META_H
#define KRETRY_META_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/* One topic as the cluster reports it. */
typedef struct {
        char *name;
        int partitions;
        int replication; /* replicas of its partitions, 0: unknown */
        /* From DescribeConfigs; -1: unknown (unanswered) */
        int64_t retention_ms;
        int compact; /* cleanup.policy includes compact: 1, 0 */
        int min_insync;
        int64_t max_message_bytes;
} kretry_meta_topic_t;

/* What max.message.bytes of a tier and the DLQ exceeds the source's by:
 * room for the kretry-* headers of a copy, the handler's error message at
 * error.max.length's largest (65,536 bytes) and topic names of 249 bytes
 * included. */
#define KRETRY_COPY_HEADROOM 131072

/* A metadata snapshot: the topics that exist. */
typedef struct {
        kretry_meta_topic_t *topics;
        size_t cnt;
} kretry_meta_t;

/* Add a topic to a snapshot (tests build snapshots with it); its
 * replication and every configuration but @p retention_ms unknown.
 * 0 or -1. */
int kretry_meta_add(kretry_meta_t *m,
                    const char *name,
                    int partitions,
                    int64_t retention_ms);
const kretry_meta_topic_t *kretry_meta_find(const kretry_meta_t *m,
                                            const char *name);
void kretry_meta_clear(kretry_meta_t *m);

/* The options of an admin request of kind @p op: the request waits
 * @p timeout_ms for the broker's answer, the operation three quarters of
 * it. Free with rd_kafka_AdminOptions_destroy(). */
rd_kafka_AdminOptions_t *
kretry_admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t op, int timeout_ms);

/* Wait for the result of one admin request on @p q (request timeout
 * @p timeout_ms): NULL when none came. */
rd_kafka_event_t *kretry_admin_wait(rd_kafka_queue_t *q, int timeout_ms);

/* Is the controller that metadata @p md names one of its brokers? The admin
 * requests kretry sends wait for it: librdkafka's mock cluster names
 * controller 0, none of its brokers, and would let each request wait for
 * its whole timeout. */
int kretry_admin_controller_known(rd_kafka_t *rk,
                                  const struct rd_kafka_metadata *md);

/* DescribeConfigs for @p names (topics already in @p meta): their
 * retention.ms, min.insync.replicas, max.message.bytes and cleanup.policy
 * into @p meta. 0, or -1 with the broker's reason in @p errstr (what was
 * answered is filled in all the same). */
int kretry_admin_describe(rd_kafka_t *rk,
                          char **names,
                          size_t cnt,
                          int timeout_ms,
                          kretry_meta_t *meta,
                          char *errstr,
                          size_t errstr_size);

#endif
