/*
 * kretry ui's HTTP server: libmicrohttpd with a fixed pool of polling
 * threads (epoll or poll, never a thread per connection), bounded in
 * connections in all, in header memory and body size, and closing a
 * connection idle for UI_CONN_TIMEOUT_S or whose headers take longer than
 * UI_HEADER_DEADLINE_MS, and beyond UI_MAX_WAITING connections waiting for
 * their headers the one that waited longest (ui_deadline.c) — so
 * connections that never finish their headers cost a socket each, not a
 * thread, for seconds, and cannot hold every slot. No bound per client
 * address: on loopback, the default, and behind a reverse proxy, the way
 * to expose the page, every client has the same one. Requests that wait on the
 * cluster are answered by ui_pool.c's workers (the connection suspended
 * meanwhile); the page, the cached figures and the history are answered at
 * once.
 *
 * Before any route runs, every request is checked here: its method, the
 * length of its whole target (path and query), its Host (one, and without
 * a token only loopback names: no DNS rebinding), its token when one is
 * set, and for a POST its origin (Origin, Sec-Fetch-Site) and its JSON
 * content type, which a cross-origin form cannot send without a preflight.
 */
#include "ui.h"

#include "cli_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define UI_MAX_URL 1024
/* Connections in all, and of them waiting for their headers: a new one
 * beyond UI_MAX_WAITING sheds the oldest, so the rest of the slots stay
 * for requests being answered and a new connection always gets in. */
#define UI_MAX_CONNECTIONS 256
#define UI_MAX_WAITING 128
#define UI_CONN_TIMEOUT_S 10u
#define UI_POLL_THREADS 2
#define UI_WORKERS 4
#define UI_MAX_QUEUED 64

/* One request's state across libmicrohttpd's calls (made in the
 * URI-log callback, freed when the request completes). A polling thread
 * owns it, except between ui_pool_push() and the worker's
 * MHD_resume_connection(): then the worker writes rep and ready. */
typedef struct {
        ui_work_t work; /* first: the pool's item */
        ui_t *ui;
        struct MHD_Connection *c;
        const char *url, *method; /* libmicrohttpd's, valid till done */
        char *body;
        size_t len;
        size_t target_len; /* the request target, query included */
        int started, answered, queued;
        atomic_int ready; /* rep holds the worker's answer */
        ui_reply_t rep;
} conn_t;

static const char *header(struct MHD_Connection *c, const char *name) {
        return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static void add_headers(struct MHD_Response *r, const ui_reply_t *rep) {
        MHD_add_response_header(r, "Content-Type", rep->type);
        MHD_add_response_header(r, "Cache-Control", "no-store");
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(r, "X-Frame-Options", "DENY");
        MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
        MHD_add_response_header(
                r, "Content-Security-Policy",
                "default-src 'none'; script-src 'unsafe-inline'; style-src "
                "'unsafe-inline'; img-src data:; connect-src 'self'; "
                "form-action 'none'; frame-ancestors 'none'; base-uri 'none'");
        if (rep->disposition[0])
                MHD_add_response_header(r, "Content-Disposition",
                                        rep->disposition);
        if (rep->status == 401)
                MHD_add_response_header(r, "WWW-Authenticate",
                                        "Bearer realm=\"kretry ui\"");
}

static enum MHD_Result send_reply(struct MHD_Connection *c, ui_reply_t *rep) {
        struct MHD_Response *r;
        if (rep->fd >= 0)
                r = MHD_create_response_from_fd(rep->fd_size, rep->fd);
        else
                r = MHD_create_response_from_buffer(rep->len, rep->body,
                                                    MHD_RESPMEM_MUST_FREE);
        if (!r) {
                if (rep->fd >= 0)
                        close(rep->fd);
                else
                        free(rep->body);
                return MHD_NO;
        }
        add_headers(r, rep);
        enum MHD_Result ret = MHD_queue_response(c, rep->status, r);
        MHD_destroy_response(r);
        return ret;
}

/* The checks every request passes before a route runs. Returns 1 with an
 * error in @p rep when it is refused. */
static enum MHD_Result
count_host(void *cls, enum MHD_ValueKind kind, const char *k, const char *v) {
        (void)kind;
        (void)v;
        if (!strcasecmp(k, "Host"))
                (*(int *)cls)++;
        return MHD_YES;
}

static int host_count(struct MHD_Connection *c) {
        int n = 0;
        MHD_get_connection_values(c, MHD_HEADER_KIND, count_host, &n);
        return n;
}

static int refused(ui_t *ui,
                   struct MHD_Connection *c,
                   const conn_t *cn,
                   const char *url,
                   const char *method,
                   ui_reply_t *rep) {
        int post         = !strcmp(method, "POST");
        const char *host = header(c, "Host");
        const char *type = header(c, "Content-Type");
        const char *len  = header(c, "Content-Length");
        int64_t n;
        if (!post && strcmp(method, "GET") && strcmp(method, "HEAD"))
                ui_reply_error(rep, 405, "%.16s: only GET and POST", method);
        else if (strlen(url) > UI_MAX_URL || cn->target_len > UI_MAX_URL)
                ui_reply_error(rep, 414, "the URL is longer than %d bytes",
                               UI_MAX_URL);
        else if (host_count(c) > 1)
                ui_reply_error(rep, 400, "more than one Host header");
        else if (!ui->token && !ui_host_is_loopback(host, ui->port))
                ui_reply_error(rep, 403,
                               "Host \"%.64s\" is not this loopback server "
                               "(without a token only localhost, 127.0.0.1 "
                               "and [::1] are served)",
                               host ? host : "");
        else if (ui->token &&
                 !ui_token_equal(
                         ui_request_token(
                                 header(c, "Authorization"),
                                 MHD_lookup_connection_value(
                                         c, MHD_GET_ARGUMENT_KIND, "token")),
                         ui->token))
                ui_reply_error(rep, 401,
                               "a token is required: Authorization: Bearer "
                               "TOKEN, or ?token=TOKEN");
        else if (post && ui_cross_origin(header(c, "Origin"),
                                         header(c, "Sec-Fetch-Site"), host))
                ui_reply_error(rep, 403,
                               "cross-origin requests may not change "
                               "anything");
        else if (post && !ui_media_type_is(type, "application/json"))
                ui_reply_error(rep, 415,
                               "POST bodies are JSON (Content-Type: "
                               "application/json)");
        else if (post && len && ui_parse_int(len, 0, UI_MAX_BODY, &n))
                ui_reply_error(rep, 413, "the body is larger than %d bytes",
                               UI_MAX_BODY);
        else
                return 0;
        return 1;
}

/* A worker's turn: answer, then hand the connection back to its polling
 * thread, which sends the reply (on_request, cn->ready). */
static void run_queued(ui_work_t *w, int cancelled) {
        conn_t *cn = (conn_t *)w;
        ui_req_t q = {cn->ui, cn->c, cn->method, cn->url, cn->body, cn->len};
        cn->rep.fd = -1;
        if (cancelled)
                ui_reply_error(&cn->rep, 503, "kretry ui is stopping");
        else
                ui_api_handle(&q, &cn->rep);
        atomic_store(&cn->ready, 1);
        MHD_resume_connection(cn->c);
}

static enum MHD_Result dispatch(ui_t *ui,
                                struct MHD_Connection *c,
                                const char *url,
                                const char *method,
                                conn_t *cn) {
        ui_req_t q = {ui, c, method, url, cn->body, cn->len};
        /* Any authorised request means someone watches: the figures are
         * taken at the interval again (a round now if one is due). */
        ui_figures_watch(ui->figures);
        if (ui_api_quick(&q)) {
                ui_reply_t rep = {.fd = -1};
                ui_api_handle(&q, &rep);
                cn->answered = 1;
                return send_reply(c, &rep);
        }
        /* Suspended before it is queued: a worker may resume it at once. */
        cn->ui       = ui;
        cn->c        = c;
        cn->url      = url;
        cn->method   = method;
        cn->queued   = 1;
        cn->work.run = run_queued;
        MHD_suspend_connection(c);
        if (ui_pool_push(ui->pool, &cn->work)) {
                cn->rep.fd = -1;
                ui_reply_error(&cn->rep, 503,
                               "busy: %d requests are waiting on the cluster",
                               UI_MAX_QUEUED);
                atomic_store(&cn->ready, 1);
                MHD_resume_connection(c);
        }
        return MHD_YES;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *c,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload,
                                  size_t *upload_size,
                                  void **con_cls) {
        ui_t *ui   = cls;
        conn_t *cn = *con_cls;
        (void)version;
        if (!cn)
                return MHD_NO; /* the URI-log callback ran out of memory */
        if (!cn->started) {
                ui_reply_t rep = {.fd = -1};
                cn->started    = 1;
                ui_deadline_reading(ui->deadline, c, 0);
                if (refused(ui, c, cn, url, method, &rep)) {
                        cn->answered = 1;
                        return send_reply(c, &rep);
                }
                if (strcmp(method, "POST"))
                        return dispatch(ui, c, url, method, cn);
                return MHD_YES;
        }
        if (cn->answered) {
                *upload_size = 0; /* the rest of a refused body */
                return MHD_YES;
        }
        if (cn->queued) {
                if (!atomic_load(&cn->ready))
                        return MHD_YES;
                cn->answered = 1;
                return send_reply(c, &cn->rep);
        }
        if (*upload_size) {
                if (cn->len + *upload_size > UI_MAX_BODY) {
                        ui_reply_t rep = {.fd = -1};
                        ui_reply_error(&rep, 413,
                                       "the body is larger than %d bytes",
                                       UI_MAX_BODY);
                        cn->answered = 1;
                        *upload_size = 0;
                        return send_reply(c, &rep);
                }
                char *b = realloc(cn->body, cn->len + *upload_size + 1);
                if (!b)
                        return MHD_NO;
                memcpy(b + cn->len, upload, *upload_size);
                cn->body = b;
                cn->len += *upload_size;
                cn->body[cn->len] = '\0';
                *upload_size      = 0;
                return MHD_YES;
        }
        return dispatch(ui, c, url, method, cn);
}

/* Called with the whole request target before libmicrohttpd splits off
 * the query: what it returns is the request's state (on_request's
 * *con_cls). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
        conn_t *cn = calloc(1, sizeof(*cn));
        (void)cls;
        (void)c;
        if (cn)
                cn->target_len = strlen(uri);
        return cn;
}

static void on_done(void *cls,
                    struct MHD_Connection *c,
                    void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
        conn_t *cn = *con_cls;
        ui_t *ui   = cls;
        (void)toe;
        ui_deadline_reading(ui->deadline, c, 1); /* the next request's */
        if (cn) {
                /* A reply a worker made but that was never sent. */
                if (cn->queued && !cn->answered && atomic_load(&cn->ready)) {
                        free(cn->rep.body);
                        if (cn->rep.fd >= 0)
                                close(cn->rep.fd);
                }
                free(cn->body);
                free(cn);
        }
        *con_cls = NULL;
}

int ui_server_start(ui_t *ui, char *errstr, size_t errstr_size) {
        struct sockaddr_storage ss;
        cli_sockaddr(ui->listen.host, ui->listen.port, ui->listen.ipv6, &ss);
        ui->port       = ui->listen.port;
        unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD |
                         MHD_ALLOW_SUSPEND_RESUME |
                         (ui->listen.ipv6 ? MHD_USE_IPv6 : 0);
        if (!(ui->pool = ui_pool_new(UI_WORKERS, UI_MAX_QUEUED)) ||
            !(ui->deadline = ui_deadline_start(UI_HEADER_DEADLINE_MS,
                                               UI_MAX_WAITING))) {
                snprintf(errstr, errstr_size, "cannot start the workers");
                ui_server_stop(ui);
                return -1;
        }
        errno = 0;
        ui->d = MHD_start_daemon(
                flags, (uint16_t)ui->listen.port, NULL, NULL, on_request, ui,
                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                MHD_OPTION_THREAD_POOL_SIZE, (unsigned)UI_POLL_THREADS,
                MHD_OPTION_CONNECTION_LIMIT, (unsigned)UI_MAX_CONNECTIONS,
                MHD_OPTION_CONNECTION_TIMEOUT, UI_CONN_TIMEOUT_S,
                MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
                MHD_OPTION_NOTIFY_COMPLETED, on_done, ui,
                MHD_OPTION_NOTIFY_CONNECTION, ui_deadline_notify, ui->deadline,
                MHD_OPTION_END);
        if (!ui->d) {
                snprintf(errstr, errstr_size, "cannot listen on %s:%d: %s",
                         ui->listen.host, ui->listen.port,
                         errno ? strerror(errno) : "libmicrohttpd refused");
                ui_server_stop(ui);
                return -1;
        }
        const union MHD_DaemonInfo *info =
                MHD_get_daemon_info(ui->d, MHD_DAEMON_INFO_BIND_PORT);
        ui->port = info && info->port ? info->port : ui->listen.port;
        return 0;
}

void ui_server_stop(ui_t *ui) {
        /* The workers first: each queued request is answered (503) and its
         * connection resumed, so the daemon stops with none suspended;
         * requests arriving meanwhile are refused by the stopped pool. */
        ui_pool_stop(ui->pool);
        if (ui->d)
                MHD_stop_daemon(ui->d);
        ui->d = NULL;
        ui_pool_destroy(ui->pool);
        ui->pool = NULL;
        ui_deadline_stop(ui->deadline);
        ui->deadline = NULL;
}
