/*
 * One handler command per message. The value is written in full to a
 * sealed memory file before the child starts, and that file is its stdin:
 * the child gets the whole value or none (kretry killed before the spawn),
 * and kretry only reads the child's stderr, so a child that fills its
 * stderr pipe before reading stdin cannot deadlock against it.
 */
/* pipe2(), memfd_create(): fds no spawn inherits; clone() */
#define _GNU_SOURCE
#include "exec_handler.h"

#include "exec_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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

/* The child's environment: built here, before spawning, because the child
 * runs in kretry's memory and may not allocate. Strings are borrowed. */
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

/* Words of a command run without the shell (plain_command()). */
#define PLAIN_WORDS_MAX 32

/* What the child needs between its start and exec, all prepared before:
 * the child shares kretry's memory and may not allocate or lock. */
typedef struct {
        char *argv[4];
        /* A plain command: the program's path and its words, exec'd
         * directly, /bin/sh -c (argv) only when that exec fails. NULL:
         * the shell runs the command. */
        char *path;
        char *words[PLAIN_WORDS_MAX + 1];
        char **envp;
        int in_fd, err_fd, status_fd, guard_fd;
        pid_t parent;
} child_t;

/* AddressSanitizer keeps its state per thread and checks each stack
 * against its thread's: a child running on a stack of its own in kretry's
 * memory trips it, so sanitized builds (the tests' sanitizer pass) fork. */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_BY_FORK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_BY_FORK 1
#endif
#endif

/* The child's stack while it runs in kretry's memory, on the spawning
 * thread's stack (that thread is suspended until the exec): what the child
 * calls is a few system call wrappers deep. */
#define CHILD_STACK 32768

/* Handlers kretry installed must not run in the child before its exec, and
 * an ignored SIGPIPE (kretry's caller may ignore it) would survive the exec
 * and change how the command's own pipelines behave. */
static void child_signals_default(void) {
        struct sigaction dfl, cur;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP ||
                    sigaction(sig, NULL, &cur) == -1)
                        continue;
                if (cur.sa_handler != SIG_DFL &&
                    (cur.sa_handler != SIG_IGN || sig == SIGPIPE))
                        sigaction(sig, &dfl, NULL);
        }
}

/* In the child, which runs in kretry's memory on its own stack until the
 * exec: async-signal-safe calls only, nothing written but its own stack
 * (and the spawning thread's errno, which that thread does not read after
 * a successful start), every signal blocked until the handlers are reset.
 * Never returns. */
static int child_exec(void *arg) {
        const child_t *c = arg;
        sigset_t none;
        int e;
        child_signals_default();
        /* Own process group: Ctrl-C on a terminal reaches kretry only,
         * which lets the command finish the message. */
        setpgid(0, 0);
        /* Not to outlive kretry: a restarted instance would run the same
         * key beside an orphan. The signal comes when the thread that
         * started it ends; that thread waits for the child, so only
         * kretry's death ends it first. If kretry died before the prctl()
         * took effect, the child has another parent already. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != c->parent)
                _exit(127);
        /* The parent-death signal reaches this process only; what it forks
         * (dash runs a script in a child, a pipeline's stages, background
         * jobs) is reached through the group, which the guard kills when
         * kretry dies. Registered before the exec: kretry killed earlier
         * kills this process itself. A negative errno says the guard. */
        if ((e = kretry_exec_guard_add(c->guard_fd, getpid()))) {
                e = -e;
                goto fail;
        }
        if (dup2(c->in_fd, STDIN_FILENO) == -1 ||
            dup2(c->err_fd, STDERR_FILENO) == -1) {
                e = errno;
                goto fail;
        }
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Any failure of the direct exec (a script without "#!", a file
         * that is not executable) goes to the shell, which then does what
         * it always did with the command: runs it, or says why not. */
        if (c->path)
                execve(c->path, c->words, c->envp);
        execve("/bin/sh", c->argv, c->envp);
        e = errno;
fail:
        if (write(c->status_fd, &e, sizeof(e)) != sizeof(e))
                _exit(127);
        _exit(127);
}

/* clone(CLONE_VM | CLONE_VFORK), as posix_spawn() does inside, rather than
 * posix_spawn() itself: the parent-death signal must be set in the child.
 * Not fork(): copying the page tables of kretry (librdkafka's threads and
 * buffers), the copy-on-write faults and undoing it all at the exec cost
 * more than the command's own start (bench/README.md, "exec_backlog").
 * The spawning thread is suspended until the child has exec'd or exited.
 * @returns the child's pid, or -1 with errno set. */
static pid_t start_child(child_t *c) {
#ifdef SPAWN_BY_FORK
        pid_t pid = fork();
        if (pid == 0)
                child_exec(c);
        return pid;
#else
        _Alignas(16) char stack[CHILD_STACK];
        /* The stack grows down on every architecture Linux runs kretry on
         * but HP PA-RISC. */
        return clone(child_exec, stack + sizeof(stack),
                     CLONE_VM | CLONE_VFORK | SIGCHLD, c);
#endif
}

/* The status pipe (close-on-exec) carries the errno of a failed exec,
 * negated when the guard refused the group; its EOF says the exec
 * happened. @returns 0 or such a value. */
static int spawn_child(child_t *c, pid_t *pidp) {
        int st[2], e = 0;
        sigset_t all, old;
        if (pipe_make(st) == -1)
                return errno;
        c->status_fd = st[1];
        c->parent    = getpid();
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t pid      = start_child(c);
        int fork_errno = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(st[1]);
        if (pid == -1) {
                close(st[0]);
                return fork_errno;
        }
        /* Also here: a forced stop may signal the group before the child
         * made it (EACCES once it has exec'd: it did it itself then). */
        setpgid(pid, pid);
        ssize_t n;
        while ((n = read(st[0], &e, sizeof(e))) == -1 && errno == EINTR)
                ;
        close(st[0]);
        if (n == (ssize_t)sizeof(e)) {
                while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
                        ;
                kretry_exec_guard_remove(c->guard_fd, pid);
                return e ? e : ECHILD;
        }
        *pidp = pid;
        return 0;
}

/* The value as a sealed memory file, written in full before the child
 * starts: a kill of kretry mid-write can no longer hand the command a cut
 * value, and nothing can change it once sealed. @returns the fd (above
 * stdio, close-on-exec, offset 0) or -1 with errno set. */
static int value_file(const kretry_exec_opts_t *opts) {
        int fd = memfd_create("kretry-value", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd == -1)
                return -1;
        const char *p = opts->input;
        size_t left   = opts->input_len;
        while (left > 0) {
                ssize_t n = write(fd, p, left);
                if (n == -1 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0)
                                errno = EIO;
                        goto fail;
                }
                p += n;
                left -= (size_t)n;
        }
        if (fcntl(fd, F_ADD_SEALS,
                  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) ==
                    -1 ||
            lseek(fd, 0, SEEK_SET) == -1)
                goto fail;
        return fd_above_stdio(fd);
fail:;
        int e = errno;
        close(fd);
        errno = e;
        return -1;
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

/* Drain stderr until the child and whatever inherited it closed it. */
static void
io_loop(int err_fd, const kretry_exec_opts_t *opts, line_acc_t *acc) {
        while (err_fd != -1) {
                struct pollfd p = {err_fd, POLLIN, 0};
                if (poll(&p, 1, -1) == -1)
                        continue; /* EINTR: a signal for kretry, go on */
                stderr_drain(&err_fd, opts, acc);
        }
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

/* Names the shell gives a meaning of its own as a command's first word:
 * reserved words and dash's builtins (a builtin may differ from the
 * program of the same name). */
static int shell_word(const char *w) {
        static const char *const names[] = {
                "!",     ".",        ":",      "[",       "alias",   "bg",
                "break", "case",     "cd",     "chdir",   "command", "continue",
                "do",    "done",     "echo",   "elif",    "else",    "esac",
                "eval",  "exec",     "exit",   "export",  "false",   "fc",
                "fg",    "fi",       "for",    "getopts", "hash",    "if",
                "in",    "jobs",     "kill",   "local",   "printf",  "pwd",
                "read",  "readonly", "return", "set",     "shift",   "test",
                "then",  "times",    "trap",   "true",    "type",    "ulimit",
                "umask", "unalias",  "unset",  "until",   "wait",    "while",
                "{",     "}"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (!strcmp(w, names[i]))
                        return 1;
        return 0;
}

/* The program @p name as the shell would find it: itself when it holds a
 * '/', else the first executable file of that name in the PATH of @p envp.
 * @returns a malloc'd path, or NULL (not found, no PATH or an empty entry
 * in it: the shell decides those). */
static char *plain_path(const char *name, char **envp) {
        if (strchr(name, '/'))
                return strdup(name);
        const char *path = NULL;
        for (char **e = envp; *e && !path; e++)
                if (env_name_is(*e, "PATH"))
                        path = *e + 5;
        if (!path || !*path)
                return NULL;
        size_t nlen = strlen(name);
        for (const char *d = path;; d++) {
                const char *end = strchrnul(d, ':');
                size_t dlen     = (size_t)(end - d);
                if (dlen == 0)
                        return NULL;
                char *full = malloc(dlen + 1 + nlen + 1);
                if (!full)
                        return NULL;
                memcpy(full, d, dlen);
                full[dlen] = '/';
                memcpy(full + dlen + 1, name, nlen + 1);
                if (access(full, X_OK) == 0)
                        return full;
                free(full);
                if (!*end)
                        return NULL;
                d = end;
        }
}

/* A command of plain words (`./handler.sh`, `/srv/bin/handle --fast`)
 * means to the shell exactly its words: no quoting, expansion,
 * redirection, assignment, operator or builtin. Such a command is exec'd
 * directly, as make runs its simple recipe lines: the shell between
 * kretry and the program costs an exec, and Debian's sh runs a script
 * path in a child of its own, another fork (bench/README.md,
 * "exec_backlog"). Fills c->path and c->words, the words in the malloc'd
 * copy returned; NULL when the shell must run it. */
static char *plain_command(const char *cmd, child_t *c) {
        if (strpbrk(cmd, "#;&|<>()$`\\\"'*?[]~=!{}^%\n\r\v\f"))
                return NULL;
        char *buf = strdup(cmd);
        if (!buf)
                return NULL;
        int n      = 0;
        char *save = NULL;
        /* strtok_r: handler threads split their commands at once, and the
         * application may split its own strings meanwhile. */
        for (char *w = strtok_r(buf, " \t", &save); w;
             w       = strtok_r(NULL, " \t", &save)) {
                if (n == PLAIN_WORDS_MAX)
                        goto shell;
                c->words[n++] = w;
        }
        if (n == 0 || shell_word(c->words[0]) ||
            !(c->path = plain_path(c->words[0], c->envp)))
                goto shell;
        c->words[n] = NULL;
        return buf;
shell:
        free(buf);
        return NULL;
}

int kretry_exec_run(const char *cmd,
                    const kretry_exec_opts_t *opts,
                    kretry_exec_result_t *res,
                    char *errstr,
                    size_t errstr_size) {
        int in = -1, err[2] = {-1, -1};
        child_t c = {.argv = {(char *)"sh", (char *)"-c", (char *)cmd, NULL}};
        pid_t pid = -1;
        int rc;
        line_acc_t *acc = NULL;
        char *words     = NULL;

        memset(res, 0, sizeof(*res));
        if (!(c.envp = env_build(opts)) || !(acc = calloc(1, sizeof(*acc)))) {
                rc = ENOMEM;
                goto err;
        }
        acc->last = res->last_line;
        words     = plain_command(cmd, &c);
        if ((in = value_file(opts)) == -1 || pipe_make(err) == -1) {
                rc = errno;
                goto err;
        }
        c.in_fd  = in;
        c.err_fd = err[1];
        if ((c.guard_fd = kretry_exec_guard_fd()) == -1) {
                rc = -errno;
                goto err;
        }
        if ((rc = spawn_child(&c, &pid)))
                goto err;
        if (opts->pid_slot)
                *opts->pid_slot = (sig_atomic_t)pid;
        close(err[1]);
        io_loop(err[0], opts, acc);
        wait_child(pid, res);
        /* Reaped: the number may be given to another process now. What
         * the command left running after it exited is not kretry's. */
        kretry_exec_guard_remove(c.guard_fd, pid);
        if (opts->pid_slot)
                *opts->pid_slot = 0;
        /* The child read the file through kretry's own open file: the
         * shared offset is how far it got. */
        off_t off          = lseek(in, 0, SEEK_CUR);
        res->stdin_written = off < 0                         ? 0
                             : (size_t)off > opts->input_len ? opts->input_len
                                                             : (size_t)off;
        close(in);
        free(acc);
        free(words);
        free(c.path);
        free(c.envp);
        return 0;

err:
        if (rc < 0) { /* the guard: no command runs unguarded */
                rc = -rc;
                if (errstr && errstr_size)
                        snprintf(errstr, errstr_size,
                                 "cannot guard the command: %s", strerror(rc));
        } else if (errstr && errstr_size)
                snprintf(errstr, errstr_size, "cannot start /bin/sh: %s",
                         strerror(rc));
        if (in != -1)
                close(in);
        for (int i = 0; i < 2; i++)
                if (err[i] != -1)
                        close(err[i]);
        free(acc);
        free(words);
        free(c.path);
        free(c.envp);
        return rc;
}
