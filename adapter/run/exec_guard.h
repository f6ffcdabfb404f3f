/*
 * The guard: a small process of kretry's that outlives it just long enough
 * to SIGKILL the process groups of the handler commands still running when
 * kretry dies (a SIGKILL, an OOM kill, a crash).
 *
 * Why a process: the parent-death signal reaches only the command's first
 * process (`sh -c CMD`); what it forks — the script dash runs in a child,
 * the stages of a pipeline, a background job — is reparented to init and
 * keeps running. Each command runs in its own process group, and a group
 * can be signalled only by a process that is still alive: kretry is not.
 * A child subreaper would not help either: orphans go to an ancestor, and
 * kretry is the ancestor that died.
 *
 * The guard holds one end of a socket pair; kretry and its children hold
 * the other (close-on-exec). A command's child registers its group before
 * its exec, kretry withdraws it once the command is reaped. When the last
 * kretry end closes — kretry exited or was killed, whatever the signal —
 * the guard reads end-of-file, SIGKILLs every group still registered and
 * exits. A command that leaves its group (setsid, setpgid) is not reached.
 *
 * Process-wide state, made once and remade if the guard dies; thread-safe.
 * Start it early (kretry run does, before the cluster is reached): it is a
 * fork, and keeps the pages kretry had then.
 */
#ifndef KRETRY_EXEC_GUARD_H
#define KRETRY_EXEC_GUARD_H

#include <sys/types.h>

/* Start the guard if it is not running (yet, or any more). @returns the fd
 * a command's child registers its group on (close-on-exec, open until the
 * guard dies), or -1 with errno set when the guard cannot be started. */
int kretry_exec_guard_fd(void);

/* In the child, between fork and exec (async-signal-safe): register the
 * process group @p pgid. @returns 0, or an errno value: the command must
 * not run unguarded. */
int kretry_exec_guard_add(int fd, pid_t pgid);

/* In kretry, once the group's leader is reaped: withdraw @p pgid, so that
 * a later process given the same number is never signalled. */
void kretry_exec_guard_remove(int fd, pid_t pgid);

#endif
