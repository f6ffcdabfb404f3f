#include "adapter_int.h"
#include "handles.h"

#include <stdlib.h>
#include <string.h>

/* The view @p msg names: itself, or a held message's through its handle;
 * NULL for a handle no longer valid and for a message abandoned by
 * kretry_adapter_destroy() (its message released): the accessors then
 * return what they return for NULL. */
static inline const kretry_msg_t *live(const kretry_msg_t *msg) {
        if (kretry_handle_is(msg))
                msg = kretry_msg_resolve(msg);
        return msg && msg->rkm ? msg : NULL;
}

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

const void *kretry_msg_key(const kretry_msg_t *msg_, size_t *lenp) {
        const kretry_msg_t *msg = live(msg_);
        if (lenp)
                *lenp = msg ? msg->rkm->key_len : 0;
        return msg ? msg->rkm->key : NULL;
}

const void *kretry_msg_value(const kretry_msg_t *msg_, size_t *lenp) {
        const kretry_msg_t *msg = live(msg_);
        if (lenp)
                *lenp = msg ? msg->rkm->len : 0;
        return msg ? msg->rkm->payload : NULL;
}

const char *kretry_msg_topic(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->topic : NULL;
}

int32_t kretry_msg_partition(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->rkm->partition : -1;
}

int64_t kretry_msg_offset(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->rkm->offset : -1;
}

int64_t kretry_msg_timestamp(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? kretry_rkm_timestamp(msg->rkm, NULL) : -1;
}

int kretry_msg_attempt(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->attempt : 0;
}

int kretry_msg_tier(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->tier : -1;
}

const char *kretry_msg_original_topic(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->orig_topic : NULL;
}

int32_t kretry_msg_original_partition(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->orig_partition : -1;
}

int64_t kretry_msg_original_offset(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->orig_offset : -1;
}

int64_t kretry_msg_original_timestamp(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->orig_ts : -1;
}

int64_t kretry_msg_first_failure_ts(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg ? msg->first_failure_ts : -1;
}

int kretry_msg_header(const kretry_msg_t *msg_,
                      const char *name,
                      const void **valuep,
                      size_t *sizep) {
        const kretry_msg_t *msg = live(msg_);
        const void *v;
        size_t n;
        rd_kafka_headers_t *h =
                msg ? kretry_msg_hdrs((kretry_msg_t *)msg) : NULL;
        if (!name || !h || rd_kafka_header_get_last(h, name, &v, &n))
                return -1;
        if (valuep)
                *valuep = v;
        if (sizep)
                *sizep = n;
        return 0;
}

size_t kretry_msg_header_count(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        rd_kafka_headers_t *h =
                msg ? kretry_msg_hdrs((kretry_msg_t *)msg) : NULL;
        return h ? rd_kafka_header_cnt(h) : 0;
}

int kretry_msg_header_at(const kretry_msg_t *msg_,
                         size_t idx,
                         const char **namep,
                         const void **valuep,
                         size_t *sizep) {
        const kretry_msg_t *msg = live(msg_);
        const char *name;
        const void *v;
        size_t n;
        rd_kafka_headers_t *h =
                msg ? kretry_msg_hdrs((kretry_msg_t *)msg) : NULL;
        if (!h || rd_kafka_header_get_all(h, idx, &name, &v, &n))
                return -1;
        if (namep)
                *namep = name;
        if (valuep)
                *valuep = v;
        if (sizep)
                *sizep = n;
        return 0;
}

void kretry_msg_set_error(kretry_msg_t *msg_,
                          const char *code,
                          const char *message) {
        kretry_msg_t *msg = (kretry_msg_t *)live(msg_);
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

void kretry_msg_set_retry_after(kretry_msg_t *msg_, int64_t after_ms) {
        kretry_msg_t *msg = (kretry_msg_t *)live(msg_);
        if (msg)
                msg->retry_after_ms = after_ms > 0 ? after_ms : 0;
}

const void *kretry_msg_value_avro(const kretry_msg_t *msg_) {
        const kretry_msg_t *msg = live(msg_);
        return msg && msg->value_avro
                       ? kretry_codec_public_value(msg->value_avro)
                       : NULL;
}
