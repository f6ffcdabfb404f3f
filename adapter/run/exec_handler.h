/*
 * Run one external handler command for one message: /bin/sh -c CMD with the
 * message value on stdin and extra environment variables, while collecting
 * the last non-empty line the command writes to stderr.
 *
 * No Kafka here and no global state: `kretry run` maps the outcome to
 * OK/RETRY/FAIL, and the unit tests drive it without a broker.
 *
 * Safe to call from a process with other threads (librdkafka's): the child is
 * started with posix_spawn(), so nothing that is not async-signal-safe runs
 * between fork and exec, and the environment is built before spawning.
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
        const void *input; /* written to the child's stdin, then EOF */
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
        size_t stdin_written; /* bytes the child took before closing stdin */
} kretry_exec_result_t;

/* Initialise @p opts: no environment changes, no input, no echo. */
void kretry_exec_opts_init(kretry_exec_opts_t *opts);

/*
 * Run @p cmd through /bin/sh -c and wait for it.
 *
 * The child gets its own process group (a terminal's Ctrl-C reaches kretry,
 * which decides what happens to the command), SIGPIPE at its default
 * disposition, and stdout inherited. A child that exits without reading all
 * of stdin is not an error: the EPIPE is absorbed and SIGPIPE is blocked in
 * the calling thread while writing. Returns when the child has exited and
 * its stderr is closed (a background grandchild holding stderr open delays
 * the return).
 *
 * @returns 0 with @p res filled, or an errno value when the command could not
 *          be started (E2BIG: environment too large; EAGAIN, ENOMEM...) with
 *          @p errstr filled.
 */
int kretry_exec_run(const char *cmd,
                    const kretry_exec_opts_t *opts,
                    kretry_exec_result_t *res,
                    char *errstr,
                    size_t errstr_size);

#endif
