/*
 * Tier messages behind a held one stay in kretry's memory (tier.buffer.*),
 * so a due retry is handled on time whatever fetch.wait.max.ms is, within
 * the buffer's bounds, in order, never early, and a revoked partition's
 * kept messages are let go.
 */
#include "it_harness.h"

#include <stdlib.h>
#include <string.h>

static int64_t counter(kretry_adapter_t *a, kretry_counter_t c) {
        return kretry_adapter_counter(a, c, 0);
}

static void produce_retry1(it_env_t *env, int n, int parts, const char *pad) {
        for (int i = 0; i < n; i++) {
                char v[64];
                snprintf(v, sizeof(v), "retry1-%s-%d", pad, i);
                it_produce(env, i % parts, "k", v, NULL);
        }
}

/* Retries (attempt 2) recorded so far. */
static int retried(const it_env_t *env) {
        int n = 0;
        for (int i = 0; i < env->call_cnt; i++)
                n += env->calls[i].attempt == 2;
        return n;
}

static int cmp_ll(const void *x, const void *y) {
        int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
        return (a > b) - (a < b);
}

/* Retries of 20 failures 60 ms apart through a 1 s tier at librdkafka's
 * default fetch.wait.max.ms (500 ms), the source idle otherwise, with
 * tier.buffer.messages @p cap: each handled never early; returns the
 * median lateness, *@p max the largest, *@p kept the most tier messages
 * kept in the buffer at once (the gauge, sampled at every poll). (The tier's
 * delay is longer than the fetch wait: the test cluster does not answer a
 * waiting Fetch when data arrives, a broker does, so a copy can reach the
 * consumer up to 500 ms after it was written.) */
static int64_t on_time(const char *cap, int64_t *max, int64_t *kept) {
        enum { M = 20 };
        it_env_t *env = it_env_new("1s", 1);
        kretry_adapter_t *a =
                it_adapter(it_conf(env, "consumer.fetch.wait.max.ms", "500",
                                   "tier.buffer.messages", cap, NULL));
        it_produce(env, 0, "k", "ok-warm", NULL);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 20000));
        /* Failures 60 ms apart, so that retries come due while the
         * consumer's fetch waits. */
        *kept = 0;
        for (int i = 0; i < M; i++) {
                char v[32];
                snprintf(v, sizeof(v), "retry1-t-%d", i);
                it_produce(env, 0, "k", v, NULL);
                int64_t next = kt_now_ms() + 60;
                while (kt_now_ms() < next) {
                        kretry_adapter_poll(a, (int)(next - kt_now_ms()));
                        int64_t b = counter(a, KRETRY_COUNTER_BUFFERED);
                        *kept     = b > *kept ? b : *kept;
                }
        }
        int64_t deadline = kt_now_ms() + 20000;
        while (retried(env) < M && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 50);
                int64_t b = counter(a, KRETRY_COUNTER_BUFFERED);
                *kept     = b > *kept ? b : *kept;
        }
        KT_REQUIRE(retried(env) == M);
        int64_t late[M];
        int n = 0;
        for (int i = 0; i < env->call_cnt; i++) {
                const it_call_t *c = &env->calls[i];
                if (c->attempt != 2)
                        continue;
                KT_CHECK_MSG(c->now_ms >= c->due_ts, CU_FALSE,
                             "%s handled %lld ms before due", c->value,
                             (long long)(c->due_ts - c->now_ms));
                late[n++] = c->now_ms - c->due_ts;
        }
        qsort(late, (size_t)n, sizeof(late[0]), cmp_ll);
        fprintf(stderr,
                "  tier.buffer.messages=%s: retries after their due time: "
                "median %lld ms, max %lld ms (fetch.wait.max.ms 500); at "
                "most %lld kept\n",
                cap, (long long)late[n / 2], (long long)late[n - 1],
                (long long)*kept);
        KT_ASSERT(counter(a, KRETRY_COUNTER_BUFFERED) == 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
        *max = late[n - 1];
        return late[n / 2];
}

/* Every retry behind the first held one is handled within a few ms of its
 * due time: they wait in memory, not for a fetch after a resume. Paused
 * behind the head instead (tier.buffer.messages=0, the next test), each
 * waits for that fetch: about 40 ms on the test cluster (its replies are
 * delayed by Nagle), up to fetch.wait.max.ms on a broker whose other
 * partitions are idle. */
static void test_on_time_default_fetch_wait(void) {
        int64_t max = 0, kept = 0, median = 0, cmax = 0, control = 0, ckept;
        /* Up to three pairs: a load spike that delays one of them (seen on
         * the test cluster at load 18: median 17 ms, max 112, while the
         * control beside it came 1 ms late) passes on the next, where a
         * buffer that does not hold fails every one of them. */
        for (int pair = 0; pair < 3; pair++) {
                median = on_time("1000", &max, &kept);
                KT_CHECK_MSG(kept > 0, CU_FALSE,
                             "no tier message was ever kept behind the held "
                             "one");
                /* On a quiet machine: within 20 ms at the median, 100 ms
                 * at most, where paused partitions wait for their fetch
                 * (on real Kafka a median of 145 ms, up to the 500 ms
                 * fetch wait). */
                if (median <= 20 && max <= 100)
                        return;
                /* A machine loaded many times over its cores delays every
                 * retry (seen: median 65 ms, max 593 ms at load ~20). Then
                 * the same retries without the buffer, in the same run,
                 * are the measure: held in memory, the median must be
                 * under half of theirs (seen beside the above: 171 ms);
                 * waiting for fetches, it is not. The test cluster answers
                 * a resumed partition's fetch at once, so there only the
                 * bounds above tell. */
                control = on_time("0", &cmax, &ckept);
                if (median * 2 <= control)
                        return;
                fprintf(stderr, "  pair %d of 3 missed\n", pair + 1);
        }
        KT_CHECK_MSG(0, CU_FALSE,
                     "retries came a median %lld ms (max %lld) after their "
                     "due time; %lld ms (max %lld) without the buffer",
                     (long long)median, (long long)max, (long long)control,
                     (long long)cmax);
}

/* Without a buffer the partition is paused behind its held head, as before
 * tier.buffer.*: every retry still comes, in order, never early, and no
 * tier message is ever kept in memory behind the head (the gauge stays 0
 * throughout, where the test above sees it rise). */
static void test_no_buffer_pauses(void) {
        int64_t max, kept;
        on_time("0", &max, &kept);
        KT_CHECK_MSG(kept == 0, CU_FALSE,
                     "tier.buffer.messages=0 kept %lld tier messages",
                     (long long)kept);
}

/* The buffers stay within @p name = @p value: tier.buffer.messages and
 * .bytes per partition, .total.bytes over @p parts partitions together. At
 * the bound a partition is paused, and what comes after is fetched again,
 * in order, nothing lost or handled twice. */
static void
buffer_bound(const char *name, const char *value, int bytes, int parts) {
        enum { M = 40 };
        /* A tier delay the copies are fetched well within, even the first
         * ones, which wait for the producer's id (up to 500 ms after it
         * is made, with librdkafka 2.14.2). */
        it_env_t *env       = it_env_new("1s", parts);
        kretry_adapter_t *a = it_adapter(it_conf(env, name, value, NULL));
        produce_retry1(env, M, parts, "padding-padding-padding");
        int64_t most = 0, deadline = kt_now_ms() + 30000;
        while (retried(env) < M && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 10);
                int64_t now = counter(a, bytes ? KRETRY_COUNTER_BUFFERED_BYTES
                                               : KRETRY_COUNTER_BUFFERED);
                if (now > most)
                        most = now;
        }
        KT_REQUIRE(retried(env) == M);
        fprintf(stderr, "  %s=%s: at most %lld kept\n", name, value,
                (long long)most);
        KT_ASSERT(most > 0);
        KT_ASSERT(most <= atoll(value));
        /* In offset order per tier partition (message i is on i % parts). */
        int64_t last[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
        for (int i = 0; i < env->call_cnt; i++) {
                const it_call_t *c = &env->calls[i];
                if (c->attempt != 2)
                        continue;
                int p = atoi(strrchr(c->value, '-') + 1) % parts;
                KT_ASSERT(c->now_ms >= c->due_ts);
                KT_CHECK_MSG(c->offset > last[p], CU_FALSE,
                             "tier [%d] offset %lld handled after %lld", p,
                             (long long)c->offset, (long long)last[p]);
                last[p] = c->offset;
        }
        KT_ASSERT_INT_EQ(env->call_cnt, 2 * M);
        KT_ASSERT(counter(a, KRETRY_COUNTER_BUFFERED) == 0);
        KT_ASSERT(counter(a, KRETRY_COUNTER_BUFFERED_BYTES) == 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void test_bound_messages(void) {
        buffer_bound("tier.buffer.messages", "4", 0, 1);
}

static void test_bound_bytes(void) {
        /* A copy takes about 340 bytes (a one-byte key, a 34-byte value,
         * kretry's headers, its record): two fit. */
        buffer_bound("tier.buffer.bytes", "1000", 1, 1);
}

/* Four partitions whose buffers could each take 1 MiB share 1500 bytes:
 * four copies at most, wherever they wait. */
static void test_bound_total(void) {
        buffer_bound("tier.buffer.total.bytes", "1500", 1, 4);
}

#define R 40

static int retried_call(const it_call_t *c) {
        return c->attempt >= 2;
}

static int all_retried(const it_env_t *a, const it_env_t *b) {
        return it_all_done(a, b, R, retried_call);
}

static int some_buffered(kretry_adapter_t *a, it_env_t *env) {
        (void)env;
        return counter(a, KRETRY_COUNTER_BUFFERED) > 0;
}

static int64_t kept(kretry_adapter_t *a) {
        return counter(a, KRETRY_COUNTER_BUFFERED) +
               counter(a, KRETRY_COUNTER_BUFFERED_BYTES) +
               counter(a, KRETRY_COUNTER_HELD);
}

/* A second instance joins while the first keeps tier messages behind held
 * ones, with @p assignor (the tier's delay @p tier): the kept messages of the
 * partitions it gives up are let go and fetched again by the new owner; none is
 * lost. The gauges come back to exactly what each still keeps: 0 once
 * everything was handled (a copy read again after the handover, from an offset
 * the test cluster refused to commit during the rebalance, may be kept a while
 * longer, so the test waits for 0, which a gauge that missed a let-go
 * message never reaches). */
static void revoke_lets_go(const char *assignor, const char *tier) {
        it_env_t *env = it_env_new(tier, 4);
        produce_retry1(env, R, 4, "r");
        it_env_t *env2      = it_env_twin(env);
        kretry_adapter_t *a = it_adapter(it_conf(
                env, "consumer.partition.assignment.strategy", assignor, NULL));
        KT_REQUIRE(it_run_until(a, some_buffered, env, 20000));
        kretry_adapter_t *b = it_adapter(
                it_conf(env2, "consumer.partition.assignment.strategy",
                        assignor, NULL));
        int64_t deadline = kt_now_ms() + 60000;
        while ((!all_retried(env, env2) || kept(a) || kept(b)) &&
               kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
        }
        KT_ASSERT(all_retried(env, env2));
        int b_tier = 0;
        for (int i = 0; i < env2->call_cnt; i++)
                b_tier += env2->calls[i].tier == 1;
        KT_ASSERT(b_tier > 0);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_BUFFERED), 0);
        KT_ASSERT_INT_EQ(counter(b, KRETRY_COUNTER_BUFFERED), 0);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_BUFFERED_BYTES), 0);
        KT_ASSERT_INT_EQ(counter(b, KRETRY_COUNTER_BUFFERED_BYTES), 0);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_HELD), 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(b), KRETRY_ERR_OK);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(b);
        kretry_adapter_destroy(a);
        free(env2);
        it_env_destroy(env);
}

static void test_revoke_lets_go_eager(void) {
        /* The retries must still wait when the second member's join ends:
         * on a loaded machine that join took over a second. */
        revoke_lets_go("range", "4s");
}

static void test_revoke_lets_go_cooperative(void) {
        /* The incremental handover takes two rebalances: the retries must
         * still wait when the second ends. */
        revoke_lets_go("cooperative-sticky", "8s");
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_on_time_default_fetch_wait),
                KT_TEST(test_no_buffer_pauses),
                KT_TEST(test_bound_messages),
                KT_TEST(test_bound_bytes),
                KT_TEST(test_bound_total),
                KT_TEST(test_revoke_lets_go_eager),
                KT_TEST(test_revoke_lets_go_cooperative),
                KT_END};
        return kt_main("it_buffer", tests, argc, argv);
}
