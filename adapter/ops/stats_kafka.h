/*
 * kretry stats, the cluster side: one consumer configured with the
 * topology's group.id that never joins the group (no subscribe) — it reads
 * the group's committed offsets (OffsetFetch), the partitions' watermarks
 * (ListOffsets earliest/latest) and, by assigning partitions at their first
 * waiting offset, one message each for its timestamp. Every request is
 * bounded by a timeout; what is not answered is written into the topic's
 * error text and its figure stays unknown.
 */
#ifndef KRETRY_CLI_STATS_KAFKA_H
#define KRETRY_CLI_STATS_KAFKA_H

#include "stats_calc.h"

#include <librdkafka/rdkafka.h>

typedef struct {
        stats_topic_t *fig; /* the figures this topic's answers go to */
        int cnt;            /* partitions, -1 when unknown */
} stats_io_topic_t;

/* Where kretry dlq replay records its progress through a DLQ: the
 * topology's group with this suffix. */
#define STATS_REPLAY_GROUP_SUFFIX ".kretry-replay"

typedef struct {
        rd_kafka_t *rk;
        rd_kafka_t *replay_rk; /* group.id <group>.kretry-replay */
        char bootstrap[512];   /* for messages */
        int timeout_ms;
        stats_io_topic_t *topics;
        size_t topic_cnt;
} stats_io_t;

/*
 * The reading consumer from @p conf (taken, also on failure), with
 * group.id set to @p group, and a second one for the replay's progress
 * group. Returns 0, or -1 with @p errstr filled.
 */
int stats_io_open(stats_io_t *io,
                  rd_kafka_conf_t *conf,
                  const char *group,
                  int timeout_ms,
                  char *errstr,
                  size_t errstr_size);

void stats_io_close(stats_io_t *io);

/*
 * Partition counts of every topic from one metadata request (all topics:
 * a request naming a topic would create it on clusters that auto-create).
 * A missing topic is a topic error. Returns 0, or -1 with @p errstr filled
 * when the cluster did not answer at all.
 */
int stats_io_metadata(stats_io_t *io, char *errstr, size_t errstr_size);

/* Watermarks and committed offsets of every partition into @p parts of each
 * topic (one array per topic, cnt entries, allocated by the caller through
 * stats_io_parts_new()). On the DLQ, a partition where the group has no
 * committed offset takes kretry dlq replay's progress there, when it has
 * some: what a replay went past was dealt with. */
void stats_io_snapshot(stats_io_t *io, stats_part_t **parts);

/* An array of @p io's partitions per topic (free with
 * stats_io_parts_free()). */
stats_part_t **stats_io_parts_new(const stats_io_t *io);
void stats_io_parts_free(const stats_io_t *io, stats_part_t **parts);

/* The oldest waiting message's timestamp of every topic whose depth is
 * known, from @p parts (the latest snapshot); sets the oldest figures at
 * @p now_ms. A partition whose reader reached the end without a record
 * (transaction markers) is marked rest_unreadable and the topic's depth
 * computed again. */
void stats_io_oldest(stats_io_t *io, stats_part_t **parts, int64_t now_ms);

#endif
