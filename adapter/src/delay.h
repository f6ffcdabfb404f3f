/*
 * Leaf: delay arithmetic: which tier, and when due.
 *
 * Delay arithmetic: which tier a failed message goes to, and when it is due.
 * Pure functions over the tier table; the random source is explicit so tests
 * can pin it.
 */
#ifndef KRETRY_DELAY_H
#define KRETRY_DELAY_H

#include <stdint.h>

/* xorshift64* state: fast, small, good enough for spreading retries. */
typedef struct {
        uint64_t s;
} kretry_rng_t;

void kretry_rng_seed(kretry_rng_t *rng, uint64_t seed);
/* Uniform in [0, 1). */
double kretry_rng_unit(kretry_rng_t *rng);

/* @p delay_ms varied uniformly within +/- @p jitter (0..1) of itself; never
 * negative. */
int64_t
kretry_jittered_delay(int64_t delay_ms, double jitter, kretry_rng_t *rng);

/*
 * The 1-based tier for a message whose handler attempt @p failed_attempts
 * (1 after the first failure) just failed: tier min(n, T); with a retry-after
 * hint (> 0), the first tier whose delay is at least the hint, or the last.
 */
int kretry_tier_for(const int64_t *tiers_ms,
                    int tier_cnt,
                    int failed_attempts,
                    int64_t hint_ms);

/* @p a + @p b, held at INT64_MAX / INT64_MIN instead of wrapping: a due
 * time far in the future must not become one in the past. */
int64_t kretry_add_sat(int64_t a, int64_t b);

/* The due time of a copy sent to @p tier (1..@p tier_cnt) at @p now_ms: its
 * jittered delay, and never before the hint has passed — the hint counted
 * at most as the last tier's delay. Saturates at INT64_MAX. */
int64_t kretry_due_ts(const int64_t *tiers_ms,
                      int tier_cnt,
                      int tier,
                      double jitter,
                      int64_t hint_ms,
                      int64_t now_ms,
                      kretry_rng_t *rng);

/* The latest a message read from @p tier at @p now_ms may be due: the
 * tier's delay plus full jitter. kretry_due_ts() never goes past it (a hint
 * that picks a tier is at most its delay, or the last tier's); a
 * kretry-due-ts header further ahead (a changed topology, another writer) is
 * held only until then. Saturates at INT64_MAX. */
int64_t kretry_due_bound(const int64_t *tiers_ms,
                         int tier,
                         double jitter,
                         int64_t now_ms);

#endif
