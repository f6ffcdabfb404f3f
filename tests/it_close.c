/*
 * A close that cannot crash. librdkafka aborts the process in its consumer
 * close (rd_kafka_cgrp_terminated: assert !rd_kafka_assignment_in_progress,
 * its issue 4027) when an offset commit reaches its group after the group
 * decided to terminate and before it did. A close begun while a rebalance
 * event waits unserved (it came while nobody polled the member) no longer
 * holds the group for the rebalance callback's unassign call: the group
 * unassigns, leaves and terminates by itself, and a commit the callback
 * sends meanwhile could be that late. kretry revokes and commits before it
 * asks to leave, and commits nothing after.
 *
 * The tests make the late commit certain for a close that would send one:
 * the LeaveGroup's answer is delayed, the last handler call is held until
 * that answer came, and the group's thread is held (in the log callback
 * that it calls with its "waiting for ... before terminating" line) until
 * the callback's commit is queued behind that answer. Each close runs in a
 * child process (this binary again, running that one test), so that an
 * abort fails the test instead of ending the suite.
 *
 * A close that cannot hang: the callback's one assign or unassign call
 * for such an event (an eager revocation, or the assignment after one)
 * may come after the group unassigned, left and decided to terminate (the
 * group no longer waits for it). librdkafka then serves
 * the call's request after its group terminated, and drops it without an
 * answer: the call never returns. kretry makes that call on a thread of
 * its own once the close asked the group to leave; the close ends when
 * the group ended. The test holds the callback before its call until the
 * LeaveGroup's answer reached the group's thread, and holds that thread
 * there while the call is made.
 */
#include "adapter_int.h" /* the consumer, to ask its group thread a question */
#include "it_harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CLOSE_N 4
/* How long the LeaveGroup's answer is delayed: the group's last step. */
#define LEAVE_DELAY_MS 500
/* The last handler call answers at most this long after the close began. */
#define HOLD_MS 1500
/* Set in the child process: the name of the test it runs. */
#define CHILD_ENV "KRETRY_TEST_CLOSE_CHILD"
/* How long the group's thread is held at the LeaveGroup's answer while the
 * callback makes its call (test_close_unassign_after_leave_eager). */
#define CALL_WAIT_MS 200

/* What a test holds: the callback's commit against the group's
 * termination, or its unassign call against it. */
enum { HOLD_COMMIT, HOLD_CALL };

/* What the log lines and the handler saw; any thread. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        rd_kafka_t *consumer;
        int64_t close_at; /* kt_now_ms() when the close began, 0 before */
        int queued;       /* librdkafka queued a rebalance event */
        int revoking; /* the close's rebalance callback began a revocation */
        int kicked;   /* and the group's thread is asked something */
        int leave_answered; /* the LeaveGroup's answer reached the client */
        int held;           /* the last message is in the handler */
        int release;        /* which may answer now */
        int stalled;        /* the group's thread was held, once */
        int handled;        /* messages answered OK */
        int mode;           /* HOLD_COMMIT or HOLD_CALL */
        int call_held;      /* HOLD_CALL: the callback's revocation waited */
        int group_held;   /* and the group's thread at the LeaveGroup answer */
        int dropped;      /* kretry saw its unassign call unanswered */
        int revoked_open; /* a revocation served before the close */
} hk = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void hk_reset(int mode) {
        pthread_mutex_lock(&hk.lock);
        hk.consumer = NULL;
        hk.close_at = 0;
        hk.queued = hk.revoking = hk.kicked = hk.leave_answered = 0;
        hk.held = hk.release = hk.stalled = hk.handled = 0;
        hk.mode                                        = mode;
        hk.call_held = hk.group_held = hk.dropped = hk.revoked_open = 0;
        pthread_mutex_unlock(&hk.lock);
}

/* Wait on hk.cond (hk.lock held) for at most @p ms. */
static void hk_wait(int ms) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)ms * 1000000;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&hk.cond, &hk.lock, &ts);
}

/* On librdkafka's group thread (hk.lock held), its termination waiting
 * for the LeaveGroup alone: hold it until that answer arrived (its op is
 * queued for this thread then), let the handler answer, and give the
 * callback's drain and commit time to queue the commit behind it. There
 * is no event to wait for there (the commit is an op in librdkafka's
 * queue): 50 ms is a thousand times what it takes. */
static void stall_group_thread(void) {
        hk.stalled       = 1;
        int64_t deadline = kt_now_ms() + LEAVE_DELAY_MS + 2000;
        while (!hk.leave_answered && kt_now_ms() < deadline)
                hk_wait(10);
        hk.release = 1;
        pthread_cond_broadcast(&hk.cond);
        pthread_mutex_unlock(&hk.lock);
        kt_nap_ms(50);
        pthread_mutex_lock(&hk.lock);
}

static int hk_until(const int *flag, int ms);

/* HOLD_CALL, on the line @p fac @p msg (hk.lock held): the callback of an
 * event queued before the close (its "revoking" or "closing: not taking"
 * line, before its call) waits until the group's thread, which no longer
 * waits for that call, got the LeaveGroup's answer; the group's thread is
 * held there while the callback makes its call, queued behind that
 * answer: served, if at all, once the group terminated. */
static void hold_call(const char *fac, const char *msg) {
        if (!strcmp(fac, "REBALANCE") && !strncmp(msg, "revoking ", 9) &&
            !hk.close_at)
                hk.revoked_open = 1;
        /* The callback's line before its call: a revocation's, or an
         * assignment's that a close does not take. */
        if (!strcmp(fac, "REBALANCE") &&
            (!strncmp(msg, "revoking ", 9) ||
             !strncmp(msg, "closing: not taking", 19)) &&
            hk.close_at && !hk.call_held) {
                hk.call_held = 1;
                hk_until(&hk.group_held, 5000);
        }
        if (!strcmp(fac, "rdkafka.LEAVEGROUP") &&
            strstr(msg, "response received") && hk.call_held &&
            !hk.group_held) {
                hk.group_held = 1;
                pthread_cond_broadcast(&hk.cond);
                pthread_mutex_unlock(&hk.lock);
                kt_nap_ms(CALL_WAIT_MS);
                pthread_mutex_lock(&hk.lock);
        }
        if (!strcmp(fac, "CLOSE") && strstr(msg, "unanswered"))
                hk.dropped = 1;
}

static void close_log(kretry_log_level_t level,
                      const char *fac,
                      const char *msg,
                      void *opaque) {
        it_log(level, fac, msg, opaque);
        pthread_mutex_lock(&hk.lock);
        int kick = 0;
        if (!strcmp(fac, "rdkafka.ASSIGN") && strstr(msg, "delegating"))
                hk.queued = 1;
        if (!strcmp(fac, "rdkafka.RECV") && strstr(msg, "LeaveGroupResponse"))
                hk.leave_answered = 1;
        if (hk.mode == HOLD_CALL) {
                hold_call(fac, msg);
                pthread_cond_broadcast(&hk.cond);
                pthread_mutex_unlock(&hk.lock);
                return;
        }
        /* The rebalance callback's revocation ("revoking N partition(s)"),
         * not a close's own before it leaves ("closing: revoking"). */
        if (!strcmp(fac, "REBALANCE") && !strncmp(msg, "revoking ", 9) &&
            hk.close_at && !hk.revoking)
                hk.revoking = hk.kicked = kick = 1;
        if (!strcmp(fac, "rdkafka.CGRPTERM") && hk.kicked && !hk.stalled &&
            strstr(msg, "waiting for 0 toppar(s), 0 commit(s), wait-leave,"))
                stall_group_thread();
        pthread_cond_broadcast(&hk.cond);
        rd_kafka_t *rk = hk.consumer;
        pthread_mutex_unlock(&hk.lock);
        if (!kick)
                return;
        /* kretry's callback began (this thread is its): the group's thread
         * runs its termination check after every request it serves, and
         * may have no other to serve before the LeaveGroup's answer. A
         * request with a timeout: a terminating group may drop it. */
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(0);
        rd_kafka_committed(rk, l, 100);
        rd_kafka_topic_partition_list_destroy(l);
}

/* "m-0".."m-2": OK at once; the last one: OK once released, or HOLD_MS
 * after the close began. */
static kretry_action_t close_handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        char last[16];
        snprintf(last, sizeof(last), "m-%d", CLOSE_N - 1);
        pthread_mutex_lock(&hk.lock);
        if (v && len == strlen(last) && !memcmp(v, last, len)) {
                hk.held = 1;
                pthread_cond_broadcast(&hk.cond);
                while (!hk.release &&
                       !(hk.close_at && kt_now_ms() > hk.close_at + HOLD_MS))
                        hk_wait(10);
        }
        hk.handled++;
        pthread_mutex_unlock(&hk.lock);
        return KRETRY_OK;
}

/* Wait (hk.lock held) until *@p flag is set or @p ms pass. */
static int hk_until(const int *flag, int ms) {
        int64_t deadline = kt_now_ms() + ms;
        while (!*flag && kt_now_ms() < deadline)
                hk_wait(10);
        return *flag;
}

/* HOLD_CALL and the assignment's test: how the close went, and that the
 * case was made (the group left without the @p call call). */
static void held_report(const char *assignor, const char *call, int64_t took) {
        pthread_mutex_lock(&hk.lock);
        int call_held = hk.call_held, group_held = hk.group_held;
        int dropped = hk.dropped;
        pthread_mutex_unlock(&hk.lock);
        fprintf(stderr,
                "\n    %s: close %lld ms, %s call held until the "
                "LeaveGroup's answer: %s, group thread held there: %s, the "
                "call dropped by librdkafka: %s\n",
                assignor, (long long)took, call, call_held ? "yes" : "no",
                group_held ? "yes" : "no", dropped ? "yes" : "no");
        KT_ASSERT(call_held && group_held);
}

/* An adapter of @p assignor's, committing every @p commit_ms, with
 * @p handler and the hook's log callback (librdkafka's group and protocol
 * debug lines). */
static kretry_adapter_t *close_adapter(it_env_t *env,
                                       const char *assignor,
                                       const char *commit_ms,
                                       kretry_handler_t *handler) {
        kretry_conf_t *conf = it_conf(
                env, "consumer.partition.assignment.strategy", assignor,
                "consumer.auto.commit.interval.ms", commit_ms,
                "consumer.heartbeat.interval.ms", "100", "revoke.timeout.ms",
                "5000", "consumer.debug", "cgrp,protocol", NULL);
        kretry_conf_set_handler(conf, handler, NULL);
        kretry_conf_set_route_cb(conf, NULL);
        kretry_conf_set_log_cb(conf, close_log, NULL);
        return it_adapter(conf);
}

/* The test's body, in the child: one partition of CLOSE_N messages; the
 * last one's handler call is running, the group's rebalance event waits
 * unserved (a Heartbeat answered REBALANCE_IN_PROGRESS), and the adapter
 * is closed. The close ends with KRETRY_ERR_OK and every message
 * committed. */
static void close_with_event_queued(const char *assignor, int mode) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = it_env_new("50ms", 1);
        KT_REQUIRE((mock = kt_cluster_mock(env->c)) != NULL);
        for (int i = 0; i < CLOSE_N; i++) {
                char v[16];
                snprintf(v, sizeof(v), "m-%d", i);
                it_produce(env, 0, "k", v, NULL);
        }
        hk_reset(mode);
        kretry_adapter_t *a =
                close_adapter(env, assignor, "600000", close_handler);
        pthread_mutex_lock(&hk.lock);
        hk.consumer = a->consumer;
        pthread_mutex_unlock(&hk.lock);
        int64_t deadline = kt_now_ms() + 60000;
        int held         = 0;
        while (!held && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 10);
                pthread_mutex_lock(&hk.lock);
                held = hk.held;
                pthread_mutex_unlock(&hk.lock);
        }
        KT_REQUIRE(held);
        /* From now on nobody polls: the rebalance's event waits. */
        pthread_mutex_lock(&hk.lock);
        hk.queued = 0;
        pthread_mutex_unlock(&hk.lock);
        rd_kafka_mock_push_request_errors(
                mock, 12 /* Heartbeat */, 1,
                RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
        pthread_mutex_lock(&hk.lock);
        int queued = hk_until(&hk.queued, 20000);
        pthread_mutex_unlock(&hk.lock);
        KT_REQUIRE(queued);
        KT_REQUIRE(rd_kafka_mock_broker_push_request_error_rtts(
                           mock, 1, 13 /* LeaveGroup */, 1,
                           RD_KAFKA_RESP_ERR_NO_ERROR, LEAVE_DELAY_MS) == 0);
        pthread_mutex_lock(&hk.lock);
        hk.close_at = kt_now_ms();
        pthread_mutex_unlock(&hk.lock);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        int64_t took = kt_now_ms() - hk.close_at;
        pthread_mutex_lock(&hk.lock);
        int handled = hk.handled, stalled = hk.stalled;
        pthread_mutex_unlock(&hk.lock);
        if (mode == HOLD_COMMIT)
                fprintf(stderr,
                        "\n    %s: %d handled, group thread held at its "
                        "termination: %s\n",
                        assignor, handled, stalled ? "yes" : "no");
        KT_ASSERT_INT_EQ(handled, CLOSE_N);
        /* Every message decided before the close is committed by it. */
        KT_ASSERT_INT_EQ(kt_committed(env->c, env->group, env->source, 0),
                         CLOSE_N);
        kretry_adapter_destroy(a);
        if (mode == HOLD_CALL)
                held_report(assignor, "unassign", took);
        it_env_destroy(env);
}

/* test_close_assign_after_leave_eager's handler: OK. */
static kretry_action_t ok_handler(kretry_msg_t *msg, void *opaque) {
        (void)msg;
        (void)opaque;
        pthread_mutex_lock(&hk.lock);
        hk.handled++;
        pthread_mutex_unlock(&hk.lock);
        return KRETRY_OK;
}

/* The body of test_close_assign_after_leave_eager, in the child: the
 * member handled every message, served a revocation (a rebalance under an
 * eager assignor), and is closed with the assignment that follows it
 * waiting unserved; the close's call for it is held as in
 * close_with_event_queued's HOLD_CALL. The close ends with
 * KRETRY_ERR_OK. */
static void close_with_assignment_queued(const char *assignor) {
        rd_kafka_mock_cluster_t *mock;
        it_env_t *env = it_env_new("50ms", 1);
        KT_REQUIRE((mock = kt_cluster_mock(env->c)) != NULL);
        for (int i = 0; i < CLOSE_N; i++)
                it_produce(env, 0, "k", "v", NULL);
        hk_reset(HOLD_CALL);
        kretry_adapter_t *a = close_adapter(env, assignor, "100", ok_handler);
        int64_t deadline    = kt_now_ms() + 60000;
        int step            = 0; /* 0: handling, 1: rebalancing, 2: done */
        while (step < 2 && kt_now_ms() < deadline) {
                kretry_adapter_poll(a, 10);
                pthread_mutex_lock(&hk.lock);
                if (!step && hk.handled == CLOSE_N) {
                        step = 1;
                        rd_kafka_mock_push_request_errors(
                                mock, 12 /* Heartbeat */, 1,
                                RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
                }
                if (step == 1 && hk.revoked_open) {
                        /* From now on nobody polls: the assignment that
                         * follows waits. */
                        step      = 2;
                        hk.queued = 0;
                }
                pthread_mutex_unlock(&hk.lock);
        }
        KT_REQUIRE(step == 2);
        pthread_mutex_lock(&hk.lock);
        int queued  = hk_until(&hk.queued, 20000);
        hk.close_at = kt_now_ms();
        pthread_mutex_unlock(&hk.lock);
        KT_REQUIRE(queued);
        KT_ASSERT_INT_EQ(kretry_adapter_close(a), KRETRY_ERR_OK);
        int64_t took = kt_now_ms() - hk.close_at;
        kretry_adapter_destroy(a);
        held_report(assignor, "assign", took);
        it_env_destroy(env);
}

/* Run @p test (this binary's test of that name) in a child process: its
 * status, or -1 when it did not end within @p bound_ms (killed then). */
static int run_child(const char *test, int bound_ms) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
                setenv(CHILD_ENV, test, 1);
                execl("/proc/self/exe", "it_close", test, (char *)NULL);
                _exit(127);
        }
        if (pid < 0)
                return -1;
        int st           = 0;
        int64_t deadline = kt_now_ms() + bound_ms;
        while (waitpid(pid, &st, WNOHANG) == 0) {
                if (kt_now_ms() > deadline) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &st, 0);
                        return -1;
                }
                kt_nap_ms(20);
        }
        return st;
}

/* The test @p test: its body in the child, the child's end checked here
 * (within @p bound_s). */
static void
close_test(const char *test, const char *assignor, int mode, int bound_s) {
        if (getenv(CHILD_ENV)) {
                if (mode < 0)
                        close_with_assignment_queued(assignor);
                else
                        close_with_event_queued(assignor, mode);
                return;
        }
        if (!kt_classic_protocol("a rebalance injected through the classic "
                                 "Heartbeat"))
                return;
        /* The mock only: fault injection, and librdkafka's own threads
         * held from the log callback. */
        it_env_t *env = it_env_new("50ms", 1);
        rd_kafka_mock_cluster_t *mock =
                kt_mock_only(env->c, "none: the LeaveGroup is delayed and "
                                     "librdkafka's group thread held "
                                     "through the test cluster's faults");
        it_env_destroy(env);
        if (!mock)
                return;
        int st = run_child(test, bound_s * 1000);
        KT_CHECK_MSG(st >= 0, CU_FALSE, "%s: the close did not end in %d s",
                     assignor, bound_s);
        KT_CHECK_MSG(st < 0 || !WIFSIGNALED(st), CU_FALSE,
                     "%s: the close ended by signal %d%s", assignor,
                     WIFSIGNALED(st) ? WTERMSIG(st) : 0,
                     WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT
                             ? " (SIGABRT: librdkafka's assert in its "
                               "consumer close, its issue 4027: a commit "
                               "after the group decided to terminate)"
                             : "");
        KT_CHECK_MSG(st < 0 || WIFSIGNALED(st) ||
                             (WIFEXITED(st) && WEXITSTATUS(st) == 0),
                     CU_FALSE, "%s: the child test failed (exit %d, above)",
                     assignor, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void test_close_revoke_queued_eager(void) {
        close_test("test_close_revoke_queued_eager", "range", HOLD_COMMIT, 120);
}

static void test_close_assign_queued_cooperative(void) {
        close_test("test_close_assign_queued_cooperative", "cooperative-sticky",
                   HOLD_COMMIT, 120);
}

/* The eager revocation queued before the close: the group unassigns and
 * leaves without waiting for the callback's unassign call, which comes
 * once the LeaveGroup was answered, and is served after the group
 * terminated (librdkafka drops it unanswered). The close ends within its
 * bound all the same (revoke.timeout.ms 5 s + 5 s; the child is given
 * 60 s: a close that waits for the call waits for good). */
static void test_close_unassign_after_leave_eager(void) {
        close_test("test_close_unassign_after_leave_eager", "range", HOLD_CALL,
                   60);
}

/* The same for the assign call of an eager assignment queued before the
 * close (the rebalance's second half): the close does not take it on, and
 * its call, which the leaving group does not wait for either, may be
 * dropped the same way. */
static void test_close_assign_after_leave_eager(void) {
        close_test("test_close_assign_after_leave_eager", "range", -1, 60);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {
                KT_TEST(test_close_revoke_queued_eager),
                KT_TEST(test_close_assign_queued_cooperative),
                KT_TEST(test_close_unassign_after_leave_eager),
                KT_TEST(test_close_assign_after_leave_eager), KT_END};
        return kt_main("it_close", tests, argc, argv);
}
