#include "replay_headers.h"

#include "headers.h"

#include <stdio.h>
#include <string.h>

int kretry_replay_header_dropped(const char *name) {
        if (!strcmp(name, KRETRY_H_CORRELATION_ID))
                return 0;
        return kretry_header_is_chain(name) ||
               !strcmp(name, KRETRY_H_REPLAY_COUNT) ||
               !strcmp(name, KRETRY_H_REPLAYED_AT);
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

static void add_num(rd_kafka_headers_t *h, const char *name, int64_t v) {
        char buf[24];
        int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);
        rd_kafka_header_add(h, name, -1, buf, n);
}

rd_kafka_headers_t *kretry_replay_headers(const rd_kafka_headers_t *src,
                                          int64_t now_ms) {
        size_t cnt            = src ? rd_kafka_header_cnt(src) : 0;
        rd_kafka_headers_t *h = rd_kafka_headers_new(cnt + 2);
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
        add_num(h, KRETRY_H_REPLAY_COUNT, replay_count(src) + 1);
        add_num(h, KRETRY_H_REPLAYED_AT, now_ms);
        return h;
}
