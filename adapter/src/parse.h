/*
 * Leaf: parsers of property values.
 *
 * Parsers for the small value syntaxes kretry accepts in properties and
 * topology files: durations ("250ms", "10s", "1m", "2h", "7d"), percentages
 * ("20%") and comma-separated duration lists. Pure functions, no I/O.
 */
#ifndef KRETRY_PARSE_H
#define KRETRY_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Parse a non-negative integer followed by ms, s, m, h or d (a bare 0 is
 * accepted). Returns 0 and sets *msp, or -1 with a reason in @p errstr. */
int kretry_parse_duration_ms(const char *s,
                             int64_t *msp,
                             char *errstr,
                             size_t errstr_size);

/* Render @p ms in the largest unit that divides it exactly ("90s", "2h"). */
void kretry_format_duration(int64_t ms, char *dest, size_t dest_size);

/* Parse "N%" or "N.N%" (0..100) into a fraction 0..1. */
int kretry_parse_percent(const char *s,
                         double *fractionp,
                         char *errstr,
                         size_t errstr_size);

/* Parse a decimal integer within [min, max]; no sign other than '-', no
 * trailing garbage. */
int kretry_parse_int64(const char *s,
                       int64_t min,
                       int64_t max,
                       int64_t *outp,
                       char *errstr,
                       size_t errstr_size);

/* Parse "1s,10s,1m" into at most @p max delays. Returns the count, or -1. */
int kretry_parse_duration_list(
        const char *s, int64_t *out, int max, char *errstr, size_t errstr_size);

/*
 * Is the HTTP header name @p name (@p len bytes, no NUL needed) one that
 * frames or routes a request: Content-Length, Transfer-Encoding, Host,
 * Connection, Keep-Alive, TE, Trailer, Upgrade, Expect or Proxy-*, in any
 * case? Such a header set by a user makes the server read the request's
 * body as the next request (or send it elsewhere), so kretry run refuses it
 * in --http-header and in a topology's handler.http.headers alike.
 */
int kretry_http_header_framing(const char *name, size_t len);

/* Why such a header is refused, for messages after "NAME: ". */
#define KRETRY_HTTP_FRAMING_REFUSED                                            \
        "refused: a header that frames or routes the request "                 \
        "(Content-Length, Transfer-Encoding, Host, Connection, Keep-Alive, "   \
        "TE, Trailer, Upgrade, Expect, Proxy-*) could make the service read "  \
        "a body as the next request"

#endif
