#include "keychain.h"

#include <stdlib.h>
#include <string.h>

static void key_free(kretry_chain_key_t *k) {
        if (k->cap > 1)
                free(k->many);
}

static kretry_pending_t *items(kretry_chain_key_t *k) {
        return k->cap > 1 ? k->many : &k->one;
}

void kretry_chains_init(kretry_chains_t *c) {
        kretry_keymap_init(&c->map, sizeof(kretry_chain_key_t));
        c->pending = 0;
}

void kretry_chains_clear(kretry_chains_t *c) {
        size_t pos = 0;
        kretry_chain_key_t *k;
        while ((k = kretry_keymap_next(&c->map, &pos, NULL, NULL)))
                key_free(k);
        kretry_keymap_clear(&c->map);
        c->pending = 0;
}

void kretry_chains_free(kretry_chains_t *c) {
        kretry_chains_clear(c);
        kretry_keymap_free(&c->map);
}

kretry_chain_decision_t kretry_chains_decide(kretry_chains_t *c,
                                             const void *key,
                                             size_t len,
                                             int64_t orig_offset,
                                             kretry_pending_t *headp) {
        kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        if (!k)
                return KRETRY_CHAIN_HANDLE;
        if (k->parked)
                return KRETRY_CHAIN_DEAD;
        if (k->cnt == 0)
                return KRETRY_CHAIN_HANDLE;
        kretry_pending_t *head = &items(k)[0];
        /* Lower than the head can only be a duplicate from before a crash:
         * at least once, it is handled again. */
        if (orig_offset <= head->orig_offset)
                return KRETRY_CHAIN_HANDLE;
        if (headp)
                *headp = *head;
        return KRETRY_CHAIN_PARK;
}

int kretry_chains_has(const kretry_chains_t *c,
                      const void *key,
                      size_t len,
                      int64_t orig_offset) {
        kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        if (!k)
                return 0;
        const kretry_pending_t *it = items(k);
        for (int i = 0; i < k->cnt; i++)
                if (it[i].orig_offset == orig_offset)
                        return 1;
        return 0;
}

int kretry_chains_before(const kretry_chains_t *c,
                         const void *key,
                         size_t len,
                         int64_t orig_offset) {
        kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        return k && k->cnt > 0 && items(k)[0].orig_offset < orig_offset;
}

static int reserve(kretry_chain_key_t *k) {
        if (k->cnt < (k->cap ? k->cap : 1))
                return 0;
        int ncap               = k->cap > 1 ? k->cap * 2 : 4;
        kretry_pending_t *many = malloc(sizeof(*many) * (size_t)ncap);
        if (!many)
                return -1;
        memcpy(many, items(k), sizeof(*many) * (size_t)k->cnt);
        key_free(k);
        k->many = many;
        k->cap  = ncap;
        return 0;
}

int kretry_chains_add(kretry_chains_t *c,
                      const void *key,
                      size_t len,
                      int64_t orig_offset,
                      int tier,
                      int64_t due_ts) {
        kretry_chain_key_t *k = kretry_keymap_put(&c->map, key, len, NULL);
        if (!k)
                return -1;
        kretry_pending_t *it = items(k);
        int i                = 0;
        while (i < k->cnt && it[i].orig_offset < orig_offset)
                i++;
        if (i < k->cnt && it[i].orig_offset == orig_offset) {
                it[i].tier   = tier;
                it[i].due_ts = due_ts;
                return 0;
        }
        if (reserve(k))
                return -1;
        it = items(k);
        memmove(&it[i + 1], &it[i], sizeof(*it) * (size_t)(k->cnt - i));
        it[i] = (kretry_pending_t){orig_offset, due_ts, tier};
        k->cnt++;
        c->pending++;
        return 0;
}

void kretry_chains_remove(kretry_chains_t *c,
                          const void *key,
                          size_t len,
                          int64_t orig_offset) {
        kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        if (!k)
                return;
        kretry_pending_t *it = items(k);
        for (int i = 0; i < k->cnt; i++) {
                if (it[i].orig_offset != orig_offset)
                        continue;
                memmove(&it[i], &it[i + 1],
                        sizeof(*it) * (size_t)(k->cnt - i - 1));
                k->cnt--;
                c->pending--;
                break;
        }
        if (k->cnt == 0 && !k->parked) {
                key_free(k);
                kretry_keymap_del(&c->map, key, len);
        }
}

size_t
kretry_chains_park(kretry_chains_t *c, const void *key, size_t len, int on) {
        kretry_chain_key_t *k = on ? kretry_keymap_put(&c->map, key, len, NULL)
                                   : kretry_keymap_get(&c->map, key, len);
        if (!k)
                return 0;
        k->parked = on;
        if (!on && k->cnt == 0) {
                key_free(k);
                kretry_keymap_del(&c->map, key, len);
                return 0;
        }
        return on && k->cnt > 0 ? (size_t)k->cnt - 1 : 0;
}

size_t kretry_chains_keys(const kretry_chains_t *c) {
        return c->map.cnt;
}
