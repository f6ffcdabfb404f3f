/*
 * kretry dlq export on the mock cluster: dead-lettered messages are produced
 * straight to the DLQ with the headers the adapter writes, the command
 * (KRETRY_CLI_PATH) writes an Avro object container file, and three
 * readers check it: avro-c's file reader here, and, when installed, the
 * independent ones: Debian's avrocat (avro-bin) and Python's Apache Avro
 * (python3-avro).
 */
#include "testutil.h"

#include <avro.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define AVROCAT "/usr/bin/avrocat"
#define BIG_VALUE (100 * 1024) /* beyond avro-c's default 16 KiB block */

typedef struct {
        kt_cluster_t *c;
        char source[128], dlq[160], group[128];
        char yaml[256], out[256];
} env_t;

static env_t *env_new(void) {
        env_t *e = calloc(1, sizeof(*e));
        e->c     = kt_cluster_new(1);
        KT_REQUIRE(kt_cluster_topic(e->c, "orders", 2, e->source,
                                    sizeof(e->source)) == 0);
        kt_unique_name("svc", e->group, sizeof(e->group));
        snprintf(e->dlq, sizeof(e->dlq), "%s.dlq", e->source);
        KT_REQUIRE(kt_cluster_topic_named(e->c, e->dlq, 2) == 0);
        snprintf(e->yaml, sizeof(e->yaml), "/tmp/kretry-it-export-%d.yaml",
                 (int)getpid());
        snprintf(e->out, sizeof(e->out), "/tmp/kretry-it-export-%d.avro",
                 (int)getpid());
        kt_write_topology(e->c, e->yaml, e->source, e->group, "[1s, 10s]", "");
        return e;
}

static void env_destroy(env_t *e) {
        unlink(e->yaml);
        unlink(e->out);
        kt_cluster_destroy(e->c);
        free(e);
}

/* A dead-lettered message with the adapter's headers; @p error may hold
 * bytes that are not UTF-8. */
static void dlq_put(env_t *e,
                    int32_t partition,
                    const char *key,
                    const void *value,
                    size_t value_len,
                    const char *cls,
                    const char *error) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(16);
        rd_kafka_header_add(h, "traceparent", -1, "00-abc-01", -1);
        rd_kafka_header_add(h, "kretry-attempt", -1, "3", -1);
        rd_kafka_header_add(h, "kretry-original-topic", -1, e->source, -1);
        rd_kafka_header_add(h, "kretry-original-partition", -1, "1", -1);
        rd_kafka_header_add(h, "kretry-original-offset", -1, "41", -1);
        rd_kafka_header_add(h, "kretry-original-timestamp", -1, "1699999999000",
                            -1);
        rd_kafka_header_add(h, "kretry-first-failure-ts", -1, "1700000000000",
                            -1);
        rd_kafka_header_add(h, "kretry-last-failure-ts", -1, "1700000005000",
                            -1);
        rd_kafka_header_add(h, "kretry-error-class", -1, cls, -1);
        rd_kafka_header_add(h, "kretry-error-code", -1, "E42", -1);
        rd_kafka_header_add(h, "kretry-error", -1, error, -1);
        rd_kafka_header_add(h, "kretry-group", -1, e->group, -1);
        rd_kafka_header_add(h, "kretry-correlation-id", -1, "corr-1", -1);
        rd_kafka_header_add(h, "no-value", -1, NULL, 0);
        KT_REQUIRE(kt_produce(e->c, e->dlq, partition, key,
                              key ? strlen(key) : 0, value, value_len, h) == 0);
}

/* Run @p argv (NULL-terminated); stdout into @p out (may be NULL).
 * Returns the exit status, -1 on a signal. */
static int run(const char *const *argv, char *out, size_t out_size) {
        return kt_run(argv[0], argv, 0, out, out_size);
}

static int export(env_t *e, const char *a1, const char *a2) {
        const char *argv[] = {KRETRY_CLI_PATH, "dlq",    "export", "--topology",
                              e->yaml,         "--name", "orders", "--out",
                              e->out,          a1,       a2,       NULL};
        return run(argv, NULL, 0);
}

/* The DLQ of these tests: four messages on two partitions. */
static void fill(env_t *e) {
        static char big[BIG_VALUE];
        memset(big, 'v', sizeof(big));
        dlq_put(e, 0, "k1", "v-a", 3, "permanent", "bad input");
        dlq_put(e, 0, NULL, "v-b", 3, "schema",
                "truncated: amount (double) needs 8 bytes");
        /* cut in the middle of a two-byte character */
        dlq_put(e, 1, "k3", big, sizeof(big), "exhausted", "caf\xc3");
        dlq_put(e, 1, "k4", NULL, 0, "expired", "too old");
}

static int field(avro_value_t *rec, const char *name, avro_value_t *out) {
        avro_value_t f;
        KT_REQUIRE(avro_value_get_by_name(rec, name, &f, NULL) == 0);
        if (avro_value_get_type(&f) != AVRO_UNION) {
                *out = f;
                return 1;
        }
        int disc;
        avro_value_get_discriminant(&f, &disc);
        avro_value_get_current_branch(&f, out);
        return disc; /* 0: null */
}

static const char *str(avro_value_t *rec, const char *name) {
        avro_value_t v;
        const char *s = NULL;
        size_t len;
        if (field(rec, name, &v))
                avro_value_get_string(&v, &s, &len);
        return s;
}

static int64_t num(avro_value_t *rec, const char *name) {
        avro_value_t v;
        int64_t l = -1;
        int32_t i = -1;
        if (!field(rec, name, &v))
                return -1;
        if (avro_value_get_type(&v) == AVRO_INT32) {
                avro_value_get_int(&v, &i);
                return i;
        }
        avro_value_get_long(&v, &l);
        return l;
}

static size_t blob(avro_value_t *rec, const char *name, const void **p) {
        avro_value_t v;
        size_t len = 0;
        *p         = NULL;
        if (field(rec, name, &v))
                avro_value_get_bytes(&v, p, &len);
        return len;
}

/* Read the file with avro-c and check each record; returns the count. */
static int read_back(env_t *e, int check) {
        avro_file_reader_t r;
        KT_REQUIRE(avro_file_reader(e->out, &r) == 0);
        /* A new reference in avro-c 1.11 (older releases borrowed). */
        avro_schema_t s = avro_file_reader_get_writer_schema(r);
        KT_ASSERT_STR_EQ(avro_schema_name(s), "DeadLetter");
        avro_value_iface_t *iface = avro_generic_class_from_schema(s);
        avro_value_t rec;
        avro_generic_value_new(iface, &rec);
        int n = 0;
        while (avro_file_reader_read_value(r, &rec) == 0) {
                const void *p;
                n++;
                if (!check)
                        continue;
                const char *cls = str(&rec, "error_class");
                KT_ASSERT_STR_EQ(str(&rec, "topic"), e->dlq);
                KT_ASSERT_STR_EQ(str(&rec, "original_topic"), e->source);
                KT_ASSERT_INT_EQ(num(&rec, "original_partition"), 1);
                KT_ASSERT_INT_EQ(num(&rec, "original_offset"), 41);
                KT_ASSERT_INT_EQ(num(&rec, "original_timestamp"),
                                 1699999999000LL);
                KT_ASSERT_INT_EQ(num(&rec, "first_failure_timestamp"),
                                 1700000000000LL);
                KT_ASSERT_INT_EQ(num(&rec, "last_failure_timestamp"),
                                 1700000005000LL);
                KT_ASSERT(num(&rec, "timestamp") > 1700000000000LL);
                KT_ASSERT_INT_EQ(num(&rec, "attempts"), 3);
                KT_ASSERT_INT_EQ(num(&rec, "replay_count"), 0);
                KT_ASSERT_STR_EQ(str(&rec, "error_code"), "E42");
                KT_ASSERT_STR_EQ(str(&rec, "group"), e->group);
                KT_ASSERT_INT_EQ(blob(&rec, "correlation_id", &p), 6);
                KT_ASSERT(p && !memcmp(p, "corr-1", 6));
                avro_value_t hs, h;
                size_t hn;
                avro_value_get_by_name(&rec, "headers", &hs, NULL);
                avro_value_get_size(&hs, &hn);
                KT_ASSERT_INT_EQ(hn, 14);
                avro_value_get_by_index(&hs, 13, &h, NULL);
                KT_ASSERT_STR_EQ(str(&h, "name"), "no-value");
                KT_ASSERT_INT_EQ(blob(&h, "value", &p), 0);
                KT_ASSERT(p == NULL);
                size_t klen = blob(&rec, "key", &p);
                if (!strcmp(cls, "permanent")) {
                        KT_ASSERT_INT_EQ(num(&rec, "partition"), 0);
                        KT_ASSERT(klen == 2 && !memcmp(p, "k1", 2));
                        KT_ASSERT_INT_EQ(blob(&rec, "value", &p), 3);
                        KT_ASSERT_STR_EQ(str(&rec, "error"), "bad input");
                } else if (!strcmp(cls, "schema")) {
                        KT_ASSERT(p == NULL); /* null key */
                        KT_ASSERT_INT_EQ(num(&rec, "offset"), 1);
                } else if (!strcmp(cls, "exhausted")) {
                        KT_ASSERT_INT_EQ(blob(&rec, "value", &p), BIG_VALUE);
                        KT_ASSERT_STR_EQ(str(&rec, "error"), "caf\xef\xbf\xbd");
                } else {
                        KT_ASSERT_STR_EQ(cls, "expired");
                        KT_ASSERT_INT_EQ(blob(&rec, "value", &p), 0);
                        KT_ASSERT(p == NULL); /* null value */
                }
        }
        avro_value_decref(&rec);
        avro_value_iface_decref(iface);
        avro_schema_decref(s);
        avro_file_reader_close(r);
        return n;
}

static void test_export_avro_c(void) {
        env_t *e = env_new();
        fill(e);
        KT_ASSERT_INT_EQ(export(e, NULL, NULL), 0);
        KT_ASSERT_INT_EQ(read_back(e, 1), 4);
        KT_ASSERT_INT_EQ(export(e, "--codec", "deflate"), 0);
        KT_ASSERT_INT_EQ(read_back(e, 1), 4);
        KT_ASSERT_INT_EQ(export(e, "--class", "schema"), 0);
        KT_ASSERT_INT_EQ(read_back(e, 1), 1);
        KT_ASSERT_INT_EQ(export(e, "--limit", "3"), 0);
        KT_ASSERT_INT_EQ(read_back(e, 1), 3);
        /* Usage errors leave no file behind. */
        unlink(e->out);
        KT_ASSERT_INT_EQ(export(e, "--codec", "zstd"), 64);
        KT_ASSERT(access(e->out, F_OK) != 0);
        env_destroy(e);
}

static void test_export_empty(void) {
        env_t *e = env_new();
        KT_ASSERT_INT_EQ(export(e, NULL, NULL), 0);
        KT_ASSERT_INT_EQ(read_back(e, 1), 0);
        env_destroy(e);
}

/* Debian's avrocat prints one JSON object per record. */
static void test_export_avrocat(void) {
        if (access(AVROCAT, X_OK)) {
                kt_skip("%s not installed (Debian package avro-bin)", AVROCAT);
                return;
        }
        static char out[1 << 20];
        env_t *e = env_new();
        fill(e);
        const char *codecs[] = {"null", "deflate"};
        for (int i = 0; i < 2; i++) {
                KT_ASSERT_INT_EQ(export(e, "--codec", codecs[i]), 0);
                const char *argv[] = {AVROCAT, e->out, NULL};
                KT_ASSERT_INT_EQ(run(argv, out, sizeof(out)), 0);
                int lines = 0;
                for (const char *p = out; (p = strchr(p, '\n')); p++)
                        lines++;
                KT_ASSERT_INT_EQ(lines, 4);
                KT_CHECK_MSG(strstr(out, "\"error_class\": {\"string\": "
                                         "\"schema\"}") != NULL,
                             CU_FALSE, "avrocat output: %.500s", out);
                const char *err = strstr(out, "\"error\": {\"string\": \"caf");
                KT_CHECK_MSG(err && (!strncmp(err + 24, "\\uFFFD", 6) ||
                                     !strncmp(err + 24, "\xef\xbf\xbd", 3)),
                             CU_FALSE, "avrocat output: %.60s",
                             err ? err : "(no \"error\": \"caf...)");
        }
        env_destroy(e);
}

static const char python_reader[] =
        "import sys, avro.datafile, avro.io\n"
        "with open(sys.argv[1], 'rb') as f:\n"
        "    r = avro.datafile.DataFileReader(f, avro.io.DatumReader())\n"
        "    for d in sorted(r, key=lambda d: (d['partition'], d['offset'])):\n"
        "        print(d['partition'], d['offset'], d['error_class'],\n"
        "              d['attempts'], d['original_offset'],\n"
        "              len(d['value'] or b''), d['key'], d['error'],\n"
        "              len(d['headers']), d['headers'][13]['value'])\n";

/* Python's Apache Avro: an implementation that shares no code with
 * avro-c. */
static void test_export_python(void) {
        const char *probe[] = {PYTHON, "-c", "import avro.datafile", NULL};
        if (access(PYTHON, X_OK) || run(probe, NULL, 0)) {
                kt_skip("%s cannot import avro (Debian package python3-avro)",
                        PYTHON);
                return;
        }
        static char out[1 << 16];
        env_t *e = env_new();
        fill(e);
        const char *codecs[] = {"null", "deflate"};
        for (int i = 0; i < 2; i++) {
                KT_ASSERT_INT_EQ(export(e, "--codec", codecs[i]), 0);
                const char *argv[] = {PYTHON, "-c", python_reader, e->out,
                                      NULL};
                KT_ASSERT_INT_EQ(run(argv, out, sizeof(out)), 0);
                static const char want[] =
                        "0 0 permanent 3 41 3 b'k1' bad input 14 None\n"
                        "0 1 schema 3 41 3 None truncated: amount (double) "
                        "needs 8 bytes 14 None\n"
                        "1 0 exhausted 3 41 102400 b'k3' caf\xef\xbf\xbd 14 "
                        "None\n"
                        "1 1 expired 3 41 0 b'k4' too old 14 None\n";
                KT_CHECK_MSG(!strcmp(out, want), CU_FALSE,
                             "python3-avro read:\n%.1000s", out);
        }
        env_destroy(e);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_export_avro_c),
                KT_TEST(test_export_empty),
                KT_TEST(test_export_avrocat),
                KT_TEST(test_export_python),
                KT_END,
        };
        return kt_main("dlq_export", tests, argc, argv);
}
