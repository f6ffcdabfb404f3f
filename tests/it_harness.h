/*
 * Integration harness: a source topic with its tiers and DLQ on the test
 * cluster, an adapter configured for fast tests, a scripted handler that
 * records every call, and a loop that drives the adapter until a condition
 * holds.
 */
#ifndef KRETRY_IT_HARNESS_H
#define KRETRY_IT_HARNESS_H

#include "kretry/kretry.h"
#include "testutil.h"

#define IT_MAX_CALLS 4096

typedef struct {
        char value[64];
        int attempt, tier;
        int64_t offset, orig_offset, now_ms, due_ts, first_failure_ts;
        char topic[160], hdr_attempt[32], hdr_tier[32], orig_topic[160];
        int key_null, value_null;
        size_t value_len;
        char key[64], trace[64]; /* the key; the user header "trace-id" */
        int64_t ts;              /* kretry_msg_timestamp */
} it_call_t;

typedef struct {
        kt_cluster_t *c;
        char source[128], group[128], tiers[8][160], dlq[160];
        int tier_cnt, parts;
        it_call_t calls[IT_MAX_CALLS];
        int call_cnt;
        int routes[8]; /* per kretry_route_t */
} it_env_t;

/* Create the cluster (or use KRETRY_TEST_BOOTSTRAP) and the topics:
 * @p tiers like "50ms,100ms". */
it_env_t *it_env_new(const char *tiers, int parts);
/* The same on a mock cluster of @p brokers brokers (leader moves, one
 * broker failing). */
it_env_t *it_env_new_brokers(const char *tiers, int parts, int brokers);
void it_env_destroy(it_env_t *env);
/* The mock cluster of @p env, or NULL on a real one: the test is reported
 * skipped with @p on_real (kt_mock_only) and @p env is destroyed. */
rd_kafka_mock_cluster_t *it_mock_or_skip(it_env_t *env, const char *on_real);

/*
 * The scripted handler: the message value says what to do.
 *   "ok..."        OK
 *   "retryN..."    RETRY on attempts 1..N, then OK
 *   "fail..."      FAIL (code VALIDATION, message "bad order")
 *   "always..."    RETRY every time
 *   "hint..."      RETRY with a 150 ms retry-after hint on attempt 1, then OK
 *   "slowN..."     takes N seconds on attempt 1, then OK
 *   "okslow..."    OK after 200 us
 * A null value is handled like "retry1".
 */
kretry_action_t it_handler(kretry_msg_t *msg, void *opaque);

/* A configuration for @p env with the scripted handler, or extra properties
 * as name/value pairs ending with NULL. */
kretry_conf_t *it_conf(it_env_t *env, ...);

kretry_adapter_t *it_adapter(kretry_conf_t *conf);

/* it_conf()'s log callback: warnings and errors (everything with
 * KRETRY_TEST_DEBUG set) to stderr. */
void it_log(kretry_log_level_t level,
            const char *fac,
            const char *msg,
            void *opaque);

/* The end offset of @p topic [@p p] (its high watermark), -1 when the
 * cluster does not say. */
int64_t it_end_offset(it_env_t *env, const char *topic, int32_t p);
/* The first tier's partition @p p committed past its last copy: at its end,
 * or (routing=transactional) before the commit marker that ends it (a
 * marker is never consumed). */
int it_tier_at_end(it_env_t *env, int32_t p);

/* Poll until @p cond returns true or @p timeout_ms passes; returns cond. */
int it_run_until(kretry_adapter_t *a,
                 int (*cond)(kretry_adapter_t *a, it_env_t *env),
                 it_env_t *env,
                 int timeout_ms);

/* Poll @p a for @p ms. */
void it_poll_for(kretry_adapter_t *a, int ms);

/* Poll until counter @p c (all tiers) reaches @p n or @p timeout_ms passes;
 * returns whether it did. */
int it_wait_counter(kretry_adapter_t *a,
                    kretry_counter_t c,
                    int64_t n,
                    int timeout_ms);

void it_produce(it_env_t *env,
                int32_t partition,
                const char *key,
                const char *value,
                rd_kafka_headers_t *hdrs);

/* Write the Avro schema R{id: string, n: long} to a new file named into
 * @p path (the caller unlinks it). */
void it_schema_r(char *path, size_t size);

/* A value of @p size bytes, @p prefix then 'G's (the handler reads the
 * prefix), key "k", produced to partition @p partition of the source. */
void it_produce_big(it_env_t *env,
                    int32_t partition,
                    const char *prefix,
                    size_t size);

/* Calls recorded for @p value. */
/* @p keys keys ("key-K") of @p per_key messages each, valued "K:S", key K
 * on partition K mod parts, in rounds: every key's S-th message, then the
 * next S. */
void it_produce_keys(it_env_t *env, int keys, int per_key);
/* A message of it_produce_keys(): its K and S. */
void it_key_seq(const kretry_msg_t *msg, int *key, int *seq);

/* A second instance's environment: @p env's cluster, topics and group,
 * its own record of calls. Free with free(), not it_env_destroy(). */
it_env_t *it_env_twin(const it_env_t *env);

/* Whether every message "<...>-I", I in 0..@p n-1, has a call in @p a or
 * @p b for which @p done returns true. */
int it_all_done(const it_env_t *a,
                const it_env_t *b,
                int n,
                int (*done)(const it_call_t *c));

int it_calls_for(const it_env_t *env,
                 const char *value,
                 const it_call_t **out,
                 int max);

#endif
