/*
 * Reading a topology's DLQ for kretry dlq inspect/replay: a consumer with
 * assigned partitions (no group join, no rebalance), clients configured
 * from the topology file's kafka: properties. The end of every partition
 * is snapshotted first (its high watermark), so a read terminates even
 * while messages keep arriving, replayed ones that fail again included.
 * Partitions are read one after the other, in order, each from its start
 * to its snapshotted end.
 */
#ifndef KRETRY_CLI_DLQ_READER_H
#define KRETRY_CLI_DLQ_READER_H

#include "topology.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>

/*
 * A librdkafka configuration from @p f's kafka: properties: unprefixed ones
 * and those prefixed "consumer." (@p consumer) or "producer." (prefix
 * removed); @p bootstrap (may be NULL) overrides bootstrap.servers. Returns
 * NULL with @p errstr filled. Free with rd_kafka_conf_destroy() unless
 * handed to rd_kafka_new().
 */
rd_kafka_conf_t *dlq_client_conf(const kretry_topology_file_t *f,
                                 const char *bootstrap,
                                 int consumer,
                                 char *errstr,
                                 size_t errstr_size);

/* Set @p name to @p value in @p conf. Returns 0, or -1 with @p errstr
 * filled ("name=value: reason"). */
int dlq_conf_put(rd_kafka_conf_t *conf,
                 const char *name,
                 const char *value,
                 char *errstr,
                 size_t errstr_size);

typedef struct dlq_reader_s dlq_reader_t;

/*
 * A reader of @p topic; @p conf is taken (also on failure). @p group (may
 * be NULL: nothing is committed or fetched) is the group whose committed
 * offsets dlq_reader_snapshot() may start from and dlq_reader_commit()
 * writes. @p timeout_ms bounds each cluster request. Returns NULL with
 * @p errstr filled. Free with dlq_reader_destroy().
 */
dlq_reader_t *dlq_reader_new(rd_kafka_conf_t *conf,
                             const char *topic,
                             const char *group,
                             int timeout_ms,
                             char *errstr,
                             size_t errstr_size);

void dlq_reader_destroy(dlq_reader_t *r);

/* Snapshot every partition's start (its low watermark, or with
 * @p from_committed the group's committed offset when it has one) and end.
 * Returns 0, or -1 with @p errstr filled. */
int dlq_reader_snapshot(dlq_reader_t *r,
                        int from_committed,
                        char *errstr,
                        size_t errstr_size);

int dlq_reader_partition_cnt(const dlq_reader_t *r);

/* After the snapshot: read from @p offset of @p partition on (the
 * partitions before it left out), or with @p one only the message at that
 * offset. An offset outside the snapshot reads nothing there. */
void dlq_reader_from(dlq_reader_t *r,
                     int32_t partition,
                     int64_t offset,
                     int one);

/* After the snapshot, before reading: read @p partition only up to
 * @p offset (excluded), when that is before its snapshotted end. */
void dlq_reader_until(dlq_reader_t *r, int32_t partition, int64_t offset);

/* 1 once dlq_reader_next() has returned the snapshot's last message. */
int dlq_reader_done(const dlq_reader_t *r);

/* Messages between the starts and the ends (an upper bound: offsets may be
 * gaps). */
int64_t dlq_reader_total(const dlq_reader_t *r);

/* Where the snapshot starts in @p partition (-1 when it has none). */
int64_t dlq_reader_start(const dlq_reader_t *r, int32_t partition);

/* Messages before the starts that a group had committed (0 without). */
int64_t dlq_reader_skipped_committed(const dlq_reader_t *r);

/*
 * The next message (free with rd_kafka_message_destroy()). Returns 1 with
 * *@p mp set, 0 at the end of the snapshot, -1 on an error (in @p errstr).
 */
int dlq_reader_next(dlq_reader_t *r,
                    rd_kafka_message_t **mp,
                    char *errstr,
                    size_t errstr_size);

/* Record that everything up to and including @p offset of @p partition is
 * done, for the next dlq_reader_commit(). */
void dlq_reader_mark(dlq_reader_t *r, int32_t partition, int64_t offset);

/* Commit the marked positions under the group, synchronously. Returns 0
 * (also when nothing changed), or -1 with @p errstr filled. */
int dlq_reader_commit(dlq_reader_t *r, char *errstr, size_t errstr_size);

#endif
