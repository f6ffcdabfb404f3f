/*
 * kretry dlq export: a topology's dead-letter topic, from its beginning to
 * its end as it was when the command started, written as an Avro object
 * container file of schemas/kretry/dlq_context.avsc records (the message
 * and its failure context decoded from the kretry-* headers). Reads with
 * assigned partitions and commits nothing. The file appears only when
 * complete: it is written beside its final name and renamed at the end.
 */
#include "cli.h"
#include "dlq_cli.h"
#include "dlq_reader.h"
#include "kretry_avsc.h"
#include "parse.h"

#include <avro.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "kretry dlq export"

/* avro-c's file writer fails a record larger than its block buffer
 * (16 KiB by default); a DLQ message may be as large as the producer's
 * message.max.bytes (16 MiB), plus its context. Blocks are cut at about
 * BLOCK_TARGET, so the buffer's size only bounds one record. */
#define BLOCK_SIZE (17 << 20)
#define BLOCK_TARGET (1 << 20)

typedef struct {
        dlq_opts_t o;
        const char *out;
        const char *codec; /* avro-c block codec: null or deflate */
} export_opts_t;

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry dlq export --topology FILE [--name N] --out "
                "FILE.avro\n"
                "                         [--bootstrap B] [--limit N] "
                "[--codec null|deflate]\n"
                "                         [FILTERS] [--timeout MS]\n\n"
                "Write the DLQ's messages with their failure context as an "
                "Avro object\n"
                "container file (schema: schemas/kretry/dlq_context.avsc) "
                "that any Avro\n"
                "tool reads. Reads the DLQ up to its end at the start; "
                "commits nothing.\n\n"
                "  --limit N      export at most N messages\n"
                "  --codec C      block compression: null (default) or "
                "deflate\n"
                "filters (all that are given must match), as for kretry dlq "
                "inspect:\n"
                "  --class C  --code X  --key K  --since T  --until T\n");
}

static int usage_error(const char *what, const char *arg) {
        fprintf(stderr, PROG ": %s%s%s\n", what, arg ? " " : "",
                arg ? arg : "");
        usage(stderr);
        return KRETRY_EX_USAGE;
}

static int set_opt(export_opts_t *e, const char *flag, const char *v) {
        dlq_opts_t *o = &e->o;
        char reason[256];
        int64_t n;
        int rc;
        if (!strcmp(flag, "--topology"))
                o->file = v;
        else if (!strcmp(flag, "--name"))
                o->name = v;
        else if (!strcmp(flag, "--out"))
                e->out = v;
        else if (!strcmp(flag, "--bootstrap"))
                o->bootstrap = v;
        else if (!strcmp(flag, "--codec") &&
                 (!strcmp(v, "null") || !strcmp(v, "deflate")))
                e->codec = v;
        else if (!strncmp(flag, "--", 2) &&
                 (rc = dlq_filter_set(o, flag + 2, v, reason,
                                      sizeof(reason))) != -2) {
                if (rc) {
                        fprintf(stderr, PROG ": %s: %s\n", flag, reason);
                        return KRETRY_EX_USAGE;
                }
        } else if (!strcmp(flag, "--limit") || !strcmp(flag, "--timeout")) {
                if (kretry_parse_int64(v, 1, INT32_MAX, &n, reason,
                                       sizeof(reason))) {
                        fprintf(stderr, PROG ": %s: %s\n", flag, reason);
                        return KRETRY_EX_USAGE;
                }
                if (flag[2] == 'l')
                        o->limit = n;
                else
                        o->timeout_ms = (int)n;
        } else
                return usage_error("invalid option or value:", flag);
        return 0;
}

/* Returns 0, -1 after --help, or an exit status. */
static int parse(export_opts_t *e, int argc, char **argv) {
        memset(e, 0, sizeof(*e));
        kretry_dlq_filter_init(&e->o.filter);
        e->o.timeout_ms = DLQ_DEFAULT_TIMEOUT_MS;
        e->codec        = "null";
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        usage(stdout);
                        return -1;
                }
                if (i + 1 >= argc)
                        return usage_error("missing value for", argv[i]);
                int rc = set_opt(e, argv[i], argv[i + 1]);
                if (rc)
                        return rc;
                i++;
        }
        if (!e->o.file)
                return usage_error("--topology FILE is required", NULL);
        if (!e->out)
                return usage_error("--out FILE.avro is required", NULL);
        return 0;
}

/* Load the file (diagnostics on stderr) and pick the topology. */
static int load(const dlq_opts_t *o, dlq_target_t *tg) {
        int rc = dlq_load_target(o, tg);
        if (rc != 2)
                return rc;
        size_t n = kretry_topology_count(tg->f);
        fprintf(stderr, PROG ": %s: %s \"%s\"; the file has:", o->file,
                o->name ? "no topology named" : "holds several topologies:",
                o->name ? o->name : "name one with --name");
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, " %s", kretry_topology_at(tg->f, i)->name);
        fprintf(stderr, "\n");
        return 1;
}

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
                    char *errstr,
                    size_t errstr_size) {
        int64_t seen = 0;
        out_t out;
        rd_kafka_conf_t *conf =
                dlq_client_conf(tg->f, o->bootstrap, 1, errstr, errstr_size);
        dlq_reader_t *r =
                conf ? dlq_reader_new(conf, tg->t->dlq, NULL, o->timeout_ms,
                                      errstr, errstr_size)
                     : NULL;
        int rc = !r || dlq_reader_snapshot(r, 0, errstr, errstr_size) ? -1 : 0;
        *written = 0;
        if (!rc) {
                rc         = out_open(&out, path, codec, errstr, errstr_size);
                out.values = values;
                if (!rc)
                        rc = export_all(o, r, &out, &seen, written, errstr,
                                        errstr_size);
                if (out_close(&out, rc == 0, path, errstr, errstr_size))
                        rc = -1;
        }
        dlq_reader_destroy(r);
        if (rc) {
                fprintf(stderr, PROG ": %s\n", errstr);
                return 1;
        }
        fprintf(stderr, "%lld message%s exported to %s, %lld read from %s%s\n",
                (long long)*written, *written == 1 ? "" : "s", path,
                (long long)seen, tg->t->dlq,
                o->limit && *written >= o->limit ? " (--limit reached)" : "");
        return 0;
}

int cmd_dlq_export(int argc, char **argv) {
        export_opts_t e;
        dlq_target_t tg = {NULL, NULL};
        int64_t written;
        char errstr[1024];
        int rc = parse(&e, argc, argv);
        if (rc)
                return rc < 0 ? 0 : rc;
        if ((rc = load(&e.o, &tg)) == 0)
                rc = dlq_export_file(&e.o, &tg, e.out, e.codec, 1, &written,
                                     errstr, sizeof(errstr));
        kretry_topology_file_destroy(tg.f);
        return rc;
}
