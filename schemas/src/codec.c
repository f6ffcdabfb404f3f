#include "codec.h"

#include "avro_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_FILE_MAX (1 << 20)
#define CONFLUENT_HEADER 5

/* One writer schema: the reader schema itself (no resolver), or another
 * schema resolved to it. */
typedef struct {
        int32_t id; /* -1: any id (no map), or raw */
        avro_schema_t writer;
        avro_value_iface_t *resolver; /* NULL when writer == reader */
        avro_value_t resolved;        /* writes into codec->value */
} writer_t;

struct kretry_codec_s {
        int confluent;
        avro_schema_t schema; /* the reader schema */
        avro_value_iface_t *iface;
        avro_value_t value; /* the one decoded record, reused */
        avro_reader_t reader;
        writer_t *writers;
        size_t writer_cnt;
        int32_t last_id;
};

static void fail(char *errstr, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void fail(char *errstr, size_t size, const char *fmt, ...) {
        if (!errstr || !size)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, size, fmt, ap);
        va_end(ap);
}

static avro_schema_t
schema_load(const char *path, char *errstr, size_t errstr_size) {
        avro_schema_t schema = NULL;
        FILE *fp             = fopen(path, "rb");
        if (!fp) {
                fail(errstr, errstr_size, "%s: cannot open: %s", path,
                     strerror(errno));
                return NULL;
        }
        char *json = malloc(SCHEMA_FILE_MAX);
        size_t n   = json ? fread(json, 1, SCHEMA_FILE_MAX, fp) : 0;
        if (!json)
                fail(errstr, errstr_size, "out of memory");
        else if (ferror(fp) || n == SCHEMA_FILE_MAX)
                fail(errstr, errstr_size, "%s: %s", path,
                     ferror(fp) ? "read error" : "larger than 1 MiB");
        else if (avro_schema_from_json_length(json, n, &schema))
                fail(errstr, errstr_size, "%s: not an Avro schema: %s", path,
                     avro_strerror());
        fclose(fp);
        free(json);
        return schema;
}

static void writer_clear(writer_t *w) {
        if (w->resolver) {
                avro_value_decref(&w->resolved);
                avro_value_iface_decref(w->resolver);
        }
        if (w->writer)
                avro_schema_decref(w->writer);
}

void kretry_codec_destroy(kretry_codec_t *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->writer_cnt; i++)
                writer_clear(&c->writers[i]);
        free(c->writers);
        if (c->reader)
                avro_reader_free(c->reader);
        if (c->iface) {
                avro_value_decref(&c->value);
                avro_value_iface_decref(c->iface);
        }
        if (c->schema)
                avro_schema_decref(c->schema);
        free(c);
}

/* Takes the reference to @p writer. */
static int writer_add(kretry_codec_t *c,
                      int32_t id,
                      avro_schema_t writer,
                      const char *path,
                      char *errstr,
                      size_t errstr_size) {
        writer_t *w = &c->writers[c->writer_cnt++];
        w->id       = id;
        w->writer   = writer;
        if (avro_schema_equal(writer, c->schema))
                return 0;
        w->resolver = avro_resolved_writer_new(writer, c->schema);
        if (!w->resolver) {
                fail(errstr, errstr_size,
                     "%s (schema id %d) cannot be resolved to the reader "
                     "schema: %s",
                     path, (int)id, avro_strerror());
                return -1;
        }
        if (avro_resolved_writer_new_value(w->resolver, &w->resolved)) {
                avro_value_iface_decref(w->resolver);
                w->resolver = NULL;
                fail(errstr, errstr_size, "out of memory");
                return -1;
        }
        avro_resolved_writer_set_dest(&w->resolved, &c->value);
        return 0;
}

static writer_t *find_writer(kretry_codec_t *c, int32_t id) {
        for (size_t i = 0; i < c->writer_cnt; i++)
                if (c->writers[i].id == id || c->writers[i].id < 0)
                        return &c->writers[i];
        return NULL;
}

/* "1=a.avsc,7=b.avsc": one writer per id. */
static int
ids_load(kretry_codec_t *c, const char *ids, char *errstr, size_t errstr_size) {
        char *copy = strdup(ids), *save = NULL;
        int rc = 0;
        if (!copy) {
                fail(errstr, errstr_size, "out of memory");
                return -1;
        }
        for (char *tok = strtok_r(copy, ",", &save); tok && !rc;
             tok       = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '='), *end;
                long id  = eq ? strtol(tok, &end, 10) : -1;
                avro_schema_t s;
                if (!eq || end != eq || eq == tok || id < 0 || id > INT32_MAX ||
                    !eq[1]) {
                        fail(errstr, errstr_size,
                             "value.schema.ids: \"%s\" is not ID=PATH (ID "
                             "0..2147483647)",
                             tok);
                        rc = -1;
                } else if (c->writer_cnt == KRETRY_CODEC_MAX_IDS) {
                        fail(errstr, errstr_size,
                             "value.schema.ids: more than %d ids",
                             KRETRY_CODEC_MAX_IDS);
                        rc = -1;
                } else if (find_writer(c, (int32_t)id)) {
                        fail(errstr, errstr_size,
                             "value.schema.ids: id %ld is mapped twice", id);
                        rc = -1;
                } else if (!(s = schema_load(eq + 1, errstr, errstr_size))) {
                        rc = -1;
                } else {
                        rc = writer_add(c, (int32_t)id, s, eq + 1, errstr,
                                        errstr_size);
                }
        }
        free(copy);
        return rc;
}

static int codec_init(kretry_codec_t *c,
                      const char *schema_path,
                      const char *ids,
                      char *errstr,
                      size_t errstr_size) {
        if (!(c->schema = schema_load(schema_path, errstr, errstr_size)))
                return -1;
        c->iface   = avro_generic_class_from_schema(c->schema);
        c->reader  = avro_reader_memory("", 0);
        c->writers = calloc(KRETRY_CODEC_MAX_IDS, sizeof(*c->writers));
        if (!c->iface || !c->reader || !c->writers ||
            avro_generic_value_new(c->iface, &c->value)) {
                if (c->iface && !c->value.iface) {
                        avro_value_iface_decref(c->iface);
                        c->iface = NULL;
                }
                fail(errstr, errstr_size, "%s: cannot use the schema: %s",
                     schema_path, avro_strerror());
                return -1;
        }
        if (ids && *ids)
                return ids_load(c, ids, errstr, errstr_size);
        /* No map (or raw): the reader schema is the writer schema. */
        return writer_add(c, -1, avro_schema_incref(c->schema), schema_path,
                          errstr, errstr_size);
}

kretry_codec_t *kretry_codec_new(const char *format,
                                 const char *schema_path,
                                 const char *wire,
                                 const char *ids,
                                 char *errstr,
                                 size_t errstr_size) {
        if (errstr && errstr_size)
                errstr[0] = '\0';
        if (!format || strcmp(format, "avro")) {
                fail(errstr, errstr_size,
                     "value.format: \"%s\" has no codec (only \"avro\")",
                     format ? format : "");
                return NULL;
        }
        if (!schema_path || !*schema_path) {
                fail(errstr, errstr_size,
                     "value.schema: format avro needs a schema file");
                return NULL;
        }
        if (!wire)
                wire = "raw";
        if (strcmp(wire, "raw") && strcmp(wire, "confluent")) {
                fail(errstr, errstr_size,
                     "value.wire: \"%s\" is not raw or confluent", wire);
                return NULL;
        }
        int confluent = !strcmp(wire, "confluent");
        if (!confluent && ids && *ids) {
                fail(errstr, errstr_size,
                     "value.schema.ids: only with value.wire confluent");
                return NULL;
        }
        kretry_codec_t *c = calloc(1, sizeof(*c));
        if (!c) {
                fail(errstr, errstr_size, "out of memory");
                return NULL;
        }
        c->confluent = confluent;
        c->last_id   = -1;
        if (codec_init(c, schema_path, ids, errstr, errstr_size)) {
                kretry_codec_destroy(c);
                return NULL;
        }
        return c;
}

/* The confluent frame: magic byte 0, then a big-endian schema id. */
static writer_t *frame(kretry_codec_t *c,
                       const uint8_t *p,
                       size_t len,
                       int32_t *idp,
                       char *reason,
                       size_t size) {
        if (len < CONFLUENT_HEADER) {
                fail(reason, size,
                     "truncated: confluent wire needs a 5-byte header "
                     "(magic byte, schema id), the value has %zu bytes",
                     len);
                return NULL;
        }
        if (p[0] != 0) {
                fail(reason, size,
                     "confluent wire: magic byte 0x%02x, expected 0x00", p[0]);
                return NULL;
        }
        uint32_t id = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 |
                      (uint32_t)p[3] << 8 | p[4];
        writer_t *w = id <= INT32_MAX ? find_writer(c, (int32_t)id) : NULL;
        if (!w)
                fail(reason, size, "schema id %u is not mapped", id);
        *idp = (int32_t)id;
        return w;
}

int kretry_codec_decode(kretry_codec_t *c,
                        const void *buf,
                        size_t len,
                        avro_value_t **valuep,
                        char *reason,
                        size_t reason_size) {
        const uint8_t *p = buf;
        size_t base      = 0, used;
        int32_t id       = -1;
        writer_t *w      = c->writers;
        if (!buf) {
                fail(reason, reason_size,
                     "null value: an Avro record was expected");
                return -1;
        }
        if (c->confluent && !(w = frame(c, p, len, &id, reason, reason_size)))
                return -1;
        if (c->confluent)
                base = CONFLUENT_HEADER;
        if (kretry_avro_check(w->writer, p + base, len - base, base, &used,
                              reason, reason_size))
                return -1;
        if (used != len - base) {
                fail(reason, reason_size,
                     "%zu trailing bytes after the record (it ends at "
                     "offset %zu of %zu)",
                     len - base - used, base + used, len);
                return -1;
        }
        avro_reader_memory_set_source(c->reader, (const char *)p + base,
                                      (int64_t)used);
        if (avro_value_read(c->reader,
                            w->resolver ? &w->resolved : &c->value)) {
                fail(reason, reason_size,
                     "avro-c could not read the record: %s", avro_strerror());
                return -1;
        }
        c->last_id = id;
        *valuep    = &c->value;
        return 0;
}

int32_t kretry_codec_last_id(const kretry_codec_t *c) {
        return c ? c->last_id : -1;
}

avro_schema_t kretry_codec_schema(const kretry_codec_t *c) {
        return c->schema;
}

/* int, long, or a union of null with one of them. */
static int int_like(avro_schema_t s) {
        if (is_avro_int32(s) || is_avro_int64(s))
                return 1;
        if (avro_typeof(s) != AVRO_UNION)
                return 0;
        int ints = 0, others = 0;
        for (size_t i = 0; i < avro_schema_union_size(s); i++) {
                avro_schema_t b = avro_schema_union_branch(s, (int)i);
                if (is_avro_int32(b) || is_avro_int64(b))
                        ints++;
                else if (!is_avro_null(b))
                        others++;
        }
        return ints == 1 && !others;
}

int kretry_codec_check_int_field(const kretry_codec_t *c,
                                 const char *field,
                                 char *errstr,
                                 size_t errstr_size) {
        if (!is_avro_record(c->schema)) {
                fail(errstr, errstr_size,
                     "versioning.field: the value schema is a %s, not a "
                     "record",
                     avro_schema_type_name(c->schema));
                return -1;
        }
        /* avro_schema_record_field_get() dereferences a missing field's
         * lookup result (avro-c 1.11.1): ask for the index first. */
        int idx = avro_schema_record_field_get_index(c->schema, field);
        avro_schema_t f =
                idx < 0 ? NULL
                        : avro_schema_record_field_get_by_index(c->schema, idx);
        if (!f) {
                fail(errstr, errstr_size,
                     "versioning.field: record %s has no field \"%s\"",
                     avro_schema_name(c->schema), field);
                return -1;
        }
        if (!int_like(f)) {
                fail(errstr, errstr_size,
                     "versioning.field: %s.%s is a %s; a version is an int "
                     "or a long (or a union of null with one)",
                     avro_schema_name(c->schema), field,
                     avro_schema_type_name(f));
                return -1;
        }
        return 0;
}

int kretry_codec_field_int64(const avro_value_t *value,
                             const char *field,
                             int64_t *out) {
        avro_value_t v, branch;
        int32_t i32;
        if (!value || !field || !out ||
            avro_value_get_type(value) != AVRO_RECORD ||
            avro_value_get_by_name(value, field, &v, NULL))
                return -1;
        if (avro_value_get_type(&v) == AVRO_UNION) {
                if (avro_value_get_current_branch(&v, &branch))
                        return -2;
                v = branch;
        }
        switch (avro_value_get_type(&v)) {
        case AVRO_INT64:
                return avro_value_get_long(&v, out) ? -2 : 0;
        case AVRO_INT32:
                if (avro_value_get_int(&v, &i32))
                        return -2;
                *out = i32;
                return 0;
        case AVRO_NULL:
                return -3;
        default:
                return -2;
        }
}

int kretry_codec_value_new(kretry_codec_t *codec, avro_value_t *value) {
        return avro_generic_value_new(codec->iface, value) ? -1 : 0;
}

const void *kretry_codec_public_value(const avro_value_t *value) {
        return value;
}

int64_t kretry_codec_encode(avro_value_t *value,
                            int32_t id,
                            void *dest,
                            size_t dest_size) {
        uint8_t *p  = dest;
        size_t base = id >= 0 ? CONFLUENT_HEADER : 0;
        if (dest_size < base)
                return -1;
        if (id >= 0) {
                p[0] = 0;
                p[1] = (uint8_t)((uint32_t)id >> 24);
                p[2] = (uint8_t)((uint32_t)id >> 16);
                p[3] = (uint8_t)((uint32_t)id >> 8);
                p[4] = (uint8_t)id;
        }
        avro_writer_t w = avro_writer_memory((const char *)p + base,
                                             (int64_t)(dest_size - base));
        if (!w)
                return -1;
        int rc    = avro_value_write(w, value);
        int64_t n = avro_writer_tell(w);
        avro_writer_free(w);
        return rc ? -1 : (int64_t)base + n;
}
