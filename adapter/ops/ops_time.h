/*
 * The clocks of the operations and their front-ends.
 */
#ifndef KRETRY_OPS_TIME_H
#define KRETRY_OPS_TIME_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC: for deadlines and rates, which a change
 * of the wall clock must not move. */
int64_t ops_mono_ms(void);

/* @p ms (milliseconds since the epoch) as UTC "2024-01-31T12:00:00Z" in
 * @p dest, or "-" when negative or not representable. */
void ops_iso_time(int64_t ms, char *dest, size_t size);

#endif
