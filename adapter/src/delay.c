/* Leaf: delay arithmetic: which tier, and when due. */
#include "delay.h"

void kretry_rng_seed(kretry_rng_t *rng, uint64_t seed) {
        /* A zero state would stay zero forever. */
        rng->s = seed ? seed : 0x9E3779B97F4A7C15ULL;
}

double kretry_rng_unit(kretry_rng_t *rng) {
        uint64_t x = rng->s;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        rng->s = x;
        /* Top 53 bits make an exactly representable double in [0, 1). */
        return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

int64_t
kretry_jittered_delay(int64_t delay_ms, double jitter, kretry_rng_t *rng) {
        if (jitter <= 0 || delay_ms <= 0)
                return delay_ms > 0 ? delay_ms : 0;
        double u = kretry_rng_unit(rng) * 2.0 - 1.0; /* [-1, 1) */
        double d = (double)delay_ms * (1.0 + u * jitter);
        return d < 0 ? 0 : (int64_t)d;
}

int kretry_tier_for(const int64_t *tiers_ms,
                    int tier_cnt,
                    int failed_attempts,
                    int64_t hint_ms) {
        if (hint_ms > 0) {
                for (int t = 0; t < tier_cnt; t++)
                        if (tiers_ms[t] >= hint_ms)
                                return t + 1;
                return tier_cnt;
        }
        if (failed_attempts < 1)
                return 1;
        return failed_attempts < tier_cnt ? failed_attempts : tier_cnt;
}

int64_t kretry_add_sat(int64_t a, int64_t b) {
        if (b > 0 && a > INT64_MAX - b)
                return INT64_MAX;
        if (b < 0 && a < INT64_MIN - b)
                return INT64_MIN;
        return a + b;
}

int64_t kretry_due_ts(const int64_t *tiers_ms,
                      int tier_cnt,
                      int tier,
                      double jitter,
                      int64_t hint_ms,
                      int64_t now_ms,
                      kretry_rng_t *rng) {
        int64_t d = kretry_jittered_delay(tiers_ms[tier - 1], jitter, rng);
        /* A hint past the last tier's delay would hold the copy at the head
         * of its paused tier partition, and everything behind it, that much
         * longer than the topology (and the retention validated for it)
         * allows. */
        if (hint_ms > tiers_ms[tier_cnt - 1])
                hint_ms = tiers_ms[tier_cnt - 1];
        if (hint_ms > d)
                d = hint_ms;
        return kretry_add_sat(now_ms, d);
}

int64_t kretry_due_bound(const int64_t *tiers_ms,
                         int tier,
                         double jitter,
                         int64_t now_ms) {
        int64_t delay = tiers_ms[tier - 1] > 0 ? tiers_ms[tier - 1] : 0;
        double d      = (double)delay * (1.0 + (jitter > 0 ? jitter : 0));
        /* 2^63 as a double: anything at or above it does not fit. */
        return d >= 9223372036854775808.0 ? INT64_MAX
                                          : kretry_add_sat(now_ms, (int64_t)d);
}
