/*
 * A permission lost while running: the cluster refuses a copy for want of
 * an ACL (TOPIC_AUTHORIZATION_FAILED, injected on the mock cluster's
 * Produce). The refusal is counted once per copy, said as one ERROR (not a
 * WARNING per try), held in the gauge /readyz reads, and marked on the
 * partition's commit for kretry stats; the offset stays uncommitted
 * (nothing lost); a close does not wait revoke.timeout.ms for a copy that
 * cannot succeed; once the ACL is granted again the copy is delivered and
 * the gauge falls back to 0.
 */
#include "adapter_int.h" /* KRETRY_DENIED_METADATA */
#include "headers.h"
#include "it_harness.h"

#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static struct {
        pthread_mutex_t lock;
        int denied_errors, produce_warnings;
        char first[512];
} logs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void count_log(kretry_log_level_t level,
                      const char *fac,
                      const char *msg,
                      void *opaque) {
        pthread_mutex_lock(&logs.lock);
        if (level == KRETRY_LOG_ERR && !strcmp(fac, "DENIED") &&
            !logs.denied_errors++)
                snprintf(logs.first, sizeof(logs.first), "%s", msg);
        if (level <= KRETRY_LOG_WARNING && !strcmp(fac, "PRODUCE"))
                logs.produce_warnings++;
        pthread_mutex_unlock(&logs.lock);
        it_log(level, fac, msg, opaque);
}

static int64_t counter(kretry_adapter_t *a, kretry_counter_t c) {
        return kretry_adapter_counter(a, c, 0);
}

static it_env_t *mock_env(rd_kafka_mock_cluster_t **mock) {
        it_env_t *env = it_env_new("50ms", 1);
        *mock = it_mock_or_skip(env, "blackbox_secure_revoked (Write on the "
                                     "DLQ denied on the secured cluster)");
        return *mock ? env : NULL;
}

/* Every request of @p api refused with @p err, until cleared. */
#define DENIALS 1000
static void
deny(rd_kafka_mock_cluster_t *mock, int16_t api, rd_kafka_resp_err_t err) {
        static rd_kafka_resp_err_t errs[DENIALS];
        for (int i = 0; i < DENIALS; i++)
                errs[i] = err;
        rd_kafka_mock_push_request_errors_array(mock, api, DENIALS, errs);
}

static kretry_adapter_t *denied_adapter(it_env_t *env) {
        kretry_conf_t *conf = it_conf(env, "revoke.timeout.ms", "10000", NULL);
        kretry_conf_set_log_cb(conf, count_log, NULL);
        memset(logs.first, 0, sizeof(logs.first));
        logs.denied_errors = logs.produce_warnings = 0;
        return it_adapter(conf);
}

/* An adapter whose first message fails and whose DLQ copy of it the
 * cluster refused for want of an ACL. */
static kretry_adapter_t *copy_denied(it_env_t *env,
                                     rd_kafka_mock_cluster_t *mock) {
        it_produce(env, 0, "k", "fail-0", NULL);
        deny(mock, 0 /* Produce */,
             RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        kretry_adapter_t *a = denied_adapter(env);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_DENIED_COPIES, 1, 20000));
        return a;
}

/* The DLQ copy of a failed message is refused: said once, counted once,
 * in the gauge, the offset uncommitted and marked; a close is prompt. */
static void test_copy_denied_close_prompt(void) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = mock_env(&mock);
        if (!env)
                return;
        kretry_adapter_t *a = copy_denied(env, mock);
        int64_t t0          = kt_now_ms();
        while (counter(a, KRETRY_COUNTER_DENIED_NOW) < 1 &&
               kt_now_ms() - t0 < 5000)
                kretry_adapter_poll(a, 20);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_DENIED_NOW), 1);
        /* Tried again at 50, 100, 200, 400, 800 ms: one ERROR for all. */
        it_poll_for(a, 2000);
        KT_ASSERT(counter(a, KRETRY_COUNTER_PRODUCE_ERRORS) >= 3);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_DENIED_COPIES), 1);
        pthread_mutex_lock(&logs.lock);
        KT_CHECK_MSG(logs.denied_errors == 1 && logs.produce_warnings == 0,
                     CU_FALSE,
                     "%d DENIED errors, %d PRODUCE warnings (one error "
                     "expected, no warning)",
                     logs.denied_errors, logs.produce_warnings);
        KT_CHECK_MSG(strstr(logs.first, env->dlq) &&
                             strstr(logs.first, "Write on that topic"),
                     CU_FALSE,
                     "the error does not name the DLQ and the ACL: %s",
                     logs.first);
        pthread_mutex_unlock(&logs.lock);
        char md[512];
        KT_ASSERT(kt_committed_md(env->c, env->group, env->source, 0, md,
                                  sizeof(md)) <= 0);
        KT_CHECK_MSG(!strncmp(md, KRETRY_DENIED_METADATA,
                              strlen(KRETRY_DENIED_METADATA)),
                     CU_FALSE, "commit metadata: \"%s\"", md);
        t0              = kt_now_ms();
        kretry_err_t e  = kretry_adapter_close(a);
        int64_t elapsed = kt_now_ms() - t0;
        KT_CHECK_MSG(elapsed < 3000, CU_FALSE,
                     "close with a copy refused for want of an ACL took %lld "
                     "ms (revoke.timeout.ms 10000; returned %s)",
                     (long long)elapsed, kretry_err2name(e));
        KT_ASSERT(kt_committed(env->c, env->group, env->source, 0) <= 0);
        kretry_adapter_destroy(a);
        rd_kafka_mock_clear_request_errors(mock, 0 /* Produce */);
        it_env_destroy(env);
}

/* The ACL granted again: the copy is delivered, the gauge is 0 and the
 * offset committed past it. */
static void test_copy_denied_then_granted(void) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = mock_env(&mock);
        if (!env)
                return;
        kretry_adapter_t *a = copy_denied(env, mock);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_DENIED_NOW), 1);
        rd_kafka_mock_clear_request_errors(mock, 0 /* Produce */);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DLQ, 1, 20000));
        int64_t t0 = kt_now_ms();
        while (kt_committed(env->c, env->group, env->source, 0) < 1 &&
               kt_now_ms() - t0 < 10000)
                kretry_adapter_poll(a, 50);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_DENIED_NOW), 0);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 1);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

/* The group's offsets refused (Read on the group lost): the commit
 * refusal is counted and held in the gauge until a commit succeeds. */
static void test_commit_denied(void) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = mock_env(&mock);
        if (!env)
                return;
        kretry_adapter_t *a = denied_adapter(env);
        it_produce(env, 0, "k", "ok-0", NULL);
        KT_REQUIRE(it_wait_counter(a, KRETRY_COUNTER_OK, 1, 30000));
        deny(mock, 8 /* OffsetCommit */,
             RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
        it_produce(env, 0, "k", "ok-1", NULL);
        KT_ASSERT(it_wait_counter(a, KRETRY_COUNTER_DENIED_COMMITS, 1, 10000));
        KT_ASSERT(counter(a, KRETRY_COUNTER_DENIED_NOW) >= 1);
        pthread_mutex_lock(&logs.lock);
        KT_CHECK_MSG(logs.denied_errors == 1 &&
                             strstr(logs.first, "offset commit") &&
                             strstr(logs.first, "Read on the group"),
                     CU_FALSE, "%d DENIED errors, the first: %s",
                     logs.denied_errors, logs.first);
        pthread_mutex_unlock(&logs.lock);
        rd_kafka_mock_clear_request_errors(mock, 8 /* OffsetCommit */);
        int64_t t0 = kt_now_ms();
        while (counter(a, KRETRY_COUNTER_DENIED_NOW) > 0 &&
               kt_now_ms() - t0 < 10000)
                kretry_adapter_poll(a, 20);
        KT_ASSERT_INT_EQ(counter(a, KRETRY_COUNTER_DENIED_NOW), 0);
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0), 2);
        kretry_adapter_destroy(a);
        it_env_destroy(env);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_copy_denied_close_prompt),
                KT_TEST(test_copy_denied_then_granted),
                KT_TEST(test_commit_denied), KT_END};
        return kt_main("it_denied", tests, argc, argv);
}
