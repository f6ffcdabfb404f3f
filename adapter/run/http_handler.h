/*
 * kretry run --http URL: each message is one POST to URL, the answer
 * decides its route. One libcurl multi handle, driven by a thread of its
 * own, carries every request: the handler (on the polling thread, with
 * handler.thread poll) builds the request, holds the message and returns
 * KRETRY_ASYNC; the HTTP thread completes the message when the answer (or a
 * transport error) arrives. The engine bounds the messages held
 * (handler.concurrency, set to kretry_http_held_max() of the requests
 * allowed open) and keeps one per key under ordering=key; the HTTP thread
 * keeps at most opts.concurrency requests open, the rest waiting built, in
 * order; connections are reused through the multi handle's cache.
 *
 * The answer's mapping (kretry_http_decide) and the header rules are plain
 * functions, unit-tested without a server.
 */
#ifndef KRETRY_HTTP_HANDLER_H
#define KRETRY_HTTP_HANDLER_H

#include "kretry/kretry.h"

#include <stddef.h>
#include <stdint.h>

#define KRETRY_HTTP_STATUS_MAX 600

typedef struct kretry_http_opts_s {
        const char *url;
        long timeout_ms;          /* per request, connect included */
        const char *const *extra; /* "Name: value" lines, expanded */
        size_t extra_cnt;
        const char *content_type; /* NULL: the body's default */
        const char *ce_type;      /* ce-type [kretry.message] */
        const char *ca_file;      /* TLS: CA bundle (NULL: system's) */
        const char *cert, *key;   /* TLS: client certificate and key */
        int body_json;            /* value.format avro: the record as JSON */
        int concurrency;          /* requests open at once, connections kept */
        size_t error_max;         /* bytes of the first body line kept */
        /* The answer to each status 0..599: KRETRY_OK, _RETRY or _FAIL. */
        unsigned char status[KRETRY_HTTP_STATUS_MAX];
} kretry_http_opts_t;

/* Defaults: 30 s timeout, 2xx OK, 408 425 429 500 502 503 504 RETRY, every
 * other status FAIL. Strings are borrowed and must outlive the client. */
void kretry_http_opts_init(kretry_http_opts_t *o);

/*
 * Move the statuses of @p list ("409,500-504") to @p to (KRETRY_RETRY or
 * KRETRY_FAIL). Only 300..599: a 2xx answer always means handled.
 * @returns 0, or -1 with the reason in @p errstr.
 */
int kretry_http_statuses_move(kretry_http_opts_t *o,
                              const char *list,
                              kretry_action_t to,
                              char *errstr,
                              size_t errstr_size);

/*
 * One --http-header argument, "Name: value": ${VAR} and ${VAR:-default}
 * are expanded from the environment, the name must be an HTTP token and the
 * value header text. @returns the line (free with free()), or NULL with
 * the reason in @p errstr; the reason never quotes the value.
 */
char *kretry_http_header_arg(const char *arg, char *errstr, size_t errstr_size);

/* Header rules, for requests built from Kafka data. */
/* An HTTP token (RFC 9110): what a header name may be. */
int kretry_http_token_ok(const void *name, size_t len);
/* Header text that reaches the server unchanged: printable ASCII, spaces
 * and tabs inside (not at either end). An empty value is text. */
int kretry_http_text_ok(const void *value, size_t len);
/* Base64 (RFC 4648, padded) of @p len bytes into @p out, which holds at
 * least 4 * ((len + 2) / 3) + 1 bytes. @returns the length written. */
size_t kretry_http_base64(const void *in, size_t len, char *out);

/* The most messages the adapter may hold for a client of @p concurrency
 * requests open at once: as many again, built and waiting, so that a
 * request whose answer came starts the next one at once, without waiting
 * for the polling thread to decide the answer and build the next request
 * (at most KRETRY_HTTP_HELD_MAX, handler.concurrency's maximum). */
#define KRETRY_HTTP_HELD_MAX 1024
int kretry_http_held_max(int concurrency);

/* @p v in decimal into @p out (at least 21 bytes). @returns the length. */
size_t kretry_http_i64(int64_t v, char *out);
/* Epoch @p ms as RFC 3339 UTC with milliseconds ("2026-12-03T08:30:00.123Z")
 * into @p out (at least 40 bytes), as gmtime_r() and strftime() would
 * write it, without them between years 1970 and 9999. @returns the length,
 * 0 for a negative or unrepresentable time. */
size_t kretry_http_rfc3339(int64_t ms, char *out);

/* A Retry-After value (delay-seconds or HTTP-date) in ms from @p now_ms
 * (epoch ms); -1 when absent or malformed, 0 for a date in the past. */
int64_t kretry_http_retry_after_ms(const char *value, int64_t now_ms);

/* What one request ended with. */
typedef struct {
        int transport;               /* 0: an HTTP answer; else a CURLcode */
        const char *transport_error; /* libcurl's text for it */
        long status;
        const char *status_line; /* "HTTP/1.1 503 Service Unavailable" */
        const char *error_code;  /* Kretry-Error-Code, or NULL */
        const char *retry_after; /* Retry-After, or NULL */
        const char *location;    /* Location, or NULL */
        const char *first_line;  /* of the body, or NULL */
} kretry_http_answer_t;

typedef struct {
        kretry_action_t action;
        char code[128];
        char message[4096];
        int64_t retry_after_ms; /* RETRY only; 0: no hint */
} kretry_http_verdict_t;

/* The route @p a calls for, with the error code and message to attach. */
void kretry_http_decide(const kretry_http_opts_t *o,
                        const kretry_http_answer_t *a,
                        int64_t now_ms,
                        kretry_http_verdict_t *v);

typedef struct kretry_http_s kretry_http_t;

/*
 * Check the URL (scheme http or https, a host) and start the HTTP thread
 * (with every signal blocked: they stay the main thread's). @p o is copied;
 * its strings are borrowed. @returns the client, or NULL with @p errstr.
 */
kretry_http_t *
kretry_http_new(const kretry_http_opts_t *o, char *errstr, size_t errstr_size);

/*
 * The handler: hold @p msg, queue its POST, return KRETRY_ASYNC; the HTTP
 * thread completes it. Any thread. A request that cannot be built (out of
 * memory) is answered RETRY at once.
 */
kretry_action_t kretry_http_handle(kretry_http_t *h, kretry_msg_t *msg);

/*
 * Stop the HTTP thread: requests still open are cut and their messages
 * completed RETRY (code ABORTED). Call it after kretry_adapter_run()
 * returned and before kretry_adapter_destroy(), which abandons held
 * messages: a request must not read a value after that. Accepts NULL.
 */
void kretry_http_destroy(kretry_http_t *h);

#endif
