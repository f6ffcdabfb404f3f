/*
 * Phase: the handler's accessors (kretry_msg_*, the public API) on a
 * message's view, or on a held message's through its handle (workers.c).
 * Any thread, on the view it was given.
 */
#include "codec.h"
#include "handles.h"
#include "msg.h"
#include "owned.h"
#include "workers.h"

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
        if (msg)
                kretry_msg_error_put(msg, code, message);
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
