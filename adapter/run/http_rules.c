/*
 * The plain-data half of kretry run --http: which answer means which route,
 * what may travel as a header, the options' parsing. No I/O here.
 */
#include "http_handler.h"

#include "expand.h"
#include "parse.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void kretry_http_opts_init(kretry_http_opts_t *o) {
        static const int retry[] = {408, 425, 429, 500, 502, 503, 504};
        memset(o, 0, sizeof(*o));
        o->timeout_ms  = 30000;
        o->ce_type     = "kretry.message";
        o->concurrency = 1;
        o->error_max   = 512;
        for (int s = 0; s < KRETRY_HTTP_STATUS_MAX; s++)
                o->status[s] = s >= 200 && s < 300 ? KRETRY_OK : KRETRY_FAIL;
        for (size_t i = 0; i < sizeof(retry) / sizeof(retry[0]); i++)
                o->status[retry[i]] = KRETRY_RETRY;
}

/* "N" or "N-M" at @p s; @returns the end of what was read, or NULL. */
static const char *status_range(const char *s, long *lo, long *hi) {
        char *end;
        *lo = strtol(s, &end, 10);
        if (end == s)
                return NULL;
        *hi = *lo;
        if (*end == '-') {
                s   = end + 1;
                *hi = strtol(s, &end, 10);
                if (end == s)
                        return NULL;
        }
        return end;
}

int kretry_http_statuses_move(kretry_http_opts_t *o,
                              const char *list,
                              kretry_action_t to,
                              char *errstr,
                              size_t errstr_size) {
        const char *p = list;
        while (p && *p) {
                long lo, hi;
                const char *end = status_range(p, &lo, &hi);
                if (!end || (*end && (*end != ',' || !end[1])) || lo < 300 ||
                    hi > 599 || lo > hi) {
                        snprintf(errstr, errstr_size,
                                 "\"%s\": expected statuses or ranges in "
                                 "300..599, e.g. 409,500-504 (a 2xx answer "
                                 "always means handled)",
                                 list);
                        return -1;
                }
                for (long s = lo; s <= hi; s++)
                        o->status[s] = (unsigned char)to;
                p = *end ? end + 1 : end;
        }
        return 0;
}

int kretry_http_token_ok(const void *name, size_t len) {
        static const char extra[] = "!#$%&'*+-.^_`|~";
        const unsigned char *p    = name;
        if (!len)
                return 0;
        for (size_t i = 0; i < len; i++)
                if (!(p[i] < 0x80 && isalnum(p[i])) &&
                    !(p[i] && strchr(extra, p[i])))
                        return 0;
        return 1;
}

int kretry_http_text_ok(const void *value, size_t len) {
        const unsigned char *p = value;
        if (len && (p[0] == ' ' || p[0] == '\t' || p[len - 1] == ' ' ||
                    p[len - 1] == '\t'))
                return 0; /* a parser would strip it */
        for (size_t i = 0; i < len; i++)
                if ((p[i] < 0x20 && p[i] != '\t') || p[i] > 0x7e)
                        return 0;
        return 1;
}

size_t kretry_http_base64(const void *in, size_t len, char *out) {
        static const char b64[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrs"
                "tuvwxyz0123456789+/";
        const unsigned char *p = in;
        size_t n               = 0;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t)p[i + 1] << 8;
                if (i + 2 < len)
                        v |= p[i + 2];
                out[n++] = b64[v >> 18 & 63];
                out[n++] = b64[v >> 12 & 63];
                out[n++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
                out[n++] = i + 2 < len ? b64[v & 63] : '=';
        }
        out[n] = '\0';
        return n;
}

int kretry_http_held_max(int concurrency) {
        if (concurrency >= KRETRY_HTTP_HELD_MAX / 2)
                return concurrency > KRETRY_HTTP_HELD_MAX
                               ? concurrency
                               : KRETRY_HTTP_HELD_MAX;
        return 2 * concurrency;
}

size_t kretry_http_i64(int64_t v, char *out) {
        char tmp[24];
        size_t n = 0, len = 0;
        /* The magnitude as unsigned: -INT64_MIN does not fit an int64_t. */
        uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
        do
                tmp[n++] = (char)('0' + u % 10);
        while ((u /= 10));
        if (v < 0)
                out[len++] = '-';
        while (n)
                out[len++] = tmp[--n];
        out[len] = '\0';
        return len;
}

/* @p v (0..99, or 0..999 with @p three) as 2 or 3 digits. */
static char *digits(char *p, int v, int three) {
        if (three)
                *p++ = (char)('0' + v / 100);
        *p++ = (char)('0' + v / 10 % 10);
        *p++ = (char)('0' + v % 10);
        return p;
}

size_t kretry_http_rfc3339(int64_t ms, char *out) {
        if (ms < 0)
                return 0;
        /* Past year 9999 the year has more than four digits: the C library
         * writes it. */
        if (ms >= INT64_C(253402300800000)) {
                time_t s = (time_t)(ms / 1000);
                struct tm tm;
                char date[32];
                if (!gmtime_r(&s, &tm) ||
                    !strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm))
                        return 0;
                return (size_t)snprintf(out, 40, "%s.%03dZ", date,
                                        (int)(ms % 1000));
        }
        /* The civil date of a day count (days since 1970-01-01, Gregorian
         * proleptic): eras of 400 years, each 146,097 days, counted from
         * 0000-03-01 so that the leap day ends its year. */
        int64_t secs = ms / 1000, days = secs / 86400;
        int64_t sod = secs % 86400, z = days + 719468;
        int64_t era = z / 146097, doe = z - era * 146097;
        int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
        int64_t m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
        char *p = digits(out, (int)(y / 100), 0);
        p       = digits(p, (int)(y % 100), 0);
        *p++    = '-';
        p       = digits(p, (int)m, 0);
        *p++    = '-';
        p       = digits(p, (int)d, 0);
        *p++    = 'T';
        p       = digits(p, (int)(sod / 3600), 0);
        *p++    = ':';
        p       = digits(p, (int)(sod / 60 % 60), 0);
        *p++    = ':';
        p       = digits(p, (int)(sod % 60), 0);
        *p++    = '.';
        p       = digits(p, (int)(ms % 1000), 1);
        *p++    = 'Z';
        *p      = '\0';
        return (size_t)(p - out);
}

char *kretry_http_header_arg(const char *arg, char *errstr, size_t size) {
        const char *colon = strchr(arg, ':');
        if (!colon || !kretry_http_token_ok(arg, (size_t)(colon - arg))) {
                snprintf(errstr, size,
                         "expected 'Name: value' with a valid header name "
                         "(the value is not shown)");
                return NULL;
        }
        if (kretry_http_header_framing(arg, (size_t)(colon - arg))) {
                snprintf(errstr, size, "%.*s: " KRETRY_HTTP_FRAMING_REFUSED,
                         (int)(colon - arg), arg);
                return NULL;
        }
        char *line = kretry_expand_env(arg, errstr, size);
        if (!line)
                return NULL;
        /* The name had no '$': expansion changed the value only. */
        char *v = line + (colon - arg) + 1;
        while (*v == ' ' || *v == '\t')
                v++;
        if (!kretry_http_text_ok(v, strlen(v))) {
                snprintf(errstr, size,
                         "%.*s: the value (after ${} expansion) is not "
                         "header text: printable ASCII, no control "
                         "characters (the value is not shown)",
                         (int)(colon - arg), arg);
                free(line);
                return NULL;
        }
        return line;
}

int64_t kretry_http_retry_after_ms(const char *value, int64_t now_ms) {
        if (!value)
                return -1;
        while (*value == ' ')
                value++;
        if (isdigit((unsigned char)*value)) {
                char *end;
                long long s = strtoll(value, &end, 10);
                while (*end == ' ')
                        end++;
                if (*end)
                        return -1;
                /* A day at most: a retry is never later than its tier's
                 * delay anyway. */
                return s > 86400 ? 86400000 : (int64_t)s * 1000;
        }
        time_t t = curl_getdate(value, NULL);
        if (t == -1)
                return -1;
        int64_t ms = (int64_t)t * 1000 - now_ms;
        return ms < 0 ? 0 : ms;
}

/* The reason phrase of a status line, or "". */
static const char *reason_of(const char *status_line) {
        const char *p = status_line ? strchr(status_line, ' ') : NULL;
        if (!p || !(p = strchr(p + 1, ' ')))
                return "";
        return p + 1;
}

static void decide_transport(const kretry_http_answer_t *a,
                             kretry_http_verdict_t *v) {
        const char *code = "CONNECT";
        if (a->transport == CURLE_OPERATION_TIMEDOUT)
                code = "TIMEOUT";
        else if (a->transport == CURLE_SSL_CONNECT_ERROR ||
                 a->transport == CURLE_PEER_FAILED_VERIFICATION ||
                 a->transport == CURLE_SSL_CERTPROBLEM ||
                 a->transport == CURLE_SSL_CACERT_BADFILE)
                code = "TLS";
        /* Whatever it was, the message was not judged: retry it (the breaker,
         * when configured, opens when every message meets it). */
        v->action = KRETRY_RETRY;
        snprintf(v->code, sizeof(v->code), "%s", code);
        snprintf(v->message, sizeof(v->message), "%s",
                 a->transport_error && *a->transport_error
                         ? a->transport_error
                         : curl_easy_strerror((CURLcode)a->transport));
}

void kretry_http_decide(const kretry_http_opts_t *o,
                        const kretry_http_answer_t *a,
                        int64_t now_ms,
                        kretry_http_verdict_t *v) {
        memset(v, 0, sizeof(*v));
        if (a->transport) {
                decide_transport(a, v);
                return;
        }
        long s    = a->status;
        v->action = s >= 0 && s < KRETRY_HTTP_STATUS_MAX
                            ? (kretry_action_t)o->status[s]
                            : KRETRY_FAIL;
        if (v->action == KRETRY_OK)
                return;
        if (a->error_code && *a->error_code)
                snprintf(v->code, sizeof(v->code), "%s", a->error_code);
        else
                snprintf(v->code, sizeof(v->code), "HTTP_%ld", s);
        if (s >= 300 && s < 400)
                snprintf(v->message, sizeof(v->message),
                         "HTTP %ld: redirect to %s not followed (kretry "
                         "posts only to the --http URL)",
                         s, a->location && *a->location ? a->location : "?");
        else if (a->first_line && *a->first_line)
                snprintf(v->message, sizeof(v->message), "%s", a->first_line);
        else
                snprintf(v->message, sizeof(v->message), "HTTP %ld%s%s", s,
                         *reason_of(a->status_line) ? " " : "",
                         reason_of(a->status_line));
        if (v->action == KRETRY_RETRY) {
                int64_t ms = kretry_http_retry_after_ms(a->retry_after, now_ms);
                v->retry_after_ms = ms > 0 ? ms : 0;
        }
}
