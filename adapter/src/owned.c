/*
 * Service: held messages in kretry's own memory.
 *
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
#include "owned.h"

#include <stdlib.h>
#include <string.h>

static const char owned_marker = 'k';

/*
 * The headers are packed into the same allocation, after the value: for
 * each, the name's length and the value's (uint32, UINT32_MAX for a null
 * value), then the name and the value bytes. A tier copy carries a dozen
 * kretry headers; as librdkafka's header list (one allocation per header)
 * they would take several times the message itself, and a buffer of
 * thousands of messages behind a held one (intake.c) is read only when
 * its turn comes. The list is built on the first read.
 */
typedef struct {
        rd_kafka_message_t m; /* first: the message the engine sees */
        int64_t ts;
        rd_kafka_timestamp_type_t tstype;
        rd_kafka_headers_t *hdrs; /* built from the packed ones, or NULL */
        rd_kafka_message_t *next; /* kretry_rkm_fifo_t */
        size_t size;              /* of the whole allocation */
        size_t hdr_cnt, hdr_len;  /* packed headers, after the value */
        /* the key's bytes and a NUL, the value's and a NUL, the headers */
} owned_t;

#define HDR_NULL UINT32_MAX

int kretry_rkm_owned(const rd_kafka_message_t *rkm) {
        return rkm->rkt == NULL && rkm->_private == (void *)&owned_marker;
}

/* The packed length of @p src's headers; their count in *@p cnt. */
static size_t packed_len(const rd_kafka_headers_t *src, size_t *cnt) {
        const char *name;
        const void *val;
        size_t size, len = 0;
        *cnt = 0;
        for (; src && !rd_kafka_header_get_all(src, *cnt, &name, &val, &size);
             (*cnt)++)
                len += 2 * sizeof(uint32_t) + strlen(name) + (val ? size : 0);
        return len;
}

static char *pack_u32(char *p, size_t v) {
        uint32_t u = (uint32_t)v;
        memcpy(p, &u, sizeof(u));
        return p + sizeof(u);
}

static void pack(const rd_kafka_headers_t *src, size_t cnt, char *p) {
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0; i < cnt; i++) {
                rd_kafka_header_get_all(src, i, &name, &val, &size);
                size_t nl = strlen(name);
                p         = pack_u32(p, nl);
                p         = pack_u32(p, val ? size : HDR_NULL);
                memcpy(p, name, nl);
                p += nl;
                if (val)
                        memcpy(p, val, size);
                p += val ? size : 0;
        }
}

static const char *unpack_u32(const char *p, uint32_t *v) {
        memcpy(v, p, sizeof(*v));
        return p + sizeof(*v);
}

/* librdkafka's header list of @p o, built from the packed headers. */
static rd_kafka_headers_t *unpack(const owned_t *o) {
        const char *p = (const char *)(o + 1) + o->m.key_len + 1 + o->m.len + 1;
        rd_kafka_headers_t *h = rd_kafka_headers_new(o->hdr_cnt);
        for (size_t i = 0; h && i < o->hdr_cnt; i++) {
                uint32_t nl, vl;
                p                = unpack_u32(unpack_u32(p, &nl), &vl);
                const char *name = p;
                p += nl;
                rd_kafka_header_add(h, name, (ssize_t)nl,
                                    vl == HDR_NULL ? NULL : p,
                                    vl == HDR_NULL ? 0 : (ssize_t)vl);
                p += vl == HDR_NULL ? 0 : vl;
        }
        return h;
}

/* The allocation a copy of @p rkm takes; *@p hdr_cnt, *@p hdr_len the
 * packed headers'. */
static size_t
own_size(const rd_kafka_message_t *rkm, size_t *hdr_cnt, size_t *hdr_len) {
        rd_kafka_headers_t *src = NULL;
        if (rd_kafka_message_headers(rkm, &src))
                src = NULL;
        *hdr_len = packed_len(src, hdr_cnt);
        return sizeof(owned_t) + (rkm->key ? rkm->key_len : 0) + 1 +
               (rkm->payload ? rkm->len : 0) + 1 + *hdr_len;
}

size_t kretry_rkm_size(const rd_kafka_message_t *rkm) {
        size_t cnt, len;
        if (kretry_rkm_owned(rkm))
                return ((const owned_t *)rkm)->size;
        return own_size(rkm, &cnt, &len);
}

rd_kafka_message_t *kretry_rkm_own(rd_kafka_message_t *rkm) {
        if (kretry_rkm_owned(rkm))
                return rkm;
        size_t hdr_cnt, hdr_len, size = own_size(rkm, &hdr_cnt, &hdr_len);
        size_t kl = rkm->key ? rkm->key_len : 0;
        size_t vl = rkm->payload ? rkm->len : 0;
        /* Key and value each followed by a NUL that len does not count: a
         * handler that reads a value as a C string (wrong, but common)
         * stays inside the copy. */
        owned_t *o = malloc(size);
        if (!o)
                return rkm; /* out of memory: keep librdkafka's */
        char *data        = (char *)(o + 1);
        o->m              = *rkm;
        o->m.rkt          = NULL;
        o->m._private     = (void *)&owned_marker;
        o->m.key_len      = kl;
        o->m.len          = vl;
        data[kl]          = '\0';
        data[kl + 1 + vl] = '\0';
        o->m.key          = rkm->key ? memcpy(data, rkm->key, kl) : NULL;
        o->m.payload =
                rkm->payload ? memcpy(data + kl + 1, rkm->payload, vl) : NULL;
        o->ts      = rd_kafka_message_timestamp(rkm, &o->tstype);
        o->hdrs    = NULL;
        o->next    = NULL;
        o->size    = size;
        o->hdr_cnt = hdr_cnt;
        o->hdr_len = hdr_len;
        if (hdr_cnt) {
                rd_kafka_headers_t *src;
                rd_kafka_message_headers(rkm, &src);
                pack(src, hdr_cnt, data + kl + 1 + vl + 1);
        }
        rd_kafka_message_destroy(rkm);
        return &o->m;
}

/* The list is built on the first read, by whichever thread has the message
 * then: a message is in one thread's hands at a time (the polling thread,
 * or the worker running its handler). */
rd_kafka_resp_err_t kretry_rkm_headers(const rd_kafka_message_t *rkm,
                                       rd_kafka_headers_t **hdrsp) {
        if (!kretry_rkm_owned(rkm))
                return rd_kafka_message_headers(rkm, hdrsp);
        owned_t *o = (owned_t *)rkm;
        if (!o->hdrs && o->hdr_cnt)
                o->hdrs = unpack(o);
        *hdrsp = o->hdrs;
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

int kretry_rkm_fifo_push(kretry_rkm_fifo_t *f, rd_kafka_message_t **rkmp) {
        rd_kafka_message_t *rkm = kretry_rkm_own(*rkmp);
        if (!kretry_rkm_owned(rkm))
                return -1; /* out of memory: *rkmp is still the original */
        *rkmp = NULL;
        if (f->tail)
                ((owned_t *)f->tail)->next = rkm;
        else
                f->head = rkm;
        f->tail = rkm;
        f->cnt++;
        f->bytes += (int64_t)((owned_t *)rkm)->size;
        return 0;
}

rd_kafka_message_t *kretry_rkm_fifo_pop(kretry_rkm_fifo_t *f) {
        rd_kafka_message_t *rkm = f->head;
        if (!rkm)
                return NULL;
        owned_t *o = (owned_t *)rkm;
        f->head    = o->next;
        if (!f->head)
                f->tail = NULL;
        o->next = NULL;
        f->cnt--;
        f->bytes -= (int64_t)o->size;
        return rkm;
}
