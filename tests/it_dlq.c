/*
 * kretry dlq inspect/replay, the commands themselves (KRETRY_CLI_PATH) on
 * the mock cluster: a topology file in /tmp names the test's topics and
 * the cluster's bootstrap, dead-lettered messages are produced straight to
 * the DLQ with the headers the adapter writes.
 */
#include "testutil.h"

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
        FILE *f = fopen(e->yaml, "w");
        KT_REQUIRE(f != NULL);
        fprintf(f,
                "kafka:\n"
                "  bootstrap.servers: \"%s\"\n"
                "  socket.nagle.disable: \"true\"\n"
                "  consumer.fetch.wait.max.ms: \"10\"\n"
                "topologies:\n"
                "  - name: orders\n"
                "    source: %s\n"
                "    group: %s\n"
                "    retry:\n"
                "      tiers: [1s, 10s]\n",
                kt_cluster_bootstrap(e->c), e->source, e->group);
        fclose(f);
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
        int n                = 5, fds[2];
        for (; args && *args && n < 38; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        KT_REQUIRE(pipe(fds) == 0);
        pid_t pid = fork();
        if (pid == 0) {
                dup2(fds[1], 1);
                close(fds[0]);
                close(fds[1]);
                execv(KRETRY_CLI_PATH, (char *const *)argv);
                _exit(127);
        }
        close(fds[1]);
        size_t len = 0;
        ssize_t r;
        char sink[4096];
        while ((r = read(fds[0], out && len + 1 < out_size ? out + len : sink,
                         out && len + 1 < out_size ? out_size - len - 1
                                                   : sizeof(sink))) > 0)
                if (out && len + 1 < out_size)
                        len += (size_t)r;
        close(fds[0]);
        if (out)
                out[len] = '\0';
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
                json_t *row = json_loads(line, 0, &jerr);
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
        int64_t now = kt_now_ms(), old = now - 2 * 3600 * 1000;
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
                 (long long)(kt_now_ms() - 3 * 3600 * 1000));
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
        KT_ASSERT(kt_committed(e->c, replay_group, e->dlq, 0) < 0);
        KT_ASSERT(kt_committed(e->c, "kretry-dlq-reader", e->dlq, 0) < 0);
        env_destroy(e);
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

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_inspect_filters), KT_TEST(test_inspect_table),
                KT_TEST(test_inspect_empty_and_errors), KT_END};
        return kt_main("it_dlq", tests, argc, argv);
}
