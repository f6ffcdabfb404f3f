#include "dlq_foreign.h"

#include <stdio.h>
#include <string.h>

#define SPRING "kafka_dlt-"
#define SPRING_RETRY "retry_topic-"
#define CONNECT "__connect.errors."

static kretry_dlq_text_t text(const rd_kafka_headers_t *hdrs,
                              const char *name) {
        kretry_dlq_text_t t = {NULL, 0};
        const void *v;
        size_t n;
        if (!rd_kafka_header_get_last(hdrs, name, &v, &n) && v) {
                t.ptr = v;
                t.len = n;
        }
        return t;
}

/* A big-endian two's complement integer of 1 to 8 bytes (Java's
 * ByteBuffer.putInt/putLong, or BigInteger.toByteArray's shortest form):
 * 0, or -1 when absent or longer. */
static int
be_num(const rd_kafka_headers_t *hdrs, const char *name, int64_t *out) {
        const void *v;
        size_t n;
        if (rd_kafka_header_get_last(hdrs, name, &v, &n) || !v || n < 1 ||
            n > 8)
                return -1;
        const unsigned char *p = v;
        uint64_t u             = p[0] & 0x80 ? UINT64_MAX : 0;
        for (size_t i = 0; i < n; i++)
                u = u << 8 | p[i];
        *out = (int64_t)u;
        return 0;
}

/* Decimal text, as Connect writes its numbers: 0, or -1. */
static int
text_num(const rd_kafka_headers_t *hdrs, const char *name, int64_t *out) {
        const void *v;
        size_t n;
        if (rd_kafka_header_get_last(hdrs, name, &v, &n) || !v)
                return -1;
        return kretry_header_num(v, n, INT64_MAX, out);
}

static void set_topic(kretry_chain_t *c, kretry_dlq_text_t t) {
        if (c->orig_topic_ok || !t.ptr || !t.len ||
            t.len >= sizeof(c->orig_topic))
                return;
        memcpy(c->orig_topic, t.ptr, t.len);
        c->orig_topic[t.len] = '\0';
        c->orig_topic_ok     = 1;
}

static void set_partition(kretry_chain_t *c, int ok, int64_t v) {
        if (c->orig_partition_ok || !ok || v < 0 || v > INT32_MAX)
                return;
        c->orig_partition    = (int32_t)v;
        c->orig_partition_ok = 1;
}

static void set_offset(kretry_chain_t *c, int ok, int64_t v) {
        if (c->orig_offset_ok || !ok || v < 0)
                return;
        c->orig_offset    = v;
        c->orig_offset_ok = 1;
}

static void set_text(kretry_dlq_text_t *dst, kretry_dlq_text_t src) {
        if (!dst->ptr && src.ptr)
                *dst = src;
}

static kretry_dlq_text_t lit(const char *s) {
        kretry_dlq_text_t t = {s, strlen(s)};
        return t;
}

static void from_spring(const rd_kafka_headers_t *h, kretry_dlq_info_t *info) {
        kretry_chain_t *c = &info->chain;
        int64_t v         = 0;
        info->origin      = "spring";
        set_topic(c, text(h, SPRING "original-topic"));
        int ok = !be_num(h, SPRING "original-partition", &v);
        set_partition(c, ok, v);
        ok = !be_num(h, SPRING "original-offset", &v);
        set_offset(c, ok, v);
        if (!c->orig_ts_ok && !be_num(h, SPRING "original-timestamp", &v) &&
            v >= 0) {
                c->orig_ts    = v;
                c->orig_ts_ok = 1;
        }
        int attempts = 0;
        if (!be_num(h, SPRING_RETRY "attempts", &v) && v >= 1 &&
            v <= KRETRY_ATTEMPT_MAX)
                attempts = (int)v;
        if (!c->attempt_ok && attempts) {
                c->attempt    = attempts;
                c->attempt_ok = 1;
        }
        set_text(&info->error_class,
                 lit(attempts > 1 ? "exhausted" : "permanent"));
        kretry_dlq_text_t cause = text(h, SPRING "exception-cause-fqcn");
        set_text(&info->error_code, cause.ptr && cause.len
                                            ? cause
                                            : text(h, SPRING "exception-fqcn"));
        set_text(&info->error, text(h, SPRING "exception-message"));
        set_text(&info->group, text(h, SPRING "original-consumer-group"));
        set_text(&info->stacktrace, text(h, SPRING "exception-stacktrace"));
}

static void from_connect(const rd_kafka_headers_t *h, kretry_dlq_info_t *info) {
        kretry_chain_t *c = &info->chain;
        int64_t v         = 0;
        info->origin      = "connect";
        set_topic(c, text(h, CONNECT "topic"));
        int ok = !text_num(h, CONNECT "partition", &v);
        set_partition(c, ok, v);
        ok = !text_num(h, CONNECT "offset", &v);
        set_offset(c, ok, v);
        set_text(&info->error_class, lit("permanent"));
        set_text(&info->error_code, text(h, CONNECT "exception.class.name"));
        set_text(&info->error, text(h, CONNECT "exception.message"));
        set_text(&info->stacktrace, text(h, CONNECT "exception.stacktrace"));
}

void kretry_dlq_foreign_decode(const rd_kafka_headers_t *hdrs,
                               kretry_dlq_info_t *info) {
        const void *v;
        size_t n;
        if (!hdrs)
                return;
        if (!rd_kafka_header_get_last(hdrs, SPRING "exception-fqcn", &v, &n) ||
            !rd_kafka_header_get_last(hdrs, SPRING "original-topic", &v, &n))
                from_spring(hdrs, info);
        else if (!rd_kafka_header_get_last(hdrs, CONNECT "topic", &v, &n) ||
                 !rd_kafka_header_get_last(hdrs, CONNECT "exception.class.name",
                                           &v, &n))
                from_connect(hdrs, info);
}

int kretry_dlq_foreign_header(const char *name) {
        return !strncmp(name, SPRING, strlen(SPRING)) ||
               !strncmp(name, SPRING_RETRY, strlen(SPRING_RETRY)) ||
               !strncmp(name, CONNECT, strlen(CONNECT));
}
