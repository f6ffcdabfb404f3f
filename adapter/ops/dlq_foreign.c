#include "dlq_foreign.h"

#include <stdio.h>
#include <string.h>

#define SPRING "kafka_dlt-"
#define SPRING_PLAIN "kafka_"
#define SPRING_RETRY "retry_topic-"
#define CONNECT "__connect.errors."

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

/* Spring's header @p field (e.g. "exception-fqcn") under either of its
 * names: kafka_dlt-<field> (DeadLetterPublishingRecoverer's defaults) or
 * kafka_<field> (what its retry topics write, Spring Kafka 4.1.2 seen). */
static const char *spring_name(const rd_kafka_headers_t *h,
                               const char *field,
                               char *buf,
                               size_t size) {
        const void *v;
        size_t n;
        snprintf(buf, size, SPRING "%s", field);
        if (!rd_kafka_header_get_last(h, buf, &v, &n))
                return buf;
        snprintf(buf, size, SPRING_PLAIN "%s", field);
        return buf;
}

static kretry_dlq_text_t spring_text(const rd_kafka_headers_t *h,
                                     const char *field) {
        char b[64];
        return kretry_dlq_text(h, spring_name(h, field, b, sizeof(b)));
}

static int
spring_num(const rd_kafka_headers_t *h, const char *field, int64_t *out) {
        char b[64];
        return be_num(h, spring_name(h, field, b, sizeof(b)), out);
}

static void from_spring(const rd_kafka_headers_t *h, kretry_dlq_info_t *info) {
        kretry_chain_t *c = &info->chain;
        int64_t v         = 0;
        info->origin      = "spring";
        set_topic(c, spring_text(h, "original-topic"));
        int ok = !spring_num(h, "original-partition", &v);
        set_partition(c, ok, v);
        ok = !spring_num(h, "original-offset", &v);
        set_offset(c, ok, v);
        if (!c->orig_ts_ok && !spring_num(h, "original-timestamp", &v) &&
            v >= 0) {
                c->orig_ts    = v;
                c->orig_ts_ok = 1;
        }
        /* retry_topic-attempts numbers the next delivery: a record sent to
         * the DLT from its first delivery carries 2. */
        int failed = 0;
        if (!be_num(h, SPRING_RETRY "attempts", &v) && v >= 2 &&
            v <= KRETRY_ATTEMPT_MAX)
                failed = (int)v - 1;
        if (!c->attempt_ok && failed) {
                c->attempt    = failed;
                c->attempt_ok = 1;
        }
        set_text(&info->error_class,
                 lit(failed > 1 ? "exhausted" : "permanent"));
        kretry_dlq_text_t cause = spring_text(h, "exception-cause-fqcn");
        set_text(&info->error_code, cause.ptr && cause.len
                                            ? cause
                                            : spring_text(h, "exception-fqcn"));
        set_text(&info->error, spring_text(h, "exception-message"));
        set_text(&info->group, spring_text(h, "original-consumer-group"));
        set_text(&info->stacktrace, spring_text(h, "exception-stacktrace"));
}

static void from_connect(const rd_kafka_headers_t *h, kretry_dlq_info_t *info) {
        kretry_chain_t *c = &info->chain;
        int64_t v         = 0;
        info->origin      = "connect";
        set_topic(c, kretry_dlq_text(h, CONNECT "topic"));
        int ok = !text_num(h, CONNECT "partition", &v);
        set_partition(c, ok, v);
        ok = !text_num(h, CONNECT "offset", &v);
        set_offset(c, ok, v);
        set_text(&info->error_class, lit("permanent"));
        set_text(&info->error_code,
                 kretry_dlq_text(h, CONNECT "exception.class.name"));
        set_text(&info->error, kretry_dlq_text(h, CONNECT "exception.message"));
        set_text(&info->stacktrace,
                 kretry_dlq_text(h, CONNECT "exception.stacktrace"));
}

void kretry_dlq_foreign_decode(const rd_kafka_headers_t *hdrs,
                               kretry_dlq_info_t *info) {
        const void *v;
        size_t n;
        if (!hdrs)
                return;
        if (!rd_kafka_header_get_last(hdrs, SPRING "exception-fqcn", &v, &n) ||
            !rd_kafka_header_get_last(hdrs, SPRING "original-topic", &v, &n) ||
            !rd_kafka_header_get_last(hdrs, SPRING_PLAIN "exception-fqcn", &v,
                                      &n) ||
            !rd_kafka_header_get_last(hdrs, SPRING_PLAIN "original-topic", &v,
                                      &n))
                from_spring(hdrs, info);
        else if (!rd_kafka_header_get_last(hdrs, CONNECT "topic", &v, &n) ||
                 !rd_kafka_header_get_last(hdrs, CONNECT "exception.class.name",
                                           &v, &n))
                from_connect(hdrs, info);
}

int kretry_dlq_foreign_header(const char *name) {
        static const char *const prefixes[] = {
                SPRING,
                SPRING_PLAIN "exception-",
                SPRING_PLAIN "original-",
                SPRING_PLAIN "key-exception-",
                SPRING_RETRY,
                CONNECT,
        };
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
                if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
                        return 1;
        return 0;
}
