/*
 * A token bucket for rate-limited work (kretry dlq replay --rate): tokens
 * accrue at @p rate per second up to a small burst, one is taken per
 * message. Plain data with the clock passed in (microseconds, monotonic),
 * so that its arithmetic is testable without sleeping.
 */
#ifndef KRETRY_RATELIMIT_H
#define KRETRY_RATELIMIT_H

#include <stdint.h>

typedef struct {
        double rate;   /* tokens per second, > 0 */
        double burst;  /* most tokens held, >= 1 */
        double tokens; /* held now */
        int64_t last_us;
} kretry_bucket_t;

/* Start with one token at @p now_us; @p burst below 1 is taken as 1. The
 * burst bounds how far a stall (a slow acknowledgement, a pause between
 * batches) can be caught up: keep it small for an even rate. */
void kretry_bucket_init(kretry_bucket_t *b,
                        double rate,
                        double burst,
                        int64_t now_us);

/* Take one token if there is one (returns 0), or return how many
 * microseconds to wait until there is (nothing is taken). */
int64_t kretry_bucket_take(kretry_bucket_t *b, int64_t now_us);

#endif
