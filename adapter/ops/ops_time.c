#include "ops_time.h"

#include <stdio.h>
#include <time.h>

int64_t ops_mono_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ops_iso_time(int64_t ms, char *dest, size_t size) {
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        if (ms < 0 || !gmtime_r(&t, &tm) ||
            !strftime(dest, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
                snprintf(dest, size, "-");
}
