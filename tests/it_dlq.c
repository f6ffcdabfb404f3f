/*
 * kretry dlq inspect/replay, the commands themselves (KRETRY_CLI_PATH) on
 * the mock cluster: a topology file in /tmp names the test's topics and
 * the cluster's bootstrap, dead-lettered messages are produced straight to
 * the DLQ with the headers the adapter writes.
 */
#include "testutil.h"

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
        kt_cluster_t *c;
        char source[128], group[128], dlq[160], tier1[160], tier2[160];
        char yaml[256];
        rd_kafka_t *producer;
} env_t;

static env_t *env_new(int parts) {
        env_t *e = calloc(1, sizeof(*e));
        e->c     = kt_cluster_new(1);
        KT_REQUIRE(kt_cluster_topic(e->c, "orders", parts, e->source,
                                    sizeof(e->source)) == 0);
        kt_unique_name("svc", e->group, sizeof(e->group));
        snprintf(e->dlq, sizeof(e->dlq), "%s.dlq", e->source);
        snprintf(e->tier1, sizeof(e->tier1), "%s.retry.1", e->source);
        snprintf(e->tier2, sizeof(e->tier2), "%s.retry.2", e->source);
        KT_REQUIRE(kt_cluster_topic_named(e->c, e->dlq, parts) == 0);
        KT_REQUIRE(kt_cluster_topic_named(e->c, e->tier1, parts) == 0);
        KT_REQUIRE(kt_cluster_topic_named(e->c, e->tier2, parts) == 0);
        snprintf(e->yaml, sizeof(e->yaml), "/tmp/kretry-it-dlq-%d-%s.yaml",
                 (int)getpid(), e->group);
        kt_write_topology(e->c, e->yaml, e->source, e->group, "[1s, 10s]", "");
        char errstr[256];
        rd_kafka_conf_t *conf = kt_rdkafka_conf(e->c);
        rd_kafka_conf_set(conf, "linger.ms", "5", NULL, 0);
        e->producer =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        KT_REQUIRE(e->producer != NULL);
        return e;
}

static void env_destroy(env_t *e) {
        unlink(e->yaml);
        rd_kafka_destroy(e->producer);
        kt_cluster_destroy(e->c);
        free(e);
}

/* A dead-lettered message as the adapter writes it, plus a user header;
 * @p ts is its timestamp (when it was dead-lettered), 0 for now. Not
 * flushed: call flush() before running the CLI. */
static void dlq_put(env_t *e,
                    int32_t partition,
                    const char *key,
                    const char *value,
                    const char *cls,
                    const char *code,
                    int64_t ts) {
        char off[24];
        snprintf(off, sizeof(off), "%d", (int)(ts % 1000));
        rd_kafka_headers_t *h = rd_kafka_headers_new(16);
        rd_kafka_header_add(h, "traceparent", -1, "00-abc-01", -1);
        rd_kafka_header_add(h, "kretry-attempt", -1, "3", -1);
        rd_kafka_header_add(h, "kretry-original-topic", -1, e->source, -1);
        rd_kafka_header_add(h, "kretry-original-partition", -1, "0", -1);
        rd_kafka_header_add(h, "kretry-original-offset", -1, off, -1);
        rd_kafka_header_add(h, "kretry-first-failure-ts", -1, "1700000000000",
                            -1);
        rd_kafka_header_add(h, "kretry-last-failure-ts", -1, "1700000005000",
                            -1);
        rd_kafka_header_add(h, "kretry-error-class", -1, cls, -1);
        if (code)
                rd_kafka_header_add(h, "kretry-error-code", -1, code, -1);
        rd_kafka_header_add(h, "kretry-error", -1, "it broke", -1);
        rd_kafka_header_add(h, "kretry-group", -1, e->group, -1);
        rd_kafka_header_add(h, "kretry-correlation-id", -1, value, -1);
        rd_kafka_resp_err_t err = rd_kafka_producev(
                e->producer, RD_KAFKA_V_TOPIC(e->dlq),
                RD_KAFKA_V_PARTITION(partition),
                RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_HEADERS(h),
                RD_KAFKA_V_END);
        KT_REQUIRE(err == 0);
}

static void flush(env_t *e) {
        KT_REQUIRE(rd_kafka_flush(e->producer, 10000) == 0);
}

/* Run the CLI with @p args (NULL-terminated) after "dlq SUB --topology
 * FILE"; its stdout goes to @p out (may be NULL). Returns the exit status
 * (-1 on a signal). */
static int run_cli(env_t *e,
                   const char *sub,
                   char *out,
                   size_t out_size,
                   const char *const *args) {
        const char *argv[40] = {"kretry", "dlq", sub, "--topology", e->yaml};
        int n                = 5;
        for (; args && *args && n < 38; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        return kt_run(KRETRY_CLI_PATH, argv, 0, out, out_size);
}

/* Inspect with --output json and @p args; returns the rows (a JSON array
 * made of the lines; free with json_decref). */
static json_t *inspect_json(env_t *e, const char *const *args) {
        static char out[1 << 20];
        const char *a[32] = {"--output", "json"};
        int n             = 2;
        for (; args && *args && n < 30; args++)
                a[n++] = *args;
        a[n] = NULL;
        KT_ASSERT_INT_EQ(run_cli(e, "inspect", out, sizeof(out), a), 0);
        json_t *rows = json_array();
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
                json_error_t jerr;
                json_t *row = json_loads(line, JSON_ALLOW_NUL, &jerr);
                KT_CHECK_MSG(row != NULL, CU_FALSE, "not JSON: %s", line);
                if (row)
                        json_array_append_new(rows, row);
        }
        return rows;
}

static const char *row_str(json_t *rows, size_t i, const char *field) {
        return json_string_value(
                json_object_get(json_array_get(rows, i), field));
}

/* The DLQ of the filter tests: 6 messages on 2 partitions. */
static void fill_filters(env_t *e) {
        int64_t now = kt_wall_ms(), old = now - 2 * 3600 * 1000;
        dlq_put(e, 0, "k1", "v-a", "permanent", "VALIDATION", now);
        dlq_put(e, 0, "k2", "v-b", "exhausted", "HTTP_503", now);
        dlq_put(e, 1, "k1", "v-c", "permanent", "NOT_FOUND", old);
        dlq_put(e, 1, "k3", "v-d", "expired", NULL, now);
        dlq_put(e, 1, NULL, "v-e", "schema", NULL, old);
        dlq_put(e, 0, "k\377\001", "v-f", "permanent", "VALIDATION", now);
        flush(e);
}

static size_t count(env_t *e, const char *const *args) {
        json_t *rows = inspect_json(e, args);
        size_t n     = json_array_size(rows);
        json_decref(rows);
        return n;
}

static void test_inspect_filters(void) {
        env_t *e = env_new(2);
        fill_filters(e);
        json_t *rows = inspect_json(e, NULL);
        KT_ASSERT_INT_EQ(json_array_size(rows), 6);
        /* partition order, then offset order */
        KT_ASSERT_STR_EQ(row_str(rows, 0, "key"), "k1");
        KT_ASSERT_STR_EQ(row_str(rows, 0, "class"), "permanent");
        KT_ASSERT_STR_EQ(row_str(rows, 0, "code"), "VALIDATION");
        KT_ASSERT_STR_EQ(row_str(rows, 0, "error"), "it broke");
        KT_ASSERT_STR_EQ(row_str(rows, 0, "correlation_id"), "v-a");
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(
                                 json_array_get(rows, 0), "attempts")),
                         3);
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(
                                 json_array_get(rows, 0), "first_failure_ts")),
                         1700000000000LL);
        KT_ASSERT_STR_EQ(row_str(rows, 2, "key_hex"), "6bff01");
        KT_ASSERT_INT_EQ(json_integer_value(json_object_get(
                                 json_array_get(rows, 3), "partition")),
                         1);
        /* values are hidden unless asked for */
        KT_ASSERT(json_object_get(json_array_get(rows, 0), "value") == NULL);
        json_decref(rows);

        KT_ASSERT_INT_EQ(
                count(e, (const char *[]){"--class", "permanent", NULL}), 3);
        KT_ASSERT_INT_EQ(count(e, (const char *[]){"--code", "HTTP_503", NULL}),
                         1);
        KT_ASSERT_INT_EQ(count(e, (const char *[]){"--key", "k1", NULL}), 2);
        KT_ASSERT_INT_EQ(count(e, (const char *[]){"--since", "1h", NULL}), 4);
        KT_ASSERT_INT_EQ(count(e, (const char *[]){"--until", "1h", NULL}), 2);
        char epoch[32];
        snprintf(epoch, sizeof(epoch), "%lld",
                 (long long)(kt_wall_ms() - 3 * 3600 * 1000));
        KT_ASSERT_INT_EQ(count(e, (const char *[]){"--since", epoch, "--until",
                                                   "1h", NULL}),
                         2);
        KT_ASSERT_INT_EQ(
                count(e, (const char *[]){"--class", "permanent", "--key", "k1",
                                          "--since", "1h", NULL}),
                1);
        KT_ASSERT_INT_EQ(count(e, (const char *[]){"--limit", "2", NULL}), 2);
        KT_ASSERT_INT_EQ(count(e, (const char *[]){"--class", "nope", NULL}),
                         0);

        rows = inspect_json(e, (const char *[]){"--show-value", "--code",
                                                "NOT_FOUND", NULL});
        KT_ASSERT_INT_EQ(json_array_size(rows), 1);
        KT_ASSERT_STR_EQ(row_str(rows, 0, "value"), "v-c");
        json_decref(rows);
        env_destroy(e);
}

static void test_inspect_table(void) {
        static char out[1 << 16];
        env_t *e = env_new(2);
        fill_filters(e);
        KT_ASSERT_INT_EQ(run_cli(e, "inspect", out, sizeof(out), NULL), 0);
        KT_CHECK_MSG(strstr(out, "PART") && strstr(out, "FIRST FAILURE") &&
                             !strstr(out, "VALUE"),
                     CU_FALSE, "heading: %.1500s", out);
        KT_CHECK_MSG(strstr(out, "0x6bff01") && strstr(out, "VALIDATION") &&
                             strstr(out, "2023-11-14T22:13:20Z") &&
                             !strstr(out, "v-a"),
                     CU_FALSE, "rows: %.1500s", out);
        int lines = 0;
        for (char *p = out; *p; p++)
                lines += *p == '\n';
        KT_ASSERT_INT_EQ(lines, 7);
        KT_ASSERT_INT_EQ(run_cli(e, "inspect", out, sizeof(out),
                                 (const char *[]){"--show-value", NULL}),
                         0);
        KT_CHECK_MSG(strstr(out, "VALUE") && strstr(out, "v-a"), CU_FALSE,
                     "values: %.1500s", out);
        /* it reads without committing anything */
        char replay_group[200];
        snprintf(replay_group, sizeof(replay_group), "%s.kretry-replay",
                 e->group);
        KT_ASSERT_INT_EQ(kt_committed(e->c, replay_group, e->dlq, 0),
                         RD_KAFKA_OFFSET_INVALID);
        KT_ASSERT_INT_EQ(kt_committed(e->c, "kretry-dlq-reader", e->dlq, 0),
                         RD_KAFKA_OFFSET_INVALID);
        env_destroy(e);
}

/* An error header that is not UTF-8 (an endpoint's binary error body):
 * the JSON row keeps "error", each stray byte as U+FFFD, and the exact
 * bytes in "error_hex"; a UTF-8 error with a NUL and a newline is kept as
 * is, escaped. The table shows both too. */
static void test_inspect_binary_error(void) {
        static char out[1 << 16];
        static const char bin[]  = "\xff\xfe"
                                   "bad\0x\n\xc3\xa9";
        static const char text[] = "nul\0and\nnewline \xc3\xa9";
        env_t *e                 = env_new(1);
        const char *errs[]       = {bin, text};
        size_t lens[]            = {sizeof(bin) - 1, sizeof(text) - 1};
        for (int i = 0; i < 2; i++) {
                rd_kafka_headers_t *h = rd_kafka_headers_new(4);
                rd_kafka_header_add(h, "kretry-error-class", -1, "permanent",
                                    -1);
                rd_kafka_header_add(h, "kretry-error-code", -1, "HTTP_500", -1);
                rd_kafka_header_add(h, "kretry-error", -1, errs[i],
                                    (ssize_t)lens[i]);
                KT_REQUIRE(rd_kafka_producev(
                                   e->producer, RD_KAFKA_V_TOPIC(e->dlq),
                                   RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_KEY(i ? "k2" : "k1", 2),
                                   RD_KAFKA_V_VALUE((void *)"v", 1),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END) == 0);
        }
        flush(e);
        json_t *rows = inspect_json(e, NULL);
        KT_ASSERT_INT_EQ(json_array_size(rows), 2);
        json_t *r0 = json_object_get(json_array_get(rows, 0), "error");
        static const char lossy[] = "\xef\xbf\xbd\xef\xbf\xbd"
                                    "bad\0x\n\xc3\xa9";
        KT_CHECK_MSG(json_is_string(r0) &&
                             json_string_length(r0) == sizeof(lossy) - 1 &&
                             !memcmp(json_string_value(r0), lossy,
                                     sizeof(lossy) - 1),
                     CU_FALSE, "binary error: \"error\" is %s",
                     r0 ? json_string_value(r0) : "missing");
        KT_ASSERT_STR_EQ(row_str(rows, 0, "error_hex"), "fffe62616400780ac3a9");
        json_t *r1 = json_object_get(json_array_get(rows, 1), "error");
        KT_ASSERT(json_is_string(r1) &&
                  json_string_length(r1) == sizeof(text) - 1 &&
                  !memcmp(json_string_value(r1), text, sizeof(text) - 1));
        KT_ASSERT(!json_object_get(json_array_get(rows, 1), "error_hex"));
        KT_ASSERT_STR_EQ(row_str(rows, 0, "code"), "HTTP_500");
        json_decref(rows);
        KT_ASSERT_INT_EQ(run_cli(e, "inspect", out, sizeof(out), NULL), 0);
        KT_CHECK_MSG(strstr(out, "0xfffe626164") != NULL, CU_FALSE,
                     "the table shows the binary error: %.1500s", out);
        env_destroy(e);
}

/* A dead letter as Spring Kafka's DeadLetterPublishingRecoverer writes it
 * (non-blocking retries: @p attempts), on DLQ partition 1, first consumed
 * from partition 1 of the source at offset 42. */
static void spring_put(env_t *e, const char *key, int attempts) {
        unsigned char part[4], off[8], ts[8], att[4];
        kt_put_be(part, 1, 4);
        kt_put_be(off, 42, 8);
        kt_put_be(ts, 1700000000123, 8);
        kt_put_be(att, attempts, 4);
        rd_kafka_headers_t *h = rd_kafka_headers_new(16);
        rd_kafka_header_add(h, "traceparent", -1, "00-abc-01", -1);
        rd_kafka_header_add(h, "kafka_dlt-exception-fqcn", -1,
                            "org.springframework.kafka.listener."
                            "ListenerExecutionFailedException",
                            -1);
        rd_kafka_header_add(h, "kafka_dlt-exception-cause-fqcn", -1,
                            "java.lang.IllegalStateException", -1);
        rd_kafka_header_add(h, "kafka_dlt-exception-message", -1,
                            "payment service answered 503", -1);
        rd_kafka_header_add(h, "kafka_dlt-exception-stacktrace", -1,
                            "java.lang.IllegalStateException: payment\n\tat "
                            "Orders.listen(Orders.java:42)",
                            -1);
        rd_kafka_header_add(h, "kafka_dlt-original-topic", -1, e->source, -1);
        rd_kafka_header_add(h, "kafka_dlt-original-partition", -1, part, 4);
        rd_kafka_header_add(h, "kafka_dlt-original-offset", -1, off, 8);
        rd_kafka_header_add(h, "kafka_dlt-original-timestamp", -1, ts, 8);
        rd_kafka_header_add(h, "kafka_dlt-original-timestamp-type", -1,
                            "CreateTime", -1);
        rd_kafka_header_add(h, "kafka_dlt-original-consumer-group", -1,
                            "orders-spring", -1);
        rd_kafka_header_add(h, "retry_topic-attempts", -1, att, 4);
        KT_REQUIRE(rd_kafka_producev(e->producer, RD_KAFKA_V_TOPIC(e->dlq),
                                     RD_KAFKA_V_PARTITION(1),
                                     RD_KAFKA_V_KEY(key, strlen(key)),
                                     RD_KAFKA_V_VALUE((void *)"order", 5),
                                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                     RD_KAFKA_V_HEADERS(h),
                                     RD_KAFKA_V_END) == 0);
}

/* A dead letter as Kafka Connect's DLQ reporter writes it (context
 * headers on): decimal text, first read from partition 1 at offset 7. */
static void connect_put(env_t *e, const char *key) {
        static const char *const kv[][2] = {
                {"__connect.errors.partition", "1"},
                {"__connect.errors.offset", "7"},
                {"__connect.errors.connector.name", "orders-sink"},
                {"__connect.errors.task.id", "0"},
                {"__connect.errors.stage", "VALUE_CONVERTER"},
                {"__connect.errors.class.name",
                 "org.apache.kafka.connect.json.JsonConverter"},
                {"__connect.errors.exception.class.name",
                 "org.apache.kafka.connect.errors.DataException"},
                {"__connect.errors.exception.message",
                 "Converting byte[] to Kafka Connect data failed"},
                {"__connect.errors.exception.stacktrace",
                 "org.apache.kafka.connect.errors.DataException: ..."},
        };
        rd_kafka_headers_t *h = rd_kafka_headers_new(16);
        rd_kafka_header_add(h, "__connect.errors.topic", -1, e->source, -1);
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
                rd_kafka_header_add(h, kv[i][0], -1, kv[i][1], -1);
        KT_REQUIRE(rd_kafka_producev(e->producer, RD_KAFKA_V_TOPIC(e->dlq),
                                     RD_KAFKA_V_PARTITION(0),
                                     RD_KAFKA_V_KEY(key, strlen(key)),
                                     RD_KAFKA_V_VALUE((void *)"{bad", 4),
                                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                     RD_KAFKA_V_HEADERS(h),
                                     RD_KAFKA_V_END) == 0);
}

static const json_t *row_of(json_t *rows, const char *key) {
        for (size_t i = 0; i < json_array_size(rows); i++) {
                json_t *r     = json_array_get(rows, i);
                const char *k = json_string_value(json_object_get(r, "key"));
                if (k && !strcmp(k, key))
                        return r;
        }
        return NULL;
}

static const char *field(const json_t *r, const char *name) {
        return json_string_value(json_object_get(r, name));
}

static int64_t num_field(const json_t *r, const char *name) {
        json_t *v = json_object_get(r, name);
        return json_is_integer(v) ? json_integer_value(v) : -1;
}

static void test_inspect_empty_and_errors(void) {
        static char out[4096];
        env_t *e     = env_new(2);
        json_t *rows = inspect_json(e, NULL);
        KT_ASSERT_INT_EQ(json_array_size(rows), 0);
        json_decref(rows);
        KT_ASSERT_INT_EQ(run_cli(e, "inspect", out, sizeof(out),
                                 (const char *[]){"--since", "soon", NULL}),
                         64);
        KT_ASSERT_INT_EQ(run_cli(e, "inspect", out, sizeof(out),
                                 (const char *[]){"--rate", "5", NULL}),
                         64);
        KT_ASSERT_INT_EQ(run_cli(e, "inspect", out, sizeof(out),
                                 (const char *[]){"--name", "nope", NULL}),
                         1);
        env_destroy(e);
}

/* Sum of the high watermarks of @p topic's partitions. */
static int64_t hwm_sum(env_t *e, const char *topic, int parts) {
        int64_t sum = 0, lo, hi;
        for (int p = 0; p < parts; p++) {
                KT_REQUIRE(rd_kafka_query_watermark_offsets(
                                   e->producer, topic, p, &lo, &hi, 5000) == 0);
                sum += hi;
        }
        return sum;
}

static int64_t committed_sum(env_t *e, int parts) {
        char g[200];
        int64_t sum = 0;
        snprintf(g, sizeof(g), "%s.kretry-replay", e->group);
        for (int p = 0; p < parts; p++) {
                int64_t o = kt_committed(e->c, g, e->dlq, p);
                sum += o > 0 ? o : 0;
        }
        return sum;
}

#define MAX_SEEN 4096

typedef struct {
        int cnt;
        rd_kafka_message_t *m[MAX_SEEN];
} seen_t;

/* Keep a copy of what kt_consume() shows: the key, value, headers and
 * partition are what the tests look at. */
static void keep(const rd_kafka_message_t *m, void *opaque) {
        seen_t *s = opaque;
        if (s->cnt >= MAX_SEEN)
                return;
        rd_kafka_message_t *c = calloc(1, sizeof(*c));
        c->partition          = m->partition;
        c->offset             = m->offset;
        if (m->key) {
                c->key     = malloc(m->key_len + 1);
                c->key_len = m->key_len;
                memcpy(c->key, m->key, m->key_len);
        }
        if (m->payload) {
                c->payload = malloc(m->len + 1);
                c->len     = m->len;
                memcpy(c->payload, m->payload, m->len);
        }
        rd_kafka_headers_t *h = NULL;
        rd_kafka_message_headers(m, &h);
        c->_private    = h ? rd_kafka_headers_copy(h) : NULL;
        s->m[s->cnt++] = c;
}

static void seen_clear(seen_t *s) {
        for (int i = 0; i < s->cnt; i++) {
                free(s->m[i]->key);
                free(s->m[i]->payload);
                if (s->m[i]->_private)
                        rd_kafka_headers_destroy(s->m[i]->_private);
                free(s->m[i]);
        }
        s->cnt = 0;
}

static rd_kafka_message_t *by_value(seen_t *s, const char *v, size_t n) {
        for (int i = 0; i < s->cnt; i++)
                if (s->m[i]->payload && s->m[i]->len == n &&
                    !memcmp(s->m[i]->payload, v, n))
                        return s->m[i];
        return NULL;
}

/* Header @p i of a kept message as "name=value". */
static const char *hdr_at(rd_kafka_message_t *m, size_t i, char *buf) {
        const char *name;
        const void *v;
        size_t n;
        if (!m->_private ||
            rd_kafka_header_get_all(m->_private, i, &name, &v, &n))
                return NULL;
        snprintf(buf, 128, "%s=%.*s", name, (int)n, v ? (const char *)v : "");
        return buf;
}

/* Messages with everything byte identity can break: binary and null keys
 * and values, repeated and null-valued user headers, a replay count. */
static void fill_binary(env_t *e) {
        static const char bin[] = {'b', 0, (char)0xff, '\n'};
        struct {
                const void *key;
                size_t key_len;
                const void *val;
                size_t val_len;
                int part, orig_part;
        } msgs[] = {
                {"k1", 2, "plain", 5, 0, 1},
                {bin, sizeof(bin), "binkey", 6, 1, 1},
                {NULL, 0, "nullkey", 7, 1, 0},
                {"k4", 2, bin, sizeof(bin), 0, 0},
                {"k5", 2, NULL, 0, 1, 1},
        };
        for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
                char op[8];
                snprintf(op, sizeof(op), "%d", msgs[i].orig_part);
                rd_kafka_headers_t *h = rd_kafka_headers_new(16);
                rd_kafka_header_add(h, "trace", -1, "a\0b", 3);
                rd_kafka_header_add(h, "kretry-attempt", -1, "4", -1);
                rd_kafka_header_add(h, "kretry-tier", -1, "2", -1);
                rd_kafka_header_add(h, "kretry-due-ts", -1, "5", -1);
                rd_kafka_header_add(h, "kretry-original-topic", -1, e->source,
                                    -1);
                rd_kafka_header_add(h, "kretry-original-partition", -1, op, -1);
                rd_kafka_header_add(h, "kretry-original-offset", -1, "9", -1);
                rd_kafka_header_add(h, "kretry-first-failure-ts", -1, "1", -1);
                rd_kafka_header_add(h, "kretry-last-failure-ts", -1, "2", -1);
                rd_kafka_header_add(h, "kretry-error-class", -1, "permanent",
                                    -1);
                rd_kafka_header_add(h, "kretry-error-code", -1, "BAD", -1);
                rd_kafka_header_add(h, "kretry-error", -1, "bad", -1);
                rd_kafka_header_add(h, "kretry-group", -1, e->group, -1);
                rd_kafka_header_add(h, "kretry-correlation-id", -1, "cid", -1);
                rd_kafka_header_add(h, "empty", -1, NULL, 0);
                rd_kafka_header_add(h, "trace", -1, "second", -1);
                if (i == 0)
                        rd_kafka_header_add(h, "kretry-replay-count", -1, "2",
                                            -1);
                KT_REQUIRE(rd_kafka_producev(
                                   e->producer, RD_KAFKA_V_TOPIC(e->dlq),
                                   RD_KAFKA_V_PARTITION(msgs[i].part),
                                   RD_KAFKA_V_KEY(msgs[i].key, msgs[i].key_len),
                                   RD_KAFKA_V_VALUE((void *)msgs[i].val,
                                                    msgs[i].val_len),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END) == 0);
        }
        flush(e);
}

static const char *
hdr_last(rd_kafka_message_t *m, const char *name, char *buf) {
        const void *v;
        size_t n;
        if (!m->_private || rd_kafka_header_get_last(m->_private, name, &v, &n))
                return NULL;
        snprintf(buf, 128, "%.*s", (int)n, v ? (const char *)v : "");
        return buf;
}

/* @p tier: replayed into that tier, 0: into the source. */
static void check_identity(env_t *e, seen_t *s, int64_t t0, int tier) {
        static const char bin[] = {'b', 0, (char)0xff, '\n'};
        char b[128];
        KT_ASSERT_INT_EQ(s->cnt, 5);
        rd_kafka_message_t *m = by_value(s, "plain", 5);
        KT_REQUIRE(m != NULL);
        KT_ASSERT(m->key_len == 2 && !memcmp(m->key, "k1", 2));
        KT_ASSERT_INT_EQ(m->partition, 1); /* the original partition */
        /* user headers and the correlation id in order, then the replay's */
        KT_ASSERT_INT_EQ(rd_kafka_header_cnt(m->_private), tier ? 12 : 6);
        const void *v;
        size_t n;
        const char *name;
        KT_ASSERT(rd_kafka_header_get_all(m->_private, 0, &name, &v, &n) == 0 &&
                  !strcmp(name, "trace") && n == 3 && !memcmp(v, "a\0b", 3));
        KT_ASSERT_STR_EQ(hdr_at(m, 1, b), "kretry-correlation-id=cid");
        KT_ASSERT_STR_EQ(hdr_at(m, 2, b), "empty=");
        KT_ASSERT_STR_EQ(hdr_at(m, 3, b), "trace=second");
        KT_ASSERT_STR_EQ(hdr_last(m, "kretry-replay-count", b), "3");
        if (tier) {
                /* a fresh chain in the tier, where it first entered kept */
                KT_ASSERT_STR_EQ(hdr_at(m, 4, b), "kretry-attempt=1");
                KT_ASSERT_STR_EQ(hdr_last(m, "kretry-tier", b), "2");
                KT_ASSERT_STR_EQ(hdr_last(m, "kretry-original-partition", b),
                                 "1");
                KT_ASSERT(hdr_last(m, "kretry-error-class", b) == NULL);
        } else {
                KT_ASSERT(hdr_last(m, "kretry-attempt", b) == NULL);
                KT_ASSERT(hdr_last(m, "kretry-original-topic", b) == NULL);
        }
        KT_ASSERT(rd_kafka_header_get_last(m->_private, "empty", &v, &n) == 0 &&
                  v == NULL);
        KT_REQUIRE(rd_kafka_header_get_last(m->_private, "kretry-replayed-at",
                                            &v, &n) == 0);
        snprintf(b, sizeof(b), "%.*s", (int)n, (const char *)v);
        KT_CHECK_MSG(atoll(b) >= t0 && atoll(b) <= kt_wall_ms(), CU_FALSE,
                     "replayed-at %s, test started %lld", b, (long long)t0);

        m = by_value(s, "binkey", 6);
        KT_REQUIRE(m != NULL);
        KT_ASSERT(m->key_len == sizeof(bin) && !memcmp(m->key, bin, 4));
        KT_ASSERT_STR_EQ(hdr_last(m, "kretry-replay-count", b), "1");
        m = by_value(s, "nullkey", 7);
        KT_REQUIRE(m != NULL);
        KT_ASSERT(m->key == NULL);
        KT_ASSERT_INT_EQ(m->partition, 0);
        m = by_value(s, bin, sizeof(bin));
        KT_REQUIRE(m != NULL);
        KT_ASSERT(m->key_len == 2 && !memcmp(m->key, "k4", 2));
        m = NULL;
        for (int i = 0; i < s->cnt; i++)
                if (!s->m[i]->payload)
                        m = s->m[i];
        KT_REQUIRE(m != NULL);
        KT_ASSERT(m->key_len == 2 && !memcmp(m->key, "k5", 2));
        (void)e;
}

/* Spring Kafka's DLT and Kafka Connect's DLQ read as kretry's own: class,
 * code, error, attempts, original position, group; their filters work;
 * a replay sends each back to the partition it first entered, without
 * the old failure headers, user headers kept. */
static void test_foreign_dead_letters(void) {
        static char out[8192];
        env_t *e = env_new(2);
        spring_put(e, "s-exhausted", 3);
        spring_put(e, "s-permanent", 2);
        connect_put(e, "c-1");
        flush(e);
        json_t *rows = inspect_json(e, NULL);
        KT_ASSERT_INT_EQ(json_array_size(rows), 3);
        const json_t *s = row_of(rows, "s-exhausted");
        const json_t *c = row_of(rows, "c-1");
        KT_REQUIRE(s != NULL && c != NULL);
        KT_ASSERT_STR_EQ(field(s, "origin"), "spring");
        KT_ASSERT_STR_EQ(field(s, "class"), "exhausted");
        KT_ASSERT_STR_EQ(field(s, "code"), "java.lang.IllegalStateException");
        KT_ASSERT_STR_EQ(field(s, "error"), "payment service answered 503");
        KT_ASSERT_STR_EQ(field(s, "group"), "orders-spring");
        KT_ASSERT_STR_EQ(field(s, "original_topic"), e->source);
        KT_ASSERT_INT_EQ(num_field(s, "original_partition"), 1);
        KT_ASSERT_INT_EQ(num_field(s, "original_offset"), 42);
        KT_ASSERT_INT_EQ(num_field(s, "attempts"), 2); /* Spring's 3 */
        KT_ASSERT(field(s, "stacktrace") &&
                  strstr(field(s, "stacktrace"), "Orders.java:42"));
        KT_ASSERT_STR_EQ(field(row_of(rows, "s-permanent"), "class"),
                         "permanent");
        KT_ASSERT_STR_EQ(field(c, "origin"), "connect");
        KT_ASSERT_STR_EQ(field(c, "class"), "permanent");
        KT_ASSERT_STR_EQ(field(c, "code"),
                         "org.apache.kafka.connect.errors.DataException");
        KT_ASSERT_STR_EQ(field(c, "error"),
                         "Converting byte[] to Kafka Connect data failed");
        KT_ASSERT_INT_EQ(num_field(c, "original_partition"), 1);
        KT_ASSERT_INT_EQ(num_field(c, "original_offset"), 7);
        json_decref(rows);
        /* The filters read them too. */
        KT_ASSERT_INT_EQ(
                count(e, (const char *[]){"--class", "exhausted", NULL}), 1);
        KT_ASSERT_INT_EQ(
                count(e,
                      (const char *[]){
                              "--code",
                              "org.apache.kafka.connect.errors.DataException",
                              NULL}),
                1);
        /* Replayed: back to partition 1 (where each first entered), the
         * failure context gone, the user header kept. */
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out), NULL), 0);
        seen_t *seen = calloc(1, sizeof(*seen));
        KT_ASSERT_INT_EQ(kt_consume(e->c, e->source, 3, 10000, keep, seen), 3);
        for (int i = 0; i < seen->cnt; i++) {
                const rd_kafka_message_t *m = seen->m[i];
                const rd_kafka_headers_t *h = m->_private;
                KT_ASSERT_INT_EQ(m->partition, 1);
                for (size_t j = 0; h && j < rd_kafka_header_cnt(h); j++) {
                        const char *name;
                        const void *v;
                        size_t n;
                        KT_REQUIRE(
                                !rd_kafka_header_get_all(h, j, &name, &v, &n));
                        KT_CHECK_MSG(
                                strncmp(name, "kafka_dlt-", 10) &&
                                        strncmp(name, "retry_topic-", 12) &&
                                        strncmp(name, "__connect.errors.", 17),
                                CU_FALSE, "replayed with %s", name);
                }
        }
        const void *v;
        size_t n;
        int traced = 0;
        for (int i = 0; i < seen->cnt; i++)
                traced += seen->m[i]->_private &&
                          !rd_kafka_header_get_last(seen->m[i]->_private,
                                                    "traceparent", &v, &n);
        KT_ASSERT_INT_EQ(traced, 2); /* the two Spring ones carried it */
        seen_clear(seen);
        free(seen);
        env_destroy(e);
}

static void test_replay_identity(void) {
        static char out[8192];
        env_t *e   = env_new(2);
        seen_t *s  = calloc(1, sizeof(*s));
        int64_t t0 = kt_wall_ms(); /* vs kretry-replayed-at */
        fill_binary(e);
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out), NULL), 0);
        KT_CHECK_MSG(strstr(out, "replayed 5 messages"), CU_FALSE, "%.1500s",
                     out);
        KT_ASSERT_INT_EQ(kt_consume(e->c, e->source, 5, 10000, keep, s), 5);
        check_identity(e, s, t0, 0);
        KT_ASSERT_INT_EQ(committed_sum(e, 2), 5);
        /* done: a second replay finds nothing new */
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out), NULL), 0);
        KT_CHECK_MSG(strstr(out, "replayed 0 messages"), CU_FALSE, "%.1500s",
                     out);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 2), 5);
        seen_clear(s);

        /* to a tier of the topology, from the beginning again */
        KT_ASSERT_INT_EQ(
                run_cli(e, "replay", out, sizeof(out),
                        (const char *[]){"--to", "tier:2", "--restart", NULL}),
                0);
        KT_ASSERT_INT_EQ(kt_consume(e->c, e->tier2, 5, 10000, keep, s), 5);
        check_identity(e, s, t0, 2);
        seen_clear(s);
        free(s);
        env_destroy(e);
}

static void test_replay_refuses_outside(void) {
        static char out[4096];
        env_t *e = env_new(2);
        fill_binary(e);
        static const char *const bad[] = {"tier:3", "tier:0", "tier:x",
                                          "other-topic", NULL};
        for (int i = 0; bad[i]; i++)
                KT_ASSERT_INT_EQ(
                        run_cli(e, "replay", out, sizeof(out),
                                (const char *[]){"--to", bad[i], NULL}),
                        64);
        const char *dlq_to[] = {"--to", e->dlq, NULL};
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out), dlq_to), 64);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 2), 0);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->dlq, 2), 5);
        KT_ASSERT_INT_EQ(committed_sum(e, 2), 0);
        env_destroy(e);
}

static void test_replay_dry_run_and_filters(void) {
        static char out[1 << 16];
        env_t *e = env_new(2);
        fill_filters(e);
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--dry-run", "--class",
                                                  "permanent", NULL}),
                         0);
        KT_CHECK_MSG(strstr(out, "3 messages would be replayed") &&
                             strstr(out, "VALIDATION") &&
                             strstr(out, "NOT_FOUND"),
                     CU_FALSE, "%.1500s", out);
        /* nothing written, nothing committed */
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 2), 0);
        KT_ASSERT_INT_EQ(committed_sum(e, 2), 0);

        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--class", "permanent",
                                                  "--since", "1h", NULL}),
                         0);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 2), 2);
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--restart", "--key", "k1",
                                                  "--max", "1", NULL}),
                         0);
        KT_CHECK_MSG(strstr(out, "(--max reached)"), CU_FALSE, "%.1500s", out);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 2), 3);
        env_destroy(e);
}

/* Many small messages for the rate and resume tests: value "m<i>". */
static void fill_many(env_t *e, int n, int parts) {
        for (int i = 0; i < n; i++) {
                char v[16];
                snprintf(v, sizeof(v), "m%d", i);
                dlq_put(e, i % parts, v, v, "exhausted", "HTTP_503",
                        kt_wall_ms());
        }
        flush(e);
}

static void test_replay_rate(void) {
        static char out[4096];
        env_t *e = env_new(4);
        fill_many(e, 2000, 4);
        int64_t t0 = kt_now_ms();
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--rate", "500", NULL}),
                         0);
        int64_t took = kt_now_ms() - t0;
        /* Not faster than the rate allows: the bucket starts with one token
         * and earns 500 a second (its burst only caps what a stall saves),
         * so 2000 messages take at least 3998 ms. Only a lower bound holds
         * on a loaded machine; how close to 4 s it gets is the bench's. */
        KT_CHECK_MSG(took >= 3990, CU_FALSE,
                     "2000 messages at 500/s took %lld ms: %.500s",
                     (long long)took, out);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 4), 2000);
        fprintf(stderr, "\n    2000 messages at --rate 500: %lld ms\n",
                (long long)took);
        env_destroy(e);
}

#define RESUME_N 800
#define RESUME_BATCH 50

static void count_values(const rd_kafka_message_t *m, void *opaque) {
        int *seen = opaque;
        char v[16];
        snprintf(v, sizeof(v), "%.*s", (int)(m->len < 15 ? m->len : 15),
                 (const char *)m->payload);
        int i = atoi(v + 1);
        if (i >= 0 && i < RESUME_N)
                seen[i]++;
}

/* Start "kretry dlq replay --rate RATE --batch BATCH" with its stdout on
 * /dev/null, and return at once: its process id. */
static pid_t
replay_in_background(env_t *e, const char *rate, const char *batch) {
        const char *argv[] = {"kretry", "dlq", "replay",  "--topology", e->yaml,
                              "--rate", rate,  "--batch", batch,        NULL};
        pid_t pid          = fork();
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                execv(KRETRY_CLI_PATH, (char *const *)argv);
                _exit(127);
        }
        return pid;
}

static void test_replay_kill_resume(void) {
        static char out[4096];
        char batch[16];
        env_t *e = env_new(4);
        fill_many(e, RESUME_N, 4);
        snprintf(batch, sizeof(batch), "%d", RESUME_BATCH);
        pid_t pid = replay_in_background(e, "400", batch);
        /* Kill it once a few batches were committed: progress lives in
         * another process, so this polls. */
        int64_t deadline = kt_now_ms() + 20000;
        while (committed_sum(e, 4) < 3 * RESUME_BATCH && kt_now_ms() < deadline)
                kt_nap_ms(20);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        /* Killed by us, not ended by its own crash or sanitizer abort. */
        KT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        int64_t done_before = committed_sum(e, 4);
        int64_t produced    = hwm_sum(e, e->source, 4);
        KT_CHECK_MSG(done_before >= 3 * RESUME_BATCH && done_before < RESUME_N,
                     CU_FALSE, "killed with %lld committed",
                     (long long)done_before);

        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--rate", "100000", "--batch",
                                                  batch, NULL}),
                         0);
        KT_ASSERT_INT_EQ(committed_sum(e, 4), RESUME_N);
        int64_t total = hwm_sum(e, e->source, 4);
        int *seen     = calloc(RESUME_N, sizeof(int));
        KT_ASSERT_INT_EQ(kt_consume(e->c, e->source, (int)total, 20000,
                                    count_values, seen),
                         total);
        int missing = 0, dups = 0;
        for (int i = 0; i < RESUME_N; i++) {
                missing += seen[i] == 0;
                dups += seen[i] > 1 ? seen[i] - 1 : 0;
        }
        KT_ASSERT_INT_EQ(missing, 0);
        KT_CHECK_MSG(dups <= RESUME_BATCH, CU_FALSE,
                     "%d duplicates (%lld produced before the kill, %lld "
                     "committed)",
                     dups, (long long)produced, (long long)done_before);
        fprintf(stderr,
                "\n    killed after %lld committed, %lld produced: "
                "%d duplicates\n",
                (long long)done_before, (long long)produced, dups);
        free(seen);
        env_destroy(e);
}

static void test_replay_batches_pause(void) {
        static char out[4096];
        env_t *e = env_new(2);
        fill_many(e, 30, 2);
        int64_t t0 = kt_now_ms();
        KT_ASSERT_INT_EQ(
                run_cli(e, "replay", out, sizeof(out),
                        (const char *[]){"--rate", "100000", "--batch", "10",
                                         "--pause", "300ms", NULL}),
                0);
        int64_t took = kt_now_ms() - t0;
        /* three batches, a pause between each two: at least 600 ms (a
         * lower bound only, which load cannot break) */
        KT_CHECK_MSG(took >= 600, CU_FALSE,
                     "30 messages in batches of 10, 300ms pauses: %lld ms",
                     (long long)took);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 2), 30);
        KT_ASSERT_INT_EQ(committed_sum(e, 2), 30);
        env_destroy(e);
}

/* SIGTERM: the replay finishes its batch, commits and exits 0; resuming
 * then repeats nothing. */
static void test_replay_sigterm(void) {
        static char out[4096];
        env_t *e = env_new(4);
        fill_many(e, 400, 4);
        pid_t pid        = replay_in_background(e, "200", "20");
        int64_t deadline = kt_now_ms() + 20000;
        while (committed_sum(e, 4) < 40 && kt_now_ms() < deadline)
                kt_nap_ms(20);
        kill(pid, SIGTERM);
        int st;
        waitpid(pid, &st, 0);
        KT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        int64_t produced = hwm_sum(e, e->source, 4);
        KT_ASSERT_INT_EQ(committed_sum(e, 4), produced);
        KT_CHECK_MSG(produced < 400, CU_FALSE, "stopped after %lld",
                     (long long)produced);
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--rate", "100000", NULL}),
                         0);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 4), 400);
        env_destroy(e);
}

/* A produce the broker refuses is never committed past: the replay fails,
 * and the next one sends that batch again. Retriable errors are retried by
 * the idempotent producer without duplicates. */
static void test_replay_produce_errors(void) {
        static char out[4096];
        env_t *e                      = env_new(2);
        rd_kafka_mock_cluster_t *mock = kt_mock_only(
                e->c, "none: a real broker refuses a healthy topic's "
                      "produce only for a reason that stays (size, "
                      "authorization), and replay's resume needs one that "
                      "ends");
        if (!mock) {
                env_destroy(e);
                return;
        }
        fill_many(e, 10, 1);
        rd_kafka_mock_push_request_errors(
                mock, 0 /* Produce */, 1,
                RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--batch", "5", "--rate",
                                                  "100000", NULL}),
                         1);
        KT_ASSERT_INT_EQ(committed_sum(e, 2), 0);

        rd_kafka_mock_push_request_errors(
                mock, 0 /* Produce */, 3,
                RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS);
        int64_t before = hwm_sum(e, e->source, 2);
        KT_ASSERT_INT_EQ(run_cli(e, "replay", out, sizeof(out),
                                 (const char *[]){"--batch", "5", "--rate",
                                                  "100000", NULL}),
                         0);
        KT_CHECK_MSG(strstr(out, "replayed 10 messages"), CU_FALSE, "%.1500s",
                     out);
        KT_ASSERT_INT_EQ(committed_sum(e, 2), 10);
        KT_ASSERT_INT_EQ(hwm_sum(e, e->source, 2) - before, 10);
        env_destroy(e);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_inspect_filters),
                KT_TEST(test_inspect_table),
                KT_TEST(test_inspect_binary_error),
                KT_TEST(test_inspect_empty_and_errors),
                KT_TEST(test_foreign_dead_letters),
                KT_TEST(test_replay_identity),
                KT_TEST(test_replay_refuses_outside),
                KT_TEST(test_replay_dry_run_and_filters),
                KT_TEST(test_replay_rate),
                KT_TEST(test_replay_kill_resume),
                KT_TEST(test_replay_batches_pause),
                KT_TEST(test_replay_sigterm),
                KT_TEST(test_replay_produce_errors),
                KT_END};
        return kt_main("it_dlq", tests, argc, argv);
}
