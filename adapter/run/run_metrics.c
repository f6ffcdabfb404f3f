/*
 * kretry run --metrics: a small read-only HTTP server (libmicrohttpd, one
 * internal polling thread: every answer is ready at once), bounded in
 * connections, header memory and idle time, GET and HEAD only. Figures
 * and health come from what the thread driving the adapter published
 * (run_metrics.h), never from the engine's state.
 */
#include "run_metrics.h"

#include "cli_util.h"
#include "ops_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "kretry run"
#define METRICS_MAX_CONNECTIONS 16
#define METRICS_CONN_TIMEOUT_S 10u
#define METRICS_MAX_TEXT (1024 * 1024) /* a render larger is cut */

const char run_metrics_usage[] =
        "      --metrics ADDR       serve /metrics, /healthz and /readyz on "
        "ADDR: PORT or\n"
        "                           :PORT on 127.0.0.1, 0.0.0.0:PORT on "
        "every interface\n"
        "                           (Kubernetes probes reach the pod's "
        "address)\n";

enum { ST_STARTING, ST_RUNNING, ST_STOPPING, ST_FAILED };

/* Who writes what: `state` the main thread and the signal handler;
 * `beat_ms`, `text`, `text_len` the thread driving the adapter (under
 * `lock` for the text); `adapter` the main thread, before and after the
 * adapter runs. The server's thread only reads. */
struct run_metrics_s {
        struct MHD_Daemon *d;
        atomic_int state;
        atomic_llong beat_ms; /* ops_mono_ms() of the last stats document */
        _Atomic(const kretry_adapter_t *) adapter;
        int64_t stall_ms; /* /healthz: the loop may not rest longer */
        pthread_mutex_t lock;
        char *text; /* the last render, NULL before the first document */
        size_t text_len;
};

typedef struct {
        char host[64];
        int port, ipv6;
} addr_t;

static int parse_port(const char *s, int *port) {
        char *end;
        if (!*s || strlen(s) > 5 || *s < '0' || *s > '9')
                return -1;
        long v = strtol(s, &end, 10);
        if (*end || v > 65535)
                return -1;
        *port = (int)v;
        return 0;
}

/* "PORT", ":PORT" (loopback), "HOST:PORT" with an IPv4 address or
 * localhost, "[IPv6]:PORT". */
static int addr_parse(const char *s, addr_t *a) {
        const char *colon = strrchr(s, ':');
        unsigned char buf[16];
        size_t hlen;
        memset(a, 0, sizeof(*a));
        snprintf(a->host, sizeof(a->host), "127.0.0.1");
        if (!colon)
                return parse_port(s, &a->port);
        if (parse_port(colon + 1, &a->port))
                return -1;
        if (colon == s)
                return 0;
        if (*s == '[') {
                if (colon[-1] != ']')
                        return -1;
                a->ipv6 = 1;
                s++;
                hlen = (size_t)(colon - 1 - s);
        } else {
                hlen = (size_t)(colon - s);
        }
        if (!hlen || hlen >= sizeof(a->host))
                return -1;
        memcpy(a->host, s, hlen);
        a->host[hlen] = '\0';
        if (!strcmp(a->host, "localhost"))
                snprintf(a->host, sizeof(a->host), "127.0.0.1");
        return inet_pton(a->ipv6 ? AF_INET6 : AF_INET, a->host, buf) == 1 ? 0
                                                                          : -1;
}

int run_metrics_check(const char *addr) {
        addr_t a;
        if (!addr_parse(addr, &a))
                return 0;
        return cli_usage_error(PROG,
                               "--metrics %s: expected PORT, :PORT, "
                               "IPv4:PORT, localhost:PORT or [IPv6]:PORT "
                               "(port 0..65535)",
                               addr);
}

/* The answer to one request; @p body is static or copied by MHD. */
typedef struct {
        unsigned status;
        const char *type;
        char body[256];
} reply_t;

static void reply(reply_t *r, unsigned status, const char *text) {
        r->status = status;
        r->type   = "text/plain; charset=utf-8";
        snprintf(r->body, sizeof(r->body), "%s\n", text);
}

/* 0 when the loop turned within the bound, else how long ago it did. */
static int64_t stalled_ms(const run_metrics_t *m) {
        int64_t age = ops_mono_ms() - atomic_load(&m->beat_ms);
        return age > m->stall_ms ? age : 0;
}

static void healthz(const run_metrics_t *m, reply_t *r) {
        int64_t stall;
        switch (atomic_load(&m->state)) {
        case ST_STARTING:
                reply(r, 200, "starting: checking the topology");
                return;
        case ST_STOPPING:
                reply(r, 200, "stopping");
                return;
        case ST_FAILED:
                reply(r, 503, "stopped on a fatal error");
                return;
        }
        if ((stall = stalled_ms(m))) {
                char text[80];
                snprintf(text, sizeof(text),
                         "the poll loop has not turned for %lld ms",
                         (long long)stall);
                reply(r, 503, text);
        } else {
                reply(r, 200, "ok");
        }
}

static void ready(const kretry_adapter_t *a, reply_t *r) {
        char text[80];
        snprintf(text, sizeof(text), "ready: %lld source partition(s) assigned",
                 (long long)kretry_adapter_counter(a, KRETRY_COUNTER_ASSIGNED,
                                                   0));
        reply(r, 200, text);
}

static void denied(const kretry_adapter_t *a, reply_t *r) {
        char text[200];
        snprintf(text, sizeof(text),
                 "not authorized: the cluster refuses copies, commits or "
                 "reads for want of an ACL (kretry_denied_now %lld; the "
                 "DENIED error in the log names them)",
                 (long long)kretry_adapter_counter(a, KRETRY_COUNTER_DENIED_NOW,
                                                   0));
        reply(r, 503, text);
}

static void readyz(const run_metrics_t *m, reply_t *r) {
        const kretry_adapter_t *a = atomic_load(&m->adapter);
        int state                 = atomic_load(&m->state);
        if (state == ST_STOPPING || state == ST_FAILED)
                reply(r, 503, "stopping");
        else if (state == ST_STARTING || !a)
                reply(r, 503, "starting: checking the topology");
        else if (kretry_adapter_counter(a, KRETRY_COUNTER_ASSIGNMENTS, 0) <= 0)
                reply(r, 503,
                      "waiting for the group to assign partitions"
                      "");
        else if (stalled_ms(m))
                reply(r, 503, "the poll loop is stalled");
        else if (kretry_adapter_counter(a, KRETRY_COUNTER_DENIED_NOW, 0) > 0)
                denied(a, r);
        else
                ready(a, r);
}

static enum MHD_Result
send_reply(struct MHD_Connection *c, const reply_t *r, int allow) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(
                strlen(r->body), (void *)r->body, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, "Content-Type", r->type);
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        if (allow)
                MHD_add_response_header(resp, "Allow", "GET, HEAD");
        enum MHD_Result ret = MHD_queue_response(c, r->status, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* The last render, copied under the lock: the stats callback may be
 * replacing it. */
static enum MHD_Result send_metrics(run_metrics_t *m,
                                    struct MHD_Connection *c) {
        struct MHD_Response *resp = NULL;
        pthread_mutex_lock(&m->lock);
        if (m->text)
                resp = MHD_create_response_from_buffer(m->text_len, m->text,
                                                       MHD_RESPMEM_MUST_COPY);
        pthread_mutex_unlock(&m->lock);
        if (!resp) {
                reply_t r;
                reply(&r, 503,
                      "no figures yet: the first arrive one "
                      "stats.interval.ms after the start");
                return send_reply(c, &r, 0);
        }
        MHD_add_response_header(resp, "Content-Type",
                                "text/plain; version=0.0.4; charset=utf-8");
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        enum MHD_Result ret = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *c,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload,
                                  size_t *upload_size,
                                  void **con_cls) {
        static int answered; /* its address marks a request answered */
        run_metrics_t *m = cls;
        reply_t r;
        (void)version;
        (void)upload;
        if (*con_cls == &answered) {
                *upload_size = 0; /* the rest of a refused body */
                return MHD_YES;
        }
        *con_cls = &answered;
        if (strcmp(url, "/metrics") && strcmp(url, "/healthz") &&
            strcmp(url, "/readyz")) {
                reply(&r, 404,
                      "not found: /metrics, /healthz and /readyz are "
                      "served");
                return send_reply(c, &r, 0);
        }
        if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
                reply(&r, 405, "only GET and HEAD");
                return send_reply(c, &r, 1);
        }
        if (!strcmp(url, "/metrics"))
                return send_metrics(m, c);
        if (!strcmp(url, "/healthz"))
                healthz(m, &r);
        else
                readyz(m, &r);
        return send_reply(c, &r, 0);
}

static int64_t conf_int(const kretry_conf_t *conf, const char *name) {
        char buf[32];
        if (kretry_conf_get(conf, name, buf, sizeof(buf)) != KRETRY_ERR_OK)
                return 0;
        return strtoll(buf, NULL, 10);
}

/* A stats document every second unless the configuration asks otherwise;
 * the loop may rest up to a revocation's wait for handlers, or three
 * intervals, and 5 s more before /healthz says it stalled. */
static int64_t stall_bound(kretry_conf_t *conf) {
        char errstr[256];
        int64_t interval = conf_int(conf, "stats.interval.ms");
        if (interval <= 0) {
                interval = 1000;
                kretry_conf_set(conf, "stats.interval.ms", "1000", errstr,
                                sizeof(errstr));
        }
        int64_t revoke = conf_int(conf, "revoke.timeout.ms");
        return (revoke > 3 * interval ? revoke : 3 * interval) + 5000;
}

/* Started with SIGINT and SIGTERM blocked: they are the run's to handle,
 * and the server's thread inherits the mask. */
static struct MHD_Daemon *daemon_start(run_metrics_t *m, const addr_t *a) {
        struct sockaddr_storage ss;
        sigset_t set, old;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        cli_sockaddr(a->host, a->port, a->ipv6, &ss);
        pthread_sigmask(SIG_BLOCK, &set, &old);
        errno                = 0;
        struct MHD_Daemon *d = MHD_start_daemon(
                MHD_USE_AUTO_INTERNAL_THREAD | (a->ipv6 ? MHD_USE_IPv6 : 0),
                (uint16_t)a->port, NULL, NULL, on_request, m,
                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONNECTIONS,
                MHD_OPTION_CONNECTION_TIMEOUT, METRICS_CONN_TIMEOUT_S,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
                MHD_OPTION_END);
        int err = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = err;
        return d;
}

int run_metrics_start(const char *addr,
                      kretry_conf_t *conf,
                      run_metrics_t **mp) {
        addr_t a;
        run_metrics_t *m = calloc(1, sizeof(*m));
        *mp              = NULL;
        if (!m || addr_parse(addr, &a)) {
                free(m);
                return m ? run_metrics_check(addr) : 1;
        }
        pthread_mutex_init(&m->lock, NULL);
        atomic_init(&m->state, ST_STARTING);
        m->stall_ms = stall_bound(conf);
        if (!(m->d = daemon_start(m, &a))) {
                fprintf(stderr,
                        PROG ": --metrics %s: cannot listen on %s port %d: "
                             "%s\n",
                        addr, a.host, a.port,
                        errno ? strerror(errno) : "libmicrohttpd refused");
                run_metrics_stop(m);
                return KRETRY_EX_USAGE;
        }
        const union MHD_DaemonInfo *info =
                MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
        fprintf(stderr,
                PROG ": metrics on http://%s%s%s:%d/metrics (and /healthz, "
                     "/readyz)\n",
                a.ipv6 ? "[" : "", a.host, a.ipv6 ? "]" : "",
                info && info->port ? (int)info->port : a.port);
        *mp = m;
        return 0;
}

void run_metrics_attach(run_metrics_t *m, const kretry_adapter_t *adapter) {
        if (!m)
                return;
        atomic_store(&m->beat_ms, ops_mono_ms());
        atomic_store(&m->adapter, adapter);
        if (adapter) {
                int starting = ST_STARTING;
                atomic_compare_exchange_strong(&m->state, &starting,
                                               ST_RUNNING);
        }
}

void run_metrics_publish(run_metrics_t *m, const char *json, size_t len) {
        (void)len;
        if (!m)
                return;
        size_t need = kretry_stats_prometheus(json, NULL, 0);
        if (need > METRICS_MAX_TEXT)
                need = METRICS_MAX_TEXT;
        char *text = need ? malloc(need + 1) : NULL;
        if (text)
                kretry_stats_prometheus(json, text, need + 1);
        atomic_store(&m->beat_ms, ops_mono_ms());
        if (!text)
                return; /* the last render stays */
        pthread_mutex_lock(&m->lock);
        free(m->text);
        m->text     = text;
        m->text_len = strlen(text);
        pthread_mutex_unlock(&m->lock);
}

void run_metrics_stopping(run_metrics_t *m) {
        int running = ST_RUNNING, starting = ST_STARTING;
        if (!m)
                return;
        /* Lock-free atomics only: called from a signal handler. */
        if (!atomic_compare_exchange_strong(&m->state, &running, ST_STOPPING))
                atomic_compare_exchange_strong(&m->state, &starting,
                                               ST_STOPPING);
}

void run_metrics_failed(run_metrics_t *m) {
        if (m)
                atomic_store(&m->state, ST_FAILED);
}

void run_metrics_stop(run_metrics_t *m) {
        if (!m)
                return;
        if (m->d)
                MHD_stop_daemon(m->d);
        pthread_mutex_destroy(&m->lock);
        free(m->text);
        free(m);
}
