/* Leaf: parsers of property values. */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Durations above 10 years are refused: they overflow nothing, but they are
 * always a typo in a retry topology. */
#define KRETRY_DURATION_MAX_MS (10LL * 365 * 24 * 3600 * 1000)

static const struct {
        const char *suffix;
        int64_t ms;
} units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};

int kretry_parse_duration_ms(const char *s,
                             int64_t *msp,
                             char *errstr,
                             size_t errstr_size) {
        if (!s || !isdigit((unsigned char)*s)) {
                snprintf(errstr, errstr_size,
                         "\"%s\" is not a duration (an integer followed by "
                         "ms, s, m, h or d)",
                         s ? s : "");
                return -1;
        }
        errno       = 0;
        char *end   = NULL;
        long long n = strtoll(s, &end, 10);
        if (errno == ERANGE)
                n = KRETRY_DURATION_MAX_MS + 1;
        if (*end == '\0' && n == 0) {
                *msp = 0;
                return 0;
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcmp(end, units[i].suffix))
                        continue;
                if (n > KRETRY_DURATION_MAX_MS / units[i].ms) {
                        snprintf(errstr, errstr_size,
                                 "duration \"%s\" is longer than 10 years", s);
                        return -1;
                }
                *msp = n * units[i].ms;
                return 0;
        }
        snprintf(errstr, errstr_size,
                 "\"%s\" is not a duration (an integer followed by ms, s, m, "
                 "h or d)",
                 s);
        return -1;
}

void kretry_format_duration(int64_t ms, char *dest, size_t dest_size) {
        for (int i = (int)(sizeof(units) / sizeof(units[0])) - 1; i >= 0; i--) {
                if (ms != 0 && ms % units[i].ms == 0) {
                        snprintf(dest, dest_size, "%lld%s",
                                 (long long)(ms / units[i].ms),
                                 units[i].suffix);
                        return;
                }
        }
        snprintf(dest, dest_size, "%lldms", (long long)ms);
}

int kretry_parse_percent(const char *s,
                         double *fractionp,
                         char *errstr,
                         size_t errstr_size) {
        char *end = NULL;
        double v  = s && isdigit((unsigned char)*s) ? strtod(s, &end) : -1;
        if (!end || strcmp(end, "%")) {
                snprintf(errstr, errstr_size,
                         "\"%s\" is not a percentage (e.g. 20%%)", s ? s : "");
                return -1;
        }
        if (v < 0 || v > 100) {
                snprintf(errstr, errstr_size, "%s is out of range 0%%..100%%",
                         s);
                return -1;
        }
        *fractionp = v / 100.0;
        return 0;
}

int kretry_parse_int64(const char *s,
                       int64_t min,
                       int64_t max,
                       int64_t *outp,
                       char *errstr,
                       size_t errstr_size) {
        char *end   = NULL;
        errno       = 0;
        long long v = s && (isdigit((unsigned char)*s) ||
                            (*s == '-' && isdigit((unsigned char)s[1])))
                              ? strtoll(s, &end, 10)
                              : 0;
        if (!end || *end) {
                snprintf(errstr, errstr_size, "\"%s\" is not an integer",
                         s ? s : "");
                return -1;
        }
        if (errno == ERANGE || v < min || v > max) {
                snprintf(errstr, errstr_size, "%s is out of range %lld..%lld",
                         s, (long long)min, (long long)max);
                return -1;
        }
        *outp = v;
        return 0;
}

int kretry_parse_duration_list(const char *s,
                               int64_t *out,
                               int max,
                               char *errstr,
                               size_t errstr_size) {
        char buf[64];
        int n = 0;
        if (!s || !*s) {
                snprintf(errstr, errstr_size, "the list of delays is empty");
                return -1;
        }
        while (*s) {
                size_t len = strcspn(s, ",");
                while (len > 0 && isspace((unsigned char)*s)) {
                        s++;
                        len--;
                }
                size_t tl = len;
                while (tl > 0 && isspace((unsigned char)s[tl - 1]))
                        tl--;
                if (tl == 0 || tl >= sizeof(buf)) {
                        snprintf(errstr, errstr_size,
                                 "empty or overlong delay in list");
                        return -1;
                }
                if (n == max) {
                        snprintf(errstr, errstr_size,
                                 "more than %d delays in list", max);
                        return -1;
                }
                memcpy(buf, s, tl);
                buf[tl] = '\0';
                if (kretry_parse_duration_ms(buf, &out[n], errstr, errstr_size))
                        return -1;
                n++;
                s += len;
                if (*s == ',') {
                        s++;
                        if (!*s) {
                                snprintf(errstr, errstr_size,
                                         "trailing comma in list of delays");
                                return -1;
                        }
                }
        }
        return n;
}

int kretry_http_header_framing(const char *name, size_t len) {
        static const char *const names[] = {
                "Content-Length", "Transfer-Encoding", "Host",
                "Connection",     "Keep-Alive",        "TE",
                "Trailer",        "Upgrade",           "Expect"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strlen(names[i]) == len &&
                    !strncasecmp(name, names[i], len))
                        return 1;
        return len >= 6 && !strncasecmp(name, "Proxy-", 6);
}
