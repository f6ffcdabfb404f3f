/* Leaf: secret properties and their mask. */
#include "secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* librdkafka's own sensitive properties (those its debug=conf dump shows as
 * "[redacted]") that hold a secret, and the Java clients' names an operator
 * may carry over (librdkafka refuses them as unknown, and the refusal must
 * not print the value either). sasl.oauthbearer.config may hold a
 * principal's secret for the unsecured-JWT mechanism. */
const char *const kretry_secret_names[] = {
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.private.key.pem",
        "ssl.key.password",
        "ssl.key.pem",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "sasl.jaas.config",
        NULL,
};

int kretry_secret_property(const char *name) {
        if (!name)
                return 0;
        if (!strncmp(name, "consumer.", 9) || !strncmp(name, "producer.", 9))
                name += 9;
        for (size_t i = 0; kretry_secret_names[i]; i++)
                if (!strcmp(name, kretry_secret_names[i]))
                        return 1;
        return 0;
}

const char *kretry_secret_shown(const char *name, const char *value) {
        return kretry_secret_property(name) ? KRETRY_SECRET_MASK : value;
}

const char *kretry_secret_url(const char *url, char *dest, size_t dest_size) {
        const char *auth = strstr(url, "://");
        auth             = auth ? auth + 3 : url;
        size_t hostpart  = strcspn(auth, "/?#");
        const char *at   = NULL; /* the last '@' ends the user information */
        for (size_t i = 0; i < hostpart; i++)
                if (auth[i] == '@')
                        at = auth + i;
        const char *pw = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (!pw)
                snprintf(dest, dest_size, "%s", url);
        else
                snprintf(dest, dest_size, "%.*s" KRETRY_SECRET_MASK "%s",
                         (int)(pw + 1 - url), url, at);
        return dest;
}

/* Out of memory the secret's bytes become '*' in place: never shown. */
static int scrub_in_place(char *text, const char *secret) {
        size_t sl = strlen(secret);
        int n     = 0;
        for (char *p = text; (p = strstr(p, secret)); p += sl, n++)
                memset(p, '*', sl);
        return n;
}

int kretry_secret_scrub(char *text, size_t size, const char *secret) {
        static const char mask[] = KRETRY_SECRET_MASK;
        if (!text || !size || !secret || !*secret || !strstr(text, secret))
                return 0;
        char *out = malloc(size);
        if (!out)
                return scrub_in_place(text, secret);
        size_t sl = strlen(secret), len = 0;
        int n = 0;
        for (const char *p = text; *p && len < size - 1;) {
                const char *piece = p;
                size_t plen       = 1;
                if (!strncmp(p, secret, sl)) {
                        piece = mask;
                        plen  = sizeof(mask) - 1;
                        p += sl;
                        n++;
                } else {
                        p++;
                }
                if (plen > size - 1 - len)
                        plen = size - 1 - len;
                memcpy(out + len, piece, plen);
                len += plen;
        }
        out[len] = '\0';
        memcpy(text, out, len + 1);
        free(out);
        return n;
}

int kretry_secrets_add(kretry_secrets_t *s,
                       const char *name,
                       const char *value) {
        if (!kretry_secret_property(name) || !value || !*value)
                return 0;
        for (size_t i = 0; i < s->cnt; i++)
                if (!strcmp(s->values[i], value))
                        return 0;
        char **v = realloc(s->values, sizeof(*v) * (s->cnt + 1));
        if (!v)
                return -1;
        s->values = v;
        if (!(v[s->cnt] = strdup(value)))
                return -1;
        s->cnt++;
        return 0;
}

void kretry_secrets_scrub(const kretry_secrets_t *s, char *text, size_t size) {
        for (size_t i = 0; s && i < s->cnt; i++)
                kretry_secret_scrub(text, size, s->values[i]);
}

void kretry_secrets_clear(kretry_secrets_t *s) {
        for (size_t i = 0; i < s->cnt; i++)
                free(s->values[i]);
        free(s->values);
        s->values = NULL;
        s->cnt    = 0;
}
