#include "replay_headers.h"

#include "dlq_filter.h"
#include "dlq_foreign.h"
#include "headers.h"

#include <string.h>

int kretry_replay_header_dropped(const char *name) {
        if (!strcmp(name, KRETRY_H_CORRELATION_ID))
                return 0;
        return kretry_header_is_chain(name) ||
               !strcmp(name, KRETRY_H_REPLAY_COUNT) ||
               !strcmp(name, KRETRY_H_REPLAYED_AT) ||
               kretry_dlq_foreign_header(name);
}

static int64_t replay_count(const rd_kafka_headers_t *src) {
        const void *v;
        size_t n;
        int64_t count;
        if (!src ||
            rd_kafka_header_get_last(src, KRETRY_H_REPLAY_COUNT, &v, &n) ||
            kretry_header_num(v, n, KRETRY_REPLAY_COUNT_MAX - 1, &count))
                return 0;
        return count;
}

/* A fresh chain's first retry, waiting in @p tier and due at once. */
static void add_tier_chain(rd_kafka_headers_t *h,
                           const rd_kafka_headers_t *src,
                           int64_t now_ms,
                           int tier,
                           const char *source) {
        /* Where it first entered, also from Spring's or Connect's headers */
        kretry_dlq_info_t info;
        kretry_dlq_info_decode(src, &info);
        const kretry_chain_t c = info.chain;
        kretry_header_add_num(h, KRETRY_H_ATTEMPT, 1);
        kretry_header_add_num(h, KRETRY_H_TIER, tier);
        kretry_header_add_num(h, KRETRY_H_DUE_TS, now_ms);
        const char *topic = c.orig_topic_ok ? c.orig_topic : source;
        if (topic)
                rd_kafka_header_add(h, KRETRY_H_ORIG_TOPIC, -1, topic, -1);
        if (c.orig_partition_ok)
                kretry_header_add_num(h, KRETRY_H_ORIG_PARTITION,
                                      c.orig_partition);
        if (c.orig_offset_ok)
                kretry_header_add_num(h, KRETRY_H_ORIG_OFFSET, c.orig_offset);
}

rd_kafka_headers_t *kretry_replay_headers(const rd_kafka_headers_t *src,
                                          int64_t now_ms,
                                          int tier,
                                          const char *source) {
        size_t cnt            = src ? rd_kafka_header_cnt(src) : 0;
        rd_kafka_headers_t *h = rd_kafka_headers_new(cnt + 8);
        if (!h)
                return NULL;
        for (size_t i = 0; i < cnt; i++) {
                const char *name;
                const void *val;
                size_t n;
                if (rd_kafka_header_get_all(src, i, &name, &val, &n))
                        break;
                if (!kretry_replay_header_dropped(name))
                        rd_kafka_header_add(h, name, -1, val, (ssize_t)n);
        }
        if (tier > 0)
                add_tier_chain(h, src, now_ms, tier, source);
        kretry_header_add_num(h, KRETRY_H_REPLAY_COUNT, replay_count(src) + 1);
        kretry_header_add_num(h, KRETRY_H_REPLAYED_AT, now_ms);
        return h;
}
