/*
 * value.format avro on the test cluster: decoded records reach the handler
 * (source and tiers), and every payload that does not decode goes straight
 * to the DLQ with class schema and its reason, with no handler call and no
 * attempt spent.
 */
#include "it_harness.h"

#include <avro.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *schema_path(void) {
        static char path[64];
        if (!path[0])
                it_schema_r(path, sizeof(path));
        return path;
}

/* Avro binary of R{id, n}, after @p prefix_len bytes of @p prefix. */
static size_t encode(unsigned char *buf,
                     const void *prefix,
                     size_t prefix_len,
                     const char *id,
                     int64_t n) {
        size_t len = 0, idl = strlen(id);
        memcpy(buf, prefix, prefix_len);
        len += prefix_len;
        buf[len++] = (unsigned char)(idl << 1);
        memcpy(buf + len, id, idl);
        len += idl;
        buf[len++] = (unsigned char)((uint64_t)n << 1);
        return len;
}

typedef struct {
        int calls, decoded;
        char ids[16][32];
} seen_t;

static seen_t seen;

static kretry_action_t avro_handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        const avro_value_t *rec = kretry_msg_value_avro(msg);
        avro_value_t f;
        const char *id = NULL;
        size_t sz;
        seen.calls++;
        if (!rec || avro_value_get_by_name(rec, "id", &f, NULL) ||
            avro_value_get_string(&f, &id, &sz))
                return KRETRY_FAIL;
        seen.decoded++;
        if (seen.calls <= 16)
                snprintf(seen.ids[seen.calls - 1], 32, "%s", id);
        if (!strncmp(id, "retry1", 6) && kretry_msg_attempt(msg) == 1)
                return KRETRY_RETRY;
        return KRETRY_OK;
}

static void produce_raw(it_env_t *env, const void *v, size_t len) {
        KT_REQUIRE(kt_produce(env->c, env->source, 0, "k", 1, v, len, NULL) ==
                   0);
}

typedef struct {
        int schema;
        char errors[8][160];
        char attempts[8][8];
} dlq_t;

static void see_dlq(const rd_kafka_message_t *m, void *opaque) {
        dlq_t *d = opaque;
        char b[160];
        if (kt_header(m, "kretry-error-class", b, sizeof(b)) &&
            !strcmp(b, "schema") && d->schema < 8) {
                kt_header(m, "kretry-error", d->errors[d->schema], 160);
                kt_header(m, "kretry-attempt", d->attempts[d->schema], 8);
                d->schema++;
        }
}

static int has_error(const dlq_t *d, const char *needle) {
        for (int i = 0; i < d->schema; i++)
                if (strstr(d->errors[i], needle))
                        return 1;
        return 0;
}

static atomic_int conc_calls, conc_mismatch, conc_running, conc_max;

/* Reads the record, sleeps 1 ms (so that calls overlap), reads it again:
 * the message with key "k<i>" must see id "c-<i>" and n = i mod 60. */
static kretry_action_t conc_handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        int now = atomic_fetch_add(&conc_running, 1) + 1;
        if (now > atomic_load(&conc_max))
                atomic_store(&conc_max, now);
        const avro_value_t *rec = kretry_msg_value_avro(msg);
        size_t kl;
        const char *k = kretry_msg_key(msg, &kl);
        char want[16];
        snprintf(want, sizeof(want), "c-%.*s", (int)(kl > 1 ? kl - 1 : 0),
                 k ? k + 1 : "");
        for (int pass = 0; pass < 2; pass++) {
                avro_value_t f, g;
                const char *id = NULL;
                size_t sz;
                int64_t n = -1;
                if (!rec || avro_value_get_by_name(rec, "id", &f, NULL) ||
                    avro_value_get_string(&f, &id, &sz) ||
                    avro_value_get_by_name(rec, "n", &g, NULL) ||
                    avro_value_get_long(&g, &n) || strcmp(id, want) ||
                    atoll(id + 2) % 60 != n)
                        atomic_fetch_add(&conc_mismatch, 1);
                if (!pass) {
                        struct timespec ts = {0, 1000000};
                        nanosleep(&ts, NULL);
                }
        }
        atomic_fetch_sub(&conc_running, 1);
        atomic_fetch_add(&conc_calls, 1);
        return KRETRY_OK;
}

/* value.format avro with handlers at once: each call reads its own record,
 * never one decoded for another message meanwhile. */
static void test_concurrent(void) {
        it_env_t *env = it_env_new("30ms", 1);
        unsigned char buf[128];
        for (int i = 0; i < 200; i++) {
                char id[16], key[16];
                snprintf(id, sizeof(id), "c-%d", i);
                snprintf(key, sizeof(key), "k%d", i);
                size_t n = encode(buf, "", 0, id, i % 60);
                /* encode() writes n as one zigzag byte: below 64. */
                KT_REQUIRE(kt_produce(env->c, env->source, 0, key, strlen(key),
                                      buf, n, NULL) == 0);
        }
        atomic_store(&conc_calls, 0);
        atomic_store(&conc_mismatch, 0);
        atomic_store(&conc_max, 0);
        kretry_conf_t *conf =
                it_conf(env, "value.format", "avro", "value.schema",
                        schema_path(), "handler.concurrency", "8", NULL);
        kretry_conf_set_handler(conf, conc_handler, NULL);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 200, 30000));
        KT_ASSERT_INT_EQ(atomic_load(&conc_calls), 200);
        KT_ASSERT(atomic_load(&conc_max) > 1);
        KT_ASSERT_INT_EQ(atomic_load(&conc_mismatch), 0);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void test_raw(void) {
        it_env_t *env = it_env_new("30ms", 1);
        unsigned char buf[128];
        size_t n;
        n = encode(buf, "", 0, "ok-1", 5);
        produce_raw(env, buf, n);
        n = encode(buf, "", 0, "retry1-2", 6);
        produce_raw(env, buf, n);
        n = encode(buf, "", 0, "ok-3", 7);
        produce_raw(env, buf, n - 1); /* truncated: no n */
        n        = encode(buf, "", 0, "ok-4", 8);
        buf[n++] = 0x00; /* a trailing byte */
        buf[n++] = 0x02;
        produce_raw(env, buf, n);
        produce_raw(env, "\x07zz", 3); /* negative string length */
        produce_raw(env, NULL, 0);     /* null value */
        memset(&seen, 0, sizeof(seen));
        kretry_conf_t *conf = it_conf(env, "value.format", "avro",
                                      "value.schema", schema_path(), NULL);
        kretry_conf_set_handler(conf, avro_handler, NULL);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_SCHEMA, 4, 20000));
        /* ok-1, retry1-2 twice (source, then decoded again from the tier). */
        KT_ASSERT_INT_EQ(seen.calls, 3);
        KT_ASSERT_INT_EQ(seen.decoded, 3);
        KT_ASSERT_STR_EQ(seen.ids[2], "retry1-2");
        kretry_adapter_destroy(a);
        dlq_t d;
        memset(&d, 0, sizeof(d));
        kt_consume(env->c, env->dlq, 4, 10000, see_dlq, &d);
        KT_ASSERT_INT_EQ(d.schema, 4);
        KT_ASSERT(has_error(&d, "truncated"));
        KT_ASSERT(has_error(&d, "trailing"));
        for (int i = 0; i < d.schema; i++)
                KT_ASSERT_STR_EQ(d.attempts[i], "0");
        for (int i = 0; i < d.schema; i++)
                fprintf(stderr, "  schema DLQ: %s\n", d.errors[i]);
        it_env_destroy(env);
}

static void test_confluent(void) {
        it_env_t *env = it_env_new("30ms", 1);
        unsigned char buf[128];
        char ids[128];
        snprintf(ids, sizeof(ids), "1=%s", schema_path());
        size_t n = encode(buf, "\x00\x00\x00\x00\x01", 5, "ok-c", 1);
        produce_raw(env, buf, n);
        n = encode(buf, "\x05\x00\x00\x00\x01", 5, "ok-m", 1);
        produce_raw(env, buf, n);
        n = encode(buf, "\x00\x00\x00\x00\x09", 5, "ok-i", 1);
        produce_raw(env, buf, n);
        produce_raw(env, "\x00\x00", 2);
        memset(&seen, 0, sizeof(seen));
        kretry_conf_t *conf = it_conf(
                env, "value.format", "avro", "value.schema", schema_path(),
                "value.wire", "confluent", "value.schema.ids", ids, NULL);
        kretry_conf_set_handler(conf, avro_handler, NULL);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_SCHEMA, 3, 20000));
        KT_ASSERT_INT_EQ(seen.calls, 1);
        KT_ASSERT_STR_EQ(seen.ids[0], "ok-c");
        kretry_adapter_destroy(a);
        dlq_t d;
        memset(&d, 0, sizeof(d));
        kt_consume(env->c, env->dlq, 3, 10000, see_dlq, &d);
        KT_ASSERT_INT_EQ(d.schema, 3);
        KT_ASSERT(has_error(&d, "magic byte 0x05"));
        KT_ASSERT(has_error(&d, "schema id 9"));
        for (int i = 0; i < d.schema; i++)
                fprintf(stderr, "  schema DLQ: %s\n", d.errors[i]);
        it_env_destroy(env);
}

/* versioning.field: the version is a long field of the record. */
static void test_field_versions(void) {
        it_env_t *env = it_env_new("30ms", 1);
        char vt[300];
        snprintf(vt, sizeof(vt), "%s.%s.versions", env->group, env->source);
        KT_REQUIRE(kt_cluster_changelog(env->c, vt, 1) == 0);
        unsigned char buf[128];
        const int64_t vs[] = {3, 1, 2, 5, 4};
        for (int i = 0; i < 5; i++) {
                char id[16];
                snprintf(id, sizeof(id), "ok-v%lld", (long long)vs[i]);
                size_t n = encode(buf, "", 0, id, vs[i]);
                produce_raw(env, buf, n);
        }
        produce_raw(env, "\x01", 1); /* undecodable: still dead-lettered */
        memset(&seen, 0, sizeof(seen));
        kretry_conf_t *conf =
                it_conf(env, "value.format", "avro", "value.schema",
                        schema_path(), "versioning.field", "n", NULL);
        kretry_conf_set_handler(conf, avro_handler, NULL);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_adapter_t *a = it_adapter(conf);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_STALE, 3, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_OK, 2, 20000));
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ_SCHEMA, 1, 20000));
        KT_ASSERT_INT_EQ(seen.calls, 2);
        KT_ASSERT_STR_EQ(seen.ids[0], "ok-v3");
        KT_ASSERT_STR_EQ(seen.ids[1], "ok-v5");
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* A configuration whose schema cannot be read is refused at creation. */
static void test_bad_schema(void) {
        kretry_conf_t *conf = kretry_conf_new();
        char err[512];
        kretry_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", NULL, 0);
        kretry_conf_set(conf, "group.id", "g", NULL, 0);
        kretry_conf_set(conf, "source.topic", "t", NULL, 0);
        kretry_conf_set(conf, "value.format", "avro", NULL, 0);
        kretry_conf_set_handler(conf, avro_handler, NULL);
        KT_ASSERT(kretry_adapter_new(conf, err, sizeof(err)) == NULL);
        KT_ASSERT(strstr(err, "value.schema") != NULL);
        kretry_conf_set(conf, "value.schema", "/nonexistent.avsc", NULL, 0);
        KT_ASSERT(kretry_adapter_new(conf, err, sizeof(err)) == NULL);
        KT_ASSERT(err[0] != '\0');
        /* A version field the schema lacks, or that is not an integer. */
        kretry_conf_set(conf, "value.schema", schema_path(), NULL, 0);
        kretry_conf_set(conf, "versioning.field", "missing", NULL, 0);
        KT_ASSERT(kretry_adapter_new(conf, err, sizeof(err)) == NULL);
        kretry_conf_set(conf, "versioning.field", "id", NULL, 0);
        KT_ASSERT(kretry_adapter_new(conf, err, sizeof(err)) == NULL);
        kretry_conf_set(conf, "value.format", "bytes", NULL, 0);
        KT_ASSERT(kretry_adapter_new(conf, err, sizeof(err)) == NULL);
        KT_ASSERT(strstr(err, "versioning.field needs value.format avro") !=
                  NULL);
        kretry_conf_destroy(conf);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_raw),        KT_TEST(test_concurrent),
                KT_TEST(test_confluent),  KT_TEST(test_field_versions),
                KT_TEST(test_bad_schema), KT_END};
        int rc = kt_main("it_avro", tests, argc, argv);
        unlink(schema_path());
        return rc;
}
