/* Leaf: per-key chains across retries. */
#include "keychain.h"

#include "offsets.h" /* kretry_test_alloc_fails */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void key_free(kretry_chain_key_t *k) {
        if (k->cap > 1)
                free(k->many);
}

static kretry_pending_t *items(kretry_chain_key_t *k) {
        return k->cap > 1 ? k->many : &k->one;
}

static int chained(const kretry_chain_key_t *k) {
        return k->cnt > 0 || k->parked;
}

/* After a change to @p k (chained before: @p was): count it, and drop its
 * entry when nothing holds it any more. */
static void settle(kretry_chains_t *c,
                   kretry_chain_key_t *k,
                   int was,
                   const void *key,
                   size_t len) {
        int now = chained(k);
        c->chained += (size_t)now - (size_t)was;
        if (now || k->gate.busy || k->gate.head)
                return;
        key_free(k);
        kretry_keymap_del(&c->map, key, len);
}

void kretry_chains_init(kretry_chains_t *c) {
        kretry_keymap_init(&c->map, sizeof(kretry_chain_key_t));
        kretry_keymap_init(&c->superseded, 1);
        c->pending = 0;
        c->chained = 0;
}

void kretry_chains_clear(kretry_chains_t *c) {
        size_t pos = 0;
        kretry_chain_key_t *k;
        while ((k = kretry_keymap_next(&c->map, &pos, NULL, NULL)))
                key_free(k);
        kretry_keymap_clear(&c->map);
        kretry_keymap_clear(&c->superseded);
        c->pending = 0;
        c->chained = 0;
}

void kretry_chains_free(kretry_chains_t *c) {
        kretry_chains_clear(c);
        kretry_keymap_free(&c->map);
        kretry_keymap_free(&c->superseded);
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
        int ncap = k->cap > 1 ? k->cap * 2 : 4;
        kretry_pending_t *many =
                kretry_test_alloc_fails && kretry_test_alloc_fails("chain")
                        ? NULL
                        : malloc(sizeof(*many) * (size_t)ncap);
        if (!many)
                return -1;
        memcpy(many, items(k), sizeof(*many) * (size_t)k->cnt);
        key_free(k);
        k->many = many;
        k->cap  = ncap;
        return 0;
}

int kretry_chains_reserve(kretry_chains_t *c, const void *key, size_t len) {
        kretry_chain_key_t *k = kretry_keymap_put(&c->map, key, len, NULL);
        if (!k)
                return -1;
        if (reserve(k)) {
                settle(c, k, chained(k), key, len);
                return -1;
        }
        return 0;
}

/* The entry of @p orig_offset in the key's chain, inserted (*createdp = 1)
 * when absent; NULL when out of memory. */
static kretry_pending_t *entry(kretry_chains_t *c,
                               const void *key,
                               size_t len,
                               int64_t orig_offset,
                               int *createdp) {
        kretry_chain_key_t *k = kretry_keymap_put(&c->map, key, len, NULL);
        if (!k)
                return NULL;
        int was              = chained(k);
        kretry_pending_t *it = items(k);
        int i                = 0;
        while (i < k->cnt && it[i].orig_offset < orig_offset)
                i++;
        *createdp = !(i < k->cnt && it[i].orig_offset == orig_offset);
        if (!*createdp)
                return &it[i];
        if (reserve(k)) {
                settle(c, k, was, key, len); /* a new entry goes again */
                return NULL;
        }
        it = items(k);
        memmove(&it[i + 1], &it[i], sizeof(*it) * (size_t)(k->cnt - i));
        k->cnt++;
        c->pending++;
        c->chained += !was;
        return &it[i];
}

int kretry_chains_add(kretry_chains_t *c,
                      const void *key,
                      size_t len,
                      int64_t orig_offset,
                      int tier,
                      int64_t due_ts) {
        int created;
        kretry_pending_t *p = entry(c, key, len, orig_offset, &created);
        if (!p)
                return -1;
        *p = (kretry_pending_t){orig_offset, due_ts, -1, tier, -1};
        return 0;
}

static int newer(const kretry_pending_t *x, const kretry_pending_t *y) {
        if (x->attempt != y->attempt)
                return x->attempt > y->attempt;
        if (x->tier == y->tier)
                return x->copy_offset > y->copy_offset;
        return x->due_ts > y->due_ts;
}

/* Key of the superseded map: tier and offset, packed. */
static size_t copy_id(unsigned char *id, int tier, int64_t offset) {
        int32_t t = tier;
        memcpy(id, &t, sizeof(t));
        memcpy(id + sizeof(t), &offset, sizeof(offset));
        return sizeof(t) + sizeof(offset);
}

static int supersede(kretry_chains_t *c, const kretry_pending_t *old) {
        unsigned char id[12];
        size_t n = copy_id(id, old->tier, old->copy_offset);
        return kretry_keymap_put(&c->superseded, id, n, NULL) ? 0 : -1;
}

int kretry_chains_restore(kretry_chains_t *c,
                          const void *key,
                          size_t len,
                          const kretry_pending_t *copy) {
        int created;
        kretry_pending_t *p = entry(c, key, len, copy->orig_offset, &created);
        if (!p)
                return -1;
        if (created) {
                *p = *copy;
                return 0;
        }
        if (!newer(copy, p))
                return supersede(c, copy);
        kretry_pending_t old = *p;
        *p                   = *copy;
        return supersede(c, &old);
}

int kretry_chains_superseded(kretry_chains_t *c, int tier, int64_t offset) {
        unsigned char id[12];
        size_t n = copy_id(id, tier, offset);
        return c->superseded.cnt > 0 &&
               kretry_keymap_del(&c->superseded, id, n);
}

void kretry_chains_remove(kretry_chains_t *c,
                          const void *key,
                          size_t len,
                          int64_t orig_offset) {
        kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        if (!k)
                return;
        int was              = chained(k);
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
        settle(c, k, was, key, len);
}

size_t
kretry_chains_park(kretry_chains_t *c, const void *key, size_t len, int on) {
        kretry_chain_key_t *k = on ? kretry_keymap_put(&c->map, key, len, NULL)
                                   : kretry_keymap_get(&c->map, key, len);
        if (!k)
                return 0;
        int was       = chained(k);
        k->parked     = on;
        size_t follow = on && k->cnt > 0 ? (size_t)k->cnt - 1 : 0;
        settle(c, k, was, key, len);
        return follow;
}

int kretry_chains_is_parked(const kretry_chains_t *c,
                            const void *key,
                            size_t len) {
        const kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        return k && k->parked;
}

int kretry_chains_park_evidence(kretry_chains_t *c,
                                const void *key,
                                size_t len,
                                int64_t orig_offset) {
        kretry_chain_key_t *k = kretry_keymap_put(&c->map, key, len, NULL);
        if (!k)
                return -1;
        if (!k->parked || orig_offset > k->parked_at)
                k->parked_at = orig_offset;
        c->chained += !chained(k);
        k->parked = 1;
        return 0;
}

int64_t kretry_chains_parked_from(const kretry_chains_t *c) {
        size_t pos   = 0;
        int64_t from = -1;
        const kretry_chain_key_t *k;
        while ((k = kretry_keymap_next(&c->map, &pos, NULL, NULL)))
                if (k->parked && (from < 0 || k->parked_at < from))
                        from = k->parked_at;
        return from;
}

void kretry_chains_replayed(kretry_chains_t *c,
                            const void *key,
                            size_t len,
                            int64_t offset) {
        kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        if (k && k->parked && offset > k->parked_at)
                kretry_chains_park(c, key, len, 0);
}

size_t kretry_chains_keys(const kretry_chains_t *c) {
        return c->chained;
}

kretry_gate_t *
kretry_chains_gate(kretry_chains_t *c, const void *key, size_t len) {
        kretry_chain_key_t *k = kretry_keymap_put(&c->map, key, len, NULL);
        if (!k)
                return NULL;
        k->gate.len = len;
        return &k->gate;
}

kretry_gate_t *
kretry_chains_gate_find(kretry_chains_t *c, const void *key, size_t len) {
        kretry_chain_key_t *k = kretry_keymap_get(&c->map, key, len);
        return k ? &k->gate : NULL;
}

void kretry_chains_gate_idle(kretry_chains_t *c, kretry_gate_t *g) {
        kretry_chain_key_t *k =
                (kretry_chain_key_t *)((char *)g -
                                       offsetof(kretry_chain_key_t, gate));
        if (chained(k) || g->busy || g->head)
                return;
        key_free(k);
        kretry_keymap_del(&c->map, kretry_keymap_key_of(k, g->len), g->len);
}

kretry_gate_t *kretry_chains_next_gate(const kretry_chains_t *c, size_t *posp) {
        kretry_chain_key_t *k = kretry_keymap_next(&c->map, posp, NULL, NULL);
        return k ? &k->gate : NULL;
}
