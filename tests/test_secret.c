/*
 * Secrets: the one list of secret properties, the mask, scrubbing a text of
 * a secret value; ${file:PATH} in topology files; the OAUTHBEARER (OIDC)
 * properties passed through to librdkafka unchanged.
 */
#include "expand.h"
#include "kretry/kretry.h"
#include "secret.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_names(void) {
        static const char *const secret[] = {
                "sasl.password",
                "consumer.sasl.password",
                "producer.ssl.key.password",
                "ssl.keystore.password",
                "ssl.truststore.password",
                "sasl.oauthbearer.client.secret",
                "sasl.oauthbearer.config",
                "ssl.key.pem",
        };
        static const char *const plain[] = {
                "sasl.username",     "sasl.mechanism",
                "bootstrap.servers", "sasl.oauthbearer.client.id",
                "sasl.password.x",   "sasl.oauthbearer.token.endpoint.url",
                "consumer.",         ""};
        for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++) {
                KT_ASSERT_INT_EQ(kretry_secret_property(secret[i]), 1);
                KT_ASSERT_STR_EQ(kretry_secret_shown(secret[i], "pw"),
                                 "[redacted]");
        }
        for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
                KT_ASSERT_INT_EQ(kretry_secret_property(plain[i]), 0);
                KT_ASSERT_STR_EQ(kretry_secret_shown(plain[i], "v"), "v");
        }
        KT_ASSERT_INT_EQ(kretry_secret_property(NULL), 0);
}

static void test_scrub(void) {
        char t[64] = "pw=s3 and s3s3";
        KT_ASSERT_INT_EQ(kretry_secret_scrub(t, sizeof(t), "s3"), 3);
        KT_ASSERT_STR_EQ(t, "pw=[redacted] and [redacted][redacted]");
        /* A longer secret shrinks the text; nothing left of it. */
        char u[64] = "x a-very-long-secret-value y";
        KT_ASSERT_INT_EQ(
                kretry_secret_scrub(u, sizeof(u), "a-very-long-secret-value"),
                1);
        KT_ASSERT_STR_EQ(u, "x [redacted] y");
        /* Growing past the buffer cuts the tail, never leaves the secret. */
        char v[16] = "ab:k:k:k:k:k";
        KT_ASSERT_INT_EQ(kretry_secret_scrub(v, sizeof(v), "k"), 2);
        KT_ASSERT_STR_EQ(v, "ab:[redacted]:[");
        char w[16] = "nothing here";
        KT_ASSERT_INT_EQ(kretry_secret_scrub(w, sizeof(w), ""), 0);
        KT_ASSERT_INT_EQ(kretry_secret_scrub(w, sizeof(w), NULL), 0);
        KT_ASSERT_STR_EQ(w, "nothing here");

        kretry_secrets_t s = {0};
        KT_ASSERT_INT_EQ(kretry_secrets_add(&s, "sasl.username", "alice"), 0);
        KT_ASSERT_INT_EQ(kretry_secrets_add(&s, "sasl.password", "pw1"), 0);
        KT_ASSERT_INT_EQ(
                kretry_secrets_add(&s, "producer.sasl.password", "pw1"), 0);
        KT_ASSERT_INT_EQ(kretry_secrets_add(&s, "ssl.key.password", ""), 0);
        KT_ASSERT_INT_EQ((int)s.cnt, 1);
        char x[64] = "alice logs in with pw1";
        kretry_secrets_scrub(&s, x, sizeof(x));
        KT_ASSERT_STR_EQ(x, "alice logs in with [redacted]");
        kretry_secrets_clear(&s);
}

/* A URL's password is masked; the rest stays as written. */
static void test_url(void) {
        static const char *const cases[][2] = {
                {"https://bob:hunter2@svc.example:8443/orders?x=1",
                 "https://bob:[redacted]@svc.example:8443/orders?x=1"},
                {"http://bob:p@ss@svc/x", "http://bob:[redacted]@svc/x"},
                {"http://bob@svc/x", "http://bob@svc/x"},
                {"http://svc:8080/a:b@c", "http://svc:8080/a:b@c"},
                {"http://svc/x", "http://svc/x"},
                {"user:pw@host", "user:[redacted]@host"},
                {"", ""},
        };
        char buf[128];
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                KT_ASSERT_STR_EQ(
                        kretry_secret_url(cases[i][0], buf, sizeof(buf)),
                        cases[i][1]);
}

/* A file in the test's temporary folder holding @p text. */
static const char *file_with(const char *name, const char *text) {
        static char path[256];
        snprintf(path, sizeof(path), "/tmp/kretry-test-secret-%d-%s",
                 (int)getpid(), name);
        FILE *f = fopen(path, "wb");
        KT_REQUIRE(f != NULL);
        fwrite(text, 1, strlen(text), f);
        fclose(f);
        return path;
}

static void test_expand_file(void) {
        char err[512], ref[300];
        snprintf(ref, sizeof(ref), "pw=${file:%s}",
                 file_with("nl", "hunter2\n"));
        char *s = kretry_expand_env(ref, err, sizeof(err));
        KT_ASSERT_STR_EQ(s ? s : err, "pw=hunter2");
        free(s);
        snprintf(ref, sizeof(ref), "${file:%s}", file_with("crlf", "a b\r\n"));
        s = kretry_expand_env(ref, err, sizeof(err));
        KT_ASSERT_STR_EQ(s ? s : err, "a b");
        free(s);
        /* One newline only; a file without one is taken whole. */
        snprintf(ref, sizeof(ref), "${file:%s}", file_with("two", "x\n\n"));
        s = kretry_expand_env(ref, err, sizeof(err));
        KT_ASSERT_STR_EQ(s ? s : err, "x\n");
        free(s);
        snprintf(ref, sizeof(ref), "${file:%s}", file_with("bare", "y"));
        s = kretry_expand_env(ref, err, sizeof(err));
        KT_ASSERT_STR_EQ(s ? s : err, "y");
        free(s);

        s = kretry_expand_env("${file:/nonexistent/kretry/pw}", err,
                              sizeof(err));
        KT_ASSERT(s == NULL);
        KT_ASSERT_STR_EQ(err, "${file:/nonexistent/kretry/pw}: cannot read: "
                              "No such file or directory");
        s = kretry_expand_env("${file:run/secrets/pw}", err, sizeof(err));
        KT_ASSERT(s == NULL);
        KT_ASSERT(strstr(err, "write an absolute path") != NULL);
        /* A folder cannot be read; the error says so. */
        s = kretry_expand_env("${file:/tmp}", err, sizeof(err));
        KT_ASSERT(s == NULL);
        KT_ASSERT(strstr(err, "${file:/tmp}: cannot read:") != NULL);
        unlink(file_with("nl", ""));
        unlink(file_with("crlf", ""));
        unlink(file_with("two", ""));
        unlink(file_with("bare", ""));
}

static const char *get(const kretry_conf_t *conf, const char *name) {
        static char buf[512];
        if (kretry_conf_get(conf, name, buf, sizeof(buf)))
                return "(unknown)";
        return buf;
}

/* A topology file whose password comes from a file: loaded into the
 * configuration; a missing file is an error at its line and column that
 * names the path. */
static void test_topology_file_secret(void) {
        char err[1024], yaml[1024], pw[256];
        snprintf(pw, sizeof(pw), "%s", file_with("pw", "s3cr3t-from-file\n"));
        snprintf(yaml, sizeof(yaml),
                 "kafka:\n"
                 "  security.protocol: SASL_PLAINTEXT\n"
                 "  sasl.mechanism: SCRAM-SHA-512\n"
                 "  sasl.username: kretry\n"
                 "  sasl.password: ${file:%s}\n"
                 "topologies:\n"
                 "  - source: orders\n"
                 "    group: g\n"
                 "    retry: { tiers: [1s] }\n",
                 pw);
        char path[256];
        snprintf(path, sizeof(path), "%s", file_with("topo.yaml", yaml));
        kretry_conf_t *conf = kretry_conf_new();
        KT_ASSERT_INT_EQ(
                kretry_conf_load_topology(conf, path, NULL, err, sizeof(err)),
                KRETRY_ERR_OK);
        KT_ASSERT_STR_EQ(get(conf, "sasl.password"), "s3cr3t-from-file");
        unlink(pw);
        KT_ASSERT_INT_EQ(
                kretry_conf_load_topology(conf, path, NULL, err, sizeof(err)),
                KRETRY_ERR_PARSE);
        char want[600];
        snprintf(want, sizeof(want),
                 "%s:5:18: sasl.password: ${file:%s}: cannot read: No such "
                 "file or directory",
                 path, pw);
        KT_ASSERT(strstr(err, want) != NULL);
        kretry_conf_destroy(conf);
        unlink(path);
}

/* OAUTHBEARER with OIDC client credentials: kretry refuses and drops none
 * of the properties; librdkafka gets them as written. */
static void test_oidc_passthrough(void) {
        static const char *const props[][2] = {
                {"security.protocol", "sasl_ssl"},
                {"sasl.mechanism", "OAUTHBEARER"},
                {"sasl.oauthbearer.method", "oidc"},
                {"sasl.oauthbearer.client.id", "kretry-orders"},
                {"sasl.oauthbearer.client.secret", "oidc-secret"},
                {"sasl.oauthbearer.token.endpoint.url",
                 "https://idp.example/oauth2/token"},
                {"sasl.oauthbearer.scope", "kafka"},
                {"sasl.oauthbearer.extensions", "logicalCluster=lkc-1"},
        };
        char err[512];
        kretry_conf_t *conf = kretry_conf_new();
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
                KT_ASSERT_INT_EQ(kretry_conf_set(conf, props[i][0], props[i][1],
                                                 err, sizeof(err)),
                                 KRETRY_ERR_OK);
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
                char name[128];
                snprintf(name, sizeof(name), "consumer.%s", props[i][0]);
                KT_ASSERT_STR_EQ(get(conf, name), props[i][1]);
                snprintf(name, sizeof(name), "producer.%s", props[i][0]);
                KT_ASSERT_STR_EQ(get(conf, name), props[i][1]);
        }
        kretry_conf_destroy(conf);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_names),
                                          KT_TEST(test_scrub),
                                          KT_TEST(test_url),
                                          KT_TEST(test_expand_file),
                                          KT_TEST(test_topology_file_secret),
                                          KT_TEST(test_oidc_passthrough),
                                          KT_END};
        return kt_main("secret", tests, argc, argv);
}
