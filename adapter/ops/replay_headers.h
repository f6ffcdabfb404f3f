/*
 * The headers of a DLQ message replayed by kretry dlq replay (DESIGN §3):
 * the retry chain is reset — every chain header (attempt, tier, due time,
 * original position, failure times, error class/code/message, group) is
 * dropped, so the target handles it as a first delivery — while the
 * correlation id and every other header pass through byte for byte and in
 * order. Another tool's failure context (Spring Kafka's kafka_dlt-* and
 * retry_topic-*, Kafka Connect's __connect.errors.*: dlq_foreign.h) is
 * dropped the same way. kretry-replay-count goes up by one (a missing or
 * malformed count counts as 0) and kretry-replayed-at is set.
 *
 * A replay into a tier instead of the source starts a fresh chain there: a
 * tier message without a valid kretry-attempt would be dead-lettered as
 * malformed, so the copy says attempt 1, its tier, and due at once; it keeps
 * where the message first entered (original topic, partition, offset) but
 * not its original timestamp, so that max_age counts from the replay.
 */
#ifndef KRETRY_REPLAY_HEADERS_H
#define KRETRY_REPLAY_HEADERS_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

/* Largest replay count a header may carry; beyond it the value is absurd
 * and restarts at 1. */
#define KRETRY_REPLAY_COUNT_MAX 1000000

/* 1 for the headers a replay drops or rewrites. */
int kretry_replay_header_dropped(const char *name);

/*
 * The headers of the replayed copy of a message with headers @p src (may
 * be NULL), replayed at @p now_ms into the source (@p tier 0) or tier
 * @p tier; @p source is the topology's source topic, the original topic of
 * a tier copy whose own header is missing. Returns a new list (free with
 * rd_kafka_headers_destroy unless handed to the producer), or NULL when
 * out of memory.
 */
rd_kafka_headers_t *kretry_replay_headers(const rd_kafka_headers_t *src,
                                          int64_t now_ms,
                                          int tier,
                                          const char *source);

#endif
