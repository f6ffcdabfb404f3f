/* The external handler runner of `kretry run`, without any broker. */
#include "exec_handler.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static kretry_exec_result_t res;

/* Run @p cmd with @p input and no environment changes; fails the test when
 * the command cannot start. */
static void run_with(const char *cmd, const void *input, size_t len) {
        kretry_exec_opts_t o;
        char err[256];
        kretry_exec_opts_init(&o);
        o.input     = input;
        o.input_len = len;
        int rc      = kretry_exec_run(cmd, &o, &res, err, sizeof(err));
        KT_CHECK_MSG(rc == 0, CU_TRUE, "%s: %s", cmd, err);
}

static void run(const char *cmd) {
        run_with(cmd, NULL, 0);
}

static void test_exit_codes(void) {
        run("exit 0");
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_EXITED);
        KT_ASSERT_INT_EQ(res.status, 0);
        KT_ASSERT_STR_EQ(res.last_line, "");
        run("exit 75");
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_EXITED);
        KT_ASSERT_INT_EQ(res.status, 75);
        run("false");
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_EXITED);
        KT_ASSERT_INT_EQ(res.status, 1);
        run("/nonexistent/handler");
        KT_ASSERT_INT_EQ(res.status, 127);
        KT_ASSERT(strstr(res.last_line, "not found") != NULL);
}

static void test_signal(void) {
        run("kill -KILL $$");
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_SIGNALED);
        KT_ASSERT_INT_EQ(res.status, SIGKILL);
        run("echo dying >&2; kill -TERM $$");
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_SIGNALED);
        KT_ASSERT_INT_EQ(res.status, SIGTERM);
        KT_ASSERT_STR_EQ(res.last_line, "dying");
}

static void test_stderr_last_line(void) {
        run("printf 'first\\n\\nsecond \\r\\n\\n  \\n' >&2; exit 3");
        KT_ASSERT_INT_EQ(res.status, 3);
        KT_ASSERT_STR_EQ(res.last_line, "second");
        run("printf 'a\\nno newline' >&2");
        KT_ASSERT_STR_EQ(res.last_line, "no newline");
        run("printf 'nul\\000inside\\n' >&2");
        KT_ASSERT_STR_EQ(res.last_line, "nul inside");
        /* An over-long line keeps its start, bounded. */
        run("head -c 10000 /dev/zero | tr '\\0' x >&2; echo >&2");
        KT_ASSERT_INT_EQ(strlen(res.last_line), KRETRY_EXEC_LINE_MAX - 1);
        KT_ASSERT(res.last_line[0] == 'x');
        /* stdout is not captured. */
        run("echo on-stdout >/dev/null; echo on-stderr >&2");
        KT_ASSERT_STR_EQ(res.last_line, "on-stderr");
}

static char *big_input(size_t len) {
        char *buf = malloc(len);
        for (size_t i = 0; i < len; i++)
                buf[i] = (char)('a' + i % 26);
        return buf;
}

static void test_large_stdin(void) {
        const size_t len = 1024 * 1024;
        char *buf        = big_input(len);
        run_with("wc -c >&2", buf, len);
        KT_ASSERT_INT_EQ(res.status, 0);
        KT_ASSERT_STR_EQ(res.last_line, "1048576");
        KT_ASSERT_INT_EQ(res.stdin_written, len);
        /* The child fills its stderr pipe before it reads stdin: only
         * writing and reading together avoids a deadlock. */
        run_with("head -c 1000000 /dev/zero | tr '\\0' '\\n' >&2;"
                 " tail -c 3 | od -An -c | tr -d ' ' >&2",
                 buf, len);
        KT_ASSERT_INT_EQ(res.status, 0);
        /* Byte i is 'a' + i % 26; 1048575 % 26 = 21: "tuv" ends it. */
        KT_ASSERT_STR_EQ(res.last_line, "tuv");
        free(buf);
}

static void test_child_ignores_stdin(void) {
        const size_t len = 1024 * 1024;
        char *buf        = big_input(len);
        sigset_t pending;
        run_with("echo done >&2; exit 4", buf, len);
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_EXITED);
        KT_ASSERT_INT_EQ(res.status, 4);
        KT_ASSERT_STR_EQ(res.last_line, "done");
        KT_ASSERT(res.stdin_written < len);
        /* Closing stdin early, then running on. */
        run_with("exec 0<&-; sleep 0.1; echo after >&2", buf, len);
        KT_ASSERT_INT_EQ(res.status, 0);
        KT_ASSERT_STR_EQ(res.last_line, "after");
        /* The EPIPE's SIGPIPE was absorbed: nothing left pending here. */
        sigpending(&pending);
        KT_ASSERT(!sigismember(&pending, SIGPIPE));
        free(buf);
}

static void test_env(void) {
        kretry_exec_opts_t o;
        char err[256];
        const char *env[]   = {"KRETRY_TOPIC=orders", "KRETRY_ATTEMPT=2", NULL};
        const char *unset[] = {"KRETRY_KEY", NULL};
        setenv("KRETRY_KEY", "leaked-from-parent", 1);
        setenv("KRETRY_TOPIC", "stale", 1);
        setenv("KT_INHERITED", "yes", 1);
        kretry_exec_opts_init(&o);
        o.env   = env;
        o.unset = unset;
        KT_REQUIRE(kretry_exec_run("[ -z \"${KRETRY_KEY+set}\" ] || exit 9;"
                                   "[ \"$(env | grep -c '^KRETRY_TOPIC=')\" = "
                                   "1 ] || exit 8;"
                                   "echo \"$KRETRY_TOPIC $KRETRY_ATTEMPT "
                                   "$KT_INHERITED\" >&2",
                                   &o, &res, err, sizeof(err)) == 0);
        KT_ASSERT_INT_EQ(res.status, 0);
        KT_ASSERT_STR_EQ(res.last_line, "orders 2 yes");
        unsetenv("KRETRY_KEY");
        unsetenv("KRETRY_TOPIC");
        unsetenv("KT_INHERITED");
}

static void test_child_setup(void) {
        /* kretry may ignore SIGPIPE; the command must still get the default
         * disposition, and its own process group. */
        void (*prev)(int) = signal(SIGPIPE, SIG_IGN);
        run("kill -PIPE $$");
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_SIGNALED);
        KT_ASSERT_INT_EQ(res.status, SIGPIPE);
        signal(SIGPIPE, prev);
        run("[ \"$(cut -d' ' -f5 /proc/$$/stat)\" = \"$$\" ]");
        KT_ASSERT_INT_EQ(res.status,
                         0); /* kretry runs handlers on threads that block
                              * SIGINT and SIGTERM: the command must not inherit
                              * that, or a stop's SIGTERM is lost. */
        sigset_t stop, prev_mask;
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        pthread_sigmask(SIG_BLOCK, &stop, &prev_mask);
        /* The command's own mask, read by the command itself: the shell
         * blocks signals for a moment around each fork, so reading its
         * status from a child of it raced (1 in 8 runs failed). exec keeps
         * the mask. */
        run("exec grep -q '^SigBlk:[[:space:]]*0*$' /proc/self/status");
        pthread_sigmask(SIG_SETMASK, &prev_mask, NULL);
        KT_ASSERT_INT_EQ(res.status, 0);
}

/* The value is a sealed file, whole before the command starts: the
 * command can read it twice, and cannot change it. */
static void test_value_file(void) {
        run_with("[ -f /dev/stdin ] && [ \"$(cat)\" = hello ] && "
                 "[ \"$(cat /dev/stdin)\" = hello ] || exit 3; "
                 "printf x >/proc/self/fd/0 2>/dev/null && exit 4; exit 0",
                 "hello", 5);
        KT_ASSERT_INT_EQ(res.status, 0);
        run_with("[ \"$(wc -c)\" = 0 ]", NULL, 0);
        KT_ASSERT_INT_EQ(res.status, 0);
}

static void test_echo_and_pid_slot(void) {
        kretry_exec_opts_t o;
        char err[256], buf[64] = {0};
        volatile sig_atomic_t slot = -1;
        int p[2];
        KT_REQUIRE(pipe(p) == 0);
        kretry_exec_opts_init(&o);
        o.echo_fd  = p[1];
        o.pid_slot = &slot;
        KT_REQUIRE(kretry_exec_run("echo \"pid $$\" >&2", &o, &res, err,
                                   sizeof(err)) == 0);
        close(p[1]);
        KT_ASSERT(read(p[0], buf, sizeof(buf) - 1) > 0);
        close(p[0]);
        KT_ASSERT(!strncmp(buf, "pid ", 4) && atoi(buf + 4) > 0);
        KT_ASSERT_INT_EQ(slot, 0);
}

/* The guard: this process's child named kretry-guard; 0 when none. */
/* Write @p body to DIR/NAME with @p mode; the path goes to @p path. */
static void file_make(const char *dir,
                      const char *name,
                      const char *body,
                      mode_t mode,
                      char *path,
                      size_t size) {
        snprintf(path, size, "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        KT_REQUIRE(f != NULL);
        fputs(body, f);
        fclose(f);
        KT_REQUIRE(chmod(path, mode) == 0);
}

/* Run @p cmd with PATH set to @p path (NULL: inherited). */
static void run_path(const char *cmd, const char *path) {
        kretry_exec_opts_t o;
        char err[256], var[512];
        const char *env[] = {var, NULL};
        snprintf(var, sizeof(var), "PATH=%s", path ? path : "");
        kretry_exec_opts_init(&o);
        o.env = path ? env : NULL;
        KT_CHECK_MSG(kretry_exec_run(cmd, &o, &res, err, sizeof(err)) == 0,
                     CU_TRUE, "%s: %s", cmd, err);
}

/* A command of plain words is exec'd without the shell between: the
 * script's parent is the caller itself. Whatever is not plain, or cannot
 * be exec'd, still means what it means to /bin/sh. */
static void test_plain_command(void) {
        char dir[] = "/tmp/kt-plain-XXXXXX", h[256], cmd[512], want[64];
        char noshebang[256], noexec[256];
        KT_REQUIRE(mkdtemp(dir) != NULL);
        file_make(dir, "h.sh", "#!/bin/sh\necho \"ppid=$PPID $# $1 $2\" >&2\n",
                  0755, h, sizeof(h));
        file_make(dir, "noshebang", "echo \"by sh $1\" >&2\n", 0755, noshebang,
                  sizeof(noshebang));
        file_make(dir, "noexec", "#!/bin/sh\nexit 0\n", 0644, noexec,
                  sizeof(noexec));

        /* A script path with arguments, and the same found on PATH. */
        snprintf(want, sizeof(want), "ppid=%d 2 one two", (int)getpid());
        snprintf(cmd, sizeof(cmd), "%s  one\ttwo", h);
        run(cmd);
        KT_ASSERT_INT_EQ(res.status, 0);
        KT_ASSERT_STR_EQ(res.last_line, want);
        snprintf(cmd, sizeof(cmd), "%s:/usr/bin:/bin", dir);
        run_path("h.sh one two", cmd);
        KT_ASSERT_STR_EQ(res.last_line, want);

        /* Quoting is the shell's: one argument, through sh. */
        run_path("h.sh 'one two'", cmd);
        KT_ASSERT(strstr(res.last_line, " 1 one two") != NULL);

        /* Not exec'able directly: the shell runs it (a script without #!)
         * or says why not, as it always did. */
        snprintf(cmd, sizeof(cmd), "%s arg", noshebang);
        run(cmd);
        KT_ASSERT_INT_EQ(res.status, 0);
        KT_ASSERT_STR_EQ(res.last_line, "by sh arg");
        run(noexec);
        KT_ASSERT_INT_EQ(res.status, 126);
        run_path("kt-no-such-handler", "/usr/bin:/bin");
        KT_ASSERT_INT_EQ(res.status, 127);
        KT_ASSERT(strstr(res.last_line, "not found") != NULL);

        unlink(h);
        unlink(noshebang);
        unlink(noexec);
        rmdir(dir);
}

/* Handler threads run their commands at once, beside an application's own
 * threads: each plain command keeps its own words, whoever else splits
 * strings meanwhile (strtok() keeps one position for the whole process). */
static atomic_int splitting;

static void *strtok_user(void *arg) {
        (void)arg;
        while (atomic_load(&splitting)) {
                char s[] = "a b c d e f g h i j k l m n o p";
                for (char *w = strtok(s, " "); w; w = strtok(NULL, " "))
                        ;
        }
        return NULL;
}

static void *plain_thread(void *arg) {
        const char *script = ((const char **)arg)[0];
        int *bad           = ((int **)arg)[1];
        char cmd[512], want[64];
        for (int i = 0; i < 100; i++) {
                kretry_exec_opts_t o;
                kretry_exec_result_t r;
                char err[256];
                snprintf(cmd, sizeof(cmd), "%s w%d x%d y z", script, i, i);
                snprintf(want, sizeof(want), "4 w%d x%d", i, i);
                kretry_exec_opts_init(&o);
                if (kretry_exec_run(cmd, &o, &r, err, sizeof(err)) ||
                    r.status != 0 || strcmp(r.last_line, want))
                        (*bad)++;
        }
        return NULL;
}

static void test_plain_command_threads(void) {
        char dir[] = "/tmp/kt-plaint-XXXXXX", h[256];
        KT_REQUIRE(mkdtemp(dir) != NULL);
        file_make(dir, "h.sh", "#!/bin/sh\necho \"$# $1 $2\" >&2\n", 0755, h,
                  sizeof(h));
        enum { T = 4 };
        pthread_t th[T], user;
        int bad[T] = {0};
        const void *arg[T][2];
        atomic_store(&splitting, 1);
        KT_REQUIRE(pthread_create(&user, NULL, strtok_user, NULL) == 0);
        for (int i = 0; i < T; i++) {
                arg[i][0] = h;
                arg[i][1] = &bad[i];
                KT_REQUIRE(pthread_create(&th[i], NULL, plain_thread,
                                          (void *)arg[i]) == 0);
        }
        int sum = 0;
        for (int i = 0; i < T; i++) {
                pthread_join(th[i], NULL);
                sum += bad[i];
        }
        atomic_store(&splitting, 0);
        pthread_join(user, NULL);
        KT_CHECK_MSG(sum == 0, CU_FALSE,
                     "%d of %d commands lost or mixed their words", sum,
                     T * 100);
        unlink(h);
        rmdir(dir);
}

static pid_t guard_find(void) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        pid_t found = 0;
        while (d && !found && (e = readdir(d))) {
                char path[300], comm[32];
                int ppid = 0;
                snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
                FILE *f = fopen(path, "r");
                if (!f)
                        continue;
                if (fscanf(f, "%*d (%31[^)]) %*c %d", comm, &ppid) == 2 &&
                    ppid == getpid() && !strcmp(comm, "kretry-guard"))
                        found = (pid_t)atoi(e->d_name);
                fclose(f);
        }
        if (d)
                closedir(d);
        return found;
}

/* A guard that dies (the OOM killer may pick it) is replaced before the
 * next command, which runs; without the replacement every command after
 * it would be refused as unguarded. */
static void test_guard_replaced(void) {
        siginfo_t si;
        run("true");
        pid_t guard = guard_find();
        KT_CHECK_MSG(guard > 0, CU_TRUE, "a kretry-guard child runs");
        KT_ASSERT_INT_EQ(kill(guard, SIGKILL), 0);
        /* Its death, awaited without reaping it (that is kretry's). */
        KT_ASSERT_INT_EQ(waitid(P_PID, (id_t)guard, &si, WEXITED | WNOWAIT), 0);
        run("true");
        KT_ASSERT_INT_EQ(res.how, KRETRY_EXEC_EXITED);
        KT_ASSERT_INT_EQ(res.status, 0);
        pid_t next = guard_find();
        KT_CHECK_MSG(next > 0 && next != guard, CU_FALSE,
                     "a new guard runs (%d, was %d)", (int)next, (int)guard);
}

int main(int argc, char **argv) {
        static const kt_test_t tests[] = {KT_TEST(test_exit_codes),
                                          KT_TEST(test_signal),
                                          KT_TEST(test_stderr_last_line),
                                          KT_TEST(test_large_stdin),
                                          KT_TEST(test_child_ignores_stdin),
                                          KT_TEST(test_env),
                                          KT_TEST(test_child_setup),
                                          KT_TEST(test_value_file),
                                          KT_TEST(test_echo_and_pid_slot),
                                          KT_TEST(test_guard_replaced),
                                          KT_TEST(test_plain_command),
                                          KT_TEST(test_plain_command_threads),
                                          KT_END};
        return kt_main("exec_handler", tests, argc, argv);
}
