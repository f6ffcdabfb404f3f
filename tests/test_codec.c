/* The Avro value codec: round trips in both wire formats, writer-to-reader
 * resolution, and every malformed payload with its exact reason. */
#include "avro_check.h"
#include "codec.h"
#include "conf.h"
#include "testutil.h"
#include "topology.h"
#include "versions.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ORDER KRETRY_SOURCE_DIR "/schemas/examples/order.avsc"
#define ORDER_V1 KRETRY_SOURCE_DIR "/schemas/examples/order_v1.avsc"

static char tmp_paths[16][64];
static int tmp_cnt;

/* A schema written to a temporary file (removed at the end). */
static const char *schema_file(const char *json) {
        char *path = tmp_paths[tmp_cnt++];
        snprintf(path, 64, "/tmp/kretry-codec-XXXXXX");
        int fd = mkstemp(path);
        KT_REQUIRE(fd >= 0);
        KT_REQUIRE(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
        close(fd);
        return path;
}

static kretry_codec_t *
codec(const char *schema, const char *wire, const char *ids) {
        char err[512];
        kretry_codec_t *c =
                kretry_codec_new("avro", schema, wire, ids, err, sizeof(err));
        KT_CHECK_MSG(c != NULL, CU_TRUE, "kretry_codec_new: %s", err);
        return c;
}

/* A zig-zag varint, as Avro writes int and long. */
static size_t put_long(uint8_t *p, int64_t v) {
        uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
        size_t n   = 0;
        while (z > 0x7f) {
                p[n++] = (uint8_t)(z | 0x80);
                z >>= 7;
        }
        p[n++] = (uint8_t)z;
        return n;
}

static void set_str(avro_value_t *rec, const char *field, const char *s) {
        avro_value_t f;
        KT_REQUIRE(avro_value_get_by_name(rec, field, &f, NULL) == 0);
        KT_REQUIRE(avro_value_set_string(&f, s) == 0);
}

/* An Order as order.avsc (v2) or order_v1.avsc describes it. */
static void make_order(avro_value_t *rec, int v1) {
        avro_value_t f, item, q, branch;
        set_str(rec, "order_id", "o-42");
        set_str(rec, "customer", "c-7");
        avro_value_get_by_name(rec, "version", &f, NULL);
        v1 ? avro_value_set_int(&f, 3) : avro_value_set_long(&f, 3);
        avro_value_get_by_name(rec, "amount_cents", &f, NULL);
        v1 ? avro_value_set_int(&f, 1999) : avro_value_set_long(&f, 1999);
        avro_value_get_by_name(rec, "currency", &f, NULL);
        avro_value_set_enum(&f, 1);
        avro_value_get_by_name(rec, "status", &f, NULL);
        avro_value_set_enum(&f, 2);
        avro_value_get_by_name(rec, "express", &f, NULL);
        avro_value_set_boolean(&f, 1);
        avro_value_get_by_name(rec, "items", &f, NULL);
        for (int i = 0; i < 2; i++) {
                avro_value_append(&f, &item, NULL);
                set_str(&item, "sku", i ? "sku-b" : "sku-a");
                avro_value_get_by_name(&item, "quantity", &q, NULL);
                avro_value_set_int(&q, 10 + i);
        }
        avro_value_get_by_name(rec, "note", &f, NULL);
        avro_value_set_branch(&f, 1, &branch);
        avro_value_set_string(&branch, "leave at door");
        if (v1)
                set_str(rec, "legacy_channel", "web");
}

/* Encode an Order into @p buf; returns its length. */
static size_t encode_order(const char *schema_path,
                           int v1,
                           int32_t id,
                           uint8_t *buf,
                           size_t size) {
        char err[256];
        kretry_codec_t *c =
                kretry_codec_new("avro", schema_path, "raw", NULL, err, 256);
        KT_REQUIRE(c != NULL);
        avro_value_iface_t *iface =
                avro_generic_class_from_schema(kretry_codec_schema(c));
        avro_value_t rec;
        KT_REQUIRE(avro_generic_value_new(iface, &rec) == 0);
        make_order(&rec, v1);
        int64_t n = kretry_codec_encode(&rec, id, buf, size);
        KT_REQUIRE(n > 0);
        avro_value_decref(&rec);
        avro_value_iface_decref(iface);
        kretry_codec_destroy(c);
        return (size_t)n;
}

static void check_order(avro_value_t *v) {
        avro_value_t f, item, branch;
        const char *s;
        size_t len;
        int64_t l;
        int i;
        KT_REQUIRE(avro_value_get_by_name(v, "order_id", &f, NULL) == 0);
        avro_value_get_string(&f, &s, &len);
        KT_ASSERT_STR_EQ(s, "o-42");
        KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "version", &l), 0);
        KT_ASSERT_INT_EQ(l, 3);
        KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "amount_cents", &l), 0);
        KT_ASSERT_INT_EQ(l, 1999);
        avro_value_get_by_name(v, "status", &f, NULL);
        avro_value_get_enum(&f, &i);
        KT_ASSERT_INT_EQ(i, 2);
        avro_value_get_by_name(v, "items", &f, NULL);
        avro_value_get_size(&f, &len);
        KT_ASSERT_INT_EQ(len, 2);
        avro_value_get_by_index(&f, 1, &item, NULL);
        avro_value_get_by_name(&item, "sku", &f, NULL);
        avro_value_get_string(&f, &s, &len);
        KT_ASSERT_STR_EQ(s, "sku-b");
        avro_value_get_by_name(v, "note", &f, NULL);
        avro_value_get_current_branch(&f, &branch);
        avro_value_get_string(&branch, &s, &len);
        KT_ASSERT_STR_EQ(s, "leave at door");
        KT_ASSERT(avro_value_get_by_name(v, "legacy_channel", &f, NULL) != 0);
}

static void test_raw_round_trip(void) {
        uint8_t buf[512];
        char reason[256];
        avro_value_t *v = NULL, *again = NULL;
        size_t n          = encode_order(ORDER, 0, -1, buf, sizeof(buf));
        kretry_codec_t *c = codec(ORDER, "raw", NULL);
        KT_CHECK_MSG(
                kretry_codec_decode(c, buf, n, &v, reason, sizeof(reason)) == 0,
                CU_TRUE, "decode: %s", reason);
        check_order(v);
        KT_ASSERT_INT_EQ(kretry_codec_last_id(c), -1);
        /* The same value is reused: no per-message record. */
        KT_REQUIRE(kretry_codec_decode(c, buf, n, &again, reason,
                                       sizeof(reason)) == 0);
        KT_ASSERT(again == v);
        check_order(again);
        uint8_t out[512];
        KT_ASSERT_INT_EQ(kretry_codec_encode(v, -1, out, sizeof(out)), n);
        KT_ASSERT(!memcmp(out, buf, n));
        kretry_codec_destroy(c);
}

static void test_confluent_round_trip(void) {
        uint8_t buf[512];
        char reason[256];
        avro_value_t *v = NULL;
        size_t n        = encode_order(ORDER, 0, 7, buf, sizeof(buf));
        KT_ASSERT_INT_EQ(buf[0], 0);
        KT_ASSERT_INT_EQ(buf[4], 7);
        /* Without a map every id is read with the topology's schema. */
        kretry_codec_t *c = codec(ORDER, "confluent", NULL);
        KT_CHECK_MSG(
                kretry_codec_decode(c, buf, n, &v, reason, sizeof(reason)) == 0,
                CU_TRUE, "decode: %s", reason);
        check_order(v);
        KT_ASSERT_INT_EQ(kretry_codec_last_id(c), 7);
        kretry_codec_destroy(c);

        /* A large id keeps its four big-endian bytes. */
        n = encode_order(ORDER, 0, 0x01020304, buf, sizeof(buf));
        KT_ASSERT(buf[1] == 1 && buf[2] == 2 && buf[3] == 3 && buf[4] == 4);
        c = codec(ORDER, "confluent", "16909060=" ORDER);
        KT_REQUIRE(kretry_codec_decode(c, buf, n, &v, reason, sizeof(reason)) ==
                   0);
        KT_ASSERT_INT_EQ(kretry_codec_last_id(c), 0x01020304);
        kretry_codec_destroy(c);
}

/* Id 1 is an older writer (int version, another field order, a legacy
 * field): avro-c's resolved writer turns it into the reader's record. */
static void test_resolution(void) {
        uint8_t v1[512], v2[512];
        char reason[256];
        avro_value_t *v = NULL;
        size_t n1       = encode_order(ORDER_V1, 1, 1, v1, sizeof(v1));
        size_t n2       = encode_order(ORDER, 0, 2, v2, sizeof(v2));
        kretry_codec_t *c =
                codec(ORDER, "confluent", "1=" ORDER_V1 ",2=" ORDER);
        for (int round = 0; round < 2; round++) {
                KT_CHECK_MSG(kretry_codec_decode(c, v1, n1, &v, reason,
                                                 sizeof(reason)) == 0,
                             CU_TRUE, "decode id 1: %s", reason);
                check_order(v);
                KT_ASSERT_INT_EQ(kretry_codec_last_id(c), 1);
                KT_CHECK_MSG(kretry_codec_decode(c, v2, n2, &v, reason,
                                                 sizeof(reason)) == 0,
                             CU_TRUE, "decode id 2: %s", reason);
                check_order(v);
                KT_ASSERT_INT_EQ(kretry_codec_last_id(c), 2);
        }
        /* Id 2's bytes framed as id 1 are read with the wrong writer. */
        v2[4] = 1;
        KT_ASSERT_INT_EQ(
                kretry_codec_decode(c, v2, n2, &v, reason, sizeof(reason)), -1);
        kretry_codec_destroy(c);
}

static void
expect_fail(kretry_codec_t *c, const void *buf, size_t len, const char *want) {
        char reason[256] = "";
        avro_value_t *v  = NULL;
        int rc = kretry_codec_decode(c, buf, len, &v, reason, sizeof(reason));
        KT_ASSERT_INT_EQ(rc, -1);
        KT_CHECK_MSG(!strcmp(reason, want), CU_FALSE,
                     "reason: expected \"%s\", got \"%s\"", want, reason);
}

static void expect_prefix(kretry_codec_t *c,
                          const void *buf,
                          size_t len,
                          const char *prefix) {
        char reason[256] = "";
        avro_value_t *v  = NULL;
        int rc = kretry_codec_decode(c, buf, len, &v, reason, sizeof(reason));
        KT_CHECK_MSG(rc == -1 && !strncmp(reason, prefix, strlen(prefix)),
                     CU_FALSE,
                     "%zu bytes: expected -1 and \"%s...\", got %d "
                     "\"%s\"",
                     len, prefix, rc, reason);
}

static void test_confluent_frame(void) {
        uint8_t buf[512];
        size_t n = encode_order(ORDER, 0, 9, buf, sizeof(buf));
        kretry_codec_t *c =
                codec(ORDER, "confluent", "1=" ORDER_V1 ",2=" ORDER);
        expect_fail(c, buf, n, "schema id 9 is not mapped");
        buf[0] = 5;
        expect_fail(c, buf, n,
                    "confluent wire: magic byte 0x05, expected 0x00");
        expect_fail(c, buf, 3,
                    "truncated: confluent wire needs a 5-byte header (magic "
                    "byte, schema id), the value has 3 bytes");
        expect_fail(c, "", 0,
                    "truncated: confluent wire needs a 5-byte header (magic "
                    "byte, schema id), the value has 0 bytes");
        expect_fail(c, NULL, 0, "null value: an Avro record was expected");
        uint8_t big[5] = {0, 0xff, 0xff, 0xff, 0xff};
        expect_fail(c, big, 5, "schema id 4294967295 is not mapped");
        kretry_codec_destroy(c);
}

static void test_truncated_and_trailing(void) {
        uint8_t buf[512];
        char want[256];
        size_t n          = encode_order(ORDER, 0, 2, buf, sizeof(buf));
        kretry_codec_t *c = codec(ORDER, "confluent", "2=" ORDER);
        /* Every cut inside the record is reported as truncated. */
        for (size_t len = 5; len < n; len++)
                expect_prefix(c, buf, len, "truncated: ");
        expect_fail(c, buf, 6,
                    "truncated: order_id (string) at offset 5 declares 4 "
                    "bytes, 0 left");
        expect_fail(c, buf, n - 1,
                    "truncated: note (string) at offset 37 declares 13 "
                    "bytes, 12 left");
        memcpy(buf + n, "xyz", 3);
        snprintf(want, sizeof(want),
                 "3 trailing bytes after the record (it ends at offset %zu "
                 "of %zu)",
                 n, n + 3);
        expect_fail(c, buf, n + 3, want);
        kretry_codec_destroy(c);

        c = codec(ORDER, "raw", NULL);
        n = encode_order(ORDER, 0, -1, buf, sizeof(buf));
        for (size_t len = 0; len < n; len++)
                expect_prefix(c, buf, len, "truncated: ");
        buf[n] = 0;
        expect_fail(c, buf, n + 1,
                    "1 trailing bytes after the record (it ends at offset 46 "
                    "of 47)");
        kretry_codec_destroy(c);
}

static const char kitchen[] =
        "{\"type\":\"record\",\"name\":\"K\",\"fields\":["
        "{\"name\":\"b\",\"type\":\"boolean\"},"
        "{\"name\":\"i\",\"type\":\"int\"},"
        "{\"name\":\"l\",\"type\":\"long\"},"
        "{\"name\":\"f\",\"type\":\"float\"},"
        "{\"name\":\"d\",\"type\":\"double\"},"
        "{\"name\":\"s\",\"type\":\"string\"},"
        "{\"name\":\"y\",\"type\":\"bytes\"},"
        "{\"name\":\"x\",\"type\":{\"type\":\"fixed\",\"name\":\"F\","
        "\"size\":2}},"
        "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\","
        "\"symbols\":[\"A\",\"B\",\"C\"]}},"
        "{\"name\":\"u\",\"type\":[\"null\",\"long\"]},"
        "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"int\"}},"
        "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"null\"}}"
        "]}";

/* A valid K with one field replaced: @p at names the field to corrupt and
 * @p bad (@p bad_len bytes) replaces its encoding. */
static size_t
kitchen_value(uint8_t *p, char at, const void *bad, size_t bad_len) {
        size_t n = 0;
#define FIELD(name, ...)                                                       \
        do {                                                                   \
                if (at == name) {                                              \
                        memcpy(p + n, bad, bad_len);                           \
                        n += bad_len;                                          \
                } else {                                                       \
                        __VA_ARGS__;                                           \
                }                                                              \
        } while (0)
        FIELD('b', p[n++] = 1);
        FIELD('i', n += put_long(p + n, -5));
        FIELD('l', n += put_long(p + n, INT64_MAX));
        FIELD('f', memset(p + n, 0, 4); n += 4);
        FIELD('d', memset(p + n, 0, 8); n += 8);
        FIELD('s', n += put_long(p + n, 2); memcpy(p + n, "hi", 2); n += 2);
        FIELD('y', n += put_long(p + n, 1); p[n++] = 0xff);
        FIELD('x', p[n++] = 1; p[n++] = 2);
        FIELD('e', n += put_long(p + n, 2));
        FIELD('u', n += put_long(p + n, 1); n += put_long(p + n, -1));
        FIELD('m', n += put_long(p + n, 1); n += put_long(p + n, 1);
              p[n++] = 'k'; n += put_long(p + n, 7); n += put_long(p + n, 0));
        FIELD('a', n += put_long(p + n, -3); n += put_long(p + n, 0);
              n += put_long(p + n, 0));
#undef FIELD
        return n;
}

static void test_wrong_types(void) {
        uint8_t buf[256];
        char reason[256];
        avro_value_t *v   = NULL;
        kretry_codec_t *c = codec(schema_file(kitchen), "raw", NULL);
        size_t n          = kitchen_value(buf, 0, NULL, 0);
        KT_CHECK_MSG(
                kretry_codec_decode(c, buf, n, &v, reason, sizeof(reason)) == 0,
                CU_TRUE, "valid kitchen value: %s", reason);
        avro_value_t f;
        avro_value_get_by_name(v, "a", &f, NULL);
        avro_value_get_size(&f, &n);
        KT_ASSERT_INT_EQ(n, 3);

        static const struct {
                char field;
                const char *bytes;
                size_t len;
                const char *want;
        } cases[] = {
                {'b', "\x07", 1,
                 "wrong type: b (boolean) at offset 0 is byte 0x07, expected "
                 "0x00 or 0x01"},
                {'i', "\x80\x80\x80\x80\x20", 5,
                 "wrong type: i (int) at offset 1 is 4294967296, outside the "
                 "32-bit range"},
                {'l', "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11,
                 "malformed: l (long) at offset 2: variable-length integer "
                 "longer than 10 bytes"},
                {'s', "\x05", 1,
                 "malformed: s (string) at offset 24 has a negative length "
                 "-3"},
                {'s', "\x04\xc3\x28", 3,
                 "wrong type: s (string) at offset 24 is not valid UTF-8"},
                {'s', "\x7e", 1,
                 "truncated: s (string) at offset 24 declares 63 bytes, 15 "
                 "left"},
                {'e', "\x06", 1,
                 "wrong type: e (enum) at offset 31: index 3 is out of range "
                 "0..2"},
                {'u', "\x04", 1,
                 "wrong type: u (union) at offset 32: index 2 is out of range "
                 "0..1"},
                {'m', "\x02\x02\xff\x0e\x00", 5,
                 "wrong type: m[0] (string) at offset 35 is not valid UTF-8"},
                {'m', "\xd0\x0f", 2,
                 "truncated: m (map) at offset 34 declares 1000 entries, "
                 "more than the 3 bytes left can hold"},
                {'a', "\xfe\xff\xff\xff\x0f\x00", 6,
                 "malformed: a (array) at offset 39 declares 2147483647 "
                 "entries, beyond the limit of 1048576 entries in one value"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                n = kitchen_value(buf, cases[i].field, cases[i].bytes,
                                  cases[i].len);
                expect_fail(c, buf, n, cases[i].want);
        }
        kretry_codec_destroy(c);
}

/* A recursive schema: nesting is bounded, not the stack. */
static void test_depth(void) {
        static const char list[] =
                "{\"type\":\"record\",\"name\":\"N\",\"fields\":["
                "{\"name\":\"next\",\"type\":[\"null\",\"N\"]}]}";
        uint8_t buf[200];
        char reason[256];
        avro_value_t *v   = NULL;
        kretry_codec_t *c = codec(schema_file(list), "raw", NULL);
        memset(buf, 2, 10); /* ten links, then null */
        buf[10] = 0;
        KT_CHECK_MSG(kretry_codec_decode(c, buf, 11, &v, reason,
                                         sizeof(reason)) == 0,
                     CU_FALSE, "10 levels: %s", reason);
        memset(buf, 2, sizeof(buf));
        expect_prefix(c, buf, sizeof(buf), "malformed: next.next.next");
        char tail[64];
        KT_ASSERT_INT_EQ(kretry_codec_decode(c, buf, sizeof(buf), &v, reason,
                                             sizeof(reason)),
                         -1);
        snprintf(tail, sizeof(tail), "nests deeper than %d levels",
                 KRETRY_AVRO_MAX_DEPTH);
        KT_CHECK_MSG(strstr(reason, tail) != NULL, CU_FALSE, "got \"%s\"",
                     reason);
        kretry_codec_destroy(c);
}

static void test_field_int64(void) {
        static const char s[] =
                "{\"type\":\"record\",\"name\":\"V\",\"fields\":["
                "{\"name\":\"i\",\"type\":\"int\"},"
                "{\"name\":\"u\",\"type\":[\"null\",\"long\"]},"
                "{\"name\":\"n\",\"type\":[\"null\",\"long\"]},"
                "{\"name\":\"s\",\"type\":\"string\"}]}";
        uint8_t buf[16] = {0};
        size_t n        = 0;
        char reason[256], err[256];
        int64_t out       = 0;
        avro_value_t *v   = NULL;
        kretry_codec_t *c = codec(schema_file(s), "raw", NULL);
        n += put_long(buf + n, -12);
        n += put_long(buf + n, 1);
        n += put_long(buf + n, 1LL << 40);
        n += put_long(buf + n, 0);
        n += put_long(buf + n, 0);
        KT_REQUIRE(kretry_codec_decode(c, buf, n, &v, reason, sizeof(reason)) ==
                   0);
        KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "i", &out), 0);
        KT_ASSERT_INT_EQ(out, -12);
        KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "u", &out), 0);
        KT_ASSERT_INT_EQ(out, 1LL << 40);
        KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "n", &out), -3);
        KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "s", &out), -2);
        KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "nope", &out), -1);
        KT_ASSERT_INT_EQ(kretry_codec_check_int_field(c, "u", err, 256), 0);
        KT_ASSERT_INT_EQ(kretry_codec_check_int_field(c, "s", err, 256), -1);
        KT_ASSERT_STR_EQ(err,
                         "versioning.field: V.s is a string; a version is an "
                         "int or a long (or a union of null with one)");
        KT_ASSERT_INT_EQ(kretry_codec_check_int_field(c, "x", err, 256), -1);
        KT_ASSERT_STR_EQ(err, "versioning.field: record V has no field \"x\"");
        kretry_codec_destroy(c);
}

/* Random damage to valid payloads (fixed seed): every decode either
 * succeeds or gives a reason, and never reads out of bounds (run under
 * -DKRETRY_SANITIZER=address,undefined). A stand-in for a fuzz target. */
static void test_mutations(void) {
        uint8_t good[2][512], buf[600];
        size_t len[2];
        char reason[256];
        avro_value_t *v;
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        int ok = 0, refused = 0;
        len[0] = encode_order(ORDER_V1, 1, 1, good[0], sizeof(good[0]));
        len[1] = encode_order(ORDER, 0, 2, good[1], sizeof(good[1]));
        kretry_codec_t *c =
                codec(ORDER, "confluent", "1=" ORDER_V1 ",2=" ORDER);
        for (int i = 0; i < 50000; i++) {
                int g    = i & 1;
                size_t n = len[g];
                memcpy(buf, good[g], n);
                for (int k = 0; k < 1 + (int)(x % 4); k++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        size_t at = 5 + x % (n > 6 ? n - 5 : 1);
                        switch ((x >> 32) % 4) {
                        case 0: /* flip a byte */
                                buf[at] ^= (uint8_t)(x >> 40) | 1;
                                break;
                        case 1: /* cut */
                                n = at;
                                break;
                        case 2: /* a huge varint */
                                buf[at] = 0xff;
                                break;
                        default: /* grow */
                                if (n < sizeof(buf))
                                        buf[n++] = (uint8_t)(x >> 48);
                        }
                }
                reason[0] = '\0';
                if (kretry_codec_decode(c, buf, n, &v, reason,
                                        sizeof(reason)) == 0) {
                        ok++;
                } else {
                        refused++;
                        KT_CHECK_MSG(reason[0] != '\0', CU_TRUE,
                                     "iteration %d: refused without a "
                                     "reason",
                                     i);
                }
        }
        KT_ASSERT(refused > 40000);
        kretry_codec_destroy(c);
}

static void expect_new_fail(const char *format,
                            const char *schema,
                            const char *wire,
                            const char *ids,
                            const char *want) {
        char err[512] = "";
        kretry_codec_t *c =
                kretry_codec_new(format, schema, wire, ids, err, sizeof(err));
        KT_ASSERT(c == NULL);
        KT_CHECK_MSG(strstr(err, want) != NULL, CU_FALSE,
                     "expected \"%s\" in \"%s\"", want, err);
        kretry_codec_destroy(c);
}

static void test_new_errors(void) {
        expect_new_fail("bytes", ORDER, "raw", NULL, "has no codec");
        expect_new_fail("avro", NULL, "raw", NULL, "needs a schema file");
        expect_new_fail("avro", ORDER, "json", NULL,
                        "value.wire: \"json\" is not raw or confluent");
        expect_new_fail("avro", ORDER, "raw", "1=" ORDER,
                        "only with value.wire confluent");
        expect_new_fail("avro", ORDER, "confluent", "x=" ORDER,
                        "\"x=" ORDER "\" is not ID=PATH");
        expect_new_fail("avro", ORDER, "confluent",
                        "1=", "\"1=\" is not ID=PATH");
        expect_new_fail("avro", ORDER, "confluent", "1=" ORDER ",1=" ORDER,
                        "id 1 is mapped twice");
        expect_new_fail("avro", "/nonexistent.avsc", "raw", NULL,
                        "/nonexistent.avsc: cannot open: No such file");
        expect_new_fail("avro", schema_file("{\"type\": \"recrod\"}"), "raw",
                        NULL, "not an Avro schema");
        /* avro-c 1.11 does not apply reader defaults: a reader field the
         * writer lacks is refused when the codec is made, not per message. */
        expect_new_fail("avro", ORDER_V1, "confluent", "2=" ORDER,
                        "cannot be resolved to the reader schema");
}

/* The version store's changelog values are Avro binary of
 * schemas/kretry/version_record.avsc: avro-c reads what versions.c writes. */
static void test_version_record(void) {
        static const int64_t versions[] = {0, 1, -1, 300, INT64_MAX, INT64_MIN};
        unsigned char buf[16];
        uint8_t out[16];
        char reason[256];
        avro_value_t *v = NULL;
        int64_t got     = 0;
        kretry_codec_t *c =
                codec(KRETRY_SOURCE_DIR "/schemas/kretry/version_record.avsc",
                      "raw", NULL);
        for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
                size_t n = kretry_version_encode(versions[i], buf);
                KT_CHECK_MSG(kretry_codec_decode(c, buf, n, &v, reason,
                                                 sizeof(reason)) == 0,
                             CU_FALSE, "%lld: %s", (long long)versions[i],
                             reason);
                KT_ASSERT_INT_EQ(kretry_codec_field_int64(v, "version", &got),
                                 0);
                KT_ASSERT_INT_EQ(got, versions[i]);
                KT_ASSERT_INT_EQ(kretry_codec_encode(v, -1, out, sizeof(out)),
                                 n);
                KT_ASSERT(!memcmp(out, buf, n));
        }
        kretry_codec_destroy(c);
        c = codec(KRETRY_SOURCE_DIR "/schemas/kretry/dlq_context.avsc", "raw",
                  NULL);
        kretry_codec_destroy(c);
}

/* The value.* properties: checked by kretry_conf_set(), read back by
 * kretry_conf_get(), with the fields the engine gives the codec. */
static void test_conf_properties(void) {
        char err[256], v[256];
        kretry_conf_t *conf = kretry_conf_new();
        KT_REQUIRE(conf != NULL);
        KT_ASSERT_INT_EQ(conf->value_avro, 0);
        KT_ASSERT_INT_EQ(kretry_conf_get(conf, "value.format", v, sizeof(v)),
                         0);
        KT_ASSERT_STR_EQ(v, "bytes");
        KT_ASSERT_INT_EQ(
                kretry_conf_set(conf, "value.format", "avro", err, sizeof(err)),
                0);
        KT_ASSERT_INT_EQ(
                kretry_conf_set(conf, "value.schema", ORDER, err, sizeof(err)),
                0);
        KT_ASSERT_INT_EQ(kretry_conf_set(conf, "value.wire", "confluent", err,
                                         sizeof(err)),
                         0);
        KT_ASSERT_INT_EQ(kretry_conf_set(conf, "value.schema.ids",
                                         "1=" ORDER_V1 ",2=" ORDER, err,
                                         sizeof(err)),
                         0);
        KT_ASSERT_INT_EQ(kretry_conf_set(conf, "value.wire", "protobuf", err,
                                         sizeof(err)),
                         KRETRY_ERR_INVALID_VALUE);
        KT_ASSERT_STR_EQ(err, "value.wire: \"protobuf\" is not one of "
                              "raw|confluent");
        kretry_conf_t *dup = kretry_conf_dup(conf);
        kretry_conf_destroy(conf);
        KT_REQUIRE(dup != NULL);
        KT_ASSERT_INT_EQ(dup->value_avro, 1);
        KT_ASSERT_INT_EQ(dup->value_confluent, 1);
        kretry_codec_t *c = kretry_codec_new(
                dup->value_avro ? "avro" : "bytes", dup->value_schema,
                dup->value_confluent ? "confluent" : "raw",
                dup->value_schema_ids, err, sizeof(err));
        KT_CHECK_MSG(c != NULL, CU_FALSE, "codec from conf: %s", err);
        kretry_codec_destroy(c);
        kretry_conf_destroy(dup);
}

static void expect_str(const char *got, const char *want) {
        KT_CHECK_MSG(!strcmp(got, want), CU_FALSE,
                     "expected \"%.400s\", got \"%.400s\"", want, got);
}

/* A topology's value: block becomes the value.* properties, paths resolved
 * against the file, and the configuration passes the adapter's check. */
static void test_load_topology(void) {
        char err[2048], v[1024];
        kretry_conf_t *conf = kretry_conf_new();
        KT_REQUIRE(conf != NULL);
        KT_CHECK_MSG(
                kretry_conf_load_topology(conf,
                                          KRETRY_SOURCE_DIR
                                          "/topology/examples/orders-avro.yaml",
                                          "orders-avro", err, sizeof(err)) == 0,
                CU_TRUE, "load: %.1500s", err);
        kretry_conf_get(conf, "value.format", v, sizeof(v));
        expect_str(v, "avro");
        kretry_conf_get(conf, "value.wire", v, sizeof(v));
        expect_str(v, "confluent");
        kretry_conf_get(conf, "value.schema", v, sizeof(v));
        expect_str(v, KRETRY_SOURCE_DIR
                   "/topology/examples/../../schemas/examples/"
                   "order.avsc");
        kretry_conf_get(conf, "value.schema.ids", v, sizeof(v));
        expect_str(v, "1=" KRETRY_SOURCE_DIR
                      "/topology/examples/../../schemas/examples/"
                      "order_v1.avsc,"
                      "2=" KRETRY_SOURCE_DIR
                      "/topology/examples/../../schemas/examples/"
                      "order.avsc");
        kretry_codec_t *c =
                kretry_codec_new("avro", conf->value_schema,
                                 conf->value_confluent ? "confluent" : "raw",
                                 conf->value_schema_ids, err, sizeof(err));
        KT_CHECK_MSG(c != NULL, CU_FALSE, "codec: %.1500s", err);
        kretry_codec_destroy(c);
        kretry_conf_set_handler(conf, (kretry_handler_t *)(void (*)(void))abort,
                                NULL);
        KT_CHECK_MSG(kretry_conf_check(conf, err, sizeof(err)) == KRETRY_ERR_OK,
                     CU_FALSE, "check: %.1500s", err);
        /* orders-avro.yaml reads its version from the record. */
        kretry_conf_get(conf, "versioning.field", v, sizeof(v));
        expect_str(v, "version");
        kretry_conf_destroy(conf);
}

/* kretry topology validate builds the codec: schemas that do not parse or
 * do not resolve are reported at the value block. */
static void test_validate_codec(void) {
        char yaml[2048];
        const char *bad = schema_file("{\"type\": \"record\"}");
        snprintf(yaml, sizeof(yaml),
                 "topologies:\n"
                 "  - source: a\n"
                 "    group: g\n"
                 "    retry: {tiers: [1s]}\n"
                 "    value:\n"
                 "      format: avro\n"
                 "      schema: %s\n"
                 "      wire: confluent\n"
                 "      schemas: {1: %s}\n"
                 "  - source: b\n"
                 "    group: g\n"
                 "    retry: {tiers: [1s]}\n"
                 "    value: {format: avro, schema: %s}\n",
                 ORDER_V1, ORDER, bad);
        kretry_diags_t d;
        char got[4096];
        kretry_diags_init(&d);
        kretry_topology_file_t *f =
                kretry_topology_file_parse(yaml, strlen(yaml), "t.yaml", &d);
        kretry_diags_render(&d, "t.yaml", 0, got, sizeof(got));
        KT_ASSERT(f == NULL);
        KT_CHECK_MSG(strstr(got, "t.yaml:6:7: value: " ORDER
                                 " (schema id 1) cannot be resolved to the "
                                 "reader schema") != NULL,
                     CU_FALSE, "got:\n%.1500s", got);
        KT_CHECK_MSG(strstr(got, "t.yaml:13:12: value: ") &&
                             strstr(got, "not an Avro schema"),
                     CU_FALSE, "got:\n%.1500s", got);
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
}

static void cleanup(void) {
        for (int i = 0; i < tmp_cnt; i++)
                unlink(tmp_paths[i]);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_raw_round_trip),
                KT_TEST(test_confluent_round_trip),
                KT_TEST(test_resolution),
                KT_TEST(test_confluent_frame),
                KT_TEST(test_truncated_and_trailing),
                KT_TEST(test_wrong_types),
                KT_TEST(test_depth),
                KT_TEST(test_mutations),
                KT_TEST(test_field_int64),
                KT_TEST(test_new_errors),
                KT_TEST(test_version_record),
                KT_TEST(test_conf_properties),
                KT_TEST(test_load_topology),
                KT_TEST(test_validate_codec),
                KT_END,
        };
        int rc = kt_main("codec", tests, argc, argv);
        cleanup();
        return rc;
}
