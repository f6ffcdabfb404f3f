/*
 * Leaf: the kretry-* header contract.
 *
 * The kretry-* header contract (DESIGN §3): decoding a message's retry chain
 * and building the headers of its copy in a tier or the DLQ. Values are UTF-8
 * decimal text. Malformed values never crash: each field says whether it was
 * present and valid, and the adapter applies its rule (docs/behaviour.md,
 * "Bad input").
 */
#ifndef KRETRY_HEADERS_H
#define KRETRY_HEADERS_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/* Not a header: the commit metadata of a partition whose copy the broker
 * refuses as too large (route.c), followed by the destination topic; kretry
 * stats alerts on it. */
#define KRETRY_TOO_LARGE_METADATA "kretry: copy refused as too large by "
/* The same for a copy the cluster refuses for want of an ACL (Write on the
 * destination topic, which follows). */
#define KRETRY_DENIED_METADATA "kretry: copy refused for want of an ACL by "

#define KRETRY_H_ATTEMPT "kretry-attempt"
#define KRETRY_H_TIER "kretry-tier"
#define KRETRY_H_DUE_TS "kretry-due-ts"
#define KRETRY_H_ORIG_TOPIC "kretry-original-topic"
#define KRETRY_H_ORIG_PARTITION "kretry-original-partition"
#define KRETRY_H_ORIG_OFFSET "kretry-original-offset"
#define KRETRY_H_ORIG_TS "kretry-original-timestamp"
#define KRETRY_H_FIRST_FAILURE "kretry-first-failure-ts"
#define KRETRY_H_LAST_FAILURE "kretry-last-failure-ts"
#define KRETRY_H_ERROR_CLASS "kretry-error-class"
#define KRETRY_H_ERROR_CODE "kretry-error-code"
#define KRETRY_H_ERROR "kretry-error"
#define KRETRY_H_GROUP "kretry-group"
#define KRETRY_H_CORRELATION_ID "kretry-correlation-id"
#define KRETRY_H_REPLAY_COUNT "kretry-replay-count"
#define KRETRY_H_REPLAYED_AT "kretry-replayed-at"
#define KRETRY_H_PARKED_FOLLOWERS "kretry-parked-followers"

/* Largest attempt count a header may carry; beyond it the value is absurd.
 * Zero is valid on a tier: a message parked behind its key before it was
 * ever handled. */
#define KRETRY_ATTEMPT_MAX 1000000
#define KRETRY_TOPIC_MAX 249

/* Fields with flags: *_ok is 1 only when the header was present and valid. */
typedef struct {
        int attempt, attempt_ok; /* failed attempts so far */
        int tier, tier_ok;
        int64_t due_ts;
        int due_ok;
        char orig_topic[KRETRY_TOPIC_MAX + 1];
        int orig_topic_ok;
        int32_t orig_partition;
        int orig_partition_ok;
        int64_t orig_offset;
        int orig_offset_ok;
        int64_t orig_ts;
        int orig_ts_ok;
        int64_t first_failure_ts;
        int first_failure_ok;
        int64_t last_failure_ts;    /* -1 when absent or malformed */
        const void *correlation_id; /* borrowed from the message */
        size_t correlation_id_len;
        /* kretry-group, borrowed from the message; NULL when absent or
         * without a value (kretry_chain_foreign). */
        const void *group;
        size_t group_len;
} kretry_chain_t;

/* Parse a decimal header value (no sign, no spaces, at most 19 digits) within
 * [0, max]. Returns 0 or -1. */
int kretry_header_num(const void *value,
                      size_t size,
                      int64_t max,
                      int64_t *out);

/* Decode the chain headers of @p hdrs (may be NULL). */
void kretry_chain_decode(const rd_kafka_headers_t *hdrs, kretry_chain_t *chain);

/* What a copy's headers say about the failure that made it. */
typedef struct {
        int attempt;    /* failed attempts so far, >= 1 */
        int tier;       /* destination tier, 0 for the DLQ */
        int64_t due_ts; /* tier copies only */
        const char *orig_topic;
        int32_t orig_partition;
        int64_t orig_offset;
        int64_t orig_ts;          /* -1: unknown, header omitted */
        int64_t first_failure_ts; /* -1: omitted (parked before a failure) */
        int64_t last_failure_ts;  /* -1: omitted */
        int64_t followers;        /* >= 0: kretry-parked-followers */
        const char *error_class;
        const char *error_code; /* may be NULL */
        const char *error;      /* may be NULL */
        const char *group;
        const void *correlation_id; /* NULL: derived from the original */
        size_t correlation_id_len;
        int spring; /* headers.profile spring: a DLQ copy also carries
                       Spring Kafka's DLT headers */
} kretry_copy_info_t;

/* Returns 1 for the kretry-* headers a copy rewrites (replay headers and
 * unknown kretry-* names pass through). */
int kretry_header_is_chain(const char *name);

/* 1 when @p hdrs (may be NULL) carry a kretry-group naming another group
 * than @p group: a tier copy another consumer group wrote to a tier topic
 * both share. Without the header the copy is nobody else's. */
int kretry_headers_foreign(const rd_kafka_headers_t *hdrs, const char *group);
/* The same from headers already decoded into @p c. */
int kretry_chain_foreign(const kretry_chain_t *c, const char *group);

/*
 * The headers of a copy: every header of @p src (may be NULL) that is not a
 * chain header, byte for byte and in order, then the chain headers from
 * @p info. Returns a new list (free with rd_kafka_headers_destroy unless
 * handed to the producer), or NULL when out of memory.
 */
rd_kafka_headers_t *kretry_headers_build(const rd_kafka_headers_t *src,
                                         const kretry_copy_info_t *info);

/* Add header @p name with @p v (>= 0; a negative value is written as 0) as
 * decimal text. */
void kretry_header_add_num(rd_kafka_headers_t *h, const char *name, int64_t v);

/* 1 when @p hdrs (may be NULL) holds a chain header. */
int kretry_headers_have_chain(const rd_kafka_headers_t *hdrs);

/* Append the chain headers from @p info to @p h, which holds none: a copy's
 * headers built on the source's own parsed list, without copying it. */
void kretry_headers_append(rd_kafka_headers_t *h,
                           const kretry_copy_info_t *info);

#endif
