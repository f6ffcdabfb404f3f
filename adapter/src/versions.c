/* Leaf: the version store. */
#include "versions.h"

#include <string.h>

void kretry_versions_init(kretry_versions_t *v) {
        kretry_keymap_init(&v->map, sizeof(int64_t));
}

void kretry_versions_free(kretry_versions_t *v) {
        kretry_keymap_free(&v->map);
}

int kretry_versions_stale(const kretry_versions_t *v,
                          const void *key,
                          size_t len,
                          int64_t version,
                          int discard_equal) {
        const int64_t *have = kretry_keymap_get(&v->map, key, len);
        if (!have)
                return 0;
        return version < *have || (discard_equal && version == *have);
}

int kretry_versions_raise(kretry_versions_t *v,
                          const void *key,
                          size_t len,
                          int64_t version) {
        int created;
        int64_t *have = kretry_keymap_put(&v->map, key, len, &created);
        if (!have)
                return -1;
        if (!created && *have >= version)
                return 0;
        *have = version;
        return 1;
}

size_t kretry_version_encode(int64_t version, unsigned char *buf) {
        uint64_t z = ((uint64_t)version << 1) ^ (uint64_t)(version >> 63);
        size_t n   = 0;
        while (z >= 0x80) {
                buf[n++] = (unsigned char)(z | 0x80);
                z >>= 7;
        }
        buf[n++] = (unsigned char)z;
        return n;
}

int kretry_version_decode(const void *buf, size_t len, int64_t *versionp) {
        const unsigned char *p = buf;
        uint64_t z             = 0;
        for (size_t i = 0; i < len && i < 10; i++) {
                z |= (uint64_t)(p[i] & 0x7f) << (7 * i);
                if (!(p[i] & 0x80)) {
                        if (i + 1 != len)
                                return -1;
                        *versionp = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
                        return 0;
                }
        }
        return -1;
}

int kretry_version_parse(const void *value, size_t size, int64_t *versionp) {
        const char *s = value;
        int neg       = 0;
        uint64_t v    = 0;
        if (!s || size == 0 || size > 20)
                return -1;
        if (*s == '-') {
                neg = 1;
                s++;
                size--;
                if (!size)
                        return -1;
        }
        for (size_t i = 0; i < size; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                if (v > (uint64_t)INT64_MAX / 10)
                        return -1;
                v = v * 10 + (uint64_t)(s[i] - '0');
                if (v > (uint64_t)INT64_MAX)
                        return -1;
        }
        *versionp = neg ? -(int64_t)v : (int64_t)v;
        return 0;
}
