/*
 * Service: the clocks (clock.c). Any thread.
 */
#ifndef KRETRY_CLOCK_H
#define KRETRY_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

/* The wall clock, ms since the epoch: what compares with Kafka timestamps
 * (due times, failure times, ages). */
int64_t kretry_now_ms(void);
/* Tests: a step of the wall clock, in ms, added to what kretry_now_ms()
 * reads (0 outside tests). */
extern atomic_llong kretry_test_wall_step_ms;
/* The monotonic clock, ms: every local deadline and backoff (revoke, close,
 * restore and startup bounds, copy backoffs, the breaker's cool-down), which
 * a step of the wall clock must not stretch. */
int64_t kretry_mono_ms(void);
/* ms from now until @p deadline (kretry_mono_ms), at least 0 and at most
 * @p cap (no cap when negative): how long a bounded wait may block. */
int kretry_left_ms(int64_t deadline, int cap);

#endif
