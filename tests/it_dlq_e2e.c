/*
 * The dead-letter topic end to end, on the test cluster: the adapter
 * dead-letters real failures, the commands (KRETRY_CLI_PATH) `dlq inspect`
 * and `dlq export` read what the engine wrote, `dlq replay` sends it back,
 * and the adapter handles the replayed messages as fresh ones. Whatever the
 * engine and the commands each think the kretry-* headers mean, they must
 * agree here.
 */
#include "it_harness.h"

#include <avro.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
        it_env_t *env;
        char yaml[256], avro[256];
} e2e_t;

static void write_topology(e2e_t *e) {
        it_env_t *env = e->env;
        snprintf(e->yaml, sizeof(e->yaml), "/tmp/kretry-it-e2e-%d-%s.yaml",
                 (int)getpid(), env->group);
        snprintf(e->avro, sizeof(e->avro), "/tmp/kretry-it-e2e-%d-%s.avro",
                 (int)getpid(), env->group);
        kt_write_topology(env->c, e->yaml, env->source, env->group, "[20ms]",
                          "");
}

/* `kretry dlq SUB --topology FILE ARGS...`; stdout into @p out. */
static int dlq_cli(e2e_t *e,
                   const char *sub,
                   const char *const *args,
                   char *out,
                   size_t out_size) {
        const char *argv[24] = {"kretry", "dlq", sub, "--topology", e->yaml};
        int n                = 5;
        for (; args && *args && n < 22; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        return kt_run(KRETRY_CLI_PATH, argv, 1, out, out_size);
}

/* The row of `dlq inspect --output json` whose key is @p key (new ref). */
static json_t *row_for(const char *out, const char *key) {
        char *copy = strdup(out), *save = NULL;
        json_t *found = NULL;
        for (char *l = strtok_r(copy, "\n", &save); l && !found;
             l       = strtok_r(NULL, "\n", &save)) {
                json_t *row   = json_loads(l, 0, NULL);
                const char *k = json_string_value(json_object_get(row, "key"));
                if (k && !strcmp(k, key))
                        found = row;
                else
                        json_decref(row);
        }
        free(copy);
        return found;
}

static const char *jstr(json_t *row, const char *f) {
        return json_string_value(json_object_get(row, f));
}

static long long jint(json_t *row, const char *f) {
        json_t *v = json_object_get(row, f);
        return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* What inspect shows of the two dead-lettered messages is what the engine
 * wrote: class, code, error, attempts, coordinates, group, correlation id. */
static void check_inspect(e2e_t *e) {
        static char out[1 << 16];
        char cid[200];
        KT_REQUIRE(dlq_cli(e, "inspect",
                           (const char *[]){"--output", "json", NULL}, out,
                           sizeof(out)) == 0);
        json_t *fail = row_for(out, "k-fail"), *exh = row_for(out, "k-exh");
        KT_REQUIRE(fail && exh);
        KT_ASSERT_STR_EQ(jstr(fail, "class"), "permanent");
        KT_ASSERT_STR_EQ(jstr(fail, "code"), "VALIDATION");
        KT_ASSERT_STR_EQ(jstr(fail, "error"), "bad order");
        KT_ASSERT_INT_EQ(jint(fail, "attempts"), 1);
        KT_ASSERT_INT_EQ(jint(fail, "partition"), 0);
        KT_ASSERT_INT_EQ(jint(fail, "original_partition"), 0);
        KT_ASSERT_INT_EQ(jint(fail, "original_offset"), 0);
        KT_ASSERT_STR_EQ(jstr(fail, "original_topic"), e->env->source);
        KT_ASSERT_STR_EQ(jstr(fail, "group"), e->env->group);
        snprintf(cid, sizeof(cid), "%s/0/0", e->env->source);
        KT_ASSERT_STR_EQ(jstr(fail, "correlation_id"), cid);
        KT_ASSERT(jint(fail, "first_failure_ts") > 0);
        KT_ASSERT_INT_EQ(jint(fail, "replay_count"), 0);
        KT_ASSERT_STR_EQ(jstr(exh, "class"), "exhausted");
        KT_ASSERT(jstr(exh, "code") == NULL); /* "always" sets no code */
        KT_ASSERT_INT_EQ(jint(exh, "attempts"), 2);
        KT_ASSERT_INT_EQ(jint(exh, "partition"), 1);
        KT_ASSERT_INT_EQ(jint(exh, "original_partition"), 1);
        snprintf(cid, sizeof(cid), "%s/1/0", e->env->source);
        KT_ASSERT_STR_EQ(jstr(exh, "correlation_id"), cid);
        json_decref(fail);
        json_decref(exh);
}

static const char *avro_str(avro_value_t *rec, const char *name) {
        avro_value_t f, b;
        const char *s = NULL;
        size_t len;
        int disc = 0;
        KT_REQUIRE(avro_value_get_by_name(rec, name, &f, NULL) == 0);
        avro_value_get_discriminant(&f, &disc);
        if (disc && !avro_value_get_current_branch(&f, &b))
                avro_value_get_string(&b, &s, &len);
        return s;
}

/* The export file holds both, with the engine's failure context. */
static void check_export(e2e_t *e) {
        static char out[4096];
        KT_REQUIRE(dlq_cli(e, "export",
                           (const char *[]){"--out", e->avro, NULL}, out,
                           sizeof(out)) == 0);
        avro_file_reader_t r;
        KT_REQUIRE(avro_file_reader(e->avro, &r) == 0);
        avro_schema_t s           = avro_file_reader_get_writer_schema(r);
        avro_value_iface_t *iface = avro_generic_class_from_schema(s);
        avro_value_t rec;
        avro_generic_value_new(iface, &rec);
        int n = 0, permanent = 0, exhausted = 0;
        while (avro_file_reader_read_value(r, &rec) == 0) {
                const char *cls = avro_str(&rec, "error_class");
                n++;
                permanent += cls && !strcmp(cls, "permanent");
                exhausted += cls && !strcmp(cls, "exhausted");
                KT_ASSERT_STR_EQ(avro_str(&rec, "original_topic"),
                                 e->env->source);
                KT_ASSERT_STR_EQ(avro_str(&rec, "group"), e->env->group);
        }
        KT_ASSERT_INT_EQ(n, 2);
        KT_ASSERT_INT_EQ(permanent, 1);
        KT_ASSERT_INT_EQ(exhausted, 1);
        avro_value_decref(&rec);
        avro_value_iface_decref(iface);
        avro_schema_decref(s);
        avro_file_reader_close(r);
        unlink(e->avro);
}

/* After the fix: a replayed message is handled OK. Everything else goes to
 * the scripted handler, so a message replayed without its replay header
 * would fail again and show up in the DLQ. */
static kretry_action_t fixed_handler(kretry_msg_t *msg, void *opaque) {
        const void *v;
        size_t n;
        kretry_action_t act = it_handler(msg, opaque);
        return kretry_msg_header(msg, "kretry-replay-count", &v, &n)
                       ? act
                       : KRETRY_OK;
}

static void test_dead_letter_inspect_replay(void) {
        e2e_t e                = {.env = it_env_new("20ms", 2)};
        it_env_t *env          = e.env;
        rd_kafka_headers_t *h1 = rd_kafka_headers_new(1);
        rd_kafka_header_add(h1, "trace-id", -1, "t-fail", -1);
        it_produce(env, 0, "k-fail", "fail-e2e", h1);
        rd_kafka_headers_t *h2 = rd_kafka_headers_new(1);
        rd_kafka_header_add(h2, "trace-id", -1, "t-exh", -1);
        it_produce(env, 1, "k-exh", "always-e2e", h2);
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "retry.max.attempts", "2", NULL));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 2, 20000));
        kretry_adapter_destroy(a);
        write_topology(&e);
        check_inspect(&e);
        check_export(&e);

        static char out[8192];
        KT_CHECK_MSG(dlq_cli(&e, "replay",
                             (const char *[]){"--rate", "1000", NULL}, out,
                             sizeof(out)) == 0 &&
                             strstr(out, "replayed 2 messages to "),
                     CU_TRUE, "replay: %.1900s", out);
        int calls_before    = env->call_cnt;
        kretry_conf_t *conf = it_conf(env, "retry.max.attempts", "2", NULL);
        kretry_conf_set_handler(conf, fixed_handler, env);
        a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        kretry_adapter_destroy(a);
        /* Each came back once, on the source, as a fresh first attempt with
         * its key, value and user header intact. */
        const char *values[] = {"fail-e2e", "always-e2e"};
        const char *traces[] = {"t-fail", "t-exh"};
        const char *keys[]   = {"k-fail", "k-exh"};
        for (int i = 0; i < 2; i++) {
                const it_call_t *c[8];
                int n = it_calls_for(env, values[i], c, 8);
                KT_REQUIRE(n >= 1);
                const it_call_t *last = c[n - 1];
                KT_ASSERT(last - env->calls >= calls_before);
                KT_ASSERT_STR_EQ(last->topic, env->source);
                KT_ASSERT_INT_EQ(last->attempt, 1);
                KT_ASSERT_STR_EQ(last->key, keys[i]);
                KT_ASSERT_STR_EQ(last->trace, traces[i]);
        }
        KT_ASSERT_INT_EQ(env->call_cnt - calls_before, 2);
        /* Nothing went back to the DLQ. */
        KT_ASSERT_INT_EQ(kt_consume(env->c, env->dlq, 3, 2000, NULL, NULL), 2);
        /* A second replay finds nothing new: the replay's progress was
         * committed. */
        KT_ASSERT_INT_EQ(dlq_cli(&e, "replay",
                                 (const char *[]){"--dry-run", NULL}, out,
                                 sizeof(out)),
                         0);
        KT_CHECK_MSG(strstr(out, "dry run: 0 messages would be replayed"),
                     CU_FALSE, "second replay: %.1900s", out);
        unlink(e.yaml);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_dead_letter_inspect_replay), KT_END};
        return kt_main("it_dlq_e2e", tests, argc, argv);
}
