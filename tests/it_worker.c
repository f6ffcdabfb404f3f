/*
 * A kretry consumer process for the kill test: values "n-<i>"; i % 7 == 0
 * fails transiently once, i % 11 == 0 fails permanently, the rest succeed.
 * Every OK appends "<pid> <i>\n" to OUTFILE with one write(2), so a SIGKILL
 * never leaves half a line and the test sees how far each process got. Runs
 * until SIGTERM, then exits 0 after a clean stop. "concurrent": 16 handler
 * threads, each call 0-32 ms, so calls finish out of order. Each NAME=VALUE
 * after the mode is one more kretry property (routing=transactional, ...),
 * set after the worker's own. On a clean stop it prints how many
 * transactions it committed and aborted. With KRETRY_IT_STAMP=1 each OK line
 * ends with the CLOCK_MONOTONIC time of the OK in ms, to the µs:
 * "<pid> <i> <ms.µs>\n" (bench/rebalance.py reads each member's pauses from
 * it; it_kill how long before a kill a repeated message was first decided).
 * Without it the line is as before: the other harnesses parse it.
 *   it_worker BOOTSTRAP SOURCE GROUP OUTFILE [plain|ordered|concurrent]
 *             [NAME=VALUE ...]
 */
#include "kretry/kretry.h"
#include "kt_protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static kretry_adapter_t *adapter;
static int out_fd, trace_fd = -1;
static int concurrent;
static int stamp; /* KRETRY_IT_STAMP=1: OK lines carry a time */

/* With KRETRY_IT_TRACE set, every handler call of the ordered mode is
 * appended there, whatever its outcome: what a failed run is read from. */
static void trace(const kretry_msg_t *msg, int key, int seq, const char *what) {
        char line[160];
        if (trace_fd < 0)
                return;
        int n = snprintf(line, sizeof(line),
                         "%d key %d seq %d attempt %d tier %d offset %lld "
                         "orig %lld %s\n",
                         (int)getpid(), key, seq, kretry_msg_attempt(msg),
                         kretry_msg_tier(msg),
                         (long long)kretry_msg_offset(msg),
                         (long long)kretry_msg_original_offset(msg), what);
        if (write(trace_fd, line, (size_t)n) != n)
                trace_fd = -1;
}

/* Appends "<pid> FIELDS\n" to OUTFILE, with KRETRY_IT_STAMP=1 the time
 * before the newline, in one write(2). 0, or -1 when it was not written. */
static int write_ok(const char *fields) {
        char line[96];
        int n;
        if (stamp) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                n = snprintf(line, sizeof(line), "%d %s %lld.%03ld\n",
                             (int)getpid(), fields,
                             (long long)now.tv_sec * 1000 +
                                     now.tv_nsec / 1000000,
                             now.tv_nsec / 1000 % 1000);
        } else
                n = snprintf(line, sizeof(line), "%d %s\n", (int)getpid(),
                             fields);
        return write(out_fd, line, (size_t)n) == n ? 0 : -1;
}

static void on_term(int sig) {
        (void)sig;
        kretry_adapter_stop(adapter);
}

static void log_cb(kretry_log_level_t level,
                   const char *fac,
                   const char *msg,
                   void *opaque) {
        (void)opaque;
        /* Assignments and what a restore took over from the previous
         * owner (its decided ranges) too: a few lines a worker, what a
         * kill test's failure needs to be read. */
        int owner = level <= KRETRY_LOG_INFO &&
                    (!strcmp(fac, "RESTORE") || !strcmp(fac, "REBALANCE"));
        if (level <= KRETRY_LOG_WARNING || owner || getenv("KRETRY_TEST_DEBUG"))
                fprintf(stderr, "  [it_worker %d %s] %s\n", (int)level, fac,
                        msg);
}

static int flaky(int key, int seq, int attempt) {
        unsigned h = (unsigned)(key * 7919 + seq * 104729 + attempt * 1299709);
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        return h % 100 < 30;
}

static kretry_action_t ordered_handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        char buf[48];
        snprintf(buf, sizeof(buf), "%.*s", (int)(len < 31 ? len : 31),
                 v ? v : "");
        const char *colon = strchr(buf, ':');
        if (!colon)
                return KRETRY_FAIL;
        int key = atoi(buf), seq = atoi(colon + 1);
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
        if (flaky(key, seq, kretry_msg_attempt(msg))) {
                trace(msg, key, seq, "RETRY");
                return KRETRY_RETRY;
        }
        trace(msg, key, seq, "OK");
        snprintf(buf, sizeof(buf), "%d %d", key, seq);
        return write_ok(buf) ? KRETRY_RETRY : KRETRY_OK;
}

static kretry_action_t handler(kretry_msg_t *msg, void *opaque) {
        (void)opaque;
        size_t len;
        const char *v = kretry_msg_value(msg, &len);
        char buf[64];
        if (!v || len < 3 || len > 20)
                return KRETRY_FAIL;
        /* A value is bytes, not a C string. */
        char num[24];
        snprintf(num, sizeof(num), "%.*s", (int)(len - 2), v + 2);
        int i = atoi(num);
        /* Slow enough that a kill lands mid-stream. */
        struct timespec ts = {0, 2 * 1000 * 1000};
        if (concurrent) /* 0-32 ms */
                ts.tv_nsec = (long)((unsigned)i * 2654435761u % 5) * 8000000;
        nanosleep(&ts, NULL);
        if (i % 11 == 0)
                return KRETRY_FAIL;
        if (i % 7 == 0 && kretry_msg_attempt(msg) == 1)
                return KRETRY_RETRY;
        snprintf(buf, sizeof(buf), "%d", i);
        return write_ok(buf) ? KRETRY_RETRY : KRETRY_OK;
}

/* The login of the kretry under test on a secured cluster: each
 * `key=value` line of the file KRETRY_TEST_SERVICE_PROPS names
 * (tests/testutil.h, kt_env_props; this process links no test library).
 * Returns 0, or 1 after saying what was refused. */
static int service_props(kretry_conf_t *conf) {
        const char *path = getenv("KRETRY_TEST_SERVICE_PROPS");
        if (!path || !*path)
                return 0;
        FILE *f = fopen(path, "r");
        if (!f) {
                fprintf(stderr, "it_worker: %s: %s\n", path, strerror(errno));
                return 1;
        }
        char line[2048], err[512];
        int rc = 0;
        while (!rc && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\r\n")] = '\0';
                char *eq                    = strchr(line, '=');
                if (!line[0] || line[0] == '#')
                        continue;
                if (!eq || (*eq = '\0', kretry_conf_set(conf, line, eq + 1, err,
                                                        sizeof(err)))) {
                        fprintf(stderr, "it_worker: %s: %s\n", path,
                                eq ? err : line);
                        rc = 1;
                }
        }
        fclose(f);
        return rc;
}

int main(int argc, char **argv) {
        char err[512];
        if (argc < 5) {
                fprintf(stderr, "usage: it_worker BOOTSTRAP SOURCE GROUP OUT "
                                "[plain|ordered|concurrent] "
                                "[NAME=VALUE ...]\n");
                return 64;
        }
        int ordered = argc >= 6 && !strcmp(argv[5], "ordered");
        concurrent  = argc >= 6 && !strcmp(argv[5], "concurrent");
        stamp       = getenv("KRETRY_IT_STAMP") &&
                !strcmp(getenv("KRETRY_IT_STAMP"), "1");
        out_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (getenv("KRETRY_IT_TRACE"))
                trace_fd = open(getenv("KRETRY_IT_TRACE"),
                                O_WRONLY | O_CREAT | O_APPEND, 0644);
        /* Offsets are committed at kretry's default interval: the kill
         * suite reports the repeats per kill a user gets. */
        kretry_conf_t *conf = kretry_conf_new();
        const char *kv[][2] = {{"bootstrap.servers", argv[1]},
                               {"source.topic", argv[2]},
                               {"group.id", argv[3]},
                               {"retry.tiers", "30ms"},
                               {"socket.nagle.disable", "true"},
                               {"fetch.wait.max.ms", "10"},
                               {"session.timeout.ms", "3000"},
                               {"heartbeat.interval.ms", "300"},
                               {"linger.ms", "1"},
                               {"log_level", "3"}};
        if (kt_consumer_protocol() &&
            kretry_conf_set(conf, "consumer.group.protocol", "consumer", err,
                            sizeof(err))) {
                fprintf(stderr, "%s\n", err);
                return 1;
        }
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
                if (!(kt_consumer_protocol() && kt_classic_only(kv[i][0])) &&
                    kretry_conf_set(conf, kv[i][0], kv[i][1], err,
                                    sizeof(err))) {
                        fprintf(stderr, "%s\n", err);
                        return 1;
                }
        if (ordered &&
            (kretry_conf_set(conf, "ordering", "key", err, sizeof(err)) ||
             kretry_conf_set(conf, "retry.max.attempts", "40", err,
                             sizeof(err)))) {
                fprintf(stderr, "%s\n", err);
                return 1;
        }
        if (concurrent && kretry_conf_set(conf, "handler.concurrency", "16",
                                          err, sizeof(err))) {
                fprintf(stderr, "%s\n", err);
                return 1;
        }
        for (int i = 6; i < argc; i++) {
                char name[128];
                const char *eq = strchr(argv[i], '=');
                if (!eq || eq - argv[i] >= (int)sizeof(name)) {
                        fprintf(stderr, "it_worker: not NAME=VALUE: %s\n",
                                argv[i]);
                        return 64;
                }
                snprintf(name, sizeof(name), "%.*s", (int)(eq - argv[i]),
                         argv[i]);
                if (kt_consumer_protocol() && kt_classic_only(name))
                        continue;
                if (kretry_conf_set(conf, name, eq + 1, err, sizeof(err))) {
                        fprintf(stderr, "%s\n", err);
                        return 1;
                }
        }
        if (service_props(conf))
                return 1;
        /* librdkafka's own debug contexts, consumer's and producer's, with
         * KRETRY_TEST_DEBUG printing them (a kill test read closely). */
        const char *dbg = getenv("KRETRY_TEST_RDKAFKA_DEBUG");
        if (dbg &&
            (kretry_conf_set(conf, "consumer.debug", dbg, err, sizeof(err)) ||
             kretry_conf_set(conf, "producer.debug", dbg, err, sizeof(err)))) {
                fprintf(stderr, "%s\n", err);
                return 1;
        }
        kretry_conf_set_handler(conf, ordered ? ordered_handler : handler,
                                NULL);
        kretry_conf_set_log_cb(conf, log_cb, NULL);
        /* A SIGTERM while the adapter is made (a test stops a worker it
         * has just started) waits until the handler can stop it. */
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigprocmask(SIG_BLOCK, &term, NULL);
        adapter = kretry_adapter_new(conf, err, sizeof(err));
        if (!adapter) {
                fprintf(stderr, "it_worker: %s\n", err);
                return 1;
        }
        signal(SIGTERM, on_term);
        sigprocmask(SIG_UNBLOCK, &term, NULL);
        kretry_err_t e    = kretry_adapter_run(adapter);
        long long commits = (long long)kretry_adapter_counter(
                adapter, KRETRY_COUNTER_TXN_COMMITS, 0);
        long long aborts = (long long)kretry_adapter_counter(
                adapter, KRETRY_COUNTER_TXN_ABORTS, 0);
        if (commits || aborts)
                fprintf(stderr,
                        "  [it_worker %d] transactions: %lld committed, %lld "
                        "aborted\n",
                        (int)getpid(), commits, aborts);
        kretry_adapter_destroy(adapter);
        close(out_fd);
        return e == KRETRY_ERR_OK ? 0 : 1;
}
