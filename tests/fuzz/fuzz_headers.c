/*
 * Fuzz target: kretry-* headers as they arrive from outside. The input is
 * read as a list of headers (name NUL value, separated by \n; a name that
 * starts with '!' gets the kretry- prefix instead), decoded as a tier
 * message's chain, and a copy is built from them.
 */
#include "headers.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        const char *p = (const char *)data, *end = p + size;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *le = nl ? nl : end;
                const char *z  = memchr(p, '\0', (size_t)(le - p));
                char name[64];
                const char *nend = z ? z : le;
                size_t nl_len    = (size_t)(nend - p) < sizeof(name) - 8
                                           ? (size_t)(nend - p)
                                           : sizeof(name) - 8;
                int pre          = nl_len && p[0] == '!';
                size_t skip      = pre ? 1 : 0;
                memcpy(name, "kretry-", pre ? 7 : 0);
                memcpy(name + (pre ? 7 : 0), p + skip, nl_len - skip);
                name[(pre ? 7 : 0) + nl_len - skip] = '\0';
                const char *val                     = z ? z + 1 : NULL;
                rd_kafka_header_add(h, name, -1, val,
                                    val ? (ssize_t)(le - val) : 0);
                p = nl ? nl + 1 : end;
        }
        kretry_chain_t c;
        kretry_chain_decode(h, &c);
        kretry_copy_info_t info  = {.attempt = c.attempt_ok ? c.attempt + 1 : 1,
                                    .tier    = 1,
                                    .due_ts  = c.due_ok ? c.due_ts : 0,
                                    .orig_topic =
                                           c.orig_topic_ok ? c.orig_topic : "t",
                                    .orig_partition     = c.orig_partition,
                                    .orig_offset        = c.orig_offset,
                                    .orig_ts            = -1,
                                    .first_failure_ts   = c.first_failure_ts,
                                    .last_failure_ts    = c.last_failure_ts,
                                    .followers          = -1,
                                    .error_class        = "transient",
                                    .group              = "g",
                                    .correlation_id     = c.correlation_id,
                                    .correlation_id_len = c.correlation_id_len};
        rd_kafka_headers_t *copy = kretry_headers_build(h, &info);
        if (copy)
                rd_kafka_headers_destroy(copy);
        rd_kafka_headers_destroy(h);
        return 0;
}
