/* Leaf: the circuit breaker. */
#include "breaker.h"

#include "keymap.h"

#include <string.h>

#define KRETRY_BREAKER_MAX_FACTOR 16

void kretry_breaker_init(kretry_breaker_t *b,
                         int failures,
                         int distinct_keys,
                         int64_t cooldown_ms) {
        memset(b, 0, sizeof(*b));
        b->failures      = failures;
        b->distinct_keys = distinct_keys < 1 ? 1 : distinct_keys;
        if (b->distinct_keys > KRETRY_BREAKER_MAX_KEYS)
                b->distinct_keys = KRETRY_BREAKER_MAX_KEYS;
        b->cooldown_ms     = cooldown_ms;
        b->cooldown_cur_ms = cooldown_ms;
}

static void note_key(kretry_breaker_t *b, const void *key, size_t len) {
        if (b->key_cnt >= b->distinct_keys)
                return; /* enough seen: the count only needs to reach it */
        uint64_t h = kretry_key_hash(key, len);
        for (int i = 0; i < b->key_cnt; i++)
                if (b->keys[i] == h)
                        return;
        b->keys[b->key_cnt++] = h;
}

static int open_now(kretry_breaker_t *b, int64_t now) {
        b->state      = KRETRY_BREAKER_OPEN;
        b->open_until = now + b->cooldown_cur_ms;
        b->trips++;
        b->run     = 0;
        b->key_cnt = 0;
        return 1;
}

int kretry_breaker_record(kretry_breaker_t *b,
                          int transient,
                          const void *key,
                          size_t key_len,
                          int64_t now) {
        if (b->failures <= 0)
                return 0;
        if (!transient) {
                b->state           = KRETRY_BREAKER_CLOSED;
                b->cooldown_cur_ms = b->cooldown_ms;
                b->run             = 0;
                b->key_cnt         = 0;
                return 0;
        }
        if (b->state == KRETRY_BREAKER_HALF_OPEN) {
                /* The probe failed: the dependency is still down. */
                int64_t max        = b->cooldown_ms * KRETRY_BREAKER_MAX_FACTOR;
                b->cooldown_cur_ms = b->cooldown_cur_ms * 2 > max
                                             ? max
                                             : b->cooldown_cur_ms * 2;
                return open_now(b, now);
        }
        if (b->state == KRETRY_BREAKER_OPEN)
                return 0; /* outcomes of messages already handed out */
        b->run++;
        note_key(b, key, key_len);
        if (b->run >= b->failures && b->key_cnt >= b->distinct_keys)
                return open_now(b, now);
        return 0;
}

int kretry_breaker_is_open(kretry_breaker_t *b, int64_t now) {
        if (b->state != KRETRY_BREAKER_OPEN)
                return 0;
        if (now < b->open_until)
                return 1;
        b->state = KRETRY_BREAKER_HALF_OPEN;
        return 0;
}
