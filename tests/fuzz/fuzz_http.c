/*
 * Fuzz target: what an HTTP endpoint answers kretry run --http, as the
 * rules read it. The input is split at NUL bytes into the status (its
 * digits), the status line, Kretry-Error-Code, Retry-After, Location and
 * the body's first line; a sixth part, when present, is read as a
 * --http-retry-status list. The answer is decided (HTTP and transport),
 * and each part goes through the header checks and base64.
 */
#include "http_handler.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size + 1), *part[7] = {0};
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        buf[size] = '\0';
        size_t n  = 0;
        for (char *p = buf; n < 7 && p <= buf + size; p += strlen(p) + 1)
                part[n++] = p;
        kretry_http_opts_t o;
        kretry_http_verdict_t v;
        char err[256], *b64 = malloc(4 * ((size + 2) / 3) + 1);
        kretry_http_opts_init(&o);
        if (part[6])
                kretry_http_statuses_move(&o, part[6], KRETRY_RETRY, err,
                                          sizeof(err));
        kretry_http_answer_t a = {.status      = part[0] ? atol(part[0]) : 0,
                                  .status_line = part[1],
                                  .error_code  = part[2],
                                  .retry_after = part[3],
                                  .location    = part[4],
                                  .first_line  = part[5]};
        kretry_http_decide(&o, &a, 1700000000000, &v);
        a.transport       = (int)(a.status & 0x7f);
        a.transport_error = part[1];
        kretry_http_decide(&o, &a, 0, &v);
        for (size_t i = 0; i < n; i++) {
                kretry_http_token_ok(part[i], strlen(part[i]));
                kretry_http_text_ok(part[i], strlen(part[i]));
                kretry_http_retry_after_ms(part[i], 0);
        }
        if (b64)
                kretry_http_base64(data, size, b64);
        free(b64);
        free(buf);
        return 0;
}
