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

/* One chain field: where its value goes and the flag saying it was valid. */
typedef struct {
        const char *suffix; /* after "kretry-" */
        int64_t max;
        size_t value_off, ok_off;
        int is_int; /* stored as int (else int64_t; int32_t for partition) */
} chain_field_t;

#define CF(sfx, max, field, okf, kind)                                         \
        {                                                                      \
                sfx, max, offsetof(kretry_chain_t, field),                     \
                        offsetof(kretry_chain_t, okf), kind                    \
        }

static const chain_field_t chain_fields[] = {
        CF("attempt", KRETRY_ATTEMPT_MAX, attempt, attempt_ok, 1),
        CF("tier", 1000, tier, tier_ok, 1),
        CF("due-ts", INT64_MAX, due_ts, due_ok, 0),
        CF("original-partition",
           INT32_MAX,
           orig_partition,
           orig_partition_ok,
           2),
        CF("original-offset", INT64_MAX, orig_offset, orig_offset_ok, 0),
        CF("original-timestamp", INT64_MAX, orig_ts, orig_ts_ok, 0),
        CF("first-failure-ts",
           INT64_MAX,
           first_failure_ts,
           first_failure_ok,
           0),
};

static void decode_field(kretry_chain_t *c,
                         const chain_field_t *f,
                         const void *val,
                         size_t size) {
        int64_t v;
        int ok = kretry_header_num(val, size, f->max, &v) == 0;
        *(int *)((char *)c + f->ok_off) = ok; /* the last one decides */
        if (!ok)
                return;
        char *dst = (char *)c + f->value_off;
        if (f->is_int == 1)
                *(int *)dst = (int)v;
        else if (f->is_int == 2)
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
        const char *name;
        const void *val;
        size_t n;
        for (size_t i = 0;
             hdrs && !rd_kafka_header_get_all(hdrs, i, &name, &val, &n); i++) {
                if (strncmp(name, "kretry-", 7))
                        continue;
                const char *sfx = name + 7;
                int64_t v;
                for (size_t f = 0;
                     f < sizeof(chain_fields) / sizeof(chain_fields[0]); f++)
                        if (!strcmp(sfx, chain_fields[f].suffix)) {
                                decode_field(c, &chain_fields[f], val, n);
                                goto next;
                        }
                if (!strcmp(sfx, "last-failure-ts")) {
                        c->last_failure_ts =
                                kretry_header_num(val, n, INT64_MAX, &v) ? -1
                                                                         : v;
                } else if (!strcmp(sfx, "original-topic")) {
                        c->orig_topic_ok = val && n > 0 &&
                                           n <= KRETRY_TOPIC_MAX &&
                                           !memchr(val, '\0', n);
                        if (c->orig_topic_ok) {
                                memcpy(c->orig_topic, val, n);
                                c->orig_topic[n] = '\0';
                        }
                } else if (!strcmp(sfx, "correlation-id")) {
                        c->correlation_id     = val && n > 0 ? val : NULL;
                        c->correlation_id_len = val && n > 0 ? n : 0;
                }
        next:;
        }
}

static const char *const chain_names[] = {
        KRETRY_H_ATTEMPT,
        KRETRY_H_TIER,
        KRETRY_H_DUE_TS,
        KRETRY_H_ORIG_TOPIC,
        KRETRY_H_ORIG_PARTITION,
        KRETRY_H_ORIG_OFFSET,
        KRETRY_H_ORIG_TS,
        KRETRY_H_FIRST_FAILURE,
        KRETRY_H_LAST_FAILURE,
        KRETRY_H_ERROR_CLASS,
        KRETRY_H_ERROR_CODE,
        KRETRY_H_ERROR,
        KRETRY_H_GROUP,
        KRETRY_H_CORRELATION_ID,
        KRETRY_H_PARKED_FOLLOWERS,
};

#define CHAIN_NAME_CNT (sizeof(chain_names) / sizeof(chain_names[0]))

int kretry_header_is_chain(const char *name) {
        if (strncmp(name, "kretry-", 7))
                return 0;
        for (size_t i = 0; i < CHAIN_NAME_CNT; i++)
                if (!strcmp(name, chain_names[i]))
                        return 1;
        return 0;
}

/* Decimal text of a non-negative number, without snprintf's cost (a copy
 * carries a dozen numbers). Negative values never occur in the contract. */
static void add_num(rd_kafka_headers_t *h, const char *name, int64_t v) {
        char buf[24];
        char *p    = buf + sizeof(buf);
        uint64_t u = v < 0 ? 0 : (uint64_t)v;
        do {
                *--p = (char)('0' + u % 10);
                u /= 10;
        } while (u);
        rd_kafka_header_add(h, name, -1, p, buf + sizeof(buf) - p);
}

static void add_str(rd_kafka_headers_t *h, const char *name, const char *s) {
        if (s)
                rd_kafka_header_add(h, name, -1, s, (ssize_t)strlen(s));
}

rd_kafka_headers_t *kretry_headers_build(const rd_kafka_headers_t *src,
                                         const kretry_copy_info_t *info) {
        size_t src_cnt        = src ? rd_kafka_header_cnt(src) : 0;
        rd_kafka_headers_t *h = rd_kafka_headers_new(src_cnt + CHAIN_NAME_CNT);
        if (!h)
                return NULL;
        for (size_t i = 0; i < src_cnt; i++) {
                const char *name;
                const void *val;
                size_t n;
                if (rd_kafka_header_get_all(src, i, &name, &val, &n))
                        break;
                if (!kretry_header_is_chain(name))
                        rd_kafka_header_add(h, name, -1, val, (ssize_t)n);
        }
        add_num(h, KRETRY_H_ATTEMPT, info->attempt);
        if (info->tier > 0) {
                add_num(h, KRETRY_H_TIER, info->tier);
                add_num(h, KRETRY_H_DUE_TS, info->due_ts);
        }
        add_str(h, KRETRY_H_ORIG_TOPIC, info->orig_topic);
        add_num(h, KRETRY_H_ORIG_PARTITION, info->orig_partition);
        add_num(h, KRETRY_H_ORIG_OFFSET, info->orig_offset);
        if (info->orig_ts >= 0)
                add_num(h, KRETRY_H_ORIG_TS, info->orig_ts);
        if (info->first_failure_ts >= 0)
                add_num(h, KRETRY_H_FIRST_FAILURE, info->first_failure_ts);
        if (info->last_failure_ts >= 0)
                add_num(h, KRETRY_H_LAST_FAILURE, info->last_failure_ts);
        if (info->followers >= 0)
                add_num(h, KRETRY_H_PARKED_FOLLOWERS, info->followers);
        add_str(h, KRETRY_H_ERROR_CLASS, info->error_class);
        add_str(h, KRETRY_H_ERROR_CODE, info->error_code);
        add_str(h, KRETRY_H_ERROR, info->error);
        add_str(h, KRETRY_H_GROUP, info->group);
        if (info->correlation_id) {
                rd_kafka_header_add(h, KRETRY_H_CORRELATION_ID, -1,
                                    info->correlation_id,
                                    (ssize_t)info->correlation_id_len);
        } else {
                char id[KRETRY_TOPIC_MAX + 48];
                int n = snprintf(id, sizeof(id), "%s/%d/%lld", info->orig_topic,
                                 (int)info->orig_partition,
                                 (long long)info->orig_offset);
                rd_kafka_header_add(h, KRETRY_H_CORRELATION_ID, -1, id, n);
        }
        return h;
}
