/* Leaf: a hash map from message keys. */
#include "keymap.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a, 64 bit: keys are short and hashing must not allocate. */
uint64_t kretry_key_hash(const void *key, size_t len) {
        const unsigned char *p = key;
        uint64_t h             = 0xcbf29ce484222325ULL;
        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}

static unsigned char *entry_key(void *entry) {
        return entry;
}

static void *entry_value(const kretry_keymap_t *m, void *entry, size_t len) {
        (void)m;
        /* The value follows the key, aligned to 8 bytes. */
        return (unsigned char *)entry + ((len + 7) & ~(size_t)7);
}

const void *kretry_keymap_key_of(const void *value, size_t len) {
        return (const unsigned char *)value - ((len + 7) & ~(size_t)7);
}

void kretry_keymap_init(kretry_keymap_t *m, size_t value_size) {
        memset(m, 0, sizeof(*m));
        m->value_size = value_size;
}

void kretry_keymap_clear(kretry_keymap_t *m) {
        for (size_t i = 0; i < m->cap; i++) {
                free(m->slots[i].entry);
                m->slots[i].entry = NULL;
        }
        m->cnt   = 0;
        m->bytes = 0;
}

void kretry_keymap_free(kretry_keymap_t *m) {
        kretry_keymap_clear(m);
        free(m->slots);
        m->slots = NULL;
        m->cap   = 0;
}

static size_t
find_slot(const kretry_keymap_t *m, const void *key, size_t len, uint64_t h) {
        size_t i = h & (m->cap - 1);
        while (m->slots[i].entry) {
                const kretry_keymap_slot_t *s = &m->slots[i];
                if (s->hash == h && s->len == len &&
                    !memcmp(entry_key(s->entry), key, len))
                        return i;
                i = (i + 1) & (m->cap - 1);
        }
        return i;
}

void *kretry_keymap_get(const kretry_keymap_t *m, const void *key, size_t len) {
        if (!m->cnt)
                return NULL;
        uint64_t h = kretry_key_hash(key, len);
        size_t i   = find_slot(m, key, len, h);
        return m->slots[i].entry ? entry_value(m, m->slots[i].entry, len)
                                 : NULL;
}

static int grow(kretry_keymap_t *m) {
        size_t ncap                 = m->cap ? m->cap * 2 : 16;
        kretry_keymap_slot_t *old   = m->slots;
        size_t ocap                 = m->cap;
        kretry_keymap_slot_t *slots = calloc(ncap, sizeof(*slots));
        if (!slots)
                return -1;
        m->slots = slots;
        m->cap   = ncap;
        for (size_t i = 0; i < ocap; i++) {
                if (!old[i].entry)
                        continue;
                size_t j = old[i].hash & (ncap - 1);
                while (slots[j].entry)
                        j = (j + 1) & (ncap - 1);
                slots[j] = old[i];
        }
        free(old);
        return 0;
}

void *kretry_keymap_put(kretry_keymap_t *m,
                        const void *key,
                        size_t len,
                        int *createdp) {
        if (createdp)
                *createdp = 0;
        /* Keep the load under 3/4 so probes stay short. */
        if ((m->cnt + 1) * 4 > m->cap * 3 && grow(m))
                return NULL;
        uint64_t h = kretry_key_hash(key, len);
        size_t i   = find_slot(m, key, len, h);
        if (m->slots[i].entry)
                return entry_value(m, m->slots[i].entry, len);
        size_t size = ((len + 7) & ~(size_t)7) + m->value_size;
        void *e     = calloc(1, size ? size : 1);
        if (!e)
                return NULL;
        if (len)
                memcpy(e, key, len);
        m->slots[i].entry = e;
        m->slots[i].hash  = h;
        m->slots[i].len   = len;
        m->cnt++;
        m->bytes += size;
        if (createdp)
                *createdp = 1;
        return entry_value(m, e, len);
}

int kretry_keymap_del(kretry_keymap_t *m, const void *key, size_t len) {
        if (!m->cnt)
                return 0;
        uint64_t h = kretry_key_hash(key, len);
        size_t i   = find_slot(m, key, len, h);
        if (!m->slots[i].entry)
                return 0;
        m->bytes -= ((len + 7) & ~(size_t)7) + m->value_size;
        free(m->slots[i].entry);
        m->slots[i].entry = NULL;
        m->cnt--;
        /* Backward-shift the cluster that follows so lookups need no
         * tombstones. */
        size_t j = i;
        for (;;) {
                j = (j + 1) & (m->cap - 1);
                if (!m->slots[j].entry)
                        break;
                size_t home = m->slots[j].hash & (m->cap - 1);
                /* Move j to i when home is not cyclically in (i, j]. */
                int in_range = i <= j ? (home > i && home <= j)
                                      : (home > i || home <= j);
                if (in_range)
                        continue;
                m->slots[i]       = m->slots[j];
                m->slots[j].entry = NULL;
                i                 = j;
        }
        return 1;
}

void *kretry_keymap_next(const kretry_keymap_t *m,
                         size_t *posp,
                         const void **keyp,
                         size_t *lenp) {
        for (size_t i = *posp; i < m->cap; i++) {
                if (!m->slots[i].entry)
                        continue;
                *posp = i + 1;
                if (keyp)
                        *keyp = entry_key(m->slots[i].entry);
                if (lenp)
                        *lenp = m->slots[i].len;
                return entry_value(m, m->slots[i].entry, m->slots[i].len);
        }
        *posp = m->cap;
        return NULL;
}

size_t kretry_keymap_memory(const kretry_keymap_t *m) {
        return m->cap * sizeof(kretry_keymap_slot_t) + m->bytes;
}
