/*
 * kretry run --metrics ADDR: /metrics (Prometheus text), /healthz (the
 * poll loop turns) and /readyz (the member joined its group) for an
 * orchestrator, served by libmicrohttpd on a thread of its own.
 *
 * Threads: the server's thread never reads the engine's state. The stats
 * callback (the thread driving the adapter, every stats.interval.ms) hands
 * its document to run_metrics_publish(), which renders it and keeps the
 * text and the time under the server's lock; /readyz reads
 * KRETRY_COUNTER_ASSIGNMENTS, a thread-safe counter; the run's state is an
 * atomic that a signal handler may set (run_metrics_stopping()).
 */
#ifndef KRETRY_RUN_METRICS_H
#define KRETRY_RUN_METRICS_H

#include "kretry/kretry.h"

/* getopt_long value of --metrics (after run_http.h's). */
#define RUN_METRICS_OPT 0x180

typedef struct run_metrics_s run_metrics_t;

/* Check --metrics @p addr ("PORT", ":PORT", "HOST:PORT", "[IPv6]:PORT");
 * @returns 0 or a usage error's exit status (message printed). */
int run_metrics_check(const char *addr);

/*
 * Listen on @p addr (checked) and print where on stderr. Sets
 * stats.interval.ms in @p conf (already loaded) to 1000 unless it is set,
 * and reads revoke.timeout.ms from it for the /healthz bound; the caller
 * sets a stats callback that calls run_metrics_publish(). Call before any
 * thread that must receive SIGINT/SIGTERM is the only one: the server's
 * thread starts with them blocked.
 * @returns 0 with *@p mp set (free with run_metrics_stop()), or an exit
 *          status, the message printed (64: the address cannot be bound).
 */
int run_metrics_start(const char *addr,
                      kretry_conf_t *conf,
                      run_metrics_t **mp);

/* The adapter once kretry_adapter_new() returned it (the topology check
 * passed), NULL before it is destroyed. */
void run_metrics_attach(run_metrics_t *m, const kretry_adapter_t *adapter);

/* A stats document (kretry_stats_cb_t): on the thread driving the adapter;
 * proves its loop turns. @p json is borrowed for the call. */
void run_metrics_publish(run_metrics_t *m, const char *json, size_t len);

/* The stop began (/readyz 503 from now on). Async-signal-safe; NULL: no-op.
 */
void run_metrics_stopping(run_metrics_t *m);

/* The adapter stopped on a fatal error (/healthz 503 too). */
void run_metrics_failed(run_metrics_t *m);

/* Stop serving and free. Accepts NULL. */
void run_metrics_stop(run_metrics_t *m);

/* The --help lines of --metrics. */
extern const char run_metrics_usage[];

#endif
