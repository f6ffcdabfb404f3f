#include "run_http.h"

#include "cli_util.h"
#include "parse.h"
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "kretry run"

const char run_http_usage[] =
        "  -u, --http URL           POST each message to URL instead of "
        "--exec\n"
        "      --http-header 'NAME: VALUE'  add a request header; "
        "repeatable; ${VAR}\n"
        "                           and ${file:/PATH} expanded; values are "
        "never logged;\n"
        "                           refused (exit 64): headers that frame "
        "or route\n"
        "                           the request: Content-Length, "
        "Transfer-Encoding,\n"
        "                           Host, Connection, Keep-Alive, TE, "
        "Trailer,\n"
        "                           Upgrade, Expect, Proxy-*\n"
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

/* The topology's headers first, then --http-header's. */
static int headers_expand(const run_http_args_t *a,
                          const kretry_topo_http_t *th,
                          header_lines_t *h) {
        char err[512];
        size_t tn = th ? th->header_cnt : 0;
        h->lines  = calloc(tn + (size_t)a->header_cnt + 1, sizeof(char *));
        if (!h->lines)
                return 1;
        for (; h->cnt < tn; h->cnt++)
                if (!(h->lines[h->cnt] = strdup(th->headers[h->cnt])))
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

/* @p a: the flags, with what they leave unset taken from the topology. */
static int opts_fill(const run_http_args_t *a,
                     const kretry_topo_http_t *th,
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
        if (th && th->timeout_ms > 0)
                o->timeout_ms = (long)th->timeout_ms;
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
        o->body_json = a->body ? !strcmp(a->body, "json") : th && th->body_json;
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

/* The client's header lines and the topology file, which it borrows. */
static header_lines_t lines;
static kretry_topology_file_t *topo_file;

/* handler.http of the topology kretry run loads, or NULL. Its errors were
 * reported when the configuration was loaded from it. */
static const kretry_topo_http_t *topo_http(const char *path, const char *name) {
        kretry_diags_t d;
        const kretry_topology_t *t = NULL;
        if (!path)
                return NULL;
        kretry_diags_init(&d);
        topo_file = kretry_topology_file_load(path, &d);
        kretry_diags_clear(&d);
        if (topo_file)
                t = name ? kretry_topology_find(topo_file, name)
                    : kretry_topology_count(topo_file) == 1
                            ? kretry_topology_at(topo_file, 0)
                            : NULL;
        return t && t->http.url ? &t->http : NULL;
}

/* The flags over the topology's handler.http: a flag given wins. */
static run_http_args_t args_merge(const run_http_args_t *a,
                                  const kretry_topo_http_t *th) {
        run_http_args_t m = *a;
        if (!th)
                return m;
        const char **dst[]      = {&m.url,          &m.content_type, &m.ce_type,
                                   &m.ca,           &m.cert,         &m.key,
                                   &m.retry_status, &m.fail_status};
        const char *const src[] = {th->url,
                                   th->content_type,
                                   th->ce_type,
                                   th->ca_file,
                                   th->cert_file,
                                   th->key_file,
                                   th->retry_statuses,
                                   th->fail_statuses};
        for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
                if (!*dst[i])
                        *dst[i] = src[i];
        return m;
}

int run_http_start(const run_http_args_t *a,
                   const char *topology,
                   const char *name,
                   kretry_conf_t *conf,
                   int thread_set,
                   kretry_http_t **hp) {
        kretry_http_opts_t o;
        char err[512], held[16];
        int rc;
        *hp = NULL;
        /* --exec given: the command is the handler, whatever the file says. */
        const kretry_topo_http_t *th =
                a->exec ? NULL : topo_http(topology, name);
        run_http_args_t m = args_merge(a, th);
        if (!m.url) {
                rc = 0;
                goto release; /* no HTTP handler */
        }
        kretry_http_opts_init(&o);
        if ((rc = headers_expand(&m, th, &lines)) ||
            (rc = opts_fill(&m, th, conf, &o)))
                goto release;
        o.extra     = (const char *const *)lines.lines;
        o.extra_cnt = lines.cnt;
        /* The handler only queues a request: the polling thread runs it, and
         * no worker thread is needed. */
        if (!thread_set &&
            kretry_conf_set(conf, "handler.thread", "poll", err, sizeof(err))) {
                rc = fail("handler.thread", err);
                goto release;
        }
        /* handler.concurrency is the requests open at once; the adapter
         * may hold as many again, built and waiting for a slot. */
        snprintf(held, sizeof(held), "%d", kretry_http_held_max(o.concurrency));
        if (kretry_conf_set(conf, "handler.concurrency", held, err,
                            sizeof(err))) {
                rc = fail("handler.concurrency", err);
                goto release;
        }
        if (!(*hp = kretry_http_new(&o, err, sizeof(err)))) {
                fprintf(stderr, PROG ": %s\n", err);
                rc = KRETRY_EX_USAGE;
                goto release;
        }
        return 0;
release: /* what no client borrows */
        headers_free(&lines);
        kretry_topology_file_destroy(topo_file);
        topo_file = NULL;
        return rc;
}

void run_http_stop(kretry_http_t *h) {
        kretry_http_destroy(h);
        headers_free(&lines);
        kretry_topology_file_destroy(topo_file);
        topo_file = NULL;
}
