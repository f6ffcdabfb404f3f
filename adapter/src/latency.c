/* Leaf: the handler latency histogram. */
#include "latency.h"

#include <string.h>

void kretry_latency_reset(kretry_latency_t *l) {
        memset(l, 0, sizeof(*l));
}

/* Values below 8 us get a bucket each; above, the power of two picks the
 * row and the next three bits the sub-bucket. */
static int bucket_of(uint64_t us) {
        if (us < KRETRY_LAT_SUB)
                return (int)us;
        int p = 63 - __builtin_clzll(us); /* >= 3 */
        int b = (p - 2) * KRETRY_LAT_SUB +
                (int)((us >> (p - 3)) & (KRETRY_LAT_SUB - 1));
        return b < KRETRY_LAT_BUCKETS ? b : KRETRY_LAT_BUCKETS - 1;
}

static int64_t bucket_upper(int b) {
        if (b < KRETRY_LAT_SUB)
                return b;
        int p   = b / KRETRY_LAT_SUB + 2;
        int sub = b % KRETRY_LAT_SUB;
        return (int64_t)(((uint64_t)(KRETRY_LAT_SUB + sub + 1) << (p - 3)) - 1);
}

void kretry_latency_record(kretry_latency_t *l, int64_t us) {
        if (us < 0)
                us = 0;
        l->buckets[bucket_of((uint64_t)us)]++;
        l->count++;
        if (us > l->max_us)
                l->max_us = us;
}

int64_t kretry_latency_quantile(const kretry_latency_t *l, double q) {
        if (!l->count)
                return 0;
        uint64_t rank = (uint64_t)(q * (double)l->count);
        if (rank >= l->count)
                rank = l->count - 1;
        uint64_t seen = 0;
        for (int b = 0; b < KRETRY_LAT_BUCKETS; b++) {
                seen += l->buckets[b];
                if (seen > rank) {
                        /* The last bucket also holds everything beyond. */
                        int64_t up = b == KRETRY_LAT_BUCKETS - 1
                                             ? l->max_us
                                             : bucket_upper(b);
                        return up < l->max_us ? up : l->max_us;
                }
        }
        return l->max_us;
}
