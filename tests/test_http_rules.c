/*
 * kretry run --http's plain-data rules (adapter/cli/http_rules.c): which
 * answer means which route, Retry-After, what may travel as a header, the
 * option parsers. No server: blackbox_http_* drive the real thing.
 */
#include "http_handler.h"
#include "testutil.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static kretry_http_opts_t opts;
static kretry_http_verdict_t v;

/* Decide an HTTP answer with status @p s and the given headers and body. */
static void
answer(long s, const char *code, const char *after, const char *line) {
        kretry_http_answer_t a = {.status      = s,
                                  .status_line = "HTTP/1.1 503 Service "
                                                 "Unavailable",
                                  .error_code  = code,
                                  .retry_after = after,
                                  .first_line  = line};
        kretry_http_decide(&opts, &a, 1000000, &v);
}

static void test_status_classes(void) {
        static const long ok[]    = {200, 201, 202, 204, 299};
        static const long retry[] = {408, 425, 429, 500, 502, 503, 504};
        static const long fail[]  = {300, 301, 304, 400, 401, 404, 409,
                                     410, 422, 501, 505, 599, 100, 0};
        kretry_http_opts_init(&opts);
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                answer(ok[i], NULL, NULL, NULL);
                KT_ASSERT_INT_EQ(v.action, KRETRY_OK);
        }
        for (size_t i = 0; i < sizeof(retry) / sizeof(retry[0]); i++) {
                answer(retry[i], NULL, NULL, NULL);
                KT_ASSERT_INT_EQ(v.action, KRETRY_RETRY);
        }
        for (size_t i = 0; i < sizeof(fail) / sizeof(fail[0]); i++) {
                answer(fail[i], NULL, NULL, NULL);
                KT_ASSERT_INT_EQ(v.action, KRETRY_FAIL);
        }
        answer(1000, NULL, NULL, NULL);
        KT_ASSERT_INT_EQ(v.action, KRETRY_FAIL);
}

static void test_code_and_message(void) {
        kretry_http_opts_init(&opts);
        answer(422, "VALIDATION", NULL, "amount is negative");
        KT_ASSERT_STR_EQ(v.code, "VALIDATION");
        KT_ASSERT_STR_EQ(v.message, "amount is negative");
        answer(404, "", NULL, "");
        KT_ASSERT_STR_EQ(v.code, "HTTP_404");
        /* No body: the status line's reason phrase. */
        KT_ASSERT_STR_EQ(v.message, "HTTP 404 Service Unavailable");
        kretry_http_answer_t a = {.status = 301, .location = "https://x/y"};
        kretry_http_decide(&opts, &a, 0, &v);
        KT_ASSERT_INT_EQ(v.action, KRETRY_FAIL);
        KT_ASSERT(strstr(v.message, "redirect to https://x/y not followed"));
}

static void test_transport(void) {
        static const struct {
                int rc;
                const char *code;
        } t[] = {{CURLE_OPERATION_TIMEDOUT, "TIMEOUT"},
                 {CURLE_COULDNT_CONNECT, "CONNECT"},
                 {CURLE_COULDNT_RESOLVE_HOST, "CONNECT"},
                 {CURLE_RECV_ERROR, "CONNECT"},
                 {CURLE_GOT_NOTHING, "CONNECT"},
                 {CURLE_PEER_FAILED_VERIFICATION, "TLS"}};
        kretry_http_opts_init(&opts);
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                kretry_http_answer_t a = {.transport       = t[i].rc,
                                          .transport_error = "why"};
                kretry_http_decide(&opts, &a, 0, &v);
                KT_ASSERT_INT_EQ(v.action, KRETRY_RETRY);
                KT_ASSERT_STR_EQ(v.code, t[i].code);
                KT_ASSERT_STR_EQ(v.message, "why");
        }
        kretry_http_answer_t a = {.transport = CURLE_COULDNT_CONNECT};
        kretry_http_decide(&opts, &a, 0, &v);
        KT_ASSERT_STR_EQ(v.message, curl_easy_strerror(CURLE_COULDNT_CONNECT));
}

static void test_retry_after(void) {
        /* 1994-11-06T08:49:37Z, RFC 9110's example date */
        int64_t date = INT64_C(784111777000);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms("120", 0), 120000);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms(" 0", 0), 0);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms("99999999", 0), 86400000);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms(
                                 "Sun, 06 Nov 1994 08:49:37 GMT", date - 5000),
                         5000);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms(
                                 "Sun, 06 Nov 1994 08:49:37 GMT", date + 1),
                         0);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms("12abc", 0), -1);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms("soon", 0), -1);
        KT_ASSERT_INT_EQ(kretry_http_retry_after_ms(NULL, 0), -1);
        kretry_http_opts_init(&opts);
        answer(503, NULL, "7", NULL);
        KT_ASSERT_INT_EQ(v.retry_after_ms, 7000);
        answer(422, NULL, "7", NULL); /* FAIL: no hint */
        KT_ASSERT_INT_EQ(v.retry_after_ms, 0);
}

static void test_statuses_move(void) {
        char err[256];
        kretry_http_opts_init(&opts);
        KT_ASSERT_INT_EQ(kretry_http_statuses_move(&opts, "409,520-522",
                                                   KRETRY_RETRY, err,
                                                   sizeof(err)),
                         0);
        KT_ASSERT_INT_EQ(kretry_http_statuses_move(&opts, "503", KRETRY_FAIL,
                                                   err, sizeof(err)),
                         0);
        answer(409, NULL, NULL, NULL);
        KT_ASSERT_INT_EQ(v.action, KRETRY_RETRY);
        answer(521, NULL, NULL, NULL);
        KT_ASSERT_INT_EQ(v.action, KRETRY_RETRY);
        answer(523, NULL, NULL, NULL);
        KT_ASSERT_INT_EQ(v.action, KRETRY_FAIL);
        answer(503, NULL, NULL, NULL);
        KT_ASSERT_INT_EQ(v.action, KRETRY_FAIL);
        static const char *const bad[] = {"204", "600", "x",   "409,",
                                          "5-4", "",    "4 09"};
        for (size_t i = 1; i < sizeof(bad) / sizeof(bad[0]); i++)
                KT_ASSERT_INT_EQ(kretry_http_statuses_move(&opts, bad[i],
                                                           KRETRY_RETRY, err,
                                                           sizeof(err)),
                                 strcmp(bad[i], "") ? -1 : 0);
        KT_ASSERT_INT_EQ(kretry_http_statuses_move(&opts, bad[0], KRETRY_FAIL,
                                                   err, sizeof(err)),
                         -1);
        KT_ASSERT(strstr(err, "300..599"));
}

static void test_header_text(void) {
        KT_ASSERT(kretry_http_token_ok("Kafka-trace_id.1", 16));
        KT_ASSERT(!kretry_http_token_ok("bad name", 8));
        KT_ASSERT(!kretry_http_token_ok("a:b", 3));
        KT_ASSERT(!kretry_http_token_ok("", 0));
        KT_ASSERT(!kretry_http_token_ok("\xc3\xa9", 2));
        KT_ASSERT(!kretry_http_token_ok("a\0b", 3));
        KT_ASSERT(kretry_http_text_ok("a b\tc", 5));
        KT_ASSERT(kretry_http_text_ok("", 0));
        KT_ASSERT(!kretry_http_text_ok(" lead", 5));
        KT_ASSERT(!kretry_http_text_ok("trail ", 6));
        KT_ASSERT(!kretry_http_text_ok("a\r\nX-Injected: 1", 17));
        KT_ASSERT(!kretry_http_text_ok("a\0b", 3));
        KT_ASSERT(!kretry_http_text_ok("caf\xc3\xa9", 5));
        KT_ASSERT(!kretry_http_text_ok("\x7f", 1));
}

static void test_base64(void) {
        char out[16];
        KT_ASSERT_INT_EQ(kretry_http_base64("", 0, out), 0);
        KT_ASSERT_STR_EQ(out, "");
        kretry_http_base64("f", 1, out);
        KT_ASSERT_STR_EQ(out, "Zg==");
        kretry_http_base64("fo", 2, out);
        KT_ASSERT_STR_EQ(out, "Zm8=");
        kretry_http_base64("foo", 3, out);
        KT_ASSERT_STR_EQ(out, "Zm9v");
        KT_ASSERT_INT_EQ(kretry_http_base64("\xff\x01k\x80", 4, out), 8);
        KT_ASSERT_STR_EQ(out, "/wFrgA==");
}

/* The messages held for a client: its requests open, as many waiting,
 * within handler.concurrency's maximum. */
static void test_held_max(void) {
        KT_ASSERT_INT_EQ(kretry_http_held_max(1), 2);
        KT_ASSERT_INT_EQ(kretry_http_held_max(16), 32);
        KT_ASSERT_INT_EQ(kretry_http_held_max(512), 1024);
        KT_ASSERT_INT_EQ(kretry_http_held_max(600), 1024);
        KT_ASSERT_INT_EQ(kretry_http_held_max(1024), 1024);
}

/* kretry_http_i64 writes what printf's %lld writes. */
static void test_i64(void) {
        const int64_t vals[] = {0,         1,         -1,        9,
                                10,        -10,       99,        1000000,
                                INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
                char got[32], want[32];
                size_t n = kretry_http_i64(vals[i], got);
                snprintf(want, sizeof(want), "%" PRId64, vals[i]);
                KT_ASSERT_STR_EQ(got, want);
                KT_ASSERT_INT_EQ(n, strlen(want));
        }
}

/* What ce-time carried before kretry_http_rfc3339: gmtime_r, strftime. */
static void rfc3339_libc(int64_t ms, char *out) {
        time_t s = (time_t)(ms / 1000);
        struct tm tm;
        char date[32];
        KT_REQUIRE(gmtime_r(&s, &tm) != NULL);
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(out, 40, "%s.%03dZ", date, (int)(ms % 1000));
}

/* kretry_http_rfc3339 writes what the C library writes: the edges of the
 * fast path (1970, leap days, century years, 9999 and past it) and a
 * spread of times between: about 100,000 from 1970 to 9999, one every
 * 29 days, 7 hours and an odd number of ms, so that every month, day and time
 * of day comes up. */
static void test_rfc3339(void) {
        const int64_t edges[] = {
                0,
                999,
                86399999,
                951782400000,    /* 2000-02-29 */
                951868799999,    /* 2000-02-29T23:59:59.999 */
                4107542400000,   /* 2100-03-01 */
                1796256000123,   /* 2026-12-03 */
                253402300799999, /* 9999-12-31T23:59:59.999: last fast */
                253402300800000, /* 10000-01-01: the C library's */
                INT64_C(4102444800000) * 100,
        };
        char got[40], want[40];
        for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
                size_t n = kretry_http_rfc3339(edges[i], got);
                rfc3339_libc(edges[i], want);
                KT_ASSERT_STR_EQ(got, want);
                KT_ASSERT_INT_EQ(n, strlen(want));
        }
        for (int64_t ms = 7; ms < INT64_C(253402300800000);
             ms += INT64_C(2533917181)) {
                kretry_http_rfc3339(ms, got);
                rfc3339_libc(ms, want);
                KT_ASSERT_STR_EQ(got, want);
        }
        KT_ASSERT_INT_EQ(kretry_http_rfc3339(-1, got), 0);
}

static void test_header_arg(void) {
        char err[512], *l;
        setenv("KT_HTTP_TOKEN", "s3cret", 1);
        setenv("KT_HTTP_BAD", "x\ny", 1);
        l = kretry_http_header_arg("Authorization: Bearer ${KT_HTTP_TOKEN}",
                                   err, sizeof(err));
        KT_ASSERT_STR_EQ(l, "Authorization: Bearer s3cret");
        free(l);
        KT_ASSERT(!kretry_http_header_arg("no colon", err, sizeof(err)));
        KT_ASSERT(!kretry_http_header_arg("Bad Name: x", err, sizeof(err)));
        KT_ASSERT(!kretry_http_header_arg("X: ${KT_HTTP_UNSET_VAR}", err,
                                          sizeof(err)));
        KT_ASSERT(strstr(err, "KT_HTTP_UNSET_VAR"));
        KT_ASSERT(!kretry_http_header_arg("X-Bad: ${KT_HTTP_BAD}", err,
                                          sizeof(err)));
        KT_ASSERT(strstr(err, "X-Bad") && !strstr(err, "x\ny"));
        l = kretry_http_header_arg("X-Empty:", err, sizeof(err));
        KT_ASSERT_STR_EQ(l, "X-Empty:");
        free(l);
}

/* A header that frames or routes the request desyncs the connection: the
 * service reads the body as the next request. Refused in any case, with an
 * empty value too (libcurl would drop its own header then). */
static void test_header_arg_framing(void) {
        static const char *const refused[] = {"Content-Length: 0",
                                              "content-length:5",
                                              "TRANSFER-ENCODING: chunked",
                                              "Host: elsewhere",
                                              "Connection: close",
                                              "Keep-Alive: 5",
                                              "TE: trailers",
                                              "Trailer: X",
                                              "Upgrade: h2c",
                                              "Expect: 100-continue",
                                              "Proxy-Authorization: Basic eA==",
                                              "proxy-connection: x",
                                              "Content-Length:",
                                              "Host:\tx"};
        char err[512], *l;
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                l = kretry_http_header_arg(refused[i], err, sizeof(err));
                KT_CHECK_MSG(l == NULL && strstr(err, "refused"), CU_FALSE,
                             "%s: accepted (%s)", refused[i], l ? l : err);
                free(l);
        }
        /* names that only contain a refused one are headers like others */
        static const char *const fine[] = {"X-Host: a", "Content-Type: b",
                                           "Hosts: c", "Proxy: d",
                                           "X-Forwarded-Host: e"};
        for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
                l = kretry_http_header_arg(fine[i], err, sizeof(err));
                KT_CHECK_MSG(l != NULL, CU_FALSE, "%s: refused (%s)", fine[i],
                             err);
                free(l);
        }
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_status_classes),
                KT_TEST(test_code_and_message),
                KT_TEST(test_transport),
                KT_TEST(test_retry_after),
                KT_TEST(test_statuses_move),
                KT_TEST(test_header_text),
                KT_TEST(test_base64),
                KT_TEST(test_held_max),
                KT_TEST(test_i64),
                KT_TEST(test_rfc3339),
                KT_TEST(test_header_arg),
                KT_TEST(test_header_arg_framing),
                KT_END,
        };
        return kt_main("http_rules", tests, argc, argv);
}
