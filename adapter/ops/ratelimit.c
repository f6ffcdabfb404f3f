#include "ratelimit.h"

void kretry_bucket_init(kretry_bucket_t *b,
                        double rate,
                        double burst,
                        int64_t now_us) {
        b->rate    = rate > 0 ? rate : 1;
        b->burst   = burst >= 1 ? burst : 1;
        b->tokens  = 1;
        b->last_us = now_us;
}

static void refill(kretry_bucket_t *b, int64_t now_us) {
        if (now_us <= b->last_us)
                return; /* a clock that did not move adds nothing */
        b->tokens += (double)(now_us - b->last_us) * b->rate / 1e6;
        if (b->tokens > b->burst)
                b->tokens = b->burst;
        b->last_us = now_us;
}

int64_t kretry_bucket_take(kretry_bucket_t *b, int64_t now_us) {
        refill(b, now_us);
        if (b->tokens >= 1) {
                b->tokens -= 1;
                return 0;
        }
        int64_t wait = (int64_t)((1 - b->tokens) * 1e6 / b->rate) + 1;
        return wait > 0 ? wait : 1;
}
