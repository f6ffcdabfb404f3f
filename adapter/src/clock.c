/*
 * Service: the clocks, the wall one (what compares with Kafka timestamps)
 * and the monotonic one (every local deadline and backoff). Any thread.
 */
#include "clock.h"

#include <limits.h>
#include <time.h>

static int64_t clock_ms(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

atomic_llong kretry_test_wall_step_ms;

int64_t kretry_now_ms(void) {
        return clock_ms(CLOCK_REALTIME) +
               atomic_load_explicit(&kretry_test_wall_step_ms,
                                    memory_order_relaxed);
}

int64_t kretry_mono_ms(void) {
        return clock_ms(CLOCK_MONOTONIC);
}

int kretry_left_ms(int64_t deadline, int cap) {
        int64_t left = deadline - kretry_mono_ms();
        if (left <= 0)
                return 0;
        if (cap >= 0 && left > cap)
                return cap;
        return left > INT_MAX ? INT_MAX : (int)left;
}
