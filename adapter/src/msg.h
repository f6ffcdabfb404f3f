/*
 * Service: the handler's view of a message (kretry_msg_t, msg.c); the
 * accessors of the public API read it. The worker that runs the handler
 * owns it during the call, else the polling thread.
 */
#ifndef KRETRY_MSG_H
#define KRETRY_MSG_H

#include "codec.h"
#include "headers.h"
#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

struct kretry_inflight_s;

struct kretry_msg_s {
        rd_kafka_message_t *rkm;
        rd_kafka_headers_t *hdrs; /* borrowed from rkm once loaded, may be
                                     NULL: read it with kretry_msg_hdrs() */
        int hdrs_loaded;
        const char *topic;
        int tier;
        int attempt; /* handler attempt, 1-based */
        kretry_chain_t chain;
        /* Original coordinates resolved: from the chain or from rkm. */
        const char *orig_topic;
        int32_t orig_partition;
        int64_t orig_offset;
        int64_t orig_ts;
        int64_t first_failure_ts;
        /* The handler's answer details. */
        char code[128];
        int has_code;
        char *error; /* error_max_length + 1 bytes */
        int has_error;
        size_t error_cap;
        int64_t retry_after_ms;
        int64_t version; /* versioning: parsed from the header */
        int has_version;
        avro_value_t *value_avro; /* value.format avro: the decoded record */
        /* A copy record big enough for any message, allocated before the
         * message's outcome is decided: the copy it decides on never waits
         * for memory (route.c). NULL while in use. */
        struct kretry_inflight_s *reserve;
};

/* msg.c */
int kretry_msg_init(kretry_msg_t *msg, size_t error_cap);
void kretry_msg_free(kretry_msg_t *msg);
/* The message's headers, parsed on first use (NULL when none). */
rd_kafka_headers_t *kretry_msg_hdrs(kretry_msg_t *msg);
/* Fill the view for @p rkm consumed from @p tier. */
void kretry_msg_bind(kretry_msg_t *msg,
                     rd_kafka_message_t *rkm,
                     const char *topic,
                     int tier);
/* The handler's error code and message on @p msg, a view bound to a
 * message (kretry_msg_set_error() without the handle's look-up): @p code
 * and @p message as far as they fit, NULL leaves either as it was. */
void kretry_msg_error_put(kretry_msg_t *msg,
                          const char *code,
                          const char *message);

#endif
