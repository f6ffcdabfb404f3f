/*
 * Leaf: the circuit breaker.
 *
 * The circuit breaker (DESIGN §4, storm control). When a run of transient
 * failures with no success in between reaches `failures` and spans at least
 * `distinct_keys` keys, the dependency is down, not the message: the breaker
 * opens and the adapter pauses consumption for a cool-down instead of
 * burning every message's attempts. After the cool-down it lets messages
 * through again (half-open): a success closes it, another transient failure
 * opens it again with a doubled cool-down (up to 16 times the first).
 * Permanent failures say nothing about the dependency and are not counted.
 * Plain data: the adapter feeds it outcomes and asks whether it is open.
 */
#ifndef KRETRY_BREAKER_H
#define KRETRY_BREAKER_H

#include <stddef.h>
#include <stdint.h>

#define KRETRY_BREAKER_MAX_KEYS 64

typedef enum {
        KRETRY_BREAKER_CLOSED,
        KRETRY_BREAKER_OPEN,
        KRETRY_BREAKER_HALF_OPEN
} kretry_breaker_state_t;

typedef struct {
        int failures, distinct_keys; /* thresholds; failures 0 = off */
        int64_t cooldown_ms, cooldown_cur_ms;
        kretry_breaker_state_t state;
        int run; /* transient failures since the last success */
        uint64_t keys[KRETRY_BREAKER_MAX_KEYS];
        int key_cnt;
        int64_t open_until;
        int64_t trips;
} kretry_breaker_t;

void kretry_breaker_init(kretry_breaker_t *b,
                         int failures,
                         int distinct_keys,
                         int64_t cooldown_ms);

/* Feed one handler outcome: @p transient 1 for RETRY, 0 for OK. Returns 1
 * when this outcome opened the breaker. */
int kretry_breaker_record(kretry_breaker_t *b,
                          int transient,
                          const void *key,
                          size_t key_len,
                          int64_t now);

/* 1 while open (consumption must pause); moves to half-open once the
 * cool-down has passed. */
int kretry_breaker_is_open(kretry_breaker_t *b, int64_t now);

#endif
