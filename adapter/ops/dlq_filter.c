#include "dlq_filter.h"

#include "dlq_foreign.h"

#include "parse.h"

#include <stdio.h>
#include <string.h>

kretry_dlq_text_t kretry_dlq_text(const rd_kafka_headers_t *hdrs,
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

static int64_t
num(const rd_kafka_headers_t *hdrs, const char *name, int64_t absent) {
        const void *v;
        size_t n;
        int64_t out;
        if (rd_kafka_header_get_last(hdrs, name, &v, &n) ||
            kretry_header_num(v, n, INT64_MAX, &out))
                return absent;
        return out;
}

void kretry_dlq_info_decode(const rd_kafka_headers_t *hdrs,
                            kretry_dlq_info_t *info) {
        memset(info, 0, sizeof(*info));
        kretry_chain_decode(hdrs, &info->chain);
        info->last_failure_ts = -1;
        if (!hdrs)
                return;
        info->error_class     = kretry_dlq_text(hdrs, KRETRY_H_ERROR_CLASS);
        info->error_code      = kretry_dlq_text(hdrs, KRETRY_H_ERROR_CODE);
        info->error           = kretry_dlq_text(hdrs, KRETRY_H_ERROR);
        info->group           = kretry_dlq_text(hdrs, KRETRY_H_GROUP);
        info->last_failure_ts = num(hdrs, KRETRY_H_LAST_FAILURE, -1);
        info->replay_count    = num(hdrs, KRETRY_H_REPLAY_COUNT, 0);
        if (info->error_class.ptr)
                info->origin = "kretry";
        else
                kretry_dlq_foreign_decode(hdrs, info);
}

int64_t kretry_dlq_dead_lettered_at(const kretry_dlq_info_t *info,
                                    int64_t msg_ts) {
        return msg_ts >= 0 ? msg_ts : info->last_failure_ts;
}

void kretry_dlq_filter_init(kretry_dlq_filter_t *f) {
        memset(f, 0, sizeof(*f));
        f->since_ms = -1;
        f->until_ms = -1;
}

static int text_eq(kretry_dlq_text_t t, const char *want) {
        return t.ptr && t.len == strlen(want) && !memcmp(t.ptr, want, t.len);
}

int kretry_dlq_filter_match(const kretry_dlq_filter_t *f,
                            const kretry_dlq_info_t *info,
                            const void *key,
                            size_t key_len,
                            int64_t dead_lettered_at) {
        if (f->error_class && !text_eq(info->error_class, f->error_class))
                return 0;
        if (f->error_code && !text_eq(info->error_code, f->error_code))
                return 0;
        if (f->key &&
            (!key || key_len != f->key_len || memcmp(key, f->key, key_len)))
                return 0;
        if ((f->since_ms >= 0 || f->until_ms >= 0) && dead_lettered_at < 0)
                return 0;
        if (f->since_ms >= 0 && dead_lettered_at < f->since_ms)
                return 0;
        if (f->until_ms >= 0 && dead_lettered_at >= f->until_ms)
                return 0;
        return 1;
}

int kretry_dlq_parse_time(const char *s,
                          int64_t now_ms,
                          int64_t *msp,
                          char *errstr,
                          size_t errstr_size) {
        char reason[256];
        int64_t v;
        if (!s || !*s) {
                snprintf(errstr, errstr_size, "empty time");
                return -1;
        }
        if (strspn(s, "0123456789") == strlen(s)) {
                if (kretry_parse_int64(s, 0, INT64_MAX, &v, reason,
                                       sizeof(reason))) {
                        snprintf(errstr, errstr_size, "\"%s\": %s", s, reason);
                        return -1;
                }
                *msp = v;
                return 0;
        }
        if (kretry_parse_duration_ms(s, &v, reason, sizeof(reason))) {
                snprintf(errstr, errstr_size,
                         "\"%s\" is neither a duration ago (30m, 1h, 2d) "
                         "nor epoch milliseconds",
                         s);
                return -1;
        }
        *msp = now_ms > v ? now_ms - v : 0;
        return 0;
}

int kretry_dlq_class_known(const char *cls) {
        static const char *const known[] = {"transient", "permanent",
                                            "exhausted", "expired",
                                            "schema",    "parked"};
        for (size_t i = 0; cls && i < sizeof(known) / sizeof(known[0]); i++)
                if (!strcmp(cls, known[i]))
                        return 1;
        return 0;
}
