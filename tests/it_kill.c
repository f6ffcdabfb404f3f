/*
 * (f) A consumer process is SIGKILLed mid-stream; a fresh one finishes.
 * Every produced message must be accounted for — handled OK at least once,
 * or in the DLQ. Duplicates are allowed (at least once) and reported.
 */
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 600

static pid_t spawn(const kt_cluster_t *c, const char *src, const char *grp,
                   const char *out) {
        pid_t pid = fork();
        if (pid == 0) {
                execl(IT_WORKER_PATH, "it_worker", kt_cluster_bootstrap(c), src,
                      grp, out, (char *)NULL);
                _exit(127);
        }
        return pid;
}

/* Count lines handled so far and mark them in @p seen. */
static int read_done(const char *out, int *seen, int *dups) {
        FILE *f = fopen(out, "r");
        int lines = 0, i;
        if (!f)
                return 0;
        memset(seen, 0, sizeof(int) * N);
        while (fscanf(f, "%d", &i) == 1) {
                lines++;
                if (i >= 0 && i < N)
                        seen[i]++;
        }
        fclose(f);
        *dups = 0;
        for (int k = 0; k < N; k++)
                *dups += seen[k] > 1 ? seen[k] - 1 : 0;
        return lines;
}

static void nap(void) {
        /* Waiting on another process's progress: no event to wait on. */
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
}

static void mark_dlq(const rd_kafka_message_t *m, void *opaque) {
        int *dlq = opaque;
        char v[32];
        snprintf(v, sizeof(v), "%.*s", (int)(m->len < 20 ? m->len : 20),
                 (const char *)m->payload);
        int i = atoi(v + 2);
        if (i >= 0 && i < N)
                dlq[i]++;
}

static int expected_dlq(int i) {
        return i % 11 == 0;
}

static void test_kill_and_resume(void) {
        kt_cluster_t *c = kt_cluster_new(1);
        char src[128], grp[128], t[200], out[256];
        KT_REQUIRE(kt_cluster_topic(c, "kill", 3, src, sizeof(src)) == 0);
        snprintf(t, sizeof(t), "%s.retry.1", src);
        KT_REQUIRE(kt_cluster_topic_named(c, t, 3) == 0);
        snprintf(t, sizeof(t), "%s.dlq", src);
        KT_REQUIRE(kt_cluster_topic_named(c, t, 3) == 0);
        kt_unique_name("kill-grp", grp, sizeof(grp));
        snprintf(out, sizeof(out), "/tmp/kretry-it-kill-%d.out", (int)getpid());
        unlink(out);
        for (int i = 0; i < N; i++) {
                char v[32];
                int n = snprintf(v, sizeof(v), "n-%d", i);
                KT_REQUIRE(kt_produce(c, src, i % 3, v, (size_t)n, v,
                                      (size_t)n, NULL) == 0);
        }
        int seen[N], dups = 0, dlq[N];
        pid_t w1 = spawn(c, src, grp, out);
        int64_t deadline = kt_now_ms() + 30000;
        while (read_done(out, seen, &dups) < N / 4 && kt_now_ms() < deadline)
                nap();
        kill(w1, SIGKILL);
        int st;
        waitpid(w1, &st, 0);
        int at_kill = read_done(out, seen, &dups);
        for (int p = 0; p < 3; p++)
                fprintf(stderr, "  committed at kill: [%d] %lld\n", p,
                        (long long)kt_committed(c, grp, src, p));
        KT_CHECK_MSG(at_kill < N - N / 11, CU_FALSE,
                     "the kill landed after the stream finished (%d lines)",
                     at_kill);

        pid_t w2 = spawn(c, src, grp, out);
        int expected_ok = 0;
        for (int i = 0; i < N; i++)
                expected_ok += !expected_dlq(i);
        deadline = kt_now_ms() + 60000;
        int missing = expected_ok;
        while (missing > 0 && kt_now_ms() < deadline) {
                nap();
                read_done(out, seen, &dups);
                missing = 0;
                for (int i = 0; i < N; i++)
                        missing += !expected_dlq(i) && !seen[i];
        }
        kill(w2, SIGTERM);
        waitpid(w2, &st, 0);
        KT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);

        memset(dlq, 0, sizeof(dlq));
        /* The DLQ may hold duplicates too: read all of it. */
        kt_consume(c, t, N, 4000, mark_dlq, dlq);
        int lost = 0;
        for (int i = 0; i < N; i++)
                if (!(expected_dlq(i) ? dlq[i] : seen[i])) {
                        if (lost++ < 5)
                                fprintf(stderr, "  lost: n-%d\n", i);
                }
        read_done(out, seen, &dups);
        fprintf(stderr, "  handled %d before the kill; duplicates %d; lost %d\n",
                at_kill, dups, lost);
        KT_ASSERT_INT_EQ(lost, 0);
        unlink(out);
        kt_cluster_destroy(c);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_kill_and_resume), KT_END};
        return kt_main("it_kill", tests, argc, argv);
}
