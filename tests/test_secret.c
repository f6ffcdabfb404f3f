/*
 * Secrets: the one list of secret properties, the mask, scrubbing a text of
 * a secret value; the OAUTHBEARER (OIDC) properties passed through to
 * librdkafka unchanged.
 */
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

static const char *get(const kretry_conf_t *conf, const char *name) {
        static char buf[512];
        if (kretry_conf_get(conf, name, buf, sizeof(buf)))
                return "(unknown)";
        return buf;
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
        static const kt_test_t tests[] = {
                KT_TEST(test_names), KT_TEST(test_scrub),
                KT_TEST(test_oidc_passthrough), KT_END};
        return kt_main("secret", tests, argc, argv);
}
