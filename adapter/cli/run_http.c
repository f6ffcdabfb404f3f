#include "run_http.h"

#include "cli.h"
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "kretry run"

const char run_http_usage[] =
        "  -u, --http URL           POST each message to URL instead of "
        "--exec\n"
        "      --http-header 'NAME: VALUE'  add a request header; "
        "repeatable; ${VAR}\n"
        "                           expanded; values are never logged\n"
        "      --http-timeout D     per request, connecting included "
        "(default 30s)\n"
        "      --http-content-type T  Content-Type (default "
        "application/octet-stream;\n"
        "                           application/json with --http-body "
        "json)\n"
        "      --http-body raw|json raw: the value byte for byte "
        "(default); json: with\n"
        "                           value.format avro, the decoded record "
        "as JSON\n"
        "      --http-ce-type T     the ce-type header (default "
        "kretry.message)\n"
        "      --http-ca FILE       CA certificates to verify the server "
        "with (PEM)\n"
        "      --http-cert FILE     client certificate (PEM); "
        "--http-key FILE its key\n"
        "      --http-retry-status LIST  statuses that mean RETRY too, "
        "e.g. 409,520-599\n"
        "      --http-fail-status LIST   statuses that mean FAIL instead, "
        "e.g. 503\n";

static int header_add(run_http_args_t *a, const char *arg) {
        const char **p =
                realloc(a->headers, sizeof(*p) * (size_t)(a->header_cnt + 1));
        if (!p)
                return 1;
        a->headers                  = p;
        a->headers[a->header_cnt++] = arg;
        return 0;
}

int run_http_opt(run_http_args_t *a, int c, const char *arg) {
        const char **slot[] = {
                [RUN_HTTP_TIMEOUT - RUN_HTTP_URL]      = &a->timeout,
                [RUN_HTTP_CONTENT_TYPE - RUN_HTTP_URL] = &a->content_type,
                [RUN_HTTP_CE_TYPE - RUN_HTTP_URL]      = &a->ce_type,
                [RUN_HTTP_BODY - RUN_HTTP_URL]         = &a->body,
                [RUN_HTTP_CA - RUN_HTTP_URL]           = &a->ca,
                [RUN_HTTP_CERT - RUN_HTTP_URL]         = &a->cert,
                [RUN_HTTP_KEY - RUN_HTTP_URL]          = &a->key,
                [RUN_HTTP_RETRY_STATUS - RUN_HTTP_URL] = &a->retry_status,
                [RUN_HTTP_FAIL_STATUS - RUN_HTTP_URL]  = &a->fail_status,
        };
        if (c == 'u' || c == RUN_HTTP_URL) {
                a->url = arg;
                return 0;
        }
        if (c == RUN_HTTP_HEADER)
                return header_add(a, arg);
        if (c < RUN_HTTP_URL || c > RUN_HTTP_FAIL_STATUS)
                return -2;
        *slot[c - RUN_HTTP_URL] = arg;
        return 0;
}

int run_http_given(const run_http_args_t *a) {
        return a->url || a->header_cnt || a->timeout || a->content_type ||
               a->ce_type || a->body || a->ca || a->cert || a->key ||
               a->retry_status || a->fail_status;
}

void run_http_args_free(run_http_args_t *a) {
        free(a->headers);
}

static int fail(const char *flag, const char *what) {
        fprintf(stderr, PROG ": %s: %s\n(see 'kretry run --help')\n", flag,
                what);
        return KRETRY_EX_USAGE;
}

static long conf_long(const kretry_conf_t *conf, const char *name) {
        char v[64] = "0";
        kretry_conf_get(conf, name, v, sizeof(v));
        return strtol(v, NULL, 10);
}

/* The expanded --http-header lines, owned by the caller. */
typedef struct {
        char **lines;
        size_t cnt;
} header_lines_t;

static int headers_expand(const run_http_args_t *a, header_lines_t *h) {
        char err[512];
        h->lines = calloc((size_t)a->header_cnt + 1, sizeof(char *));
        if (!h->lines)
                return 1;
        for (int i = 0; i < a->header_cnt; i++) {
                if (!(h->lines[h->cnt] = kretry_http_header_arg(
                              a->headers[i], err, sizeof(err))))
                        return fail("--http-header", err);
                h->cnt++;
        }
        return 0;
}

static void headers_free(header_lines_t *h) {
        for (size_t i = 0; i < h->cnt; i++)
                free(h->lines[i]);
        free(h->lines);
        h->cnt = 0;
}

static int opts_fill(const run_http_args_t *a,
                     const kretry_conf_t *conf,
                     kretry_http_opts_t *o) {
        char err[512], fmt[16] = "";
        int64_t ms;
        o->url          = a->url;
        o->content_type = a->content_type;
        o->ca_file      = a->ca;
        o->cert         = a->cert;
        o->key          = a->key;
        if (a->ce_type)
                o->ce_type = a->ce_type;
        o->concurrency = (int)conf_long(conf, "handler.concurrency");
        o->error_max   = (size_t)conf_long(conf, "error.max.length");
        if (a->timeout) {
                if (kretry_parse_duration_ms(a->timeout, &ms, err,
                                             sizeof(err)) ||
                    ms <= 0)
                        return fail("--http-timeout",
                                    "expected a positive duration such as "
                                    "500ms or 30s");
                o->timeout_ms = (long)ms;
        }
        if (a->body && strcmp(a->body, "raw") && strcmp(a->body, "json"))
                return fail("--http-body", "expected raw or json");
        kretry_conf_get(conf, "value.format", fmt, sizeof(fmt));
        o->body_json = a->body && !strcmp(a->body, "json");
        if (o->body_json && strcmp(fmt, "avro"))
                return fail("--http-body json",
                            "needs value.format avro (a decoded record)");
        if ((a->retry_status &&
             kretry_http_statuses_move(o, a->retry_status, KRETRY_RETRY, err,
                                       sizeof(err))))
                return fail("--http-retry-status", err);
        if ((a->fail_status &&
             kretry_http_statuses_move(o, a->fail_status, KRETRY_FAIL, err,
                                       sizeof(err))))
                return fail("--http-fail-status", err);
        return 0;
}

/* The client's header lines, which it borrows. */
static header_lines_t lines;

int run_http_start(const run_http_args_t *a,
                   const char *topology,
                   const char *name,
                   kretry_conf_t *conf,
                   int thread_set,
                   kretry_http_t **hp) {
        kretry_http_opts_t o;
        char err[512];
        int rc;
        (void)topology;
        (void)name;
        *hp = NULL;
        if (!a->url)
                return 0;
        kretry_http_opts_init(&o);
        if ((rc = headers_expand(a, &lines)) || (rc = opts_fill(a, conf, &o)))
                goto err;
        o.extra     = (const char *const *)lines.lines;
        o.extra_cnt = lines.cnt;
        /* The handler only queues a request: the polling thread runs it, and
         * no worker thread is needed. */
        if (!thread_set &&
            kretry_conf_set(conf, "handler.thread", "poll", err, sizeof(err))) {
                rc = fail("handler.thread", err);
                goto err;
        }
        if (!(*hp = kretry_http_new(&o, err, sizeof(err)))) {
                fprintf(stderr, PROG ": %s\n", err);
                rc = KRETRY_EX_USAGE;
                goto err;
        }
        return 0;
err:
        headers_free(&lines);
        return rc;
}

void run_http_stop(kretry_http_t *h) {
        kretry_http_destroy(h);
        headers_free(&lines);
}
