/* Leaf: the kretry-* header contract. */
#include "headers.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

int kretry_header_num(const void *value,
                      size_t size,
                      int64_t max,
                      int64_t *out) {
        const char *s = value;
        uint64_t v    = 0;
        if (!s || size == 0 || size > 19)
                return -1;
        /* 19 digits fit in 64 unsigned bits: no overflow before the check. */
        for (size_t i = 0; i < size; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        if (v > (uint64_t)max)
                return -1;
        *out = (int64_t)v;
        return 0;
}

/* The chain headers a copy rewrites, by "kretry-" suffix. Decoding and
 * filtering look a name up once, comparing lengths before bytes, instead of
 * a strcmp per candidate (a tier message carries a dozen chain headers). */
typedef enum {
        CH_ATTEMPT,
        CH_TIER,
        CH_DUE_TS,
        CH_ORIG_PARTITION,
        CH_ORIG_OFFSET,
        CH_ORIG_TS,
        CH_FIRST_FAILURE,
        CH_LAST_FAILURE,
        CH_ORIG_TOPIC,
        CH_CORRELATION_ID,
        CH_ERROR_CLASS,
        CH_ERROR_CODE,
        CH_ERROR,
        CH_GROUP,
        CH_PARKED_FOLLOWERS,
        CH_CNT
} chain_id_t;

#define SFX(s)                                                                 \
        { s, sizeof(s) - 1 }
static const struct {
        const char *sfx;
        size_t len;
} chain_sfx[CH_CNT] = {
        [CH_ATTEMPT]          = SFX("attempt"),
        [CH_TIER]             = SFX("tier"),
        [CH_DUE_TS]           = SFX("due-ts"),
        [CH_ORIG_PARTITION]   = SFX("original-partition"),
        [CH_ORIG_OFFSET]      = SFX("original-offset"),
        [CH_ORIG_TS]          = SFX("original-timestamp"),
        [CH_FIRST_FAILURE]    = SFX("first-failure-ts"),
        [CH_LAST_FAILURE]     = SFX("last-failure-ts"),
        [CH_ORIG_TOPIC]       = SFX("original-topic"),
        [CH_CORRELATION_ID]   = SFX("correlation-id"),
        [CH_ERROR_CLASS]      = SFX("error-class"),
        [CH_ERROR_CODE]       = SFX("error-code"),
        [CH_ERROR]            = SFX("error"),
        [CH_GROUP]            = SFX("group"),
        [CH_PARKED_FOLLOWERS] = SFX("parked-followers"),
};
#undef SFX

/* The chain id of header @p name, or -1 for any other name. The prefix is
 * compared inline: a call to strncmp for seven bytes cost a sixth of a
 * tier copy's decoding. */
static int chain_id(const char *name) {
        static const char pfx[] = "kretry-";
        for (size_t i = 0; i < sizeof(pfx) - 1; i++)
                if (name[i] != pfx[i])
                        return -1; /* also at the end of a shorter name */
        const char *sfx = name + sizeof(pfx) - 1;
        size_t len      = strlen(sfx);
        for (int i = 0; i < CH_CNT; i++)
                if (chain_sfx[i].len == len &&
                    !memcmp(sfx, chain_sfx[i].sfx, len))
                        return i;
        return -1;
}

int kretry_header_is_chain(const char *name) {
        return chain_id(name) >= 0;
}

/* The numeric fields: where the value goes, the flag saying it was valid. */
typedef struct {
        int64_t max;
        size_t value_off, ok_off;
        int kind; /* 1: int, 2: int32_t, 0: int64_t */
} num_field_t;

#define NF(max, field, okf, kind)                                              \
        {                                                                      \
                max, offsetof(kretry_chain_t, field),                          \
                        offsetof(kretry_chain_t, okf), kind                    \
        }

static const num_field_t num_fields[] = {
        [CH_ATTEMPT] = NF(KRETRY_ATTEMPT_MAX, attempt, attempt_ok, 1),
        [CH_TIER]    = NF(1000, tier, tier_ok, 1),
        [CH_DUE_TS]  = NF(INT64_MAX, due_ts, due_ok, 0),
        [CH_ORIG_PARTITION] =
                NF(INT32_MAX, orig_partition, orig_partition_ok, 2),
        [CH_ORIG_OFFSET] = NF(INT64_MAX, orig_offset, orig_offset_ok, 0),
        [CH_ORIG_TS]     = NF(INT64_MAX, orig_ts, orig_ts_ok, 0),
        [CH_FIRST_FAILURE] =
                NF(INT64_MAX, first_failure_ts, first_failure_ok, 0),
};
#undef NF

static void decode_num(kretry_chain_t *c,
                       const num_field_t *f,
                       const void *val,
                       size_t size) {
        int64_t v;
        int ok = kretry_header_num(val, size, f->max, &v) == 0;
        *(int *)((char *)c + f->ok_off) = ok; /* the last one decides */
        if (!ok)
                return;
        char *dst = (char *)c + f->value_off;
        if (f->kind == 1)
                *(int *)dst = (int)v;
        else if (f->kind == 2)
                *(int32_t *)dst = (int32_t)v;
        else
                *(int64_t *)dst = v;
}

/* One pass over the headers (the last of a name wins, as with
 * rd_kafka_header_get_last), instead of one scan per field. */
void kretry_chain_decode(const rd_kafka_headers_t *hdrs, kretry_chain_t *c) {
        memset(c, 0, offsetof(kretry_chain_t, orig_topic));
        c->orig_topic[0]     = '\0';
        c->orig_topic_ok     = 0;
        c->orig_partition_ok = c->orig_offset_ok = c->orig_ts_ok = 0;
        c->first_failure_ok                                      = 0;
        c->last_failure_ts                                       = -1;
        c->correlation_id                                        = NULL;
        c->correlation_id_len                                    = 0;
        c->group                                                 = NULL;
        c->group_len                                             = 0;
        const char *name;
        const void *val;
        size_t n;
        for (size_t i = 0;
             hdrs && !rd_kafka_header_get_all(hdrs, i, &name, &val, &n); i++) {
                int id = chain_id(name);
                int64_t v;
                if (id < 0)
                        continue;
                if (id < (int)(sizeof(num_fields) / sizeof(num_fields[0]))) {
                        decode_num(c, &num_fields[id], val, n);
                } else if (id == CH_LAST_FAILURE) {
                        c->last_failure_ts =
                                kretry_header_num(val, n, INT64_MAX, &v) ? -1
                                                                         : v;
                } else if (id == CH_ORIG_TOPIC) {
                        c->orig_topic_ok = val && n > 0 &&
                                           n <= KRETRY_TOPIC_MAX &&
                                           !memchr(val, '\0', n);
                        if (c->orig_topic_ok) {
                                memcpy(c->orig_topic, val, n);
                                c->orig_topic[n] = '\0';
                        }
                } else if (id == CH_CORRELATION_ID) {
                        c->correlation_id     = val && n > 0 ? val : NULL;
                        c->correlation_id_len = val && n > 0 ? n : 0;
                } else if (id == CH_GROUP) {
                        c->group     = val;
                        c->group_len = val ? n : 0;
                }
        }
}

/* Decimal text of a non-negative number, written backwards ending at @p end;
 * returns its first character. Without snprintf's cost: a copy carries a
 * dozen numbers. Negative values never occur in the contract. */
static char *fmt_num(char *end, int64_t v) {
        char *p    = end;
        uint64_t u = v < 0 ? 0 : (uint64_t)v;
        do {
                *--p = (char)('0' + u % 10);
                u /= 10;
        } while (u);
        return p;
}

/* Header names are literals: their length is known, librdkafka need not
 * measure it. */
#define ADD(h, name, val, len)                                                 \
        rd_kafka_header_add(h, name, sizeof(name) - 1, val, (ssize_t)(len))
#define ADD_NUM(h, name, v)                                                    \
        do {                                                                   \
                char b_[24];                                                   \
                char *p_ = fmt_num(b_ + sizeof(b_), v);                        \
                ADD(h, name, p_, b_ + sizeof(b_) - p_);                        \
        } while (0)
#define ADD_STR(h, name, s)                                                    \
        do {                                                                   \
                if (s)                                                         \
                        ADD(h, name, s, strlen(s));                            \
        } while (0)

void kretry_header_add_num(rd_kafka_headers_t *h, const char *name, int64_t v) {
        char b[24];
        char *p = fmt_num(b + sizeof(b), v);
        rd_kafka_header_add(h, name, -1, p, b + sizeof(b) - p);
}

int kretry_headers_have_chain(const rd_kafka_headers_t *hdrs) {
        const char *name;
        const void *val;
        size_t n;
        for (size_t i = 0;
             hdrs && !rd_kafka_header_get_all(hdrs, i, &name, &val, &n); i++)
                if (chain_id(name) >= 0)
                        return 1;
        return 0;
}

/* Java's ByteBuffer.putInt/putLong: @p n big-endian bytes of @p v. */
static void add_be(rd_kafka_headers_t *h,
                   const char *name,
                   size_t name_len,
                   int64_t v,
                   int n) {
        unsigned char b[8];
        for (int i = n - 1; i >= 0; i--, v >>= 8)
                b[i] = (unsigned char)(v & 0xff);
        rd_kafka_header_add(h, name, (ssize_t)name_len, b, n);
}

#define SPRING_BE(h, name, v, n) add_be(h, name, sizeof(name) - 1, v, n)

/* headers.profile spring: Spring Kafka's DLT headers on a DLQ copy, as
 * its DeadLetterPublishingRecoverer writes them (binary numbers), so that
 * Spring's tooling reads kretry's dead letters. Spring has no error code:
 * the exception's class name carries kretry's code (or class). A source
 * message that already carried Spring's headers keeps none of them: the
 * copy says what this failure was. */
static void append_spring(rd_kafka_headers_t *h,
                          const kretry_copy_info_t *info) {
        static const char *const names[] = {
                "kafka_dlt-exception-fqcn",
                "kafka_dlt-exception-cause-fqcn",
                "kafka_dlt-exception-message",
                "kafka_dlt-exception-stacktrace",
                "kafka_dlt-original-topic",
                "kafka_dlt-original-partition",
                "kafka_dlt-original-offset",
                "kafka_dlt-original-timestamp",
                "kafka_dlt-original-timestamp-type",
                "kafka_dlt-original-consumer-group",
                "retry_topic-attempts",
        };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                rd_kafka_header_remove(h, names[i]);
        const char *code = info->error_code    ? info->error_code
                           : info->error_class ? info->error_class
                                               : "kretry";
        ADD_STR(h, "kafka_dlt-exception-fqcn", code);
        ADD_STR(h, "kafka_dlt-exception-message",
                info->error ? info->error : "");
        char trace[256];
        int n = snprintf(trace, sizeof(trace), "kretry %s: %s",
                         info->error_class ? info->error_class : "failure",
                         code);
        ADD(h, "kafka_dlt-exception-stacktrace", trace,
            n < 0                       ? 0
            : (size_t)n < sizeof(trace) ? (size_t)n
                                        : sizeof(trace) - 1);
        ADD_STR(h, "kafka_dlt-original-topic", info->orig_topic);
        SPRING_BE(h, "kafka_dlt-original-partition", info->orig_partition, 4);
        SPRING_BE(h, "kafka_dlt-original-offset", info->orig_offset, 8);
        if (info->orig_ts >= 0) {
                SPRING_BE(h, "kafka_dlt-original-timestamp", info->orig_ts, 8);
                ADD_STR(h, "kafka_dlt-original-timestamp-type", "CreateTime");
        }
        ADD_STR(h, "kafka_dlt-original-consumer-group", info->group);
        SPRING_BE(h, "retry_topic-attempts", info->attempt, 4);
}

void kretry_headers_append(rd_kafka_headers_t *h,
                           const kretry_copy_info_t *info) {
        if (info->spring && info->tier == 0)
                append_spring(h, info);
        ADD_NUM(h, KRETRY_H_ATTEMPT, info->attempt);
        if (info->tier > 0) {
                ADD_NUM(h, KRETRY_H_TIER, info->tier);
                ADD_NUM(h, KRETRY_H_DUE_TS, info->due_ts);
        }
        ADD_STR(h, KRETRY_H_ORIG_TOPIC, info->orig_topic);
        ADD_NUM(h, KRETRY_H_ORIG_PARTITION, info->orig_partition);
        ADD_NUM(h, KRETRY_H_ORIG_OFFSET, info->orig_offset);
        if (info->orig_ts >= 0)
                ADD_NUM(h, KRETRY_H_ORIG_TS, info->orig_ts);
        if (info->first_failure_ts >= 0)
                ADD_NUM(h, KRETRY_H_FIRST_FAILURE, info->first_failure_ts);
        if (info->last_failure_ts >= 0)
                ADD_NUM(h, KRETRY_H_LAST_FAILURE, info->last_failure_ts);
        if (info->followers >= 0)
                ADD_NUM(h, KRETRY_H_PARKED_FOLLOWERS, info->followers);
        ADD_STR(h, KRETRY_H_ERROR_CLASS, info->error_class);
        ADD_STR(h, KRETRY_H_ERROR_CODE, info->error_code);
        ADD_STR(h, KRETRY_H_ERROR, info->error);
        ADD_STR(h, KRETRY_H_GROUP, info->group);
        if (info->correlation_id) {
                ADD(h, KRETRY_H_CORRELATION_ID, info->correlation_id,
                    info->correlation_id_len);
                return;
        }
        /* Created once: "<original topic>/<partition>/<offset>". */
        char id[KRETRY_TOPIC_MAX + 48];
        char *end = id + sizeof(id);
        char *p   = fmt_num(end, info->orig_offset);
        *--p      = '/';
        p         = fmt_num(p, info->orig_partition);
        *--p      = '/';
        size_t tl = strlen(info->orig_topic);
        tl        = tl > KRETRY_TOPIC_MAX ? KRETRY_TOPIC_MAX : tl;
        p -= tl;
        memcpy(p, info->orig_topic, tl);
        ADD(h, KRETRY_H_CORRELATION_ID, p, end - p);
}

rd_kafka_headers_t *kretry_headers_build(const rd_kafka_headers_t *src,
                                         const kretry_copy_info_t *info) {
        size_t src_cnt        = src ? rd_kafka_header_cnt(src) : 0;
        rd_kafka_headers_t *h = rd_kafka_headers_new(src_cnt + CH_CNT);
        if (!h)
                return NULL;
        for (size_t i = 0; i < src_cnt; i++) {
                const char *name;
                const void *val;
                size_t n;
                if (rd_kafka_header_get_all(src, i, &name, &val, &n))
                        break;
                if (chain_id(name) < 0)
                        rd_kafka_header_add(h, name, -1, val, (ssize_t)n);
        }
        kretry_headers_append(h, info);
        return h;
}

/* A kretry-group value @p v (@p n bytes; NULL: none) names a group other
 * than @p group. */
static int other_group(const void *v, size_t n, const char *group) {
        return v && (n != strlen(group) || memcmp(v, group, n));
}

int kretry_headers_foreign(const rd_kafka_headers_t *hdrs, const char *group) {
        const void *v;
        size_t n;
        if (!hdrs || rd_kafka_header_get_last(hdrs, KRETRY_H_GROUP, &v, &n))
                return 0;
        return other_group(v, n, group);
}

int kretry_chain_foreign(const kretry_chain_t *c, const char *group) {
        return other_group(c->group, c->group_len, group);
}
