/*
 * Service: the handler's view of a message (kretry_msg_t): made once per
 * view, bound to each consumed message, its headers parsed on first use.
 * Whichever thread owns the view (msg.h).
 */
#include "msg.h"
#include "headers.h"
#include "owned.h"

#include <stdlib.h>
#include <string.h>

int kretry_msg_init(kretry_msg_t *msg, size_t error_cap) {
        memset(msg, 0, sizeof(*msg));
        msg->error_cap = error_cap;
        msg->error     = malloc(error_cap + 1);
        return msg->error ? 0 : -1;
}

void kretry_msg_free(kretry_msg_t *msg) {
        free(msg->error);
        msg->error = NULL;
        free(msg->reserve);
        msg->reserve = NULL;
}

rd_kafka_headers_t *kretry_msg_hdrs(kretry_msg_t *msg) {
        /* librdkafka parses (and allocates) a message's header list on first
         * use: do it only when something reads headers, so the happy path
         * of a source message never pays for it. */
        if (!msg->hdrs_loaded) {
                msg->hdrs_loaded = 1;
                if (kretry_rkm_headers(msg->rkm, &msg->hdrs))
                        msg->hdrs = NULL;
        }
        return msg->hdrs;
}

void kretry_msg_bind(kretry_msg_t *msg,
                     rd_kafka_message_t *rkm,
                     const char *topic,
                     int tier) {
        msg->rkm            = rkm;
        msg->topic          = topic;
        msg->tier           = tier;
        msg->has_code       = 0;
        msg->has_error      = 0;
        msg->retry_after_ms = 0;
        msg->value_avro     = NULL;
        msg->hdrs           = NULL;
        msg->hdrs_loaded    = 0;
        rd_kafka_timestamp_type_t tstype;
        int64_t ts = kretry_rkm_timestamp(rkm, &tstype);

        kretry_chain_t *c = &msg->chain;
        if (tier == 0) {
                /* The source starts a fresh chain whatever kretry-* headers
                 * the message carries (a replay, a forwarded copy); only the
                 * correlation id is kept, looked up when a copy is made. */
                c->attempt_ok = c->tier_ok = c->due_ok = 0;
                c->orig_topic_ok = c->orig_partition_ok = c->orig_offset_ok = 0;
                c->orig_ts_ok = c->first_failure_ok = 0;
                c->last_failure_ts                  = -1;
                c->correlation_id                   = NULL;
                c->correlation_id_len               = 0;
        } else {
                kretry_chain_decode(kretry_msg_hdrs(msg), c);
        }
        msg->attempt    = c->attempt_ok ? c->attempt + 1 : 1;
        msg->orig_topic = c->orig_topic_ok ? c->orig_topic : topic;
        msg->orig_partition =
                c->orig_partition_ok ? c->orig_partition : rkm->partition;
        msg->orig_offset = c->orig_offset_ok ? c->orig_offset : rkm->offset;
        msg->orig_ts     = c->orig_ts_ok ? c->orig_ts : ts;
        msg->first_failure_ts = c->first_failure_ok ? c->first_failure_ts : -1;
}

void kretry_msg_error_put(kretry_msg_t *msg,
                          const char *code,
                          const char *message) {
        if (!msg->rkm)
                return;
        if (code) {
                size_t n = strnlen(code, sizeof(msg->code) - 1);
                memcpy(msg->code, code, n);
                msg->code[n]  = '\0';
                msg->has_code = 1;
        }
        if (message) {
                size_t n = strnlen(message, msg->error_cap);
                /* Never cut a UTF-8 sequence: back up to its first byte. */
                if (n == msg->error_cap)
                        while (n > 0 &&
                               ((unsigned char)message[n] & 0xC0) == 0x80)
                                n--;
                memcpy(msg->error, message, n);
                msg->error[n]  = '\0';
                msg->has_error = 1;
        }
}
