/*
 * What a dead-lettered message says about its failure, decoded from its
 * kretry-* headers (DESIGN §3), and the operator's filters over it (kretry
 * dlq inspect/replay --class/--code/--key/--since/--until). Plain data: the
 * CLI reads the DLQ, this decides which messages an operator meant.
 */
#ifndef KRETRY_DLQ_FILTER_H
#define KRETRY_DLQ_FILTER_H

#include "headers.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/* A header value borrowed from the message: NULL when absent. */
typedef struct {
        const char *ptr;
        size_t len;
} kretry_dlq_text_t;

/* The last header @p name of @p hdrs, borrowed; {NULL, 0} when absent. */
kretry_dlq_text_t kretry_dlq_text(const rd_kafka_headers_t *hdrs,
                                  const char *name);

typedef struct {
        kretry_chain_t chain; /* attempt, original topic/partition/... */
        kretry_dlq_text_t error_class, error_code, error, group;
        kretry_dlq_text_t stacktrace; /* Spring's and Connect's only */
        int64_t last_failure_ts;      /* -1: absent or malformed */
        int64_t replay_count;         /* 0 when absent or malformed */
        /* Who wrote the failure context: "kretry" (kretry-error-class),
         * "spring" or "connect" (dlq_foreign.h), NULL when nobody. */
        const char *origin;
} kretry_dlq_info_t;

/* Decode @p hdrs (may be NULL): kretry's headers, and where they say
 * nothing, Spring Kafka's or Kafka Connect's (dlq_foreign.h). Every
 * pointer in @p info borrows from @p hdrs or is a static string. */
void kretry_dlq_info_decode(const rd_kafka_headers_t *hdrs,
                            kretry_dlq_info_t *info);

/* When a DLQ message was dead-lettered: its timestamp (the adapter produces
 * it at that moment), or kretry-last-failure-ts when it has none; -1 when
 * neither is known. */
int64_t kretry_dlq_dead_lettered_at(const kretry_dlq_info_t *info,
                                    int64_t msg_ts);

/* The operator's filters; every one set must match. */
typedef struct {
        const char *error_class; /* NULL: any */
        const char *error_code;  /* NULL: any */
        const char *key;         /* NULL: any; matches the key's bytes */
        size_t key_len;
        int64_t since_ms; /* -1: no lower bound (dead-lettered at >= since) */
        int64_t until_ms; /* -1: no upper bound (dead-lettered at < until) */
} kretry_dlq_filter_t;

/* A filter that matches everything. */
void kretry_dlq_filter_init(kretry_dlq_filter_t *f);

/* 1 when the message matches @p f. @p key may be NULL (a null key, which
 * no --key matches); @p dead_lettered_at as kretry_dlq_dead_lettered_at()
 * returns (an unknown time matches no time bound). */
int kretry_dlq_filter_match(const kretry_dlq_filter_t *f,
                            const kretry_dlq_info_t *info,
                            const void *key,
                            size_t key_len,
                            int64_t dead_lettered_at);

/* 1 when @p cls is an error class kretry writes (transient, permanent,
 * exhausted, expired, schema, parked): a filter on any other matches
 * nothing, so a front-end may refuse it as a typo. */
int kretry_dlq_class_known(const char *cls);

/* Parse a --since/--until value: a duration ago ("90s", "1h", "2d") or an
 * absolute time in epoch milliseconds (digits only). Returns 0 and sets
 * *@p msp, or -1 with a reason in @p errstr. */
int kretry_dlq_parse_time(const char *s,
                          int64_t now_ms,
                          int64_t *msp,
                          char *errstr,
                          size_t errstr_size);

#endif
