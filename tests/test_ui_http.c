/* kretry ui's request rules without a server: listen addresses, the
 * token, Host and origin checks, cursors and paths. */
#include "testutil.h"
#include "ui_http.h"

#include <string.h>

static void test_listen(void) {
        ui_listen_t l;
        char err[256];
        KT_REQUIRE(!ui_listen_parse("127.0.0.1:8642", &l, err, sizeof(err)));
        KT_ASSERT_STR_EQ(l.host, "127.0.0.1");
        KT_ASSERT_INT_EQ(l.port, 8642);
        KT_ASSERT_INT_EQ(l.loopback, 1);
        KT_REQUIRE(!ui_listen_parse("127.9.8.7:0", &l, err, sizeof(err)));
        KT_ASSERT_INT_EQ(l.loopback, 1);
        KT_REQUIRE(!ui_listen_parse("[::1]:80", &l, err, sizeof(err)));
        KT_ASSERT(l.ipv6 && l.loopback && !strcmp(l.host, "::1"));
        KT_REQUIRE(!ui_listen_parse("localhost:1", &l, err, sizeof(err)));
        KT_ASSERT_INT_EQ(l.loopback, 1);
        /* not loopback: the server then needs a token */
        KT_REQUIRE(!ui_listen_parse("0.0.0.0:8642", &l, err, sizeof(err)));
        KT_ASSERT_INT_EQ(l.loopback, 0);
        KT_REQUIRE(!ui_listen_parse("10.1.2.3:8642", &l, err, sizeof(err)));
        KT_ASSERT_INT_EQ(l.loopback, 0);
        KT_REQUIRE(!ui_listen_parse("[::]:8642", &l, err, sizeof(err)));
        KT_ASSERT_INT_EQ(l.loopback, 0);
        KT_REQUIRE(
                !ui_listen_parse("[::ffff:127.0.0.1]:1", &l, err, sizeof(err)));
        KT_ASSERT_INT_EQ(l.loopback, 0); /* mapped: not served as loopback */
        const char *bad[] = {"",
                             "8642",
                             "127.0.0.1",
                             "127.0.0.1:",
                             "127.0.0.1:65536",
                             "127.0.0.1:-1",
                             ":80",
                             "example.com:80",
                             "::1:80",
                             "[::1:80",
                             "127.0.0.1:80x",
                             "256.0.0.1:80"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                KT_CHECK_MSG(ui_listen_parse(bad[i], &l, err, sizeof(err)),
                             CU_FALSE, "\"%s\" accepted", bad[i]);
}

static void test_token(void) {
        KT_ASSERT(ui_token_equal("s3cret-token-123", "s3cret-token-123"));
        KT_ASSERT(!ui_token_equal("s3cret-token-12", "s3cret-token-123"));
        KT_ASSERT(!ui_token_equal("s3cret-token-1234", "s3cret-token-123"));
        KT_ASSERT(!ui_token_equal("", "s3cret-token-123"));
        KT_ASSERT(!ui_token_equal(NULL, "s3cret-token-123"));
        KT_ASSERT_STR_EQ(ui_request_token("Bearer abc", "def"), "abc");
        KT_ASSERT_STR_EQ(ui_request_token("Basic abc", "def"), "def");
        KT_ASSERT_STR_EQ(ui_request_token(NULL, "def"), "def");
        KT_ASSERT(ui_request_token(NULL, NULL) == NULL);
}

static void test_host(void) {
        KT_ASSERT(ui_host_is_loopback("127.0.0.1:8642", 8642));
        KT_ASSERT(ui_host_is_loopback("localhost:8642", 8642));
        KT_ASSERT(ui_host_is_loopback("[::1]:8642", 8642));
        KT_ASSERT(!ui_host_is_loopback("127.0.0.1:8643", 8642));
        KT_ASSERT(!ui_host_is_loopback("evil.example:8642", 8642));
        KT_ASSERT(!ui_host_is_loopback("127.0.0.1.evil.example:8642", 8642));
        KT_ASSERT(!ui_host_is_loopback(NULL, 8642));
        KT_ASSERT(ui_host_is_loopback("localhost", 80));
}

static void test_origin(void) {
        const char *h = "127.0.0.1:8642";
        KT_ASSERT(!ui_cross_origin(NULL, NULL, h));
        KT_ASSERT(!ui_cross_origin("http://127.0.0.1:8642", "same-origin", h));
        KT_ASSERT(!ui_cross_origin(NULL, "none", h));
        KT_ASSERT(ui_cross_origin("http://evil.example", NULL, h));
        KT_ASSERT(ui_cross_origin("http://127.0.0.1:8643", NULL, h));
        KT_ASSERT(ui_cross_origin("https://127.0.0.1:8642", NULL, h));
        KT_ASSERT(ui_cross_origin("null", NULL, h));
        KT_ASSERT(ui_cross_origin(NULL, "cross-site", h));
        KT_ASSERT(ui_cross_origin(NULL, "same-site", h));
        KT_ASSERT(ui_cross_origin("http://127.0.0.1:8642", NULL, NULL));
}

static void test_cursor_and_paths(void) {
        int32_t p;
        int64_t o, id;
        int stop;
        KT_REQUIRE(!ui_parse_cursor("3:1234", &p, &o));
        KT_ASSERT(p == 3 && o == 1234);
        const char *bad[] = {"",
                             "3",
                             "3:",
                             ":4",
                             "a:1",
                             "1:b",
                             "-1:0",
                             "1:-1",
                             "1:2:3",
                             "99999999999:0",
                             "1:99999999999999999999"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                KT_CHECK_MSG(ui_parse_cursor(bad[i], &p, &o), CU_FALSE,
                             "cursor \"%s\" accepted", bad[i]);
        KT_REQUIRE(!ui_parse_message_path("/api/dlq/2/17", &p, &o));
        KT_ASSERT(p == 2 && o == 17);
        KT_ASSERT(ui_parse_message_path("/api/dlq/2", &p, &o));
        KT_ASSERT(ui_parse_message_path("/api/dlq/2/17/x", &p, &o));
        KT_ASSERT(ui_parse_message_path("/api/dlq//17", &p, &o));
        KT_REQUIRE(!ui_parse_job_path("/api/replay/7", &id, &stop));
        KT_ASSERT(id == 7 && !stop);
        KT_REQUIRE(!ui_parse_job_path("/api/replay/7/stop", &id, &stop));
        KT_ASSERT(id == 7 && stop);
        KT_ASSERT(ui_parse_job_path("/api/replay/0", &id, &stop));
        KT_ASSERT(ui_parse_job_path("/api/replay/7/go", &id, &stop));
        KT_ASSERT(ui_parse_job_path("/api/replay", &id, &stop));
        KT_ASSERT(ui_parse_job_path("/api/replay/x", &id, &stop));
}

/* POST bodies must be JSON: the media type exactly, parameters allowed. */
static void test_media_type(void) {
        const char *json = "application/json";
        KT_ASSERT(ui_media_type_is("application/json", json));
        KT_ASSERT(ui_media_type_is("application/json; charset=utf-8", json));
        KT_ASSERT(ui_media_type_is("Application/JSON;charset=utf-8", json));
        KT_ASSERT(ui_media_type_is("application/json ; q=1", json));
        KT_ASSERT(!ui_media_type_is("application/jsonx", json));
        KT_ASSERT(!ui_media_type_is("application/json-seq", json));
        KT_ASSERT(!ui_media_type_is("application/json x", json));
        KT_ASSERT(!ui_media_type_is("application/jso", json));
        KT_ASSERT(!ui_media_type_is("text/plain", json));
        KT_ASSERT(!ui_media_type_is("", json));
        KT_ASSERT(!ui_media_type_is(NULL, json));
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_listen),
                                          KT_TEST(test_token),
                                          KT_TEST(test_host),
                                          KT_TEST(test_origin),
                                          KT_TEST(test_cursor_and_paths),
                                          KT_TEST(test_media_type),
                                          KT_END};
        return kt_main("ui_http", tests, argc, argv);
}
