/*
 * Held tier messages in kretry's own memory.
 *
 * librdkafka hands out consumed messages without copying them: each one keeps
 * the whole Fetch response it arrived in allocated until it is destroyed. A
 * tier message that is not due yet may be held for minutes or hours, so
 * holding the librdkafka message would pin a response (up to
 * max.partition.fetch.bytes per partition in it) per held partition. Instead
 * the held message is copied once into a single allocation shaped like a
 * consumed message, and the original is destroyed at once.
 *
 * The copy is a plain rd_kafka_message_t that librdkafka never saw: it must
 * never reach a librdkafka function. The engine reads its timestamp and
 * headers, and destroys it, through the functions below, which serve both
 * kinds. A copy is marked by a NULL topic handle and a private pointer to
 * this file's marker, which no librdkafka message carries.
 */
#include "adapter_int.h"

#include <stdlib.h>
#include <string.h>

static const char owned_marker = 'k';

typedef struct {
        rd_kafka_message_t m; /* first: the message the engine sees */
        int64_t ts;
        rd_kafka_timestamp_type_t tstype;
        rd_kafka_headers_t *hdrs; /* a copy, or NULL: none */
        /* the key's bytes and a NUL, then the value's and a NUL */
} owned_t;

int kretry_rkm_owned(const rd_kafka_message_t *rkm) {
        return rkm->rkt == NULL && rkm->_private == (void *)&owned_marker;
}

rd_kafka_message_t *kretry_rkm_own(rd_kafka_message_t *rkm) {
        rd_kafka_headers_t *src = NULL, *hdrs = NULL;
        if (kretry_rkm_owned(rkm))
                return rkm;
        if (!rd_kafka_message_headers(rkm, &src) &&
            !(hdrs = rd_kafka_headers_copy(src)))
                return rkm; /* out of memory: keep librdkafka's */
        size_t kl = rkm->key ? rkm->key_len : 0;
        size_t vl = rkm->payload ? rkm->len : 0;
        /* Each followed by a NUL that len does not count: a handler that
         * reads a value as a C string (wrong, but common) stays inside the
         * copy. */
        owned_t *o = malloc(sizeof(*o) + kl + 1 + vl + 1);
        if (!o) {
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                return rkm;
        }
        char *data        = (char *)(o + 1);
        o->m              = *rkm;
        o->m.rkt          = NULL;
        o->m._private     = (void *)&owned_marker;
        data[kl]          = '\0';
        data[kl + 1 + vl] = '\0';
        o->m.key          = rkm->key ? memcpy(data, rkm->key, kl) : NULL;
        o->m.payload =
                rkm->payload ? memcpy(data + kl + 1, rkm->payload, vl) : NULL;
        o->ts   = rd_kafka_message_timestamp(rkm, &o->tstype);
        o->hdrs = hdrs;
        rd_kafka_message_destroy(rkm);
        return &o->m;
}

rd_kafka_resp_err_t kretry_rkm_headers(const rd_kafka_message_t *rkm,
                                       rd_kafka_headers_t **hdrsp) {
        if (!kretry_rkm_owned(rkm))
                return rd_kafka_message_headers(rkm, hdrsp);
        const owned_t *o = (const owned_t *)rkm;
        *hdrsp           = o->hdrs;
        return o->hdrs ? RD_KAFKA_RESP_ERR_NO_ERROR : RD_KAFKA_RESP_ERR__NOENT;
}

int64_t kretry_rkm_timestamp(const rd_kafka_message_t *rkm,
                             rd_kafka_timestamp_type_t *tstype) {
        if (!kretry_rkm_owned(rkm))
                return rd_kafka_message_timestamp(rkm, tstype);
        const owned_t *o = (const owned_t *)rkm;
        if (tstype)
                *tstype = o->tstype;
        return o->ts;
}

void kretry_rkm_destroy(rd_kafka_message_t *rkm) {
        if (!kretry_rkm_owned(rkm)) {
                rd_kafka_message_destroy(rkm);
                return;
        }
        owned_t *o = (owned_t *)rkm;
        if (o->hdrs)
                rd_kafka_headers_destroy(o->hdrs);
        free(o);
}
