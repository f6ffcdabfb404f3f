/*
 * Run one external handler command for one message: /bin/sh -c CMD (a
 * command of plain words, such as a script path with arguments, exec'd
 * directly, which means the same to the shell) with the message value on
 * stdin and extra environment variables, while collecting
 * the last non-empty line the command writes to stderr.
 *
 * No Kafka here: `kretry run` maps the outcome to OK/RETRY/FAIL, and the
 * unit tests drive it without a broker. The one process-wide piece is the
 * guard (exec_guard.h), started by the first command.
 *
 * Safe to call from a process with other threads (librdkafka's): the value
 * file, the environment and the arguments are made before the child
 * starts, and the child (which shares kretry's memory until its exec, as
 * posix_spawn()'s does) makes only async-signal-safe calls before it.
 *
 * The command does not outlive kretry: its first process gets SIGKILL as
 * its parent-death signal (Linux), set before the exec, and every process
 * of its process group — what the shell forks, a pipeline, a background
 * job — is SIGKILLed by the guard when kretry dies, however it dies. A
 * process that leaves the group (setsid) is not covered. A caller can
 * signal the group itself through pid_slot.
 */
#ifndef KRETRY_EXEC_HANDLER_H
#define KRETRY_EXEC_HANDLER_H

#include <signal.h>
#include <stddef.h>

/* Bytes of the last stderr line kept; longer lines are cut (their start is
 * kept). The adapter cuts the message again to error.max.length. */
#define KRETRY_EXEC_LINE_MAX 4096

typedef struct kretry_exec_opts_s {
        /* "NAME=VALUE" entries added to the inherited environment, replacing
         * inherited variables of the same name; NULL-terminated, may be
         * NULL. */
        const char *const *env;
        /* Names removed from the inherited environment (so that a variable
         * the caller leaves out, like KRETRY_KEY for a null key, cannot leak
         * in from the parent); NULL-terminated, may be NULL. */
        const char *const *unset;
        /* The child's stdin: a sealed memory file holding these bytes in
         * full before the child starts (seekable; never a cut value). */
        const void *input;
        size_t input_len;
        /* When >= 0, everything the child writes to stderr is also copied to
         * this fd, so its logs still reach the operator. */
        int echo_fd;
        /* When not NULL, holds the child's pid (also its process group id)
         * while it runs and 0 otherwise, so a signal handler can forward a
         * forced stop to it. */
        volatile sig_atomic_t *pid_slot;
} kretry_exec_opts_t;

typedef enum {
        KRETRY_EXEC_EXITED   = 0, /* status: the exit code */
        KRETRY_EXEC_SIGNALED = 1  /* status: the signal that killed it */
} kretry_exec_how_t;

typedef struct kretry_exec_result_s {
        kretry_exec_how_t how;
        int status;
        /* Last non-empty stderr line without its line ending and trailing
         * blanks, NUL-terminated ("" when there was none). Bytes are kept as
         * written, NULs excepted (replaced by spaces). */
        char last_line[KRETRY_EXEC_LINE_MAX];
        /* How far the child read its stdin (the shared file offset when it
         * exited), at most input_len. */
        size_t stdin_written;
} kretry_exec_result_t;

/* Initialise @p opts: no environment changes, no input, no echo. */
void kretry_exec_opts_init(kretry_exec_opts_t *opts);

/*
 * Run @p cmd through /bin/sh -c and wait for it. A command of plain words
 * (no quote, expansion, redirection, operator, assignment or comment, and
 * a first word that is no shell builtin or reserved word) is exec'd
 * directly, its program looked up on the child's PATH as the shell would;
 * when that exec fails (a script without "#!", not found, not
 * executable), /bin/sh -c runs the command as before.
 *
 * The child gets its own process group (a terminal's Ctrl-C reaches kretry,
 * which decides what happens to the command), SIGPIPE and every signal
 * kretry handles at its default disposition, no signal blocked, SIGKILL as
 * its parent-death signal, and stdout inherited. A child that exits without
 * reading all of stdin is not an error. Returns when the child has exited
 * and its stderr is closed (a background grandchild holding stderr open
 * delays the return). The calling thread must not end meanwhile (it does
 * not: it waits here), or the parent-death signal would end the child.
 *
 * @returns 0 with @p res filled, or an errno value when the command could not
 *          be started (E2BIG: environment too large; EAGAIN, ENOMEM, or
 *          an error of memfd_create()...) with @p errstr filled.
 */
int kretry_exec_run(const char *cmd,
                    const kretry_exec_opts_t *opts,
                    kretry_exec_result_t *res,
                    char *errstr,
                    size_t errstr_size);

#endif
