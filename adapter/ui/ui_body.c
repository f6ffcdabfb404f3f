/*
 * The JSON body of POST /api/replay read into dlq replay's options, plain
 * data (no server, no Kafka) so that a fuzz target can feed it anything:
 * every field checked for its type and bounds, unknown fields refused.
 */
#include "ui_body.h"

#include "ui_http.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int bad(char *errstr, size_t errstr_size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int bad(char *errstr, size_t errstr_size, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, errstr_size, fmt, ap);
        va_end(ap);
        return -1;
}

int ui_filter_set(dlq_opts_t *o,
                  const char *name,
                  const char *v,
                  char *errstr,
                  size_t errstr_size) {
        char reason[256];
        if (!strcmp(name, "class") && !kretry_dlq_class_known(v))
                return bad(errstr, errstr_size,
                           "class: \"%.64s\" is not one of transient, "
                           "permanent, exhausted, expired, schema, parked",
                           v);
        int rc = dlq_filter_set(o, name, v, reason, sizeof(reason));
        if (rc == -2)
                return bad(errstr, errstr_size, "unknown filter \"%.64s\"",
                           name);
        if (rc)
                return bad(errstr, errstr_size, "%s: %s", name, reason);
        return 0;
}

typedef struct {
        dlq_opts_t *o;
        const kretry_topology_t *t;
        dlq_row_t **rows;
        char *err;
        size_t err_size;
} body_t;

static int set_rows(body_t *b, json_t *rows) {
        size_t n = json_array_size(rows);
        if (!json_is_array(rows) || n == 0 || n > UI_MAX_ROWS)
                return bad(b->err, b->err_size,
                           "rows: expected an array of 1..%d "
                           "{\"partition\": P, \"offset\": O}",
                           UI_MAX_ROWS);
        free(*b->rows);
        if (!(*b->rows = calloc(n, sizeof(**b->rows))))
                return -2;
        for (size_t i = 0; i < n; i++) {
                json_t *r = json_array_get(rows, i);
                json_t *p = json_object_get(r, "partition");
                json_t *o = json_object_get(r, "offset");
                if (!json_is_object(r) || json_object_size(r) != 2 ||
                    !json_is_integer(p) || !json_is_integer(o) ||
                    json_integer_value(p) < 0 ||
                    json_integer_value(p) > INT32_MAX ||
                    json_integer_value(o) < 0)
                        return bad(b->err, b->err_size,
                                   "rows: each one {\"partition\": P, "
                                   "\"offset\": O}, both >= 0");
                (*b->rows)[i] = (dlq_row_t){(int32_t)json_integer_value(p),
                                            json_integer_value(o)};
        }
        b->o->rows    = *b->rows;
        b->o->row_cnt = n;
        return 0;
}

/* A string field's value, bounded and without NUL; NULL otherwise. */
static const char *text(json_t *v) {
        if (!json_is_string(v) || json_string_length(v) > UI_MAX_PARAM ||
            strlen(json_string_value(v)) != json_string_length(v))
                return NULL;
        return json_string_value(v);
}

static int set_filter(body_t *b, json_t *f) {
        const char *k;
        json_t *v;
        char err[512];
        if (!json_is_object(f))
                return bad(b->err, b->err_size, "filter: expected an object");
        json_object_foreach(f, k, v) {
                if (json_is_null(v) ||
                    (json_is_string(v) && !json_string_length(v)))
                        continue;
                if (!text(v))
                        return bad(b->err, b->err_size,
                                   "filter: values are strings of at most "
                                   "%d bytes",
                                   UI_MAX_PARAM);
                if (ui_filter_set(b->o, k, text(v), err, sizeof(err)))
                        return bad(b->err, b->err_size, "filter: %s", err);
        }
        return 0;
}

static int set_number(body_t *b, const char *k, json_t *v) {
        double d = json_number_value(v);
        if (!strcmp(k, "rate")) {
                if (!json_is_number(v) || !(d > 0) || d > 1e7)
                        return bad(b->err, b->err_size,
                                   "rate: expected messages per second, > 0 "
                                   "and <= 10000000");
                b->o->rate = d;
        } else if (!strcmp(k, "max")) {
                if (!json_is_integer(v) || json_integer_value(v) < 1)
                        return bad(b->err, b->err_size,
                                   "max: expected an integer >= 1");
                b->o->max = json_integer_value(v);
        } else {
                if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                    json_integer_value(v) > 100000)
                        return bad(b->err, b->err_size,
                                   "batch: expected 1..100000");
                b->o->batch = (int)json_integer_value(v);
        }
        return 0;
}

static int set_flag(body_t *b, const char *k, json_t *v) {
        if (!json_is_boolean(v))
                return bad(b->err, b->err_size, "%s: expected true or false",
                           k);
        *(!strcmp(k, "dry_run") ? &b->o->dry_run : &b->o->restart) =
                json_is_true(v);
        return 0;
}

static int set_to(body_t *b, json_t *v) {
        const kretry_topology_t *t = b->t;
        if (!(b->o->to = text(v)))
                return bad(b->err, b->err_size,
                           "to: expected source or tier:N");
        if (dlq_replay_tier(b->o->to, t) < 0)
                return bad(b->err, b->err_size,
                           "to: %s is not a target of topology \"%s\": use "
                           "source (%s) or tier:1..%d",
                           b->o->to, t->name, t->source, t->tier_cnt);
        return 0;
}

int ui_replay_body(json_t *body,
                   const kretry_topology_t *t,
                   dlq_opts_t *o,
                   dlq_row_t **rows,
                   char *errstr,
                   size_t errstr_size) {
        body_t b = {o, t, rows, errstr, errstr_size};
        const char *k;
        json_t *v;
        int rc = 0;
        *rows  = NULL;
        if (!json_is_object(body))
                return bad(errstr, errstr_size, "expected a JSON object");
        json_object_foreach(body, k, v) {
                if (rc)
                        break;
                if (!strcmp(k, "topology"))
                        continue;
                else if (!strcmp(k, "filter"))
                        rc = set_filter(&b, v);
                else if (!strcmp(k, "rows"))
                        rc = set_rows(&b, v);
                else if (!strcmp(k, "to"))
                        rc = set_to(&b, v);
                else if (!strcmp(k, "rate") || !strcmp(k, "max") ||
                         !strcmp(k, "batch"))
                        rc = set_number(&b, k, v);
                else if (!strcmp(k, "dry_run") || !strcmp(k, "restart"))
                        rc = set_flag(&b, k, v);
                else
                        rc = bad(errstr, errstr_size, "unknown field \"%.64s\"",
                                 k);
        }
        return rc;
}
