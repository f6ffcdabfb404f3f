#include "ui_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ui_parse_int(const char *s, int64_t min, int64_t max, int64_t *out) {
        char *end;
        if (!s || !*s || strlen(s) > 19 ||
            (*s != '-' && (*s < '0' || *s > '9')))
                return -1;
        errno       = 0;
        long long v = strtoll(s, &end, 10);
        if (*end || errno || v < min || v > max)
                return -1;
        *out = v;
        return 0;
}

static int host_loopback(const char *host, int ipv6) {
        unsigned char a[16];
        if (!strcmp(host, "localhost"))
                return 1;
        if (ipv6)
                return inet_pton(AF_INET6, host, a) == 1 &&
                       !memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16);
        return inet_pton(AF_INET, host, a) == 1 && a[0] == 127;
}

int ui_listen_parse(const char *s,
                    ui_listen_t *l,
                    char *errstr,
                    size_t errstr_size) {
        const char *colon = strrchr(s, ':');
        size_t hlen;
        int64_t port;
        unsigned char a[16];
        memset(l, 0, sizeof(*l));
        if (!colon || ui_parse_int(colon + 1, 0, 65535, &port))
                goto bad;
        l->port = (int)port;
        if (*s == '[') {
                if (colon == s || colon[-1] != ']')
                        goto bad;
                l->ipv6 = 1;
                s++;
                hlen = (size_t)(colon - 1 - s);
        } else {
                hlen = (size_t)(colon - s);
        }
        if (!hlen || hlen >= sizeof(l->host))
                goto bad;
        memcpy(l->host, s, hlen);
        l->host[hlen] = '\0';
        if (strcmp(l->host, "localhost") &&
            inet_pton(l->ipv6 ? AF_INET6 : AF_INET, l->host, a) != 1)
                goto bad;
        l->loopback = host_loopback(l->host, l->ipv6);
        return 0;
bad:
        snprintf(errstr, errstr_size,
                 "expected HOST:PORT with an IPv4 address, [IPv6] or "
                 "localhost, and a port 0..65535");
        return -1;
}

int ui_token_equal(const char *given, const char *token) {
        if (!given || !token)
                return 0;
        size_t n = strlen(token), g = strlen(given);
        unsigned char diff = n != g;
        for (size_t i = 0; i < n; i++)
                diff |= (unsigned char)(token[i] ^ (i < g ? given[i] : 0));
        return !diff;
}

const char *ui_request_token(const char *auth, const char *param) {
        if (auth && !strncmp(auth, "Bearer ", 7))
                return auth + 7;
        return param;
}

int ui_host_is_loopback(const char *host, int port) {
        static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
        char want[32];
        if (!host)
                return 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(want, sizeof(want), "%s:%d", names[i], port);
                if (!strcmp(host, want) ||
                    (port == 80 && !strcmp(host, names[i])))
                        return 1;
        }
        return 0;
}

int ui_cross_origin(const char *origin,
                    const char *sec_fetch_site,
                    const char *host) {
        if (sec_fetch_site && strcmp(sec_fetch_site, "same-origin") &&
            strcmp(sec_fetch_site, "none"))
                return 1;
        if (!origin)
                return 0;
        return !host || strncmp(origin, "http://", 7) ||
               strcmp(origin + 7, host);
}

int ui_parse_cursor(const char *s, int32_t *partition, int64_t *offset) {
        char buf[48];
        int64_t p, o;
        const char *colon = s ? strchr(s, ':') : NULL;
        if (!colon || (size_t)(colon - s) >= sizeof(buf))
                return -1;
        memcpy(buf, s, (size_t)(colon - s));
        buf[colon - s] = '\0';
        if (ui_parse_int(buf, 0, INT32_MAX, &p) ||
            ui_parse_int(colon + 1, 0, INT64_MAX, &o))
                return -1;
        *partition = (int32_t)p;
        *offset    = o;
        return 0;
}

int ui_parse_message_path(const char *path,
                          int32_t *partition,
                          int64_t *offset) {
        char buf[64];
        static const char prefix[] = "/api/dlq/";
        if (strncmp(path, prefix, sizeof(prefix) - 1) ||
            strlen(path) >= sizeof(buf) + sizeof(prefix))
                return -1;
        snprintf(buf, sizeof(buf), "%s", path + sizeof(prefix) - 1);
        char *slash = strchr(buf, '/');
        if (!slash)
                return -1;
        *slash = ':';
        return ui_parse_cursor(buf, partition, offset);
}

int ui_parse_job_path(const char *path, int64_t *id, int *stop) {
        char buf[32];
        static const char prefix[] = "/api/replay/";
        if (strncmp(path, prefix, sizeof(prefix) - 1))
                return -1;
        path += sizeof(prefix) - 1;
        const char *slash = strchr(path, '/');
        size_t n          = slash ? (size_t)(slash - path) : strlen(path);
        if (n >= sizeof(buf) || (slash && strcmp(slash, "/stop")))
                return -1;
        memcpy(buf, path, n);
        buf[n] = '\0';
        *stop  = slash != NULL;
        return ui_parse_int(buf, 1, INT64_MAX, id);
}

int ui_media_type_is(const char *value, const char *want) {
        size_t n = strlen(want);
        if (!value || strncasecmp(value, want, n))
                return 0;
        value += n;
        while (*value == ' ' || *value == '\t')
                value++;
        return !*value || *value == ';';
}
