#include "adapter_int.h"

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
        if (rd_kafka_message_headers(rkm, &msg->hdrs))
                msg->hdrs = NULL;
        rd_kafka_timestamp_type_t tstype;
        int64_t ts = rd_kafka_message_timestamp(rkm, &tstype);

        if (tier == 0) {
                /* The source starts a fresh chain whatever kretry-* headers
                 * the message carries (a replay, a forwarded copy); only the
                 * correlation id is kept. */
                kretry_chain_t *c = &msg->chain;
                memset(c, 0, sizeof(*c));
                const void *v;
                size_t n;
                if (msg->hdrs &&
                    !rd_kafka_header_get_last(msg->hdrs,
                                              KRETRY_H_CORRELATION_ID, &v,
                                              &n) &&
                    v && n) {
                        c->correlation_id     = v;
                        c->correlation_id_len = n;
                }
        } else {
                kretry_chain_decode(msg->hdrs, &msg->chain);
        }
        const kretry_chain_t *c = &msg->chain;
        msg->attempt            = c->attempt_ok ? c->attempt + 1 : 1;
        msg->orig_topic         = c->orig_topic_ok ? c->orig_topic : topic;
        msg->orig_partition =
            c->orig_partition_ok ? c->orig_partition : rkm->partition;
        msg->orig_offset = c->orig_offset_ok ? c->orig_offset : rkm->offset;
        msg->orig_ts     = c->orig_ts_ok ? c->orig_ts : ts;
        msg->first_failure_ts = c->first_failure_ok ? c->first_failure_ts : -1;
}

const void *kretry_msg_key(const kretry_msg_t *msg, size_t *lenp) {
        if (lenp)
                *lenp = msg ? msg->rkm->key_len : 0;
        return msg ? msg->rkm->key : NULL;
}

const void *kretry_msg_value(const kretry_msg_t *msg, size_t *lenp) {
        if (lenp)
                *lenp = msg ? msg->rkm->len : 0;
        return msg ? msg->rkm->payload : NULL;
}

const char *kretry_msg_topic(const kretry_msg_t *msg) {
        return msg ? msg->topic : NULL;
}

int32_t kretry_msg_partition(const kretry_msg_t *msg) {
        return msg ? msg->rkm->partition : -1;
}

int64_t kretry_msg_offset(const kretry_msg_t *msg) {
        return msg ? msg->rkm->offset : -1;
}

int64_t kretry_msg_timestamp(const kretry_msg_t *msg) {
        return msg ? rd_kafka_message_timestamp(msg->rkm, NULL) : -1;
}

int kretry_msg_attempt(const kretry_msg_t *msg) {
        return msg ? msg->attempt : 0;
}

int kretry_msg_tier(const kretry_msg_t *msg) {
        return msg ? msg->tier : -1;
}

const char *kretry_msg_original_topic(const kretry_msg_t *msg) {
        return msg ? msg->orig_topic : NULL;
}

int32_t kretry_msg_original_partition(const kretry_msg_t *msg) {
        return msg ? msg->orig_partition : -1;
}

int64_t kretry_msg_original_offset(const kretry_msg_t *msg) {
        return msg ? msg->orig_offset : -1;
}

int64_t kretry_msg_original_timestamp(const kretry_msg_t *msg) {
        return msg ? msg->orig_ts : -1;
}

int64_t kretry_msg_first_failure_ts(const kretry_msg_t *msg) {
        return msg ? msg->first_failure_ts : -1;
}

int kretry_msg_header(const kretry_msg_t *msg,
                      const char *name,
                      const void **valuep,
                      size_t *sizep) {
        const void *v;
        size_t n;
        if (!msg || !name || !msg->hdrs ||
            rd_kafka_header_get_last(msg->hdrs, name, &v, &n))
                return -1;
        if (valuep)
                *valuep = v;
        if (sizep)
                *sizep = n;
        return 0;
}

size_t kretry_msg_header_count(const kretry_msg_t *msg) {
        return msg && msg->hdrs ? rd_kafka_header_cnt(msg->hdrs) : 0;
}

int kretry_msg_header_at(const kretry_msg_t *msg,
                         size_t idx,
                         const char **namep,
                         const void **valuep,
                         size_t *sizep) {
        const char *name;
        const void *v;
        size_t n;
        if (!msg || !msg->hdrs ||
            rd_kafka_header_get_all(msg->hdrs, idx, &name, &v, &n))
                return -1;
        if (namep)
                *namep = name;
        if (valuep)
                *valuep = v;
        if (sizep)
                *sizep = n;
        return 0;
}

void kretry_msg_set_error(kretry_msg_t *msg,
                          const char *code,
                          const char *message) {
        if (!msg)
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

void kretry_msg_set_retry_after(kretry_msg_t *msg, int64_t after_ms) {
        if (msg)
                msg->retry_after_ms = after_ms > 0 ? after_ms : 0;
}

const void *kretry_msg_value_avro(const kretry_msg_t *msg) {
        return msg && msg->value_avro
                   ? kretry_codec_public_value(msg->value_avro)
                   : NULL;
}
