/*
 * A topology's dead-letter topic, from its beginning to its end as it was
 * when the export started, written as an Avro object container file of
 * schemas/kretry/dlq_context.avsc records (the message and its failure
 * context decoded from the kretry-* headers): kretry dlq export and
 * kretry ui's export. Reads with assigned partitions and commits nothing.
 * The file appears only when complete: it is written beside its final name
 * and renamed at the end.
 */
#include "dlq_ops.h"
#include "dlq_reader.h"
#include "kretry_avsc.h"
#include "parse.h"

#include <avro.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* avro-c's file writer fails a record larger than its block buffer
 * (16 KiB by default); a DLQ message may be as large as the producer's
 * message.max.bytes (16 MiB), plus its context. Blocks are cut at about
 * BLOCK_TARGET, so the buffer's size only bounds one record. */
#define BLOCK_SIZE (17 << 20)
#define BLOCK_TARGET (1 << 20)

/* Avro strings are UTF-8: invalid sequences (an error message cut at
 * error.max.length mid-character, a binary header name) become U+FFFD so
 * that every reader accepts the file. Returns a NUL-terminated copy in
 * @p buf (grown as needed) and its length. */
static size_t
utf8_clean(const void *src, size_t len, char **buf, size_t *size) {
        const unsigned char *s = src;
        size_t need = len * 3 + 1, o = 0;
        if (*size < need) {
                char *p = realloc(*buf, need);
                if (!p)
                        return (size_t)-1;
                *buf  = p;
                *size = need;
        }
        for (size_t i = 0; i < len;) {
                unsigned char c = s[i];
                size_t k        = c < 0x80                ? 0
                                  : c >= 0xc2 && c < 0xe0 ? 1
                                  : c >= 0xe0 && c < 0xf0 ? 2
                                  : c >= 0xf0 && c < 0xf5 ? 3
                                                          : 9;
                int ok          = k != 9 && k <= len - i - 1;
                for (size_t j = 1; ok && j <= k; j++)
                        ok = (s[i + j] & 0xc0) == 0x80;
                if (ok && k >= 2)
                        ok = !((c == 0xe0 && s[i + 1] < 0xa0) ||
                               (c == 0xed && s[i + 1] >= 0xa0) ||
                               (c == 0xf0 && s[i + 1] < 0x90) ||
                               (c == 0xf4 && s[i + 1] >= 0x90));
                if (ok && c) {
                        memcpy(*buf + o, s + i, k + 1);
                        o += k + 1;
                        i += k + 1;
                } else {
                        memcpy(*buf + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                }
        }
        (*buf)[o] = '\0';
        return o;
}

/* Scratch space for one record's strings. */
typedef struct {
        char *buf;
        size_t size;
} scratch_t;

static int
set_string(avro_value_t *v, const void *p, size_t len, scratch_t *sc) {
        size_t n = utf8_clean(p, len, &sc->buf, &sc->size);
        if (n == (size_t)-1)
                return ENOMEM;
        return avro_value_set_string_len(v, sc->buf, n + 1);
}

/* A ["null", T] field: the null branch, or branch 1 to fill. */
static int
opt(avro_value_t *rec, const char *name, int present, avro_value_t *branch) {
        avro_value_t f;
        int rc = avro_value_get_by_name(rec, name, &f, NULL);
        if (!rc)
                rc = avro_value_set_branch(&f, present ? 1 : 0, branch);
        if (!rc && !present)
                rc = avro_value_set_null(branch);
        return rc ? rc : present ? 0 : -1;
}

static int opt_long(avro_value_t *rec, const char *name, int ok, int64_t v) {
        avro_value_t b;
        int rc = opt(rec, name, ok, &b);
        return rc < 0 ? 0 : rc ? rc : avro_value_set_long(&b, v);
}

static int opt_int(avro_value_t *rec, const char *name, int ok, int64_t v) {
        avro_value_t b;
        int rc = opt(rec, name, ok, &b);
        return rc < 0 ? 0 : rc ? rc : avro_value_set_int(&b, (int32_t)v);
}

static int opt_text(avro_value_t *rec,
                    const char *name,
                    const void *p,
                    size_t len,
                    scratch_t *sc) {
        avro_value_t b;
        int rc = opt(rec, name, p != NULL, &b);
        return rc < 0 ? 0 : rc ? rc : set_string(&b, p, len, sc);
}

static int
opt_bytes(avro_value_t *rec, const char *name, const void *p, size_t len) {
        avro_value_t b;
        int rc = opt(rec, name, p != NULL, &b);
        return rc < 0 ? 0 : rc ? rc : avro_value_set_bytes(&b, (void *)p, len);
}

static int
fill_headers(avro_value_t *rec, const rd_kafka_headers_t *h, scratch_t *sc) {
        avro_value_t arr, item, f, b;
        const char *name;
        const void *val;
        size_t size;
        int rc = avro_value_get_by_name(rec, "headers", &arr, NULL);
        for (size_t i = 0;
             !rc && h && !rd_kafka_header_get_all(h, i, &name, &val, &size);
             i++) {
                rc = avro_value_append(&arr, &item, NULL) ||
                     avro_value_get_by_name(&item, "name", &f, NULL) ||
                     set_string(&f, name, strlen(name), sc) ||
                     avro_value_get_by_name(&item, "value", &f, NULL) ||
                     avro_value_set_branch(&f, val ? 1 : 0, &b) ||
                     (val ? avro_value_set_bytes(&b, (void *)val, size)
                          : avro_value_set_null(&b));
        }
        return rc;
}

static int text_field(avro_value_t *rec,
                      const char *name,
                      kretry_dlq_text_t t,
                      scratch_t *sc) {
        return opt_text(rec, name, t.ptr, t.len, sc);
}

/* One DLQ message as a dlq_context record; its value null unless
 * @p values. */
static int fill(avro_value_t *rec,
                const rd_kafka_message_t *m,
                int values,
                scratch_t *sc) {
        rd_kafka_headers_t *h = NULL;
        kretry_dlq_info_t info;
        avro_value_t f;
        rd_kafka_message_headers(m, &h);
        kretry_dlq_info_decode(h, &info);
        const kretry_chain_t *c = &info.chain;
        const char *topic       = rd_kafka_topic_name(m->rkt);
        int64_t ts              = rd_kafka_message_timestamp(m, NULL);
        int rc                  = avro_value_reset(rec) ||
                 avro_value_get_by_name(rec, "topic", &f, NULL) ||
                 set_string(&f, topic, strlen(topic), sc) ||
                 avro_value_get_by_name(rec, "partition", &f, NULL) ||
                 avro_value_set_int(&f, m->partition) ||
                 avro_value_get_by_name(rec, "offset", &f, NULL) ||
                 avro_value_set_long(&f, m->offset) ||
                 avro_value_get_by_name(rec, "replay_count", &f, NULL) ||
                 avro_value_set_int(&f, (int32_t)info.replay_count);
        rc = rc || opt_long(rec, "timestamp", ts >= 0, ts) ||
             opt_text(rec, "original_topic",
                      c->orig_topic_ok ? c->orig_topic : NULL,
                      strlen(c->orig_topic), sc) ||
             opt_int(rec, "original_partition", c->orig_partition_ok,
                     c->orig_partition) ||
             opt_long(rec, "original_offset", c->orig_offset_ok,
                      c->orig_offset) ||
             opt_long(rec, "original_timestamp", c->orig_ts_ok, c->orig_ts) ||
             opt_long(rec, "first_failure_timestamp", c->first_failure_ok,
                      c->first_failure_ts) ||
             opt_long(rec, "last_failure_timestamp", info.last_failure_ts >= 0,
                      info.last_failure_ts) ||
             opt_int(rec, "attempts", c->attempt_ok, c->attempt);
        rc = rc || text_field(rec, "error_class", info.error_class, sc) ||
             text_field(rec, "error_code", info.error_code, sc) ||
             text_field(rec, "error", info.error, sc) ||
             text_field(rec, "group", info.group, sc) ||
             opt_bytes(rec, "correlation_id", c->correlation_id,
                       c->correlation_id_len) ||
             opt_bytes(rec, "key", m->key, m->key_len) ||
             opt_bytes(rec, "value", values ? m->payload : NULL, m->len) ||
             fill_headers(rec, h, sc);
        return rc;
}

typedef struct {
        avro_schema_t schema;
        avro_value_iface_t *iface;
        avro_value_t rec;
        avro_file_writer_t w;
        char tmp[4096];
        scratch_t sc;
        size_t block; /* bytes in the current block */
        int values;   /* values written, or left null */
} out_t;

static int out_close(out_t *o,
                     int keep,
                     const char *path,
                     char *errstr,
                     size_t errstr_size) {
        if (o->w)
                avro_file_writer_close(o->w);
        if (o->iface) {
                avro_value_decref(&o->rec);
                avro_value_iface_decref(o->iface);
        }
        if (o->schema)
                avro_schema_decref(o->schema);
        free(o->sc.buf);
        if (keep && rename(o->tmp, path)) {
                snprintf(errstr, errstr_size, "%s: %s", path, strerror(errno));
                keep = 0;
        }
        if (!keep && o->tmp[0])
                unlink(o->tmp);
        return keep ? 0 : -1;
}

static int out_open(out_t *o,
                    const char *path,
                    const char *codec,
                    char *errstr,
                    size_t errstr_size) {
        memset(o, 0, sizeof(*o));
        if (avro_schema_from_json_length(kretry_avsc_dlq_context,
                                         strlen(kretry_avsc_dlq_context),
                                         &o->schema) ||
            !(o->iface = avro_generic_class_from_schema(o->schema)) ||
            avro_generic_value_new(o->iface, &o->rec)) {
                if (o->iface && !o->rec.iface) {
                        avro_value_iface_decref(o->iface);
                        o->iface = NULL;
                }
                snprintf(errstr, errstr_size, "the dlq_context schema: %s",
                         avro_strerror());
                return -1;
        }
        snprintf(o->tmp, sizeof(o->tmp), "%s.tmp-%d", path, (int)getpid());
        if (avro_file_writer_create_with_codec(o->tmp, o->schema, &o->w, codec,
                                               BLOCK_SIZE)) {
                snprintf(errstr, errstr_size, "%s: %s", path, avro_strerror());
                o->w      = NULL;
                o->tmp[0] = '\0';
                return -1;
        }
        return 0;
}

static int append(out_t *o,
                  const rd_kafka_message_t *m,
                  char *errstr,
                  size_t errstr_size) {
        size_t size = 0;
        int rc      = fill(&o->rec, m, o->values, &o->sc);
        if (!rc && !(rc = avro_value_sizeof(&o->rec, &size)) &&
            size > BLOCK_SIZE) {
                snprintf(errstr, errstr_size,
                         "partition %d offset %lld: the record is %zu bytes, "
                         "more than an export block holds (%d)",
                         (int)m->partition, (long long)m->offset, size,
                         BLOCK_SIZE);
                return -1;
        }
        if (!rc && o->block && o->block + size > BLOCK_TARGET) {
                rc       = avro_file_writer_sync(o->w);
                o->block = 0;
        }
        if (!rc)
                rc = avro_file_writer_append_value(o->w, &o->rec);
        o->block += size;
        if (rc)
                snprintf(errstr, errstr_size, "partition %d offset %lld: %s",
                         (int)m->partition, (long long)m->offset,
                         avro_strerror());
        return rc ? -1 : 0;
}

static int export_all(const dlq_opts_t *o,
                      dlq_reader_t *r,
                      out_t *out,
                      int64_t *seenp,
                      int64_t *writtenp,
                      char *errstr,
                      size_t errstr_size) {
        rd_kafka_message_t *m;
        int rc;
        while ((!o->limit || *writtenp < o->limit) &&
               (rc = dlq_reader_next(r, &m, errstr, errstr_size)) == 1) {
                (*seenp)++;
                int bad = 0;
                if (dlq_selected(o, m)) {
                        bad = append(out, m, errstr, errstr_size);
                        if (!bad)
                                (*writtenp)++;
                }
                rd_kafka_message_destroy(m);
                if (bad) {
                        rc = -1;
                        break;
                }
        }
        if (o->limit && *writtenp >= o->limit)
                rc = 0;
        return rc < 0 ? -1 : 0;
}

int dlq_export_file(const dlq_opts_t *o,
                    const dlq_target_t *tg,
                    const char *path,
                    const char *codec,
                    int values,
                    int64_t *written,
                    int64_t *read,
                    char *errstr,
                    size_t errstr_size) {
        out_t out;
        rd_kafka_conf_t *conf =
                dlq_client_conf(tg->f, o->bootstrap, 1, errstr, errstr_size);
        dlq_reader_t *r =
                conf ? dlq_reader_new(conf, tg->t->dlq, NULL, o->timeout_ms,
                                      errstr, errstr_size)
                     : NULL;
        int rc = !r || dlq_reader_snapshot(r, 0, errstr, errstr_size) ? -1 : 0;
        *written = 0;
        *read    = 0;
        if (!rc) {
                rc         = out_open(&out, path, codec, errstr, errstr_size);
                out.values = values;
                if (!rc)
                        rc = export_all(o, r, &out, read, written, errstr,
                                        errstr_size);
                if (out_close(&out, rc == 0, path, errstr, errstr_size))
                        rc = -1;
        }
        dlq_reader_destroy(r);
        return rc ? 1 : 0;
}
