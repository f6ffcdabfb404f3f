/*
 * The semantic rules of a topology file: raw text values (libcyaml's) become
 * the typed model, with ${VAR} expanded and every problem reported at the
 * position of the value it concerns.
 */
#include "codec.h"
#include "conf.h"
#include "expand.h"
#include "parse.h"
#include "secret.h"
#include "topology_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PARTITIONS 100000
#define MAX_REPLICATION 32767

typedef struct {
        kretry_topology_file_t *f;
        kretry_diags_t *d;
        char base[64]; /* "topologies[i]" */
} vctx_t;

static void vdiag(vctx_t *c,
                  kretry_diag_level_t level,
                  const char *path,
                  const char *fmt,
                  va_list ap) {
        int line, col;
        kretry_yaml_map_pos(&c->f->map, path, &line, &col);
        kretry_diag_vadd(c->d, level, line, col, fmt, ap);
}

/* Report at the value found at base + "." + @p rel (or at base). */
static void verr(vctx_t *c, const char *rel, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void verr(vctx_t *c, const char *rel, const char *fmt, ...) {
        char path[256];
        snprintf(path, sizeof(path), "%s%s%s", c->base, *rel ? "." : "", rel);
        va_list ap;
        va_start(ap, fmt);
        vdiag(c, KRETRY_DIAG_ERROR, path, fmt, ap);
        va_end(ap);
}

static void vwarn(vctx_t *c, const char *rel, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void vwarn(vctx_t *c, const char *rel, const char *fmt, ...) {
        char path[256];
        snprintf(path, sizeof(path), "%s.%s", c->base, rel);
        va_list ap;
        va_start(ap, fmt);
        vdiag(c, KRETRY_DIAG_WARNING, path, fmt, ap);
        va_end(ap);
}

static kretry_pos_t vpos(vctx_t *c, const char *rel) {
        char path[256];
        kretry_pos_t p;
        snprintf(path, sizeof(path), "%s%s%s", c->base, *rel ? "." : "", rel);
        kretry_yaml_map_pos(&c->f->map, path, &p.line, &p.col);
        return p;
}

/* The last component of a path, for messages: "retry.jitter" -> "jitter". */
typedef struct {
        char s[64];
} label_t;

static const char *label_of(const char *rel, label_t *buf) {
        const char *dot = strrchr(rel, '.');
        snprintf(buf->s, sizeof(buf->s), "%s", dot ? dot + 1 : rel);
        buf->s[strcspn(buf->s, "[")] = '\0'; /* "tiers[2]" -> "tiers" */
        return buf->s;
}

/* ${VAR}-expand a raw value; NULL (reported) on error or when absent. */
static const char *text(vctx_t *c, const char *raw, const char *rel) {
        label_t lb;
        char reason[256];
        if (!raw)
                return NULL;
        char *s = kretry_expand_env(raw, reason, sizeof(reason));
        if (!s) {
                verr(c, rel, "%s: %s", label_of(rel, &lb), reason);
                return NULL;
        }
        if (!(s = kretry_topology_pool(c->f, s)))
                c->d->oom = 1;
        return s;
}

/* A duration of at least @p min_ms (0 or 1). */
static int duration_min(vctx_t *c,
                        const char *raw,
                        const char *rel,
                        int64_t *msp,
                        int64_t min_ms) {
        label_t lb;
        char reason[256];
        const char *s = text(c, raw, rel);
        if (!s)
                return -1;
        if (kretry_parse_duration_ms(s, msp, reason, sizeof(reason))) {
                verr(c, rel, "%s: %s", label_of(rel, &lb), reason);
                return -1;
        }
        if (*msp < min_ms) {
                verr(c, rel, "%s: %s is not a positive duration",
                     label_of(rel, &lb), s);
                return -1;
        }
        return 0;
}

static int duration(vctx_t *c, const char *raw, const char *rel, int64_t *msp) {
        return duration_min(c, raw, rel, msp, 1);
}

static int integer(vctx_t *c,
                   const char *raw,
                   const char *rel,
                   int64_t min,
                   int64_t max,
                   int64_t *out) {
        label_t lb;
        char reason[256];
        const char *s = text(c, raw, rel);
        if (!s)
                return -1;
        if (kretry_parse_int64(s, min, max, out, reason, sizeof(reason))) {
                verr(c, rel, "%s: %s", label_of(rel, &lb), reason);
                return -1;
        }
        return 0;
}

static void
check_tiers(vctx_t *c, const kretry_raw_retry_t *r, kretry_topology_t *t) {
        if (r->tiers_count == 0 || r->tiers_count > KRETRY_TOPO_MAX_TIERS) {
                verr(c, "retry.tiers",
                     "tiers: %u delays given; between 1 and %d are allowed",
                     r->tiers_count, KRETRY_TOPO_MAX_TIERS);
                return;
        }
        for (unsigned i = 0; i < r->tiers_count; i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "retry.tiers[%u]", i);
                /* 0: an immediate retry that still leaves the partition */
                if (duration_min(c, r->tiers[i], rel, &t->tiers_ms[i], 0))
                        return;
                if (i > 0 && t->tiers_ms[i] < t->tiers_ms[i - 1])
                        vwarn(c, rel,
                              "tiers: delay %s of tier %u is shorter than "
                              "%s of tier %u: delays usually grow",
                              r->tiers[i], i + 1, r->tiers[i - 1], i);
        }
        t->tier_cnt = (int)r->tiers_count;
}

static void
check_retry(vctx_t *c, const kretry_raw_retry_t *r, kretry_topology_t *t) {
        int64_t v;
        check_tiers(c, r, t);
        t->max_attempts = t->tier_cnt + 1;
        if (r->max_attempts && integer(c, r->max_attempts, "retry.max_attempts",
                                       1, 1000000, &v) == 0)
                t->max_attempts = (int)v;
        t->jitter     = 0.10;
        const char *j = text(c, r->jitter, "retry.jitter");
        char reason[256];
        if (j && kretry_parse_percent(j, &t->jitter, reason, sizeof(reason)))
                verr(c, "retry.jitter", "jitter: %s", reason);
        if (r->max_age)
                duration(c, r->max_age, "retry.max_age", &t->max_age_ms);
}

static void
check_topics(vctx_t *c, const kretry_raw_topics_t *r, kretry_topology_t *t) {
        int64_t v;
        t->retry_pattern = "{source}.retry.{n}";
        if (!r)
                return;
        const char *p = text(c, r->retry_pattern, "topics.retry_pattern");
        if (p && !strstr(p, "{n}"))
                verr(c, "topics.retry_pattern",
                     "retry_pattern: \"%s\" must contain {n} (the tier "
                     "number), e.g. \"{source}.retry.{n}\"",
                     p);
        else if (p)
                t->retry_pattern = p;
        if (r->partitions && integer(c, r->partitions, "topics.partitions", 1,
                                     MAX_PARTITIONS, &v) == 0)
                t->partitions = (int)v;
        if (r->replication && integer(c, r->replication, "topics.replication",
                                      1, MAX_REPLICATION, &v) == 0)
                t->replication = (int)v;
        if (r->retention)
                duration(c, r->retention, "topics.retention", &t->retention_ms);
        if (r->min_insync_replicas &&
            integer(c, r->min_insync_replicas, "topics.min_insync_replicas", 1,
                    MAX_REPLICATION, &v) == 0)
                t->min_insync = (int)v;
        if (t->min_insync && t->replication && t->min_insync > t->replication)
                verr(c, "topics.min_insync_replicas",
                     "min_insync_replicas: %d is more than replication %d: "
                     "no write could ever be acknowledged",
                     t->min_insync, t->replication);
}

#define TOPIC_CHARS                                                            \
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

static int topic_name_ok(vctx_t *c, const char *rel, const char *name) {
        label_t lb;
        size_t n = strlen(name);
        if (n == 0 || n > 249 || !strcmp(name, ".") || !strcmp(name, "..") ||
            strspn(name, TOPIC_CHARS) != n) {
                verr(c, rel,
                     "%s: \"%s\" is not a valid Kafka topic name (1..249 "
                     "of a-z A-Z 0-9 . _ -)",
                     label_of(rel, &lb), name);
                return 0;
        }
        return 1;
}

static const char *
topic_name(vctx_t *c, const char *pattern, int n, const char *source) {
        char buf[512];
        if (kretry_conf_topic_name(pattern, source, n, buf, sizeof(buf)))
                snprintf(buf, sizeof(buf), "%s", "");
        char *s = kretry_topology_pool(c->f, strdup(buf));
        if (!s)
                c->d->oom = 1;
        return s;
}

static void
check_names(vctx_t *c, const kretry_raw_topology_t *r, kretry_topology_t *t) {
        label_t lb;
        const char *dlq = text(c, r->dlq, "dlq");
        t->dlq = topic_name(c, dlq ? dlq : "{source}.dlq", 0, t->source);
        if (!t->dlq || !topic_name_ok(c, r->dlq ? "dlq" : "source", t->dlq))
                return;
        if (!strcmp(t->dlq, t->source))
                verr(c, "dlq",
                     "dlq: \"%s\" is the source topic; the DLQ "
                     "must be a topic of its own",
                     t->dlq);
        for (int i = 0; i < t->tier_cnt; i++) {
                const char *tn =
                        topic_name(c, t->retry_pattern, i + 1, t->source);
                t->tier_topics[i] = (char *)tn;
                const char *rel   = r->topics && r->topics->retry_pattern
                                            ? "topics.retry_pattern"
                                            : "source";
                if (!tn || !topic_name_ok(c, rel, tn))
                        return;
                if (!strcmp(tn, t->source))
                        verr(c, rel,
                             "%s: tier %d's topic \"%s\" is the "
                             "source topic",
                             label_of(rel, &lb), i + 1, tn);
                if (!strcmp(tn, t->dlq))
                        verr(c, r->dlq ? "dlq" : rel,
                             "dlq: \"%s\" is also the topic of tier %d; the "
                             "DLQ and every tier need topics of their own",
                             tn, i + 1);
        }
}

/* park_key's topic of the parked keys, {group}.{source}.parked: the same
 * rule as the changelog's. */
static void check_parked_name(vctx_t *c, const kretry_topology_t *t) {
        char pt[600];
        if (!t->group || !t->source)
                return;
        snprintf(pt, sizeof(pt), "%s.%s.parked", t->group, t->source);
        size_t n = strlen(pt);
        if (n <= 249 && strspn(pt, TOPIC_CHARS) == n)
                return;
        verr(c, "on_dead_letter",
             "on_dead_letter: the parked keys' topic \"%s\" ({group}.{source}"
             ".parked) is not a valid Kafka topic name (1..249 of a-z A-Z "
             "0-9 . _ -): use a group id made of those characters",
             pt);
}

static void
check_modes(vctx_t *c, const kretry_raw_topology_t *r, kretry_topology_t *t) {
        t->ordering       = r->ordering == KRETRY_RAW_ORDERING_KEY
                                    ? KRETRY_ORDERING_KEY
                            : r->ordering == KRETRY_RAW_ORDERING_PARTITION
                                    ? KRETRY_ORDERING_PARTITION
                                    : KRETRY_ORDERING_NONE;
        t->ordering_pos   = vpos(c, r->ordering ? "ordering" : "");
        t->transactional  = r->routing == KRETRY_RAW_ROUTING_TRANSACTIONAL;
        t->on_dead_letter = r->on_dead_letter == KRETRY_RAW_DLQ_PARK_KEY
                                    ? KRETRY_ON_DLQ_PARK_KEY
                                    : KRETRY_ON_DLQ_CONTINUE;
        if (t->on_dead_letter == KRETRY_ON_DLQ_PARK_KEY &&
            t->ordering != KRETRY_ORDERING_KEY)
                verr(c, "on_dead_letter",
                     "on_dead_letter: park_key needs ordering: key (with "
                     "ordering: none, keys have no chain to park)");
        else if (t->on_dead_letter == KRETRY_ON_DLQ_PARK_KEY)
                check_parked_name(c, t);
}

/* The version store's changelog, {group}.{source}.versions: a group id
 * may hold characters a topic name cannot (':', '/', spaces...). */
static void check_changelog_name(vctx_t *c, const kretry_topology_t *t) {
        char vt[600];
        if (!t->group || !t->source)
                return;
        snprintf(vt, sizeof(vt), "%s.%s.versions", t->group, t->source);
        size_t n = strlen(vt);
        if (n <= 249 && strspn(vt, TOPIC_CHARS) == n)
                return;
        verr(c, "versioning",
             "versioning: the version changelog \"%s\" ({group}.{source}"
             ".versions) is not a valid Kafka topic name (1..249 of a-z A-Z "
             "0-9 . _ -): use a group id made of those characters",
             vt);
}

static void check_versioning(vctx_t *c,
                             const kretry_raw_versioning_t *r,
                             kretry_topology_t *t) {
        if (!r)
                return;
        t->versioning_pos = vpos(c, "versioning");
        if (!r->header == !r->field) {
                verr(c, "versioning",
                     "versioning: give exactly one of header: NAME or "
                     "field: NAME");
                return;
        }
        const char *h = text(c, r->header, "versioning.header");
        const char *f = text(c, r->field, "versioning.field");
        t->versioning = h ? KRETRY_VERSIONING_HEADER : KRETRY_VERSIONING_FIELD;
        t->version_name  = h ? h : f;
        t->discard_equal = r->discard == KRETRY_RAW_DISCARD_OLDER_OR_EQUAL;
        check_changelog_name(c, t);
}

/* @p path against the topology file's directory (pooled), or NULL. */
static const char *resolve(vctx_t *c, const char *path) {
        size_t n   = strlen(c->f->dir) + strlen(path) + 1;
        char *full = malloc(n);
        if (full)
                snprintf(full, n, "%s%s", path[0] == '/' ? "" : c->f->dir,
                         path);
        if (!full || !(full = kretry_topology_pool(c->f, full)))
                c->d->oom = 1;
        return full;
}

/* One value.schemas entry: "ID: PATH". */
static void
schema_id(vctx_t *c, kretry_topology_t *t, const kretry_yaml_kv_t *kv) {
        char reason[256];
        int64_t id;
        const char *file;
        char *path = kretry_expand_env(kv->value, reason, sizeof(reason));
        if (kretry_parse_int64(kv->key, 0, INT32_MAX, &id, reason,
                               sizeof(reason))) {
                kretry_diag_add(c->d, KRETRY_DIAG_ERROR, kv->line, kv->col,
                                "schemas: id \"%s\": %s", kv->key, reason);
        } else if (!path) {
                kretry_diag_add(c->d, KRETRY_DIAG_ERROR, kv->line, kv->col,
                                "schemas: %s: %s", kv->key, reason);
        } else if ((file = resolve(c, path)) && access(file, R_OK)) {
                kretry_diag_add(c->d, KRETRY_DIAG_ERROR, kv->line, kv->col,
                                "schemas: %s: cannot read \"%s\" (a relative "
                                "path is relative to the topology file)",
                                kv->key, path);
        } else if (file) {
                t->schema_ids[t->schema_id_cnt]        = (int32_t)id;
                t->schema_id_files[t->schema_id_cnt++] = file;
        }
        free(path);
}

/* The entries of this topology's free-form mapping at @p rel; @p map gets
 * its path (what its entries' map field holds). */
static size_t free_map_count(vctx_t *c, const char *rel, char map[96]) {
        size_t n                   = 0;
        const kretry_yaml_map_t *m = &c->f->map;
        snprintf(map, 96, "%s.%s", c->base, rel);
        for (size_t i = 0; i < m->kv_cnt; i++)
                n += !strcmp(m->kvs[i].map, map);
        return n;
}

/* value.schemas: confluent schema ids and their writer schemas. */
static void check_schema_ids(vctx_t *c, kretry_topology_t *t) {
        char map[96];
        const kretry_yaml_map_t *m = &c->f->map;
        size_t n                   = free_map_count(c, "value.schemas", map);
        if (!n)
                return;
        if (t->wire != KRETRY_WIRE_CONFLUENT) {
                verr(c, "value.schemas",
                     "schemas: only with wire: confluent (the ids of the "
                     "Confluent wire format name writer schemas)");
                return;
        }
        t->schema_ids      = calloc(n, sizeof(*t->schema_ids));
        t->schema_id_files = calloc(n, sizeof(*t->schema_id_files));
        if (!kretry_topology_pool(c->f, (char *)t->schema_ids) ||
            !kretry_topology_pool(c->f, (char *)t->schema_id_files)) {
                c->d->oom = 1;
                return;
        }
        for (size_t i = 0; i < m->kv_cnt; i++)
                if (!strcmp(m->kvs[i].map, map))
                        schema_id(c, t, &m->kvs[i]);
}

/* The schemas parse, and every writer schema resolves to the value's:
 * what the engine will do at start-up, reported now. */
static void check_codec(vctx_t *c, const kretry_topology_t *t) {
        char ids[8192], err[1024];
        size_t len = 0;
        ids[0]     = '\0';
        for (size_t i = 0; i < t->schema_id_cnt && len < sizeof(ids); i++)
                len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%d=%s",
                                        i ? "," : "", (int)t->schema_ids[i],
                                        t->schema_id_files[i]);
        kretry_codec_t *codec = kretry_codec_new(
                "avro", t->schema_file,
                t->wire == KRETRY_WIRE_CONFLUENT ? "confluent" : "raw", ids,
                err, sizeof(err));
        if (!codec)
                verr(c, "value", "value: %s", err);
        kretry_codec_destroy(codec);
}

static void
check_value(vctx_t *c, const kretry_raw_value_t *r, kretry_topology_t *t) {
        if (!r)
                return;
        t->value_pos = vpos(c, "value");
        t->format    = r->format == KRETRY_RAW_FORMAT_AVRO ? KRETRY_FORMAT_AVRO
                                                           : KRETRY_FORMAT_BYTES;
        t->wire = r->wire == KRETRY_RAW_WIRE_CONFLUENT ? KRETRY_WIRE_CONFLUENT
                                                       : KRETRY_WIRE_RAW;
        t->schema_path = text(c, r->schema, "value.schema");
        if (t->format != KRETRY_FORMAT_AVRO) {
                if (r->schema)
                        verr(c, "value.schema",
                             "schema: only with format: "
                             "avro");
                if (r->wire)
                        verr(c, "value.wire", "wire: only with format: avro");
                check_schema_ids(c, t);
                return;
        }
        if (!r->schema) {
                verr(c, "value",
                     "value: format: avro needs schema: PATH (an "
                     ".avsc file)");
                return;
        }
        if (!t->schema_path)
                return;
        int errors = c->d->errors;
        if (!(t->schema_file = resolve(c, t->schema_path)))
                return;
        if (access(t->schema_file, R_OK))
                verr(c, "value.schema",
                     "schema: cannot read \"%s\" (a relative path is "
                     "relative to the topology file)",
                     t->schema_path);
        check_schema_ids(c, t);
        if (c->d->errors == errors)
                check_codec(c, t);
}

/* Header text for handler.http.headers: a token name, a value of printable
 * ASCII (the value is never quoted in messages: it may be a secret). */
static int header_ok(const char *s) {
        static const char extra[] = "!#$%&'*+-.^_`|~";
        if (!*s)
                return 0;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
                      (*s >= 'A' && *s <= 'Z') || strchr(extra, *s)))
                        return 0;
        return 1;
}

static int header_text_ok(const char *v) {
        size_t n = strlen(v);
        if (n && (v[0] == ' ' || v[n - 1] == ' '))
                return 0;
        for (const unsigned char *p = (const unsigned char *)v; *p; p++)
                if ((*p < 0x20 && *p != '\t') || *p >= 0x7f)
                        return 0;
        return 1;
}

/* One handler.http.headers entry as "Name: value". */
static const char *http_header(vctx_t *c, const kretry_yaml_kv_t *kv) {
        char reason[256];
        if (!header_ok(kv->key)) {
                kretry_diag_add(c->d, KRETRY_DIAG_ERROR, kv->line, kv->col,
                                "headers: \"%s\" is not a valid header name",
                                kv->key);
                return NULL;
        }
        if (kretry_http_header_framing(kv->key, strlen(kv->key))) {
                kretry_diag_add(c->d, KRETRY_DIAG_ERROR, kv->line, kv->col,
                                "headers: %s: " KRETRY_HTTP_FRAMING_REFUSED,
                                kv->key);
                return NULL;
        }
        char *v = kretry_expand_env(kv->value, reason, sizeof(reason));
        if (!v || !header_text_ok(v)) {
                kretry_diag_add(c->d, KRETRY_DIAG_ERROR, kv->line, kv->col,
                                "headers: %s: %s", kv->key,
                                v ? "the value (after ${} expansion) is not "
                                    "header text: printable ASCII, no "
                                    "control characters"
                                  : reason);
                free(v);
                return NULL;
        }
        size_t n   = strlen(kv->key) + strlen(v) + 3;
        char *line = malloc(n);
        if (line)
                snprintf(line, n, "%s: %s", kv->key, v);
        free(v);
        if (!line || !(line = kretry_topology_pool(c->f, line)))
                c->d->oom = 1;
        return line;
}

static void http_headers(vctx_t *c, kretry_topo_http_t *h) {
        char map[96];
        const kretry_yaml_map_t *m = &c->f->map;
        size_t n = free_map_count(c, "handler.http.headers", map);
        if (!n)
                return;
        h->headers = calloc(n, sizeof(*h->headers));
        if (!kretry_topology_pool(c->f, (char *)h->headers)) {
                c->d->oom = 1;
                return;
        }
        for (size_t i = 0; i < m->kv_cnt; i++)
                if (!strcmp(m->kvs[i].map, map) &&
                    (h->headers[h->header_cnt] = http_header(c, &m->kvs[i])))
                        h->header_cnt++;
}

/* handler.http: kretry run --http's; checked here so that `validate` finds
 * what `run` would refuse (the URL is parsed in full by libcurl there). */
static void
check_http(vctx_t *c, const kretry_raw_http_t *r, kretry_topology_t *t) {
        kretry_topo_http_t *h = &t->http;
        if (!r)
                return;
        h->url = text(c, r->url, "handler.http.url");
        if (h->url && strncmp(h->url, "http://", 7) &&
            strncmp(h->url, "https://", 8))
                verr(c, "handler.http.url",
                     "url: \"%s\" is not an http:// or https:// URL", h->url);
        if (r->timeout)
                duration(c, r->timeout, "handler.http.timeout", &h->timeout_ms);
        h->content_type = text(c, r->content_type, "handler.http.content_type");
        h->ce_type      = text(c, r->ce_type, "handler.http.ce_type");
        h->retry_statuses =
                text(c, r->retry_statuses, "handler.http.retry_statuses");
        h->fail_statuses =
                text(c, r->fail_statuses, "handler.http.fail_statuses");
        h->body_json = r->body == KRETRY_RAW_BODY_JSON;
        if (h->body_json && t->format != KRETRY_FORMAT_AVRO)
                verr(c, "handler.http.body",
                     "body: json needs value: { format: avro, schema: PATH }");
        const char *const files[][2] = {
                {r->ca_file, "handler.http.ca_file"},
                {r->cert_file, "handler.http.cert_file"},
                {r->key_file, "handler.http.key_file"}};
        const char **dest[] = {&h->ca_file, &h->cert_file, &h->key_file};
        for (size_t i = 0; i < 3; i++) {
                const char *p = text(c, files[i][0], files[i][1]);
                if (p && (*dest[i] = resolve(c, p)) && access(*dest[i], R_OK))
                        verr(c, files[i][1],
                             "%s: cannot read \"%s\" (a relative path is "
                             "relative to the topology file)",
                             strrchr(files[i][1], '.') + 1, p);
        }
        http_headers(c, h);
}

static void
check_extras(vctx_t *c, const kretry_raw_topology_t *r, kretry_topology_t *t) {
        int64_t v;
        if (r->versioning && r->versioning->field && !r->versioning->header &&
            t->format != KRETRY_FORMAT_AVRO)
                verr(c, "versioning.field",
                     "field: a version field needs value: { format: avro, "
                     "schema: PATH }; use header: NAME for other payloads");
        t->permanent_errors_pos = vpos(c, "permanent_errors");
        t->permanent_error_cnt  = r->permanent_errors_count;
        if (r->permanent_errors_count) {
                t->permanent_errors =
                        calloc(r->permanent_errors_count, sizeof(char *));
                if (!t->permanent_errors ||
                    !kretry_topology_pool(c->f, (char *)t->permanent_errors))
                        c->d->oom = 1;
        }
        for (unsigned i = 0; t->permanent_errors && i < t->permanent_error_cnt;
             i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "permanent_errors[%u]", i);
                t->permanent_errors[i] = text(c, r->permanent_errors[i], rel);
        }
        if (r->breaker) {
                t->breaker               = 1;
                t->breaker_pos           = vpos(c, "breaker");
                t->breaker_failures      = 50;
                t->breaker_distinct_keys = 10;
                t->breaker_cooldown_ms   = 30000;
                if (r->breaker->failures &&
                    !integer(c, r->breaker->failures, "breaker.failures", 1,
                             1000000, &v))
                        t->breaker_failures = (int)v;
                if (r->breaker->distinct_keys &&
                    !integer(c, r->breaker->distinct_keys,
                             "breaker.distinct_keys", 1, 1000000, &v))
                        t->breaker_distinct_keys = (int)v;
                if (r->breaker->cooldown)
                        duration(c, r->breaker->cooldown, "breaker.cooldown",
                                 &t->breaker_cooldown_ms);
        }
        t->concurrency = 1;
        if (r->handler && r->handler->concurrency &&
            !integer(c, r->handler->concurrency, "handler.concurrency", 1, 1024,
                     &v))
                t->concurrency = (int)v;
        check_http(c, r->handler ? r->handler->http : NULL, t);
        t->alert_dlq_messages = -1;
        if (r->alerts) {
                t->alerts = 1;
                if (r->alerts->dlq_messages &&
                    !integer(c, r->alerts->dlq_messages, "alerts.dlq_messages",
                             1, 1000000000, &v))
                        t->alert_dlq_messages = v;
                if (r->alerts->oldest_age)
                        duration(c, r->alerts->oldest_age, "alerts.oldest_age",
                                 &t->alert_oldest_age_ms);
                if (r->alerts->dlq_rate &&
                    !integer(c, r->alerts->dlq_rate, "alerts.dlq_rate", 1,
                             1000000000, &v))
                        t->alert_dlq_rate = v;
        }
}

static void check_retention(vctx_t *c, const kretry_topology_t *t) {
        if (!t->retention_ms || !t->tier_cnt)
                return;
        int64_t worst = kretry_topology_worst_case_ms(t);
        /* worst < 80% of retention, in integers: 5 * worst < 4 * retention */
        if (worst * 5 < t->retention_ms * 4)
                return;
        char w[64], r[64], lim[64];
        kretry_topology_format_duration(worst, w, sizeof(w));
        kretry_topology_format_duration(t->retention_ms, r, sizeof(r));
        kretry_topology_format_duration(t->retention_ms * 4 / 5, lim,
                                        sizeof(lim));
        verr(c, "topics.retention",
             "retention: %s is too short: the worst-case time from first "
             "failure to the DLQ is %s (%d attempts, every delay at +%g%% "
             "jitter), which must stay under 80%% of retention (%s)",
             r, w, t->max_attempts, t->jitter * 100.0, lim);
}

static void check_topology(vctx_t *c,
                           const kretry_raw_topology_t *r,
                           kretry_topology_t *t) {
        t->pos    = vpos(c, "");
        t->source = text(c, r->source, "source");
        t->group  = text(c, r->group, "group");
        t->name   = r->name ? text(c, r->name, "name") : t->source;
        if (t->group && !*t->group)
                verr(c, "group", "group: the consumer group is empty");
        check_retry(c, r->retry, t);
        check_topics(c, r->topics, t);
        if (t->source && topic_name_ok(c, "source", t->source))
                check_names(c, r, t);
        check_modes(c, r, t);
        check_value(c, r->value, t);
        check_versioning(c, r->versioning, t);
        check_extras(c, r, t);
        check_retention(c, t);
}

static void check_unique_names(vctx_t *c, kretry_topology_file_t *f) {
        for (size_t i = 0; i < f->cnt; i++) {
                for (size_t j = 0; j < i; j++) {
                        const char *a = f->topos[i].name;
                        if (!a || !f->topos[j].name ||
                            strcmp(a, f->topos[j].name))
                                continue;
                        snprintf(c->base, sizeof(c->base), "topologies[%zu]",
                                 i);
                        verr(c, f->raw->topologies[i].name ? "name" : "source",
                             "name: \"%s\" is already the name of topology "
                             "%zu; names must be unique in the file",
                             a, j + 1);
                }
        }
}

/* The first tier topic of @p a that is also one of @p b's, or NULL. */
static const char *shared_tier(const kretry_topology_t *a,
                               const kretry_topology_t *b) {
        for (int i = 0; i < a->tier_cnt; i++)
                for (int j = 0; j < b->tier_cnt; j++)
                        if (a->tier_topics[i] && b->tier_topics[j] &&
                            !strcmp(a->tier_topics[i], b->tier_topics[j]))
                                return a->tier_topics[i];
        return NULL;
}

/* Two groups whose tiers share a topic each read the other's copies: the
 * engine skips them (kretry-group), but both pay for reading them and each
 * group's backlog hides the other's. Allowed, with a warning. */
static void check_shared_tiers(vctx_t *c, kretry_topology_file_t *f) {
        for (size_t i = 0; i < f->cnt; i++) {
                for (size_t j = 0; j < i; j++) {
                        const kretry_topology_t *a = &f->topos[i],
                                                *b = &f->topos[j];
                        const char *t;
                        if (!a->group || !b->group ||
                            !strcmp(a->group, b->group) ||
                            !(t = shared_tier(a, b)))
                                continue;
                        snprintf(c->base, sizeof(c->base), "topologies[%zu]",
                                 i);
                        vwarn(c, "group",
                              "group: \"%s\" shares tier topic \"%s\" with "
                              "topology \"%s\" of group \"%s\": each group "
                              "skips the other's copies (kretry-group) but "
                              "reads them all; give each group its own tiers "
                              "and DLQ (topics.retry_pattern, dlq)",
                              a->group, t, b->name, b->group);
                }
        }
}

/* Is @p name one of kretry's own properties (declared in the topology
 * itself, never under kafka:)? The property table is conf.c's. */
static int kretry_property(const char *name) {
        char table[4096];
        kretry_conf_properties_dump(table, sizeof(table));
        size_t n = strlen(name);
        for (const char *l = table; *l; l = strchr(l, '\n') + 1) {
                if (!strncmp(l, name, n) && l[n] == ' ')
                        return 1;
                if (!strchr(l, '\n'))
                        break;
        }
        return 0;
}

/* kafka: properties go through kretry_conf_set() on a scratch
 * configuration: the same checks (and messages) as the library call. */
static void check_props(vctx_t *c, kretry_topology_file_t *f) {
        const kretry_yaml_map_t *m = &f->map;
        kretry_conf_t *scratch     = kretry_conf_new();
        f->props = calloc(m->kv_cnt ? m->kv_cnt : 1, sizeof(*f->props));
        if (!scratch || !f->props) {
                c->d->oom = 1;
                kretry_conf_destroy(scratch);
                return;
        }
        snprintf(c->base, sizeof(c->base), "kafka");
        for (size_t i = 0; i < m->kv_cnt; i++) {
                char rel[300], reason[512];
                kretry_yaml_kv_t *kv = &m->kvs[i];
                if (strcmp(kv->map, "kafka"))
                        continue; /* a topology's value.schemas */
                kretry_pos_t pos = {kv->line, kv->col};
                snprintf(rel, sizeof(rel), "%s", kv->key);
                char *v = kretry_expand_env(kv->value, reason, sizeof(reason));
                if (!v || !(v = kretry_topology_pool(f, v))) {
                        kretry_diag_add(c->d, KRETRY_DIAG_ERROR, pos.line,
                                        pos.col, "%s: %s", kv->key,
                                        v ? "out of memory" : reason);
                        continue;
                }
                f->props[f->prop_cnt++] = (kretry_topo_prop_t){kv->key, v, pos};
                if (kretry_property(kv->key))
                        kretry_diag_add(c->d, KRETRY_DIAG_ERROR, pos.line,
                                        pos.col,
                                        "kafka: %s is a kretry property, not "
                                        "a librdkafka one: declare it in the "
                                        "topology",
                                        kv->key);
                else if (kretry_conf_set(scratch, kv->key, v, reason,
                                         sizeof(reason))) {
                        if (kretry_secret_property(kv->key))
                                kretry_secret_scrub(reason, sizeof(reason), v);
                        kretry_diag_add(c->d, KRETRY_DIAG_ERROR, pos.line,
                                        pos.col, "kafka: %s: %s", kv->key,
                                        reason);
                }
        }
        kretry_conf_destroy(scratch);
}

void kretry_topology_validate(kretry_topology_file_t *f, kretry_diags_t *d) {
        vctx_t c = {f, d, ""};
        check_props(&c, f);
        if (!f->raw->topologies_count) {
                kretry_pos_t p;
                kretry_yaml_map_pos(&f->map, "topologies", &p.line, &p.col);
                kretry_diag_add(d, KRETRY_DIAG_ERROR, p.line, p.col,
                                "topologies: the list is empty; declare at "
                                "least one topology");
                return;
        }
        f->topos = calloc(f->raw->topologies_count, sizeof(*f->topos));
        if (!f->topos) {
                d->oom = 1;
                return;
        }
        f->cnt = f->raw->topologies_count;
        for (size_t i = 0; i < f->cnt; i++) {
                snprintf(c.base, sizeof(c.base), "topologies[%zu]", i);
                check_topology(&c, &f->raw->topologies[i], &f->topos[i]);
        }
        check_unique_names(&c, f);
        check_shared_tiers(&c, f);
}
