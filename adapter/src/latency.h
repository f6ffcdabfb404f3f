/*
 * Leaf: the handler latency histogram.
 *
 * Handler latency: a fixed log-linear histogram (8 sub-buckets per power of
 * two of microseconds, up to ~2^31 us), so recording allocates nothing and
 * costs a few instructions; percentiles are read with at most 1/8 relative
 * error. Not thread-safe: recorded on the adapter's thread, read and reset
 * there when stats are emitted.
 */
#ifndef KRETRY_LATENCY_H
#define KRETRY_LATENCY_H

#include <stdint.h>

#define KRETRY_LAT_SUB 8
#define KRETRY_LAT_POW 32
#define KRETRY_LAT_BUCKETS (KRETRY_LAT_SUB * KRETRY_LAT_POW)

typedef struct {
        uint64_t buckets[KRETRY_LAT_BUCKETS];
        uint64_t count;
        int64_t max_us;
} kretry_latency_t;

void kretry_latency_reset(kretry_latency_t *l);
void kretry_latency_record(kretry_latency_t *l, int64_t us);
/* The value at quantile @p q (0..1) in microseconds: the upper bound of its
 * bucket, never above the maximum seen; 0 when nothing was recorded. */
int64_t kretry_latency_quantile(const kretry_latency_t *l, double q);

#endif
