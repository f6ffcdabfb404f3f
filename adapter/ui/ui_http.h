/*
 * kretry ui, the rules of its HTTP surface as plain data (no sockets, no
 * Kafka), so that each refusal is unit-testable: where it may listen,
 * which requests it trusts (Host, token, Origin, Sec-Fetch-Site), and how
 * the parameters an operator types are read and bounded.
 */
#ifndef KRETRY_UI_HTTP_H
#define KRETRY_UI_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define UI_DEFAULT_LISTEN "127.0.0.1:8642"
/* Bounds on what a request may carry. */
#define UI_MAX_PARAM 256        /* bytes of one parameter value */
#define UI_MAX_BODY (64 * 1024) /* bytes of a POST body */
#define UI_MAX_ROWS 1000        /* rows of one page, or of one replay */
#define UI_DEFAULT_ROWS 50

/* Where to listen: "HOST:PORT", HOST an IPv4 address or "[IPv6]" or
 * "localhost", PORT 0..65535 (0: any free port). */
typedef struct {
        char host[64]; /* without brackets */
        int port;
        int ipv6;
        int loopback; /* 127.0.0.0/8, ::1 or localhost */
} ui_listen_t;

/* Returns 0, or -1 with @p errstr filled. */
int ui_listen_parse(const char *s,
                    ui_listen_t *l,
                    char *errstr,
                    size_t errstr_size);

/* 1 when @p given equals @p token, in time that does not depend on where
 * they differ; 0 for NULL. */
int ui_token_equal(const char *given, const char *token);

/* The token a request carries: "Authorization: Bearer T" (@p auth, may be
 * NULL), else the "token" parameter (@p param, may be NULL). */
const char *ui_request_token(const char *auth, const char *param);

/* 1 when a Host header names this loopback server (localhost, 127.0.0.1
 * or [::1], with @p port): without a token, any other name is a page of
 * another site reaching 127.0.0.1 through its own DNS name (rebinding). */
int ui_host_is_loopback(const char *host, int port);

/* 1 when a state-changing request comes from another origin: an Origin
 * header that is not "http://" + @p host, or Sec-Fetch-Site other than
 * same-origin or none. Any argument may be NULL (not sent). */
int ui_cross_origin(const char *origin,
                    const char *sec_fetch_site,
                    const char *host);

/* 1 when the Content-Type @p value (may be NULL) has the media type
 * @p want ("type/subtype", any case), parameters allowed
 * ("application/json; charset=utf-8"), and nothing else before them. */
int ui_media_type_is(const char *value, const char *want);

/* A page cursor "PARTITION:OFFSET" (where the next page starts). Returns
 * 0, or -1 when malformed. */
int ui_parse_cursor(const char *s, int32_t *partition, int64_t *offset);

/* "/api/dlq/PARTITION/OFFSET": 0 with both set, -1 otherwise. */
int ui_parse_message_path(const char *path,
                          int32_t *partition,
                          int64_t *offset);

/* "/api/replay/ID" and "/api/replay/ID/stop": 0 with *@p id and *@p stop
 * set, -1 otherwise. */
int ui_parse_job_path(const char *path, int64_t *id, int *stop);

/* A decimal integer in [@p min, @p max]; 0, or -1. */
int ui_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

#endif
