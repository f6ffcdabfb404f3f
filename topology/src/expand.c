#include "expand.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
        char *buf;
        size_t len, size;
} sbuf_t;

static int sbuf_put(sbuf_t *b, const char *s, size_t n) {
        if (b->len + n + 1 > b->size) {
                size_t size = (b->len + n + 1) * 2;
                char *buf   = realloc(b->buf, size);
                if (!buf)
                        return -1;
                b->buf  = buf;
                b->size = size;
        }
        memcpy(b->buf + b->len, s, n);
        b->len += n;
        b->buf[b->len] = '\0';
        return 0;
}

static int valid_name(const char *s, size_t n) {
        if (n == 0 || isdigit((unsigned char)s[0]))
                return 0;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)s[i]) && s[i] != '_')
                        return 0;
        return 1;
}

/* The contents of the file a "${file:PATH}" names, one trailing newline
 * ("\n" or "\r\n") dropped: a secret mounted as a file (Kubernetes,
 * Docker, systemd credentials). Errors name the path, never the contents. */
static int read_all(const char *name, sbuf_t *b, char *errstr, size_t size) {
        FILE *fp = fopen(name, "rb");
        if (!fp) {
                snprintf(errstr, size, "${file:%s}: cannot read: %s", name,
                         strerror(errno));
                return -1;
        }
        char *buf  = malloc(KRETRY_EXPAND_FILE_MAX + 1);
        size_t len = buf ? fread(buf, 1, KRETRY_EXPAND_FILE_MAX + 1, fp) : 0;
        int e      = ferror(fp) ? errno : 0;
        fclose(fp);
        const char *why = !buf                           ? "out of memory"
                          : e                            ? strerror(e)
                          : len > KRETRY_EXPAND_FILE_MAX ? "larger than 64 KiB"
                          : memchr(buf, '\0', len)       ? "holds a NUL byte"
                                                         : NULL;
        if (!why) {
                if (len && buf[len - 1] == '\n')
                        len -= 1 + (len > 1 && buf[len - 2] == '\r');
                if (sbuf_put(b, buf, len))
                        why = "out of memory";
        }
        free(buf);
        if (why)
                snprintf(errstr, size, "${file:%s}: cannot read: %s", name,
                         why);
        return why ? -1 : 0;
}

static int put_file(sbuf_t *b,
                    const char *path,
                    size_t n,
                    char *errstr,
                    size_t errstr_size) {
        char name[4096];
        if (n == 0 || n >= sizeof(name) || path[0] != '/') {
                snprintf(errstr, errstr_size,
                         "${file:%.*s}: write an absolute path, e.g. "
                         "${file:/run/secrets/kafka-password}",
                         (int)(n > 256 ? 256 : n), path);
                return -1;
        }
        memcpy(name, path, n);
        name[n] = '\0';
        return read_all(name, b, errstr, errstr_size);
}

/* Expand the reference starting at "${"; returns its length, or -1. */
static int
expand_ref(sbuf_t *b, const char *s, char *errstr, size_t errstr_size) {
        const char *end = strchr(s + 2, '}');
        if (!end) {
                snprintf(errstr, errstr_size,
                         "unterminated ${ in \"%s\": write ${VAR}, "
                         "${VAR:-default} or ${file:PATH}",
                         s);
                return -1;
        }
        const char *body = s + 2;
        if (!strncmp(body, "file:", 5))
                return put_file(b, body + 5, (size_t)(end - body - 5), errstr,
                                errstr_size)
                               ? -1
                               : (int)(end - s + 1);
        const char *dflt = strstr(body, ":-");
        if (dflt && dflt > end)
                dflt = NULL;
        size_t nlen = (size_t)((dflt ? dflt : end) - body);
        char name[128];
        if (!valid_name(body, nlen) || nlen >= sizeof(name)) {
                snprintf(errstr, errstr_size,
                         "\"%.*s\" is not a variable name (letters, digits, "
                         "_)",
                         (int)nlen, body);
                return -1;
        }
        memcpy(name, body, nlen);
        name[nlen]      = '\0';
        const char *val = getenv(name);
        int rc;
        if (val && *val)
                rc = sbuf_put(b, val, strlen(val));
        else if (dflt)
                rc = sbuf_put(b, dflt + 2, (size_t)(end - dflt - 2));
        else if (val)
                rc = 0; /* set but empty, no default: empty */
        else {
                snprintf(errstr, errstr_size,
                         "environment variable %s is not set and has no "
                         "default (write ${%s:-default})",
                         name, name);
                return -1;
        }
        if (rc) {
                snprintf(errstr, errstr_size, "out of memory");
                return -1;
        }
        return (int)(end - s + 1);
}

char *kretry_expand_env(const char *s, char *errstr, size_t errstr_size) {
        sbuf_t b = {NULL, 0, 0};
        if (sbuf_put(&b, "", 0))
                goto oom;
        while (*s) {
                if (s[0] == '$' && s[1] == '$') {
                        if (sbuf_put(&b, "$", 1))
                                goto oom;
                        s += 2;
                } else if (s[0] == '$' && s[1] == '{') {
                        int n = expand_ref(&b, s, errstr, errstr_size);
                        if (n < 0)
                                goto err;
                        s += n;
                } else {
                        size_t n = strcspn(s + 1, "$") + 1;
                        if (sbuf_put(&b, s, n))
                                goto oom;
                        s += n;
                }
        }
        return b.buf;
oom:
        snprintf(errstr, errstr_size, "out of memory");
err:
        free(b.buf);
        return NULL;
}
