/*
 * What a DLQ query selects (the filters and the rows an operator picked)
 * and one DLQ message as JSON: kretry dlq inspect --output json and
 * kretry ui show the same object.
 */
#include "dlq_ops.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t dlq_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dlq_filter_set(dlq_opts_t *o,
                   const char *name,
                   const char *v,
                   char *errstr,
                   size_t errstr_size) {
        if (!strcmp(name, "class"))
                o->filter.error_class = v;
        else if (!strcmp(name, "code"))
                o->filter.error_code = v;
        else if (!strcmp(name, "key")) {
                o->filter.key     = v;
                o->filter.key_len = strlen(v);
        } else if (!strcmp(name, "since") || !strcmp(name, "until"))
                return kretry_dlq_parse_time(v, dlq_now_ms(),
                                             name[0] == 's'
                                                     ? &o->filter.since_ms
                                                     : &o->filter.until_ms,
                                             errstr, errstr_size);
        else
                return -2;
        return 0;
}

/* "<name>_hex": @p p's bytes in lowercase hex. */
static void set_hex(json_t *o, const char *name, const void *p, size_t n) {
        static const char hex[] = "0123456789abcdef";
        char *h                 = malloc(n * 2 + 1);
        char hname[64];
        if (!h)
                return;
        for (size_t i = 0; i < n; i++) {
                h[2 * i]     = hex[((const unsigned char *)p)[i] >> 4];
                h[2 * i + 1] = hex[((const unsigned char *)p)[i] & 15];
        }
        h[n * 2] = '\0';
        snprintf(hname, sizeof(hname), "%s_hex", name);
        json_object_set_new(o, hname, json_string(h));
        free(h);
}

/* The UTF-8 sequence at @p p (at most @p left bytes): its length, or 0 when
 * it is not one. jansson judges, one sequence at a time. */
static size_t utf8_seq(const unsigned char *p, size_t left) {
        if (*p < 0x80)
                return 1;
        for (size_t len = 2; len <= 4 && len <= left; len++) {
                json_t *s = json_stringn((const char *)p, len);
                json_decref(s);
                if (s)
                        return len;
        }
        return 0;
}

/* @p p as text with U+FFFD for each byte that is not UTF-8. */
static json_t *text_lossy(const unsigned char *p, size_t n) {
        char *buf = malloc(n * 3 + 1), *d = buf;
        if (!buf)
                return NULL;
        for (size_t i = 0; i < n;) {
                size_t len = utf8_seq(p + i, n - i);
                if (len) {
                        memcpy(d, p + i, len);
                        d += len;
                        i += len;
                } else {
                        memcpy(d, "\xef\xbf\xbd", 3);
                        d += 3;
                        i++;
                }
        }
        json_t *s = json_stringn(buf, (size_t)(d - buf));
        free(buf);
        return s;
}

/* A kretry-* header's text, always there: as is when it is UTF-8 (NULs and
 * control characters escaped by jansson), else with U+FFFD for each byte
 * that is not, and "<name>_hex" with the exact bytes beside it. */
static void set_text(json_t *o, const char *name, const void *p, size_t n) {
        json_t *s = p ? json_stringn((const char *)p, n) : json_null();
        if (s) {
                json_object_set_new(o, name, s);
                return;
        }
        json_object_set_new(o, name, text_lossy(p, n));
        set_hex(o, name, p, n);
}

void dlq_json_bytes(json_t *o, const char *name, const void *p, size_t n) {
        json_t *s = p && !memchr(p, '\0', n) ? json_stringn(p, n) : NULL;
        if (s || !p) {
                json_object_set_new(o, name, s ? s : json_null());
                return;
        }
        set_hex(o, name, p, n);
}

static json_t *num_or_null(int ok, int64_t v) {
        return ok ? json_integer(v) : json_null();
}

json_t *dlq_message_json(const rd_kafka_message_t *m,
                         const kretry_dlq_info_t *i,
                         int show_value,
                         int64_t now_ms) {
        const kretry_chain_t *c = &i->chain;
        int64_t at              = kretry_dlq_dead_lettered_at(
                             i, rd_kafka_message_timestamp(m, NULL));
        int64_t age = at >= 0 ? (now_ms > at ? now_ms - at : 0) : -1;
        json_t *o   = json_object();
        json_object_set_new(o, "partition", json_integer(m->partition));
        json_object_set_new(o, "offset", json_integer(m->offset));
        dlq_json_bytes(o, "key", m->key, m->key_len);
        set_text(o, "class", i->error_class.ptr, i->error_class.len);
        set_text(o, "code", i->error_code.ptr, i->error_code.len);
        set_text(o, "error", i->error.ptr, i->error.len);
        json_object_set_new(o, "attempts",
                            num_or_null(c->attempt_ok, c->attempt));
        json_object_set_new(
                o, "first_failure_ts",
                num_or_null(c->first_failure_ok, c->first_failure_ts));
        json_object_set_new(o, "dead_lettered_at", num_or_null(at >= 0, at));
        json_object_set_new(o, "age_ms", num_or_null(age >= 0, age));
        json_object_set_new(o, "original_topic",
                            c->orig_topic_ok ? json_string(c->orig_topic)
                                             : json_null());
        json_object_set_new(
                o, "original_partition",
                num_or_null(c->orig_partition_ok, c->orig_partition));
        json_object_set_new(o, "original_offset",
                            num_or_null(c->orig_offset_ok, c->orig_offset));
        set_text(o, "correlation_id", c->correlation_id, c->correlation_id_len);
        set_text(o, "group", i->group.ptr, i->group.len);
        json_object_set_new(o, "origin",
                            i->origin ? json_string(i->origin) : json_null());
        if (i->stacktrace.ptr)
                set_text(o, "stacktrace", i->stacktrace.ptr, i->stacktrace.len);
        json_object_set_new(o, "replay_count", json_integer(i->replay_count));
        if (show_value)
                dlq_json_bytes(o, "value", m->payload, m->len);
        return o;
}

static int picked(const dlq_opts_t *o, const rd_kafka_message_t *m) {
        for (size_t i = 0; i < o->row_cnt; i++)
                if (o->rows[i].partition == m->partition &&
                    o->rows[i].offset == m->offset)
                        return 1;
        return 0;
}

static int selected(const dlq_opts_t *o, const rd_kafka_message_t *m) {
        rd_kafka_headers_t *h = NULL;
        kretry_dlq_info_t info;
        if (o->rows && !picked(o, m))
                return 0;
        rd_kafka_message_headers(m, &h);
        kretry_dlq_info_decode(h, &info);
        return kretry_dlq_filter_match(
                &o->filter, &info, m->key, m->key_len,
                kretry_dlq_dead_lettered_at(
                        &info, rd_kafka_message_timestamp(m, NULL)));
}

int dlq_selected(const dlq_opts_t *o, const rd_kafka_message_t *m) {
        return selected(o, m);
}
