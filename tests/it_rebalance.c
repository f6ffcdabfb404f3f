/*
 * A second instance joins mid-stream: partitions (source and their tier
 * partitions together) move between two adapters; in-flight copies are
 * drained and offsets committed on revoke; nothing is lost.
 */
#include "it_harness.h"

#include <stdlib.h>
#include <string.h>

#define N 120

static int handled_ok(const it_call_t *c) {
        /* The scripted handler: "retry1-*" fails on attempt 1 only. */
        return strncmp(c->value, "retry1", 6) || c->attempt >= 2;
}

static int all_done(const it_env_t *a, const it_env_t *b) {
        return it_all_done(a, b, N, handled_ok);
}

static int some_held(kretry_adapter_t *a, it_env_t *env) {
        (void)env;
        return kretry_adapter_counter(a, KRETRY_COUNTER_HELD, 0) > 0;
}

static int committed_to_end(const it_env_t *env) {
        for (int p = 0; p < 4; p++)
                if (kt_committed(env->c, env->group, env->source, p) != N / 4)
                        return 0;
        return 1;
}

/* With @p assignor, and the tier's delay @p tier long enough that retried
 * messages are still held in memory by the first instance when the second
 * joins: the first must hand them back. */
static void second_instance_joins(const char *assignor, const char *tier) {
        it_env_t *env = it_env_new(tier, 4);
        for (int i = 0; i < N; i++) {
                char v[32];
                snprintf(v, sizeof(v), "%s-%d", i % 3 == 0 ? "retry1" : "ok",
                         i);
                it_produce(env, i % 4, "k", v, NULL);
        }
        /* The second instance shares topics and group, records its own calls.
         */
        it_env_t *env2 = it_env_twin(env);

        kretry_adapter_t *a = it_adapter(it_conf(
                env, "consumer.partition.assignment.strategy", assignor, NULL));
        KT_REQUIRE(it_run_until(a, some_held, env, 20000));
        kretry_adapter_t *b = it_adapter(
                it_conf(env2, "consumer.partition.assignment.strategy",
                        assignor, NULL));
        int64_t deadline = kt_now_ms() + 60000;
        while (!all_done(env, env2) && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 20);
                kretry_adapter_poll(b, 20);
        }
        KT_ASSERT(all_done(env, env2));
        /* The newcomer took over partitions, tiers included. */
        int b_tier = 0;
        for (int i = 0; i < env2->call_cnt; i++)
                b_tier += env2->calls[i].tier == 1;
        KT_ASSERT(env2->call_cnt > 0);
        KT_ASSERT(b_tier > 0);
        /* Once the group is steady again, commits reach the end of every
         * source partition. (The mock cluster refuses every commit while a
         * rebalance is pending, so commits made on revoke do not count.) */
        int committed = 0;
        deadline      = kt_now_ms() + 20000;
        while (!(committed = committed_to_end(env)) && kt_now_ms() < deadline)
                for (int i = 0; i < 5; i++) {
                        kretry_adapter_poll(a, 20);
                        kretry_adapter_poll(b, 20);
                }
        KT_ASSERT(committed);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        KT_ASSERT_INT_EQ(kretry_adapter_close(b), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        kretry_adapter_destroy(b);
        free(env2);
        it_env_destroy(env);
}

static void test_second_instance_joins_eager(void) {
        second_instance_joins("range,roundrobin", "3s");
}

/* kretry's default: the incremental handover takes two rebalances. */
static void test_second_instance_joins_cooperative(void) {
        second_instance_joins("cooperative-sticky", "8s");
}

/* A lost assignment (the coordinator no longer knows the member, here an
 * UNKNOWN_MEMBER_ID answer to a heartbeat, as after a session timeout)
 * commits nothing: the partitions may be another member's by now, and a
 * late commit would overwrite its progress. The outcomes since the last
 * commit are repeated after the rejoin instead. With @p assignor. (kretry
 * does not try, and librdkafka 2.0.2 would refuse it locally: "assignment
 * lost".) */
static void lost_commits_nothing(const char *assignor) {
        it_env_t *env                 = it_env_new("50ms", 1);
        rd_kafka_mock_cluster_t *mock = it_mock_or_skip(
                env, "none: a real coordinator ends a membership only "
                     "after session.timeout.ms without heartbeats, "
                     "which librdkafka keeps sending; it_kill's "
                     "SIGKILLed members show what a lost member "
                     "repeats");
        if (!mock)
                return;
        for (int i = 0; i < 4; i++)
                it_produce(env, 0, "k", "ok-lost", NULL);
        /* No periodic commit within the test: only a revoke could. */
        kretry_adapter_t *a = it_adapter(it_conf(
                env, "consumer.auto.commit.interval.ms", "600000",
                "consumer.partition.assignment.strategy", assignor, NULL));
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 4, 20000));
        kt_lose_assignment(mock);
        int64_t deadline = kt_now_ms() + 30000;
        while (env->call_cnt < 8 && kt_now_ms() < deadline)
                kretry_adapter_poll(a, 20);
        /* Consumed again from the start: nothing was committed. */
        KT_ASSERT_INT_EQ(env->call_cnt, 8);
        KT_ASSERT(kt_committed(env->c, env->group, env->source, 0) <= 0);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

static void test_lost_commits_nothing_eager(void) {
        lost_commits_nothing("range,roundrobin");
}

static void test_lost_commits_nothing_cooperative(void) {
        lost_commits_nothing("cooperative-sticky");
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_second_instance_joins_eager),
                KT_TEST(test_second_instance_joins_cooperative),
                KT_TEST(test_lost_commits_nothing_eager),
                KT_TEST(test_lost_commits_nothing_cooperative), KT_END};
        return kt_main("it_rebalance", tests, argc, argv);
}
