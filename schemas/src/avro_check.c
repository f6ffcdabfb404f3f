#include "avro_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
        const uint8_t *buf;
        size_t len, pos, base;
        size_t items;   /* array and map entries so far */
        char path[256]; /* "items[2].sku": where the walk is */
        size_t path_len;
        char *reason;
        size_t reason_size;
} walk_t;

static int fail(walk_t *w, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static int fail(walk_t *w, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        if (w->reason && w->reason_size)
                vsnprintf(w->reason, w->reason_size, fmt, ap);
        va_end(ap);
        return -1;
}

static const char *where(const walk_t *w) {
        return w->path_len ? w->path : "the value";
}

static size_t push(walk_t *w, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static size_t push(walk_t *w, const char *fmt, ...) {
        size_t saved = w->path_len;
        if (w->path_len < sizeof(w->path)) {
                va_list ap;
                va_start(ap, fmt);
                int n = vsnprintf(w->path + w->path_len,
                                  sizeof(w->path) - w->path_len, fmt, ap);
                va_end(ap);
                w->path_len += n > 0 ? (size_t)n : 0;
                if (w->path_len >= sizeof(w->path))
                        w->path_len = sizeof(w->path) - 1;
        }
        return saved;
}

static void pop(walk_t *w, size_t saved) {
        w->path_len    = saved;
        w->path[saved] = '\0';
}

static size_t left(const walk_t *w) {
        return w->len - w->pos;
}

static int need(walk_t *w, const char *type, size_t n) {
        if (n <= left(w))
                return 0;
        return fail(w,
                    "truncated: %s (%s) needs %zu bytes at offset %zu, %zu "
                    "left",
                    where(w), type, n, w->base + w->pos, left(w));
}

/* A zig-zag varint: at most 10 bytes. */
static int read_long(walk_t *w, const char *type, int64_t *out) {
        uint64_t v   = 0;
        size_t start = w->pos;
        for (int shift = 0; shift < 70; shift += 7) {
                if (!left(w))
                        return fail(w,
                                    "truncated: %s (%s) at offset %zu ends "
                                    "inside a variable-length integer",
                                    where(w), type, w->base + start);
                uint8_t b = w->buf[w->pos++];
                v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
                        return 0;
                }
        }
        return fail(w,
                    "malformed: %s (%s) at offset %zu: variable-length "
                    "integer longer than 10 bytes",
                    where(w), type, w->base + start);
}

static int utf8_ok(const uint8_t *s, size_t n) {
        for (size_t i = 0; i < n;) {
                uint8_t c = s[i];
                size_t k;
                if (c < 0x80)
                        k = 0;
                else if (c >= 0xc2 && c < 0xe0)
                        k = 1;
                else if (c >= 0xe0 && c < 0xf0)
                        k = 2;
                else if (c >= 0xf0 && c < 0xf5)
                        k = 3;
                else
                        return 0;
                if (k > n - i - 1)
                        return 0;
                for (size_t j = 1; j <= k; j++)
                        if ((s[i + j] & 0xc0) != 0x80)
                                return 0;
                /* overlong 3/4-byte forms, surrogates, beyond U+10FFFF */
                if ((c == 0xe0 && s[i + 1] < 0xa0) ||
                    (c == 0xed && s[i + 1] >= 0xa0) ||
                    (c == 0xf0 && s[i + 1] < 0x90) ||
                    (c == 0xf4 && s[i + 1] >= 0x90))
                        return 0;
                i += k + 1;
        }
        return 1;
}

static int walk(walk_t *w, avro_schema_t s, int depth);

static int walk_length(walk_t *w, const char *type, int utf8) {
        int64_t n = 0;
        size_t at = w->base + w->pos;
        if (read_long(w, type, &n))
                return -1;
        if (n < 0)
                return fail(w,
                            "malformed: %s (%s) at offset %zu has a negative "
                            "length %lld",
                            where(w), type, at, (long long)n);
        if ((uint64_t)n > left(w))
                return fail(w,
                            "truncated: %s (%s) at offset %zu declares %lld "
                            "bytes, %zu left",
                            where(w), type, at, (long long)n, left(w));
        if (utf8 && !utf8_ok(w->buf + w->pos, (size_t)n))
                return fail(w,
                            "wrong type: %s (string) at offset %zu is not "
                            "valid UTF-8",
                            where(w), at);
        w->pos += (size_t)n;
        return 0;
}

static int walk_index(walk_t *w, const char *type, int64_t count) {
        int64_t i;
        size_t at = w->base + w->pos;
        if (read_long(w, type, &i))
                return -1;
        if (i < 0 || i >= count)
                return fail(w,
                            "wrong type: %s (%s) at offset %zu: index %lld "
                            "is out of range 0..%lld",
                            where(w), type, at, (long long)i,
                            (long long)count - 1);
        return (int)i;
}

/* Smallest encoded size of a datum: bounds how many items a block may
 * claim in the bytes left. Links count 0 (they only recur inside unions,
 * arrays and maps, which count 1). */
static size_t min_size(avro_schema_t s) {
        switch (avro_typeof(s)) {
        case AVRO_NULL:
        case AVRO_LINK:
                return 0;
        case AVRO_FLOAT:
                return 4;
        case AVRO_DOUBLE:
                return 8;
        case AVRO_FIXED:
                return (size_t)avro_schema_fixed_size(s);
        case AVRO_RECORD: {
                size_t n = 0;
                for (size_t i = 0; i < avro_schema_record_size(s); i++)
                        n += min_size(avro_schema_record_field_get_by_index(
                                s, (int)i));
                return n;
        }
        default:
                return 1;
        }
}

static int walk_blocks(walk_t *w, avro_schema_t items, int map, int depth) {
        const char *type = map ? "map" : "array";
        size_t min       = min_size(items);
        for (size_t idx = 0;;) {
                int64_t count, size;
                size_t at = w->base + w->pos;
                if (read_long(w, type, &count))
                        return -1;
                if (!count)
                        return 0;
                if (count < 0) {
                        if (count == INT64_MIN)
                                return fail(w,
                                            "malformed: %s (%s) at offset "
                                            "%zu: block count out of range",
                                            where(w), type, at);
                        count = -count;
                        if (read_long(w, type, &size))
                                return -1;
                }
                if ((uint64_t)count > KRETRY_AVRO_MAX_ITEMS - w->items)
                        return fail(w,
                                    "malformed: %s (%s) at offset %zu "
                                    "declares %lld entries, beyond the limit "
                                    "of %d entries in one value",
                                    where(w), type, at, (long long)count,
                                    KRETRY_AVRO_MAX_ITEMS);
                if (min && (uint64_t)count > left(w) / min)
                        return fail(w,
                                    "truncated: %s (%s) at offset %zu "
                                    "declares %lld entries, more than the "
                                    "%zu bytes left can hold",
                                    where(w), type, at, (long long)count,
                                    left(w));
                w->items += (size_t)count;
                for (int64_t i = 0; i < count; i++, idx++) {
                        size_t saved = push(w, "[%zu]", idx);
                        int rc       = (map && walk_length(w, "map key", 1)) ||
                                 walk(w, items, depth + 1);
                        pop(w, saved);
                        if (rc)
                                return -1;
                }
        }
}

static int walk_record(walk_t *w, avro_schema_t s, int depth) {
        for (size_t i = 0; i < avro_schema_record_size(s); i++) {
                size_t saved = push(w, "%s%s", w->path_len ? "." : "",
                                    avro_schema_record_field_name(s, (int)i));
                int rc       = walk(w,
                                    avro_schema_record_field_get_by_index(s, (int)i),
                                    depth + 1);
                pop(w, saved);
                if (rc)
                        return -1;
        }
        return 0;
}

static int walk_scalar(walk_t *w, avro_schema_t s) {
        int64_t v;
        size_t at = w->base + w->pos;
        switch (avro_typeof(s)) {
        case AVRO_NULL:
                return 0;
        case AVRO_BOOLEAN:
                if (need(w, "boolean", 1))
                        return -1;
                if (w->buf[w->pos] > 1)
                        return fail(w,
                                    "wrong type: %s (boolean) at offset %zu "
                                    "is byte 0x%02x, expected 0x00 or 0x01",
                                    where(w), at, w->buf[w->pos]);
                w->pos++;
                return 0;
        case AVRO_INT32:
                if (read_long(w, "int", &v))
                        return -1;
                if (v < INT32_MIN || v > INT32_MAX)
                        return fail(w,
                                    "wrong type: %s (int) at offset %zu is "
                                    "%lld, outside the 32-bit range",
                                    where(w), at, (long long)v);
                return 0;
        case AVRO_INT64:
                return read_long(w, "long", &v);
        case AVRO_FLOAT:
                return need(w, "float", 4) ? -1 : (w->pos += 4, 0);
        case AVRO_DOUBLE:
                return need(w, "double", 8) ? -1 : (w->pos += 8, 0);
        case AVRO_STRING:
                return walk_length(w, "string", 1);
        case AVRO_BYTES:
                return walk_length(w, "bytes", 0);
        case AVRO_FIXED: {
                size_t n = (size_t)avro_schema_fixed_size(s);
                return need(w, "fixed", n) ? -1 : (w->pos += n, 0);
        }
        default:
                return fail(w, "unsupported schema type at %s", where(w));
        }
}

static int walk(walk_t *w, avro_schema_t s, int depth) {
        int i;
        if (depth > KRETRY_AVRO_MAX_DEPTH)
                return fail(w,
                            "malformed: %s at offset %zu nests deeper than "
                            "%d levels",
                            where(w), w->base + w->pos, KRETRY_AVRO_MAX_DEPTH);
        switch (avro_typeof(s)) {
        case AVRO_LINK:
                return walk(w, avro_schema_link_target(s), depth);
        case AVRO_RECORD:
                return walk_record(w, s, depth);
        case AVRO_ENUM:
                i = walk_index(w, "enum",
                               avro_schema_enum_number_of_symbols(s));
                return i < 0 ? -1 : 0;
        case AVRO_UNION:
                i = walk_index(w, "union", (int64_t)avro_schema_union_size(s));
                return i < 0 ? -1
                             : walk(w, avro_schema_union_branch(s, i),
                                    depth + 1);
        case AVRO_ARRAY:
                return walk_blocks(w, avro_schema_array_items(s), 0, depth);
        case AVRO_MAP:
                return walk_blocks(w, avro_schema_map_values(s), 1, depth);
        default:
                return walk_scalar(w, s);
        }
}

int kretry_avro_check(avro_schema_t schema,
                      const uint8_t *buf,
                      size_t len,
                      size_t base,
                      size_t *usedp,
                      char *reason,
                      size_t reason_size) {
        walk_t w = {.buf         = buf,
                    .len         = buf ? len : 0,
                    .base        = base,
                    .reason      = reason,
                    .reason_size = reason_size};
        if (walk(&w, schema, 0))
                return -1;
        *usedp = w.pos;
        return 0;
}
