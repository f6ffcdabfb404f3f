/*
 * One handler command per message. The value goes to the child's stdin
 * while its stderr is read, both through one poll() loop: writing all of a
 * large value first could deadlock against a child that fills its stderr
 * pipe before reading stdin.
 */
#define _GNU_SOURCE /* pipe2(): pipes that no other spawn can inherit */
#include "exec_handler.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define IO_CHUNK 65536

/* The stderr tail: the line being read and the last non-empty one. */
typedef struct {
        char cur[KRETRY_EXEC_LINE_MAX];
        size_t cur_len;
        char *last; /* the caller's result buffer */
} line_acc_t;

void kretry_exec_opts_init(kretry_exec_opts_t *opts) {
        memset(opts, 0, sizeof(*opts));
        opts->echo_fd = -1;
}

static void line_end(line_acc_t *acc) {
        size_t n = acc->cur_len;
        while (n > 0 && (acc->cur[n - 1] == ' ' || acc->cur[n - 1] == '\t' ||
                         acc->cur[n - 1] == '\r'))
                n--;
        if (n > 0) {
                memcpy(acc->last, acc->cur, n);
                acc->last[n] = '\0';
        }
        acc->cur_len = 0;
}

static void line_feed(line_acc_t *acc, const char *buf, size_t len) {
        for (size_t i = 0; i < len; i++) {
                if (buf[i] == '\n') {
                        line_end(acc);
                        continue;
                }
                /* Keep the start of an over-long line: that is where an
                 * error message usually says what went wrong. */
                if (acc->cur_len < sizeof(acc->cur) - 1)
                        acc->cur[acc->cur_len++] = buf[i] ? buf[i] : ' ';
        }
}

static int env_name_is(const char *entry, const char *name) {
        size_t n = strlen(name);
        return !strncmp(entry, name, n) && entry[n] == '=';
}

static int env_is_dropped(const char *entry, const kretry_exec_opts_t *opts) {
        for (const char *const *u = opts->unset; u && *u; u++)
                if (env_name_is(entry, *u))
                        return 1;
        for (const char *const *e = opts->env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                size_t n       = eq ? (size_t)(eq - *e) : strlen(*e);
                if (!strncmp(entry, *e, n) && entry[n] == '=')
                        return 1;
        }
        return 0;
}

/* The child's environment: built here, before spawning, because a forked
 * child of a threaded process may not allocate. Strings are borrowed. */
static char **env_build(const kretry_exec_opts_t *opts) {
        size_t cnt = 0, add = 0;
        while (environ && environ[cnt])
                cnt++;
        while (opts->env && opts->env[add])
                add++;
        char **envp = calloc(cnt + add + 1, sizeof(*envp));
        if (!envp)
                return NULL;
        size_t n = 0;
        for (size_t i = 0; i < cnt; i++)
                if (!env_is_dropped(environ[i], opts))
                        envp[n++] = environ[i];
        for (size_t i = 0; i < add; i++)
                envp[n++] = (char *)opts->env[i];
        return envp;
}

/* Move @p fd above stdin/stdout/stderr: when kretry itself runs with a
 * standard fd closed, a pipe end may land on 0..2 and the dup2() into the
 * child's stdio would then clobber it or be a no-op that keeps CLOEXEC. */
static int fd_above_stdio(int fd) {
        if (fd > 2)
                return fd;
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        return nfd;
}

static int pipe_make(int fds[2]) {
        if (pipe2(fds, O_CLOEXEC) == -1)
                return -1;
        fds[0] = fd_above_stdio(fds[0]);
        fds[1] = fd_above_stdio(fds[1]);
        if (fds[0] == -1 || fds[1] == -1) {
                int e = errno;
                for (int i = 0; i < 2; i++)
                        if (fds[i] != -1)
                                close(fds[i]);
                fds[0] = fds[1] = -1;
                errno           = e;
                return -1;
        }
        return 0;
}

static int
spawn_child(const char *cmd, char **envp, int in_rd, int err_wr, pid_t *pidp) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        sigset_t dfl;
        char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL};

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in_rd, STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&fa, err_wr, STDERR_FILENO);
        posix_spawnattr_init(&at);
        /* Own process group: Ctrl-C on a terminal reaches kretry only, which
         * lets the command finish the message. SIGPIPE back to default in
         * case kretry's caller ignored it: an ignored disposition survives
         * exec and would change how the command's own pipelines behave. */
        posix_spawnattr_setflags(&at,
                                 POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setpgroup(&at, 0);
        sigemptyset(&dfl);
        sigaddset(&dfl, SIGPIPE);
        posix_spawnattr_setsigdefault(&at, &dfl);
        int rc = posix_spawn(pidp, "/bin/sh", &fa, &at, argv, envp);
        posix_spawnattr_destroy(&at);
        posix_spawn_file_actions_destroy(&fa);
        return rc;
}

/* Write what the pipe takes now. Closes *fdp when everything was written or
 * the child closed its stdin (EPIPE: not an error, it did not need it). */
static void stdin_pump(int *fdp,
                       const kretry_exec_opts_t *opts,
                       size_t *offp,
                       int *epipep) {
        size_t left = opts->input_len - *offp;
        ssize_t n   = 0;
        if (left > 0) {
                n = write(*fdp, (const char *)opts->input + *offp,
                          left < IO_CHUNK ? left : IO_CHUNK);
                if (n > 0)
                        *offp += (size_t)n;
                else if (n == -1 && (errno == EAGAIN || errno == EINTR))
                        return;
                else if (n == -1 && errno == EPIPE)
                        *epipep = 1;
        }
        if (n == -1 || *offp == opts->input_len) {
                close(*fdp);
                *fdp = -1;
        }
}

static void echo_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n == -1 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return; /* the operator's stderr is gone: drop */
                buf += n;
                len -= (size_t)n;
        }
}

static void
stderr_drain(int *fdp, const kretry_exec_opts_t *opts, line_acc_t *acc) {
        char buf[IO_CHUNK];
        ssize_t n = read(*fdp, buf, sizeof(buf));
        if (n == -1 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                line_end(acc); /* a last line without '\n' counts too */
                close(*fdp);
                *fdp = -1;
                return;
        }
        line_feed(acc, buf, (size_t)n);
        if (opts->echo_fd >= 0)
                echo_all(opts->echo_fd, buf, (size_t)n);
}

/* Feed stdin and drain stderr until both are closed. SIGPIPE is blocked in
 * this thread meanwhile, and one raised by our own write is consumed, so
 * neither the process nor another thread sees it. */
static void io_loop(int in_fd,
                    int err_fd,
                    const kretry_exec_opts_t *opts,
                    line_acc_t *acc,
                    size_t *writtenp) {
        sigset_t pipe_set, old, pending;
        int epipe = 0;

        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        sigpending(&pending);
        int was_pending = sigismember(&pending, SIGPIPE);

        fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);
        fcntl(err_fd, F_SETFL, fcntl(err_fd, F_GETFL) | O_NONBLOCK);
        if (opts->input_len == 0) {
                close(in_fd);
                in_fd = -1;
        }
        while (in_fd != -1 || err_fd != -1) {
                /* poll() skips negative fds: a closed side drops out. */
                struct pollfd p[2] = {{in_fd, POLLOUT, 0}, {err_fd, POLLIN, 0}};
                if (poll(p, 2, -1) == -1)
                        continue; /* EINTR: a signal for kretry, go on */
                if (p[0].revents)
                        stdin_pump(&in_fd, opts, writtenp, &epipe);
                if (p[1].revents)
                        stderr_drain(&err_fd, opts, acc);
        }

        if (epipe && !was_pending) {
                const struct timespec zero = {0, 0};
                sigtimedwait(&pipe_set, NULL, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void wait_child(pid_t pid, kretry_exec_result_t *res) {
        int st = 0;
        while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
                ;
        if (WIFSIGNALED(st)) {
                res->how    = KRETRY_EXEC_SIGNALED;
                res->status = WTERMSIG(st);
        } else {
                res->how    = KRETRY_EXEC_EXITED;
                res->status = WEXITSTATUS(st);
        }
}

int kretry_exec_run(const char *cmd,
                    const kretry_exec_opts_t *opts,
                    kretry_exec_result_t *res,
                    char *errstr,
                    size_t errstr_size) {
        int in[2] = {-1, -1}, err[2] = {-1, -1};
        char **envp = NULL;
        pid_t pid;
        int rc;
        line_acc_t *acc = NULL;

        memset(res, 0, sizeof(*res));
        if (!(envp = env_build(opts)) || !(acc = calloc(1, sizeof(*acc)))) {
                rc = ENOMEM;
                goto err;
        }
        acc->last = res->last_line;
        if (pipe_make(in) == -1 || pipe_make(err) == -1) {
                rc = errno;
                goto err;
        }
        if ((rc = spawn_child(cmd, envp, in[0], err[1], &pid)))
                goto err;
        if (opts->pid_slot)
                *opts->pid_slot = (sig_atomic_t)pid;
        close(in[0]);
        close(err[1]);
        io_loop(in[1], err[0], opts, acc, &res->stdin_written);
        wait_child(pid, res);
        if (opts->pid_slot)
                *opts->pid_slot = 0;
        free(acc);
        free(envp);
        return 0;

err:
        if (errstr && errstr_size)
                snprintf(errstr, errstr_size, "cannot start /bin/sh: %s",
                         strerror(rc));
        for (int i = 0; i < 2; i++) {
                if (in[i] != -1)
                        close(in[i]);
                if (err[i] != -1)
                        close(err[i]);
        }
        free(acc);
        free(envp);
        return rc;
}
