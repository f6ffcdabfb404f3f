/*
 * The I/O half of kretry run --http: requests built from held messages, one
 * libcurl multi handle on a thread of its own.
 *
 * Threads. The handler (any thread; the polling thread with handler.thread
 * poll) builds a request and appends it to `queue` under `lock`, then wakes
 * the HTTP thread with curl_multi_wakeup(). The HTTP thread owns the multi
 * handle and every request once taken from the queue: it adds them in
 * order while fewer than o.concurrency are open (the adapter holds up to
 * kretry_http_held_max() messages: the others wait built, and the next
 * starts as soon as an answer frees a slot, with no round trip through the
 * polling thread), drives them, decides each answer (http_rules.c) and
 * completes its message with
 * kretry_msg_complete(), after the request was removed from the multi
 * handle (the body may be the held message's value: nothing reads it after
 * the completion).
 */
#include "http_handler.h"

#include "parse.h"
#include "secret.h"

#include <avro.h>
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <time.h>

/* A request, reused: its easy handle keeps the options every request
 * shares, and its headers are written into its own buffer and list (no
 * allocation per message once the pool holds what is in flight). */
typedef struct http_req_s {
        kretry_http_t *h;
        kretry_msg_t *msg; /* held until completed */
        CURL *easy;
        char *text; /* the header lines, NUL-terminated one after another */
        size_t text_len, text_cap;
        struct curl_slist *hdrs; /* libcurl's list, pointing into text */
        size_t hdr_cnt, hdr_cap;
        char *body; /* owned (JSON), or NULL: the message's own value */
        char errbuf[CURL_ERROR_SIZE];
        /* Filled by the HTTP thread from the answer. */
        char status_line[128];
        char code[128];
        char retry_after[128];
        char location[512];
        char *line; /* the body's first line, error_max bytes at most */
        size_t line_len;
        int line_done;
        struct http_req_s *next, *prev;
} http_req_t;

struct kretry_http_s {
        kretry_http_opts_t o;
        CURLM *multi;
        pthread_t thread;
        int started;
        pthread_mutex_t lock;
        /* Under lock. */
        http_req_t *queue, **queue_tail;
        int stop;
        /* Finished requests, reused by the next ones: libcurl's per-handle
         * set-up and the header list's allocations are a good part of a
         * request's cost at many requests a second. */
        http_req_t **idle;
        int idle_cnt, idle_cap;
        /* The HTTP thread's own. */
        http_req_t *open;                /* in the multi handle */
        int open_cnt;                    /* at most o.concurrency */
        http_req_t *ready, **ready_tail; /* built, waiting for a slot */
};

static int64_t wall_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- building a request (the handler's thread) ---- */

/* Room for a line of @p n bytes and its NUL at the end of r->text. */
static char *hdr_room(http_req_t *r, size_t n) {
        if (r->text_len + n + 1 > r->text_cap) {
                size_t cap = r->text_cap ? r->text_cap : 1024;
                while (cap < r->text_len + n + 1)
                        cap *= 2;
                char *t = realloc(r->text, cap);
                if (!t)
                        return NULL;
                r->text     = t;
                r->text_cap = cap;
        }
        return r->text + r->text_len;
}

/* The line hdr_room() gave room for is @p n bytes long. */
static int hdr_end(http_req_t *r, size_t n) {
        r->text[r->text_len + n] = '\0';
        r->text_len += n + 1;
        r->hdr_cnt++;
        return 0;
}

/* "Name: value"; an empty value as "Name;", libcurl's way to send one. */
static int hdr_put(http_req_t *r,
                   const char *prefix,
                   const char *name,
                   const void *v,
                   size_t len) {
        size_t pl = strlen(prefix), nl = strlen(name), n = pl + nl;
        char *p = hdr_room(r, n + 2 + len);
        if (!p)
                return -1;
        memcpy(p, prefix, pl);
        memcpy(p + pl, name, nl);
        if (len) {
                p[n++] = ':';
                p[n++] = ' ';
                memcpy(p + n, v, len);
                n += len;
        } else
                p[n++] = ';';
        return hdr_end(r, n);
}

/* A whole line, as given. */
static int hdr_add(http_req_t *r, const char *line) {
        size_t n = strlen(line);
        char *p  = hdr_room(r, n);
        if (!p)
                return -1;
        memcpy(p, line, n);
        return hdr_end(r, n);
}

/* Once every line is written: link them into libcurl's list and give it
 * to the request. No line holds a NUL of its own (each value passed
 * kretry_http_text_ok() or is a C string), so each ends where the next
 * begins. */
static int hdr_link(http_req_t *r) {
        if (r->hdr_cnt > r->hdr_cap) {
                struct curl_slist *l =
                        realloc(r->hdrs, r->hdr_cnt * sizeof(*r->hdrs));
                if (!l)
                        return -1;
                r->hdrs    = l;
                r->hdr_cap = r->hdr_cnt;
        }
        char *line = r->text;
        for (size_t i = 0; i < r->hdr_cnt; i++) {
                r->hdrs[i].data = line;
                r->hdrs[i].next = i + 1 < r->hdr_cnt ? &r->hdrs[i + 1] : NULL;
                line += strlen(line) + 1;
        }
        curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER,
                         r->hdr_cnt ? r->hdrs : NULL);
        return 0;
}

/* What every request sends after its own headers. */
static int hdr_fixed(http_req_t *r) {
        /* No "Expect: 100-continue": one round trip per message. */
        if (hdr_add(r, "Expect:"))
                return -1;
        for (size_t i = 0; i < r->h->o.extra_cnt; i++)
                if (hdr_add(r, r->h->o.extra[i]))
                        return -1;
        return 0;
}

static int hdr_str(http_req_t *r, const char *name, const char *v) {
        return hdr_put(r, "", name, v, strlen(v));
}

/* Header values are formatted by hand (kretry_http_i64, _rfc3339): with
 * snprintf(), gmtime_r() and strftime() the metadata headers cost the
 * polling thread about 10,000 instructions a request. */
static int hdr_i64(http_req_t *r, const char *name, int64_t v) {
        char buf[32];
        return hdr_put(r, "", name, buf, kretry_http_i64(v, buf));
}

/* "<partition>/<offset>" into @p buf (at least 45 bytes). */
static size_t part_offset(int32_t partition, int64_t offset, char *buf) {
        size_t n = kretry_http_i64(partition, buf);
        buf[n++] = '/';
        return n + kretry_http_i64(offset, buf + n);
}

/* Kretry-Key as is when it is header text, else base64 and its encoding. */
static int hdr_key(http_req_t *r, const kretry_msg_t *msg) {
        size_t len;
        const void *key = kretry_msg_key(msg, &len);
        if (!key)
                return 0;
        if (kretry_http_text_ok(key, len))
                return hdr_put(r, "", "Kretry-Key", key, len);
        static const char name[] = "Kretry-Key: ";
        char *p = hdr_room(r, sizeof(name) - 1 + 4 * ((len + 2) / 3));
        if (!p)
                return -1;
        memcpy(p, name, sizeof(name) - 1);
        size_t n = kretry_http_base64(key, len, p + sizeof(name) - 1);
        return hdr_end(r, sizeof(name) - 1 + n) ||
               hdr_str(r, "Kretry-Key-Encoding", "base64");
}

/* The message's own headers, kretry-* aside, that are valid HTTP. */
static int hdr_user(http_req_t *r, const kretry_msg_t *msg) {
        size_t n = kretry_msg_header_count(msg);
        for (size_t i = 0; i < n; i++) {
                const char *name;
                const void *v;
                size_t len;
                if (kretry_msg_header_at(msg, i, &name, &v, &len) ||
                    !strncasecmp(name, "kretry-", 7) || !v ||
                    !kretry_http_token_ok(name, strlen(name)) ||
                    !kretry_http_text_ok(v, len))
                        continue;
                if (hdr_put(r, "Kafka-Header-", name, v, len))
                        return -1;
        }
        return 0;
}

/* ce-id: the correlation id (kept across retries and replays). */
static int hdr_ce_id(http_req_t *r, const kretry_msg_t *msg) {
        const void *v;
        size_t len;
        if (!kretry_msg_header(msg, "kretry-correlation-id", &v, &len) && v &&
            len && kretry_http_text_ok(v, len))
                return hdr_put(r, "", "ce-id", v, len);
        const char *topic = kretry_msg_original_topic(msg);
        size_t tl         = strlen(topic);
        char *p           = hdr_room(r, sizeof("ce-id: ") - 1 + tl + 1 + 45);
        if (!p)
                return -1;
        size_t n = sizeof("ce-id: ") - 1;
        memcpy(p, "ce-id: ", n);
        memcpy(p + n, topic, tl);
        n += tl;
        p[n++] = '/';
        n += part_offset(kretry_msg_original_partition(msg),
                         kretry_msg_original_offset(msg), p + n);
        return hdr_end(r, n);
}

static int hdr_ce_time(http_req_t *r, const kretry_msg_t *msg) {
        int64_t ms = kretry_msg_original_timestamp(msg);
        if (ms < 0)
                ms = kretry_msg_timestamp(msg);
        char buf[40];
        size_t n = kretry_http_rfc3339(ms, buf);
        return n ? hdr_put(r, "", "ce-time", buf, n) : 0;
}

static int hdr_meta(http_req_t *r, const kretry_msg_t *msg) {
        char subject[48];
        const char *source = kretry_msg_original_topic(msg);
        size_t sl          = part_offset(kretry_msg_original_partition(msg),
                                         kretry_msg_original_offset(msg), subject);
        return hdr_str(r, "ce-specversion", "1.0") || hdr_ce_id(r, msg) ||
               hdr_str(r, "ce-source", source) ||
               hdr_str(r, "ce-type", r->h->o.ce_type) || hdr_ce_time(r, msg) ||
               hdr_put(r, "", "ce-subject", subject, sl) ||
               hdr_i64(r, "Kretry-Attempt", kretry_msg_attempt(msg)) ||
               hdr_str(r, "Kretry-Topic", kretry_msg_topic(msg)) ||
               hdr_i64(r, "Kretry-Partition", kretry_msg_partition(msg)) ||
               hdr_i64(r, "Kretry-Offset", kretry_msg_offset(msg)) ||
               hdr_key(r, msg);
}

/* The decoded record as one line of JSON (avro-c's encoding). */
static int body_json(http_req_t *r, const kretry_msg_t *msg) {
        const avro_value_t *v = kretry_msg_value_avro(msg);
        if (!v)
                return 0; /* not decoded (a null value): sent as it is */
        if (avro_value_to_json(v, 1, &r->body))
                return -1;
        return 0;
}

static int body_set(http_req_t *r, const kretry_msg_t *msg) {
        const kretry_http_opts_t *o = &r->h->o;
        size_t len;
        const void *value = kretry_msg_value(msg, &len);
        if (o->body_json && body_json(r, msg))
                return -1;
        if (r->body) {
                value = r->body;
                len   = strlen(r->body);
        } else if (!value) {
                value = "";
                len   = 0;
                if (hdr_str(r, "Kretry-Value-Null", "true"))
                        return -1;
        }
        curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, value);
        return hdr_str(r, "Content-Type",
                       o->content_type ? o->content_type
                       : o->body_json  ? "application/json"
                                       : "application/octet-stream");
}

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
        http_req_t *r = arg;
        size_t len    = size * n;
        for (size_t i = 0; i < len && !r->line_done; i++) {
                if (p[i] == '\n' || r->line_len >= r->h->o.error_max) {
                        r->line_done = 1;
                        break;
                }
                if (p[i] != '\r')
                        r->line[r->line_len++] = p[i] ? p[i] : ' ';
        }
        return len; /* the rest is read and dropped */
}

static void copy_trimmed(char *dest, size_t size, const char *v, size_t len) {
        while (len && (*v == ' ' || *v == '\t'))
                v++, len--;
        while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' ||
                       v[len - 1] == ' ' || v[len - 1] == '\t'))
                len--;
        snprintf(dest, size, "%.*s", (int)len, v);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg) {
        http_req_t *r = arg;
        size_t len    = size * n;
        const char *colon;
        if (len > 5 && !strncmp(p, "HTTP/", 5)) {
                /* A new response (after a 1xx): forget the last one's. */
                r->code[0] = r->retry_after[0] = r->location[0] = '\0';
                copy_trimmed(r->status_line, sizeof(r->status_line), p, len);
                return len;
        }
        if (!(colon = memchr(p, ':', len)))
                return len;
        const struct {
                const char *name;
                char *dest;
                size_t size;
        } want[]  = {{"Kretry-Error-Code", r->code, sizeof(r->code)},
                     {"Retry-After", r->retry_after, sizeof(r->retry_after)},
                     {"Location", r->location, sizeof(r->location)}};
        size_t nl = (size_t)(colon - p);
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                if (strlen(want[i].name) == nl &&
                    !strncasecmp(p, want[i].name, nl))
                        copy_trimmed(want[i].dest, want[i].size, colon + 1,
                                     len - nl - 1);
        return len;
}

static void req_destroy(http_req_t *r) {
        if (r->easy)
                curl_easy_cleanup(r->easy);
        free(r->text);
        free(r->hdrs);
        free(r->line);
        free(r);
}

/* The options every request shares, set once per easy handle. */
static int easy_setup(http_req_t *r) {
        const kretry_http_opts_t *o = &r->h->o;
        CURL *e                     = r->easy;
        curl_easy_setopt(e, CURLOPT_URL, o->url);
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
        curl_easy_setopt(e, CURLOPT_PRIVATE, r);
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
        if (o->ca_file)
                curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
        if (o->cert)
                curl_easy_setopt(e, CURLOPT_SSLCERT, o->cert);
        if (o->key)
                curl_easy_setopt(e, CURLOPT_SSLKEY, o->key);
        return 0;
}

/* A finished request from the pool, or a new one. */
static http_req_t *req_get(kretry_http_t *h) {
        http_req_t *r = NULL;
        pthread_mutex_lock(&h->lock);
        if (h->idle_cnt)
                r = h->idle[--h->idle_cnt];
        pthread_mutex_unlock(&h->lock);
        if (r)
                return r;
        if (!(r = calloc(1, sizeof(*r))))
                return NULL;
        r->h = h;
        if (!(r->line = malloc(h->o.error_max + 1)) ||
            !(r->easy = curl_easy_init()) || easy_setup(r)) {
                req_destroy(r);
                return NULL;
        }
        return r;
}

/* Back to the pool, or freed when the pool is full. */
static void req_free(http_req_t *r) {
        if (!r)
                return;
        kretry_http_t *h = r->h;
        if (r->body) {
                free(r->body); /* json_dumps(): malloc() */
                r->body = NULL;
        }
        pthread_mutex_lock(&h->lock);
        if (h->idle_cnt < h->idle_cap) {
                h->idle[h->idle_cnt++] = r;
                r                      = NULL;
        }
        pthread_mutex_unlock(&h->lock);
        if (r)
                req_destroy(r);
}

static http_req_t *req_new(kretry_http_t *h, const kretry_msg_t *msg) {
        http_req_t *r = req_get(h);
        if (!r)
                return NULL;
        r->msg  = NULL;
        r->next = r->prev = NULL;
        r->text_len = r->hdr_cnt = r->line_len = 0;
        r->line_done                           = 0;
        r->errbuf[0] = r->status_line[0] = r->code[0] = '\0';
        r->retry_after[0] = r->location[0] = '\0';
        if (body_set(r, msg) || hdr_meta(r, msg) || hdr_user(r, msg) ||
            hdr_fixed(r) || hdr_link(r)) {
                req_free(r);
                return NULL;
        }
        return r;
}

kretry_action_t kretry_http_handle(kretry_http_t *h, kretry_msg_t *msg) {
        http_req_t *r = req_new(h, msg);
        if (!r) {
                kretry_msg_set_error(msg, "HTTP_PREPARE",
                                     "cannot build the request: out of "
                                     "memory");
                return KRETRY_RETRY;
        }
        if (!(r->msg = kretry_msg_hold(msg))) {
                req_free(r);
                kretry_msg_set_error(msg, "HTTP_PREPARE",
                                     "cannot hold the message: out of "
                                     "memory");
                return KRETRY_RETRY;
        }
        pthread_mutex_lock(&h->lock);
        /* A queue that was not empty has its wake-up pending already: the
         * HTTP thread takes all of it at once. */
        int wake       = h->queue == NULL;
        *h->queue_tail = r;
        h->queue_tail  = &r->next;
        pthread_mutex_unlock(&h->lock);
        if (wake)
                curl_multi_wakeup(h->multi);
        return KRETRY_ASYNC;
}

/* ---- the HTTP thread ---- */

static void open_link(kretry_http_t *h, http_req_t *r) {
        h->open_cnt++;
        r->prev = NULL;
        r->next = h->open;
        if (h->open)
                h->open->prev = r;
        h->open = r;
}

static void open_unlink(kretry_http_t *h, http_req_t *r) {
        h->open_cnt--;
        if (r->prev)
                r->prev->next = r->next;
        else
                h->open = r->next;
        if (r->next)
                r->next->prev = r->prev;
}

/* Answer @p r's message and free it. */
static void req_complete(http_req_t *r, const kretry_http_verdict_t *v) {
        kretry_msg_t *msg = r->msg;
        req_free(r); /* nothing reads the value past this */
        if (v->action != KRETRY_OK)
                kretry_msg_set_error(msg, v->code, v->message);
        if (v->retry_after_ms > 0)
                kretry_msg_set_retry_after(msg, v->retry_after_ms);
        kretry_msg_complete(msg, v->action);
}

static void req_done(kretry_http_t *h, http_req_t *r, CURLcode rc) {
        kretry_http_verdict_t v;
        kretry_http_answer_t a = {.transport       = rc,
                                  .transport_error = r->errbuf,
                                  .status_line     = r->status_line,
                                  .error_code      = r->code,
                                  .retry_after     = r->retry_after,
                                  .location        = r->location,
                                  .first_line      = r->line};
        r->line[r->line_len]   = '\0';
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &a.status);
        kretry_http_decide(&h->o, &a, wall_ms(), &v);
        open_unlink(h, r);
        curl_multi_remove_handle(h->multi, r->easy);
        req_complete(r, &v);
}

static void req_abort(http_req_t *r) {
        kretry_http_verdict_t v = {.action = KRETRY_RETRY};
        snprintf(v.code, sizeof(v.code), "ABORTED");
        snprintf(v.message, sizeof(v.message),
                 "kretry stopped before the endpoint answered");
        req_complete(r, &v);
}

static void reap(kretry_http_t *h) {
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(h->multi, &left))) {
                http_req_t *r = NULL;
                if (m->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &r);
                req_done(h, r, m->data.result);
        }
}

/* Start ready requests, in the order they came, while fewer than
 * o.concurrency are open; with @p stop, abort them all. */
static void start_ready(kretry_http_t *h, int stop) {
        while (h->ready && (stop || h->open_cnt < h->o.concurrency)) {
                http_req_t *r = h->ready;
                if (!(h->ready = r->next))
                        h->ready_tail = &h->ready;
                if (stop) {
                        req_abort(r);
                        continue;
                }
                open_link(h, r);
                if (curl_multi_add_handle(h->multi, r->easy) != CURLM_OK) {
                        open_unlink(h, r);
                        req_abort(r);
                }
        }
}

/* Take the queue; @returns the stop flag. */
static int take(kretry_http_t *h) {
        pthread_mutex_lock(&h->lock);
        http_req_t *q = h->queue;
        int stop      = h->stop;
        if (q) {
                *h->ready_tail = q;
                h->ready_tail  = h->queue_tail;
        }
        h->queue      = NULL;
        h->queue_tail = &h->queue;
        pthread_mutex_unlock(&h->lock);
        start_ready(h, stop);
        return stop;
}

static void *loop(void *arg) {
        kretry_http_t *h = arg;
        int running;
        prctl(PR_SET_NAME, "kretry:http", 0, 0, 0); /* for top -H, perf */
        while (!take(h)) {
                curl_multi_perform(h->multi, &running);
                reap(h);
                if (h->ready && h->open_cnt < h->o.concurrency)
                        continue; /* slots freed: the next ones start now */
                curl_multi_poll(h->multi, NULL, 0, 1000, NULL);
        }
        while (h->open) {
                http_req_t *r = h->open;
                open_unlink(h, r);
                curl_multi_remove_handle(h->multi, r->easy);
                req_abort(r);
        }
        return NULL;
}

/* ---- life cycle ---- */

static int url_check(const char *url, char *errstr, size_t size) {
        char shown[2048]; /* the URL without its password, if any */
        kretry_secret_url(url, shown, sizeof(shown));
        CURLU *u     = curl_url();
        char *scheme = NULL, *host = NULL;
        int rc       = -1;
        CURLUcode uc = u ? curl_url_set(u, CURLUPART_URL, url, 0)
                         : CURLUE_OUT_OF_MEMORY;
        if (uc)
                snprintf(errstr, size,
                         "--http \"%s\": malformed URL: %s (expected "
                         "http[s]://HOST[:PORT][/PATH])",
                         shown, curl_url_strerror(uc));
        else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
                 (strcmp(scheme, "http") && strcmp(scheme, "https")))
                snprintf(errstr, size,
                         "--http \"%s\": the scheme must be http or https",
                         shown);
        else if (curl_url_get(u, CURLUPART_HOST, &host, 0) || !*host)
                snprintf(errstr, size, "--http \"%s\": the URL has no host",
                         shown);
        else
                rc = 0;
        curl_free(scheme);
        curl_free(host);
        curl_url_cleanup(u);
        return rc;
}

/* The extra header lines, whoever built them: a line libcurl would send
 * other than as one header, or one that frames or routes the request,
 * desyncs the connection (the body read as the next request). */
static int extra_check(const kretry_http_opts_t *o, char *errstr, size_t size) {
        for (size_t i = 0; i < o->extra_cnt; i++) {
                const char *line  = o->extra[i];
                const char *colon = strchr(line, ':');
                size_t n          = colon ? (size_t)(colon - line) : 0;
                const char *v     = colon ? colon + 1 : "";
                while (*v == ' ' || *v == '\t')
                        v++;
                if (!colon || !kretry_http_token_ok(line, n) ||
                    !kretry_http_text_ok(v, strlen(v))) {
                        snprintf(errstr, size,
                                 "header %zu is not 'Name: value' header "
                                 "text (the value is not shown)",
                                 i + 1);
                        return -1;
                }
                if (kretry_http_header_framing(line, n)) {
                        snprintf(errstr, size,
                                 "%.*s: " KRETRY_HTTP_FRAMING_REFUSED, (int)n,
                                 line);
                        return -1;
                }
        }
        return 0;
}

static int thread_start(kretry_http_t *h) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int rc = pthread_create(&h->thread, NULL, loop, h);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return rc;
}

kretry_http_t *
kretry_http_new(const kretry_http_opts_t *o, char *errstr, size_t size) {
        kretry_http_t *h;
        if (url_check(o->url, errstr, size) || extra_check(o, errstr, size))
                return NULL;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) ||
            !(h = calloc(1, sizeof(*h)))) {
                snprintf(errstr, size, "cannot start libcurl");
                return NULL;
        }
        h->o = *o;
        if (h->o.concurrency < 1)
                h->o.concurrency = 1;
        h->queue_tail = &h->queue;
        h->ready_tail = &h->ready;
        h->idle_cap   = kretry_http_held_max(h->o.concurrency);
        if (!(h->idle = calloc((size_t)h->idle_cap, sizeof(*h->idle)))) {
                free(h);
                snprintf(errstr, size, "out of memory");
                return NULL;
        }
        pthread_mutex_init(&h->lock, NULL);
        if (!(h->multi = curl_multi_init())) {
                snprintf(errstr, size, "cannot start libcurl");
                kretry_http_destroy(h);
                return NULL;
        }
        /* Keep a connection per request in flight for reuse. */
        curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS,
                          (long)h->o.concurrency);
        if (thread_start(h)) {
                snprintf(errstr, size, "cannot start the HTTP thread");
                kretry_http_destroy(h);
                return NULL;
        }
        h->started = 1;
        return h;
}

void kretry_http_destroy(kretry_http_t *h) {
        if (!h)
                return;
        if (h->started) {
                pthread_mutex_lock(&h->lock);
                h->stop = 1;
                pthread_mutex_unlock(&h->lock);
                curl_multi_wakeup(h->multi);
                pthread_join(h->thread, NULL);
                take(h); /* what the handler queued meanwhile */
        }
        while (h->idle_cnt)
                req_destroy(h->idle[--h->idle_cnt]);
        free(h->idle);
        if (h->multi)
                curl_multi_cleanup(h->multi);
        pthread_mutex_destroy(&h->lock);
        free(h);
        curl_global_cleanup();
}
