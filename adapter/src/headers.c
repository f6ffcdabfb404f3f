#include "headers.h"

#include <stdio.h>
#include <string.h>

int kretry_header_num(const void *value, size_t size, int64_t max, int64_t *out) {
        const char *s = value;
        int64_t v     = 0;
        if (!s || size == 0 || size > 19)
                return -1;
        for (size_t i = 0; i < size; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        if (v > max)
                return -1;
        *out = v;
        return 0;
}

static int get_num(const rd_kafka_headers_t *hdrs,
                   const char *name,
                   int64_t max,
                   int64_t *out) {
        const void *v;
        size_t n;
        if (rd_kafka_header_get_last(hdrs, name, &v, &n))
                return 0;
        return kretry_header_num(v, n, max, out) == 0;
}

void kretry_chain_decode(const rd_kafka_headers_t *hdrs, kretry_chain_t *c) {
        int64_t v;
        memset(c, 0, sizeof(*c));
        c->last_failure_ts = -1;
        if (!hdrs)
                return;
        if ((c->attempt_ok =
                 get_num(hdrs, KRETRY_H_ATTEMPT, KRETRY_ATTEMPT_MAX, &v)))
                c->attempt = (int)v;
        if (!get_num(hdrs, KRETRY_H_LAST_FAILURE, INT64_MAX,
                     &c->last_failure_ts))
                c->last_failure_ts = -1;
        if ((c->tier_ok = get_num(hdrs, KRETRY_H_TIER, 1000, &v)))
                c->tier = (int)v;
        c->due_ok = get_num(hdrs, KRETRY_H_DUE_TS, INT64_MAX, &c->due_ts);
        if ((c->orig_partition_ok =
                 get_num(hdrs, KRETRY_H_ORIG_PARTITION, INT32_MAX, &v)))
                c->orig_partition = (int32_t)v;
        c->orig_offset_ok =
            get_num(hdrs, KRETRY_H_ORIG_OFFSET, INT64_MAX, &c->orig_offset);
        c->orig_ts_ok = get_num(hdrs, KRETRY_H_ORIG_TS, INT64_MAX, &c->orig_ts);
        c->first_failure_ok = get_num(hdrs, KRETRY_H_FIRST_FAILURE, INT64_MAX,
                                      &c->first_failure_ts);

        const void *val;
        size_t n;
        if (!rd_kafka_header_get_last(hdrs, KRETRY_H_ORIG_TOPIC, &val, &n) &&
            val && n > 0 && n <= KRETRY_TOPIC_MAX && !memchr(val, '\0', n)) {
                memcpy(c->orig_topic, val, n);
                c->orig_topic[n]  = '\0';
                c->orig_topic_ok = 1;
        }
        if (!rd_kafka_header_get_last(hdrs, KRETRY_H_CORRELATION_ID, &val,
                                      &n) &&
            val && n > 0) {
                c->correlation_id     = val;
                c->correlation_id_len = n;
        }
}

static const char *const chain_names[] = {
    KRETRY_H_ATTEMPT,        KRETRY_H_TIER,           KRETRY_H_DUE_TS,
    KRETRY_H_ORIG_TOPIC,     KRETRY_H_ORIG_PARTITION, KRETRY_H_ORIG_OFFSET,
    KRETRY_H_ORIG_TS,        KRETRY_H_FIRST_FAILURE,  KRETRY_H_LAST_FAILURE,
    KRETRY_H_ERROR_CLASS,    KRETRY_H_ERROR_CODE,     KRETRY_H_ERROR,
    KRETRY_H_GROUP,          KRETRY_H_CORRELATION_ID,
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

static void add_num(rd_kafka_headers_t *h, const char *name, int64_t v) {
        char buf[24];
        int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);
        rd_kafka_header_add(h, name, -1, buf, n);
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
