/*
 * kretry ui's HTTP API (docs/ui.md): each route reads its parameters,
 * bounded and checked (400 for anything malformed, unknown names
 * included), then answers from the commands' own code. Requests reach
 * this file only after ui_server.c checked Host, token and origin.
 */
#include "codec.h"
#include "dlq_groups.h"
#include "dlq_reader.h"
#include "parse.h"
#include "stats_collect.h"
#include "ui.h"

#include <avro.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ui_reply_json(ui_reply_t *out, unsigned status, json_t *j) {
        out->status = status;
        out->type   = "application/json";
        out->body =
                j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        out->len = out->body ? strlen(out->body) : 0;
        if (!out->body) {
                out->status = 500;
                out->body   = strdup("{\"error\":\"out of memory\"}");
                out->len    = out->body ? strlen(out->body) : 0;
        }
        json_decref(j);
}

void ui_reply_error(ui_reply_t *out, unsigned status, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_t *j = json_object();
        json_object_set_new(j, "error", json_string(msg));
        json_object_set_new(j, "status", json_integer(status));
        ui_reply_json(out, status, j);
}

static const char *param(const ui_req_t *q, const char *name) {
        return MHD_lookup_connection_value(q->c, MHD_GET_ARGUMENT_KIND, name);
}

typedef struct {
        const char *const *allowed;
        char bad[UI_MAX_PARAM + 64];
} params_check_t;

static enum MHD_Result
check_one(void *cls, enum MHD_ValueKind kind, const char *k, const char *v) {
        params_check_t *pc = cls;
        (void)kind;
        int known = !strcmp(k, "token");
        for (size_t i = 0; !known && pc->allowed[i]; i++)
                known = !strcmp(k, pc->allowed[i]);
        if (!known)
                snprintf(pc->bad, sizeof(pc->bad),
                         "unknown parameter \"%.64s\"", k);
        else if (v && strlen(v) > UI_MAX_PARAM)
                snprintf(pc->bad, sizeof(pc->bad),
                         "parameter %s: longer than %d bytes", k, UI_MAX_PARAM);
        return pc->bad[0] ? MHD_NO : MHD_YES;
}

/* Every query parameter known to the route and bounded; else a 400. */
static int params_ok(ui_req_t *q, const char *const *allowed, ui_reply_t *out) {
        params_check_t pc = {allowed, ""};
        MHD_get_connection_values(q->c, MHD_GET_ARGUMENT_KIND, check_one, &pc);
        if (pc.bad[0])
                ui_reply_error(out, 400, "%s", pc.bad);
        return !pc.bad[0];
}

/* The topology @p name of the file (NULL: the file's only one), else a
 * 400 or 404. */
static const kretry_topology_t *
pick(ui_req_t *q, const char *name, ui_reply_t *out) {
        const kretry_topology_file_t *f = q->ui->f;
        size_t n                        = kretry_topology_count(f);
        const kretry_topology_t *t      = name ? kretry_topology_find(f, name)
                                          : n == 1 ? kretry_topology_at(f, 0)
                                                   : NULL;
        if (!t && name)
                ui_reply_error(out, 404, "no topology named \"%s\" in %s", name,
                               q->ui->file);
        else if (!t)
                ui_reply_error(out, 400,
                               "%s holds %zu topologies: name one with "
                               "topology=NAME",
                               q->ui->file, n);
        return t;
}

void ui_opts_init(const ui_t *ui, dlq_opts_t *o) {
        memset(o, 0, sizeof(*o));
        kretry_dlq_filter_init(&o->filter);
        o->file       = ui->file;
        o->bootstrap  = ui->bootstrap;
        o->timeout_ms = ui->timeout_ms;
        o->rate       = DLQ_DEFAULT_RATE;
        o->batch      = DLQ_DEFAULT_BATCH;
        o->show_value = ui->show_values;
        o->json       = 1;
}

static const char *const filter_names[] = {"class", "code", "key", "since",
                                           "until"};
#define FILTER_CNT (sizeof(filter_names) / sizeof(filter_names[0]))

/* The inspect filters from the query; 0, or -1 after a 400. */
static int query_filter(ui_req_t *q, dlq_opts_t *o, ui_reply_t *out) {
        char err[512];
        for (size_t i = 0; i < FILTER_CNT; i++) {
                const char *v = param(q, filter_names[i]);
                if (v && *v &&
                    ui_filter_set(o, filter_names[i], v, err, sizeof(err))) {
                        ui_reply_error(out, 400, "%s", err);
                        return -1;
                }
        }
        return 0;
}

/* A reader of @p t's DLQ at its snapshot; NULL after a 502. */
static dlq_reader_t *
open_dlq(ui_req_t *q, const kretry_topology_t *t, ui_reply_t *out) {
        char errstr[1024];
        rd_kafka_conf_t *conf = dlq_client_conf(q->ui->f, q->ui->bootstrap, 1,
                                                errstr, sizeof(errstr));
        dlq_reader_t *r =
                conf ? dlq_reader_new(conf, t->dlq, NULL, q->ui->timeout_ms,
                                      errstr, sizeof(errstr))
                     : NULL;
        if (r && !dlq_reader_snapshot(r, 0, errstr, sizeof(errstr)))
                return r;
        dlq_reader_destroy(r);
        ui_reply_error(out, 502, "%s", errstr);
        return NULL;
}

/* ---- GET /api/topologies, GET /metrics ---- */

/* The figures of every topology of the file (or the one named); NULL
 * after an error reply. *@p cnt reports. */
static stats_report_t **
collect(ui_req_t *q, const char *name, size_t *cnt, ui_reply_t *out) {
        char errstr[1024];
        int64_t window = q->ui->window_ms;
        const char *w  = param(q, "window");
        if (w && kretry_parse_duration_ms(w, &window, errstr, sizeof(errstr))) {
                ui_reply_error(out, 400, "window: %s", errstr);
                return NULL;
        }
        if (window > 60000) {
                ui_reply_error(out, 400, "window: at most 1m");
                return NULL;
        }
        const kretry_topology_t *only = name ? pick(q, name, out) : NULL;
        if (name && !only)
                return NULL;
        size_t n            = only ? 1 : kretry_topology_count(q->ui->f);
        stats_report_t **rs = calloc(n ? n : 1, sizeof(*rs));
        for (size_t i = 0; rs && i < n; i++) {
                const kretry_topology_t *t =
                        only ? only : kretry_topology_at(q->ui->f, i);
                rs[i] = stats_collect(q->ui->f, t, q->ui->bootstrap, window,
                                      q->ui->timeout_ms, 0, errstr,
                                      sizeof(errstr));
                if (!rs[i]) {
                        ui_reply_error(out, 502, "%s", errstr);
                        for (size_t k = 0; k < i; k++)
                                stats_report_free(rs[k]);
                        free(rs);
                        return NULL;
                }
        }
        if (!rs)
                ui_reply_error(out, 500, "out of memory");
        *cnt = n;
        return rs;
}

static void free_reports(stats_report_t **rs, size_t n) {
        for (size_t i = 0; i < n; i++)
                stats_report_free(rs[i]);
        free(rs);
}

/* The first round of figures may take every topology's window and the
 * cluster's timeouts. */
#define UI_FIGURES_WAIT_MS 60000

static void api_topologies(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {"topology", "window", NULL};
        const char *name                   = param(q, "topology");
        char errstr[1024];
        size_t n;
        stats_report_t **rs;
        json_t *arr = NULL;
        int64_t at  = dlq_now_ms();
        if (!params_ok(q, allowed, out) || (name && !pick(q, name, out)))
                return;
        if (param(q, "window")) { /* a window of its own: taken now */
                if (!(rs = collect(q, name, &n, out)))
                        return;
                arr = json_array();
                for (size_t i = 0; i < n; i++)
                        json_array_append_new(arr, stats_report_json(rs[i]));
                free_reports(rs, n);
        } else if (!(arr = ui_figures_reports(q->ui->figures, name,
                                              UI_FIGURES_WAIT_MS, &at, errstr,
                                              sizeof(errstr)))) {
                ui_reply_error(out, 502, "%s", errstr);
                return;
        }
        json_t *j = json_object();
        json_object_set_new(j, "file", json_string(q->ui->file));
        json_object_set_new(j, "show_values", json_boolean(q->ui->show_values));
        json_object_set_new(j, "interval_ms",
                            json_integer(UI_FIGURES_INTERVAL_MS));
        json_object_set_new(j, "age_ms", json_integer(dlq_now_ms() - at));
        json_object_set_new(j, "topologies", arr);
        ui_reply_json(out, 200, j);
}

/* ---- GET /api/history ---- */

static void api_history(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {"topology", "since", NULL};
        const char *since                  = param(q, "since");
        const kretry_topology_t *t;
        int64_t since_ms = 0;
        if (!params_ok(q, allowed, out) ||
            !(t = pick(q, param(q, "topology"), out)))
                return;
        if (since && ui_parse_int(since, 0, INT64_MAX, &since_ms)) {
                ui_reply_error(out, 400, "since: expected epoch ms");
                return;
        }
        json_t *j = ui_figures_history(q->ui->figures, t->name, since_ms);
        if (j)
                ui_reply_json(out, 200, j);
        else
                ui_reply_error(out, 500, "out of memory");
}

static void api_metrics(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {"topology", "window", NULL};
        size_t n, len = 0;
        stats_report_t **rs;
        char *text = NULL;
        if (!params_ok(q, allowed, out) ||
            !(rs = collect(q, param(q, "topology"), &n, out)))
                return;
        FILE *mem = open_memstream(&text, &len);
        if (mem) {
                stats_render_prometheus_many(
                        mem, (const stats_report_t *const *)rs, n);
                fclose(mem);
        }
        free_reports(rs, n);
        if (!mem || !text) {
                free(text);
                ui_reply_error(out, 500, "out of memory");
                return;
        }
        out->status = 200;
        out->type   = "text/plain; version=0.0.4; charset=utf-8";
        out->body   = text;
        out->len    = len;
}

/* ---- GET /api/dlq ---- */

/* Messages read at most for one page: a filter that matches little on a
 * large DLQ answers with fewer rows and a cursor rather than scanning it
 * all in one request. */
#define UI_SCAN_MAX 20000

static void
page(ui_req_t *q, dlq_opts_t *o, dlq_reader_t *r, int64_t limit, json_t *j) {
        char errstr[1024], cursor[48];
        json_t *rows = json_array();
        rd_kafka_message_t *m;
        int64_t read = 0, shown = 0, now = dlq_now_ms();
        int32_t last_p = -1;
        int64_t last_o = -1;
        int got        = 0;
        while (shown < limit && read < UI_SCAN_MAX &&
               (got = dlq_reader_next(r, &m, errstr, sizeof(errstr))) == 1) {
                read++;
                last_p = m->partition;
                last_o = m->offset;
                if (dlq_selected(o, m)) {
                        rd_kafka_headers_t *h = NULL;
                        kretry_dlq_info_t info;
                        rd_kafka_message_headers(m, &h);
                        kretry_dlq_info_decode(h, &info);
                        json_array_append_new(
                                rows,
                                dlq_message_json(m, &info, q->ui->show_values,
                                                 now));
                        shown++;
                }
                rd_kafka_message_destroy(m);
        }
        json_object_set_new(j, "rows", rows);
        json_object_set_new(j, "read", json_integer(read));
        if (got < 0) {
                json_object_set_new(j, "error", json_string(errstr));
                json_object_set_new(j, "next_cursor", json_null());
                return;
        }
        snprintf(cursor, sizeof(cursor), "%d:%lld", (int)last_p,
                 (long long)last_o + 1);
        json_object_set_new(j, "next_cursor",
                            got == 0 || dlq_reader_done(r) || last_p < 0
                                    ? json_null()
                                    : json_string(cursor));
}

static int
query_limit(ui_req_t *q, int64_t max, int64_t *limit, ui_reply_t *out) {
        const char *v = param(q, "limit");
        if (v && ui_parse_int(v, 1, max, limit)) {
                ui_reply_error(out, 400, "limit: expected 1..%lld",
                               (long long)max);
                return -1;
        }
        return 0;
}

static void api_dlq(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {"topology", "class",  "code",
                                              "key",      "since",  "until",
                                              "limit",    "cursor", NULL};
        dlq_opts_t o;
        int64_t limit = UI_DEFAULT_ROWS, offset = 0;
        int32_t partition  = 0;
        const char *cursor = param(q, "cursor");
        const kretry_topology_t *t;
        ui_opts_init(q->ui, &o);
        if (!params_ok(q, allowed, out) ||
            !(t = pick(q, param(q, "topology"), out)) ||
            query_filter(q, &o, out) ||
            query_limit(q, UI_MAX_ROWS, &limit, out))
                return;
        if (cursor && *cursor && ui_parse_cursor(cursor, &partition, &offset)) {
                ui_reply_error(out, 400, "cursor: expected PARTITION:OFFSET");
                return;
        }
        dlq_reader_t *r = open_dlq(q, t, out);
        if (!r)
                return;
        json_t *j = json_object();
        json_object_set_new(j, "topology", json_string(t->name));
        json_object_set_new(j, "dlq", json_string(t->dlq));
        json_object_set_new(j, "partitions",
                            json_integer(dlq_reader_partition_cnt(r)));
        if (cursor && *cursor)
                dlq_reader_from(r, partition, offset, 0);
        json_object_set_new(j, "remaining", json_integer(dlq_reader_total(r)));
        page(q, &o, r, limit, j);
        dlq_reader_destroy(r);
        if (json_object_get(j, "error"))
                ui_reply_error(out, 502, "%s",
                               json_string_value(json_object_get(j, "error")));
        else
                ui_reply_json(out, 200, json_incref(j));
        json_decref(j);
}

/* ---- GET /api/groups ---- */

/* Messages read at most for the failures view: beyond, the groups say
 * "complete": false. */
#define UI_GROUPS_SCAN_MAX 200000

static void api_groups(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {"topology", NULL};
        char errstr[1024];
        const kretry_topology_t *t;
        int64_t read, t0 = dlq_now_ms();
        if (!params_ok(q, allowed, out) ||
            !(t = pick(q, param(q, "topology"), out)))
                return;
        dlq_groups_t *g = dlq_groups_new(DLQ_GROUPS_MAX);
        dlq_reader_t *r = g ? open_dlq(q, t, out) : NULL;
        if (!g && !out->body)
                ui_reply_error(out, 500, "out of memory");
        int rc = r ? dlq_groups_read(r, g, UI_GROUPS_SCAN_MAX, &read, errstr,
                                     sizeof(errstr))
                   : -2;
        json_t *groups = rc >= 0 ? dlq_groups_json(g) : NULL;
        if (rc == -1)
                ui_reply_error(out, 502, "%s", errstr);
        else if (rc >= 0 && !groups)
                ui_reply_error(out, 500, "out of memory");
        else if (rc >= 0) {
                json_t *j = json_object();
                json_object_set_new(j, "topology", json_string(t->name));
                json_object_set_new(j, "dlq", json_string(t->dlq));
                json_object_set_new(j, "read", json_integer(read));
                json_object_set_new(j, "complete", json_boolean(rc == 1));
                json_object_set_new(j, "other",
                                    json_integer(dlq_groups_other(g)));
                json_object_set_new(j, "took_ms",
                                    json_integer(dlq_now_ms() - t0));
                json_object_set_new(j, "groups", groups);
                ui_reply_json(out, 200, j);
        }
        dlq_reader_destroy(r);
        dlq_groups_destroy(g);
}

/* ---- GET /api/dlq/PARTITION/OFFSET ---- */

static void hex_field(json_t *o, const char *name, const void *p, size_t n) {
        static const char hex[] = "0123456789abcdef";
        char *h                 = p ? malloc(n * 2 + 1) : NULL;
        if (!h) {
                json_object_set_new(o, name, json_null());
                return;
        }
        for (size_t i = 0; i < n; i++) {
                h[2 * i]     = hex[((const unsigned char *)p)[i] >> 4];
                h[2 * i + 1] = hex[((const unsigned char *)p)[i] & 15];
        }
        h[n * 2] = '\0';
        json_object_set_new(o, name, json_string(h));
        free(h);
}

static json_t *headers_json(const rd_kafka_headers_t *h) {
        json_t *arr = json_array();
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0;
             h && !rd_kafka_header_get_all(h, i, &name, &val, &size); i++) {
                json_t *e = json_object();
                json_object_set_new(e, "name", json_string(name));
                dlq_json_bytes(e, "value", val, size);
                json_array_append_new(arr, e);
        }
        return arr;
}

/* The value decoded with the topology's Avro schema, as JSON. */
static void
avro_field(const kretry_topology_t *t, const rd_kafka_message_t *m, json_t *o) {
        char err[512], ids[4096] = "";
        size_t len = 0;
        for (size_t i = 0; i < t->schema_id_cnt && len < sizeof(ids); i++)
                len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%d=%s",
                                        i ? "," : "", (int)t->schema_ids[i],
                                        t->schema_id_files[i]);
        kretry_codec_t *c = kretry_codec_new(
                "avro", t->schema_file,
                t->wire == KRETRY_WIRE_CONFLUENT ? "confluent" : "raw", ids,
                err, sizeof(err));
        avro_value_t *v;
        char *text = NULL;
        json_t *j  = NULL;
        if (c &&
            !kretry_codec_decode(c, m->payload, m->len, &v, err, sizeof(err)) &&
            !avro_value_to_json(v, 1, &text))
                j = json_loads(text, JSON_DECODE_ANY, NULL);
        if (c && !j && text)
                snprintf(err, sizeof(err), "not representable as JSON");
        json_object_set_new(o, "value_avro", j ? j : json_null());
        if (!j)
                json_object_set_new(o, "value_avro_error", json_string(err));
        free(text);
        kretry_codec_destroy(c);
}

static json_t *
detail_json(const ui_t *ui, const kretry_topology_t *t, rd_kafka_message_t *m) {
        rd_kafka_headers_t *h = NULL;
        kretry_dlq_info_t info;
        rd_kafka_message_headers(m, &h);
        kretry_dlq_info_decode(h, &info);
        const kretry_chain_t *c = &info.chain;
        json_t *j               = dlq_message_json(m, &info, 0, dlq_now_ms());
        int64_t ts              = rd_kafka_message_timestamp(m, NULL);
        json_object_set_new(j, "topic",
                            json_string(rd_kafka_topic_name(m->rkt)));
        json_object_set_new(j, "timestamp",
                            ts >= 0 ? json_integer(ts) : json_null());
        json_object_set_new(j, "original_timestamp",
                            c->orig_ts_ok ? json_integer(c->orig_ts)
                                          : json_null());
        json_object_set_new(j, "last_failure_ts",
                            info.last_failure_ts >= 0
                                    ? json_integer(info.last_failure_ts)
                                    : json_null());
        json_object_set_new(j, "headers", headers_json(h));
        json_object_set_new(j, "value_size",
                            m->payload ? json_integer((json_int_t)m->len)
                                       : json_null());
        json_object_set_new(j, "values_shown", json_boolean(ui->show_values));
        if (!ui->show_values)
                return j;
        dlq_json_bytes(j, "value", m->payload, m->len);
        hex_field(j, "value_hex", m->payload, m->len);
        if (t->format == KRETRY_FORMAT_AVRO && m->payload)
                avro_field(t, m, j);
        return j;
}

static void api_message(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {"topology", NULL};
        char errstr[1024];
        int32_t partition;
        int64_t offset;
        const kretry_topology_t *t;
        rd_kafka_message_t *m;
        if (ui_parse_message_path(q->path, &partition, &offset)) {
                ui_reply_error(out, 400, "expected /api/dlq/PARTITION/OFFSET");
                return;
        }
        if (!params_ok(q, allowed, out) ||
            !(t = pick(q, param(q, "topology"), out)))
                return;
        dlq_reader_t *r = open_dlq(q, t, out);
        if (!r)
                return;
        dlq_reader_from(r, partition, offset, 1);
        int got = dlq_reader_next(r, &m, errstr, sizeof(errstr));
        if (got == 1 && m->partition == partition && m->offset == offset)
                ui_reply_json(out, 200, detail_json(q->ui, t, m));
        else if (got < 0)
                ui_reply_error(out, 502, "%s", errstr);
        else
                ui_reply_error(out, 404,
                               "%s holds no message at partition %d offset "
                               "%lld",
                               t->dlq, (int)partition, (long long)offset);
        if (got == 1)
                rd_kafka_message_destroy(m);
        dlq_reader_destroy(r);
}

/* ---- GET /api/export ---- */

static void api_export(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {"topology", "class", "code",
                                              "key",      "since", "until",
                                              "limit",    "codec", NULL};
        char errstr[1024], path[4096];
        const char *codec = param(q, "codec");
        const char *tmp   = getenv("TMPDIR");
        const kretry_topology_t *t;
        dlq_opts_t o;
        int64_t written, read;
        ui_opts_init(q->ui, &o);
        if (!params_ok(q, allowed, out) ||
            !(t = pick(q, param(q, "topology"), out)) ||
            query_filter(q, &o, out) ||
            query_limit(q, INT32_MAX, &o.limit, out))
                return;
        if (codec && strcmp(codec, "null") && strcmp(codec, "deflate")) {
                ui_reply_error(out, 400, "codec: expected null or deflate");
                return;
        }
        snprintf(path, sizeof(path), "%s/kretry-ui-export-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        int fd = mkstemp(path);
        if (fd < 0) {
                ui_reply_error(out, 500, "%s: %s", path, strerror(errno));
                return;
        }
        close(fd);
        dlq_target_t tg = {q->ui->f, t};
        int rc          = dlq_export_file(&o, &tg, path, codec ? codec : "null",
                                          q->ui->show_values, &written, &read, errstr,
                                          sizeof(errstr));
        fd              = rc ? -1 : open(path, O_RDONLY);
        unlink(path);
        off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
        if (fd < 0 || size < 0 || lseek(fd, 0, SEEK_SET)) {
                if (fd >= 0)
                        close(fd);
                ui_reply_error(out, 502, "%s", rc ? errstr : strerror(errno));
                return;
        }
        out->status  = 200;
        out->type    = "application/avro";
        out->fd      = fd;
        out->fd_size = (uint64_t)size;
        snprintf(out->disposition, sizeof(out->disposition),
                 "attachment; filename=\"%.80s.avro\"", t->dlq);
}

/* ---- POST /api/replay ---- */

static void api_replay_post(ui_req_t *q, ui_reply_t *out) {
        static const char *const allowed[] = {NULL};
        json_error_t jerr;
        if (!params_ok(q, allowed, out))
                return;
        json_t *body = json_loadb(q->body ? q->body : "", q->body_len,
                                  JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(body)) {
                ui_reply_error(out, 400, "the body is not a JSON object: %s",
                               body ? "another JSON value" : jerr.text);
                json_decref(body);
                return;
        }
        json_t *name = json_object_get(body, "topology");
        if (name && !json_is_string(name)) {
                ui_reply_error(out, 400, "topology: expected a string");
        } else {
                const kretry_topology_t *t =
                        pick(q, name ? json_string_value(name) : NULL, out);
                if (t)
                        ui_replay_post(q, t, body, out);
        }
        json_decref(body);
}

/* ---- routes ---- */

static void page_reply(ui_reply_t *out) {
        out->status = 200;
        out->type   = "text/html; charset=utf-8";
        out->body   = strdup(kretry_ui_page);
        out->len    = out->body ? strlen(out->body) : 0;
        if (!out->body)
                ui_reply_error(out, 500, "out of memory");
}

int ui_api_quick(const ui_req_t *q) {
        int64_t id;
        int stop;
        if (strcmp(q->method, "GET") && strcmp(q->method, "HEAD"))
                return 0;
        if (!strcmp(q->path, "/api/topologies"))
                return !param(q, "window") && ui_figures_fresh(q->ui->figures);
        return !strcmp(q->path, "/") || !strcmp(q->path, "/index.html") ||
               !strcmp(q->path, "/api/history") ||
               (!ui_parse_job_path(q->path, &id, &stop) && !stop);
}

void ui_api_handle(ui_req_t *q, ui_reply_t *out) {
        static const char *const none[] = {NULL};
        int post                        = !strcmp(q->method, "POST");
        int64_t id;
        int stop;
        if (!ui_parse_job_path(q->path, &id, &stop)) {
                if (post != stop)
                        ui_reply_error(out, 405, "%s %s: use %s", q->method,
                                       q->path, stop ? "POST" : "GET");
                else if (params_ok(q, none, out))
                        ui_replay_get(q, id, stop, out);
                return;
        }
        if (!strcmp(q->path, "/api/replay")) {
                if (post)
                        api_replay_post(q, out);
                else
                        ui_reply_error(out, 405, "GET /api/replay: use POST");
                return;
        }
        if (post) {
                ui_reply_error(out,
                               strncmp(q->path, "/api/", 5) &&
                                               strcmp(q->path, "/metrics") &&
                                               strcmp(q->path, "/")
                                       ? 404
                                       : 405,
                               "POST %s: not a state-changing request",
                               q->path);
                return;
        }
        if (!strcmp(q->path, "/") || !strcmp(q->path, "/index.html")) {
                if (params_ok(q, none, out))
                        page_reply(out);
        } else if (!strcmp(q->path, "/api/topologies"))
                api_topologies(q, out);
        else if (!strcmp(q->path, "/api/groups"))
                api_groups(q, out);
        else if (!strcmp(q->path, "/api/history"))
                api_history(q, out);
        else if (!strcmp(q->path, "/metrics"))
                api_metrics(q, out);
        else if (!strcmp(q->path, "/api/dlq"))
                api_dlq(q, out);
        else if (!strncmp(q->path, "/api/dlq/", 9))
                api_message(q, out);
        else if (!strcmp(q->path, "/api/export"))
                api_export(q, out);
        else
                ui_reply_error(out, 404, "no such page: %s", q->path);
}
