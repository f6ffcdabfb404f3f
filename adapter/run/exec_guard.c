/*
 * The guard process: see exec_guard.h for why it exists.
 *
 * It is forked from a process with other threads, so between its fork and
 * its _exit() it makes async-signal-safe calls only, and its table is
 * static: nothing is allocated after the fork.
 */
#define _GNU_SOURCE /* SOCK_CLOEXEC, close_range() */
#include "exec_guard.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Groups registered at once: handler.concurrency is at most 1024, and a
 * group stays registered only while its command runs. */
#define GUARD_MAX 4096

/* kretry's side, guarded by guard_lock: the socket and the guard's pid. */
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static int guard_fd               = -1;
static pid_t guard_pid            = -1;

/* The guard's own table; kretry never touches it. */
static pid_t guard_tab[GUARD_MAX];

static void tab_apply(int32_t msg) {
        pid_t pgid = msg > 0 ? msg : -msg;
        for (int i = 0; i < GUARD_MAX; i++) {
                if (msg > 0 && guard_tab[i] == 0) {
                        guard_tab[i] = pgid;
                        return;
                }
                if (msg < 0 && guard_tab[i] == pgid) {
                        guard_tab[i] = 0;
                        return;
                }
        }
}

/* The guard: terminal and stop signals are kretry's business (the guard
 * leaves when kretry's end closes), so they are ignored; every fd but its
 * socket is closed, so it holds no port, pipe or broker connection of
 * kretry's. Never returns. */
static void guard_main(int fd) {
        static const int ignored[] = {SIGINT,  SIGTERM, SIGHUP, SIGQUIT,
                                      SIGPIPE, SIGUSR1, SIGUSR2};
        struct sigaction ign;
        sigset_t none;
        int32_t msg;
        memset(&ign, 0, sizeof(ign));
        ign.sa_handler = SIG_IGN;
        for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
                sigaction(ignored[i], &ign, NULL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_NAME, "kretry-guard", 0, 0, 0);
        if (dup2(fd, 3) == -1)
                _exit(1);
        close_range(4, ~0U, 0);
        close_range(0, 2, 0);
        for (;;) {
                ssize_t n = recv(3, &msg, sizeof(msg), 0);
                if (n == (ssize_t)sizeof(msg) && msg != 0)
                        tab_apply(msg);
                else if (n == 0)
                        break; /* every kretry end is closed */
                else if (n == -1 && errno != EINTR)
                        break;
        }
        for (int i = 0; i < GUARD_MAX; i++)
                if (guard_tab[i] > 0)
                        kill(-guard_tab[i], SIGKILL);
        _exit(0);
}

/* Under guard_lock. @returns 0 or an errno value. */
static int guard_start(void) {
        int sv[2], e;
        sigset_t all, old;
        /* Datagrams: one register or withdraw per message, never split. */
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
                return errno;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t pid = fork();
        if (pid == 0) {
                close(sv[0]);
                guard_main(sv[1]);
        }
        e = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(sv[1]);
        if (pid == -1) {
                close(sv[0]);
                return e;
        }
        guard_fd  = sv[0];
        guard_pid = pid;
        return 0;
}

/* Under guard_lock: a guard that died (killed by hand, or by the OOM
 * killer) hangs its socket up. It is reaped and replaced, so that one
 * death refuses one command at most; the groups it held are unguarded
 * until their commands end. Its socket stays open: commands started under
 * it withdraw through it when they end, and a closed number could be
 * reused by another file (a broker connection) meanwhile. One fd per
 * death of a guard. */
static void guard_check(void) {
        struct pollfd p = {guard_fd, POLLRDHUP, 0};
        if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLHUP | POLLRDHUP)))
                return;
        while (waitpid(guard_pid, NULL, 0) == -1 && errno == EINTR)
                ;
        guard_fd  = -1;
        guard_pid = -1;
}

int kretry_exec_guard_fd(void) {
        int fd, e = 0;
        pthread_mutex_lock(&guard_lock);
        if (guard_fd != -1)
                guard_check();
        if (guard_fd == -1)
                e = guard_start();
        fd = guard_fd;
        pthread_mutex_unlock(&guard_lock);
        errno = e;
        return fd;
}

int kretry_exec_guard_add(int fd, pid_t pgid) {
        int32_t msg = (int32_t)pgid;
        ssize_t n;
        while ((n = send(fd, &msg, sizeof(msg), MSG_NOSIGNAL)) == -1 &&
               errno == EINTR)
                ;
        return n == (ssize_t)sizeof(msg) ? 0 : (n == -1 ? errno : EIO);
}

void kretry_exec_guard_remove(int fd, pid_t pgid) {
        int32_t msg = -(int32_t)pgid;
        while (send(fd, &msg, sizeof(msg), MSG_NOSIGNAL) == -1 &&
               errno == EINTR)
                ;
}
