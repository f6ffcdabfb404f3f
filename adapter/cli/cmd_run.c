/*
 * kretry run: the adapter with an external handler command, so a handler can
 * be a shell script or a program in any language. One command per message
 * (/bin/sh -c CMD; a command of plain words, such as a script path, exec'd
 * directly); its exit status is the answer: 0 OK, 75 (EX_TEMPFAIL)
 * RETRY, anything else or a signal FAIL; its last non-empty stderr line is
 * the error message kept in the kretry-error header.
 *
 * Keys reach the command through the environment, which cannot hold a NUL
 * byte: KRETRY_KEY_HEX always carries the whole key (lowercase hex), and
 * KRETRY_KEY carries it as is unless it contains a NUL, in which case it is
 * left unset (never truncated). A null key leaves both unset.
 */
#include "cli.h"
#include "cli_util.h"
#include "exec_guard.h"
#include "exec_handler.h"
#include "kretry/kretry.h"
#include "run_http.h"
#include "run_metrics.h"
#include "secret.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "kretry run"
#define EX_TEMPFAIL 75

typedef struct {
        const char *bootstrap, *source, *group, *tiers, *max_attempts;
        const char *jitter, *dlq, *exec, *topology, *name, *concurrency;
        const char *metrics; /* --metrics ADDR */
        const char **props;  /* -X name=value, in order */
        int prop_cnt;
        int verbose;
        run_http_args_t http; /* --http and its options */
} run_opts_t;

/* What the handler and the callbacks share (the conf's opaque). */
typedef struct {
        const char *cmd;
        kretry_http_t *http;    /* --http: this client, not cmd */
        run_metrics_t *metrics; /* --metrics: its server */
        int verbose;
} run_ctx_t;

/* Signal handlers reach these: the adapter to stop, and the running
 * commands' process groups to end on a forced stop — one slot per thread
 * that runs the handler (up to handler.concurrency's maximum of 1024, plus
 * the polling thread, which runs it with handler.thread poll). */
#define RUN_SLOTS 1025
/* A forced stop gives the running commands this long after SIGTERM. */
#define RUN_KILL_GRACE_MS 2000
static kretry_adapter_t *volatile run_adapter;
static run_metrics_t *volatile run_metrics;
static volatile sig_atomic_t run_stops;
static volatile sig_atomic_t run_child_pids[RUN_SLOTS];
static atomic_int run_slot_next;

/* This thread's slot for the pid of the command it runs. */
static volatile sig_atomic_t *child_slot(void) {
        static _Thread_local int slot = -1;
        if (slot < 0)
                slot = atomic_fetch_add(&run_slot_next, 1) % RUN_SLOTS;
        return &run_child_pids[slot];
}

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry run --bootstrap BROKERS --source TOPIC --group "
                "GROUP --exec CMD\n"
                "       kretry run --topology FILE --name NAME --exec CMD\n"
                "       kretry run ... --http URL [--http-header 'NAME: "
                "VALUE']... [--http-* ...]\n"
                "                  [--tiers LIST] [--max-attempts N] "
                "[--jitter P] [--dlq TOPIC]\n"
                "                  [--concurrency N] [-X PROPERTY=VALUE]... "
                "[--verbose]\n"
                "                  [--metrics ADDR]\n\n"
                "Consume TOPIC with retry tiers and a dead-letter topic; run "
                "CMD (as /bin/sh -c would)\nonce per message, or POST it to "
                "URL.\n\n"
                "options:\n"
                "  -b, --bootstrap BROKERS  Kafka bootstrap servers "
                "(host:port,...)\n"
                "  -s, --source TOPIC       topic to consume\n"
                "  -g, --group GROUP        consumer group\n"
                "  -e, --exec CMD           handler command\n"
                "%s"
                "  -f, --topology FILE      take source, group, tiers, DLQ "
                "and Kafka\n"
                "                           properties from a topology "
                "file; flags and -X\n"
                "                           given too override it\n"
                "  -N, --name NAME          the topology in FILE to run "
                "(optional when\n"
                "                           FILE declares only one)\n"
                "  -t, --tiers LIST         retry delays, e.g. 1s,10s,1m "
                "(default 1s,10s,1m);\n"
                "                           0 retries as soon as the copy is "
                "read\n"
                "  -n, --max-attempts N     handler attempts in all, the "
                "first included\n"
                "                           (default: tiers + 1)\n"
                "  -j, --jitter P           delays vary by up to +/- P "
                "percent (default 10%%)\n"
                "  -d, --dlq TOPIC          dead-letter topic (default "
                "TOPIC.dlq)\n"
                "  -c, --concurrency N      run up to N commands "
                "(requests) at once\n"
                "                           (default 1), as ordering "
                "allows\n"
                "                           (-X ordering=key: one per key)\n"
                "  -X PROPERTY=VALUE        any kretry or librdkafka "
                "property; repeatable\n"
                "                           (\"consumer.\"/\"producer.\" "
                "prefix: one client only);\n"
                "                           -X routing=transactional: "
                "copies and the\n"
                "                           offsets they decide commit in "
                "one Kafka\n"
                "                           transaction (real Kafka)\n"
                "  -v, --verbose            one line per routed message, "
                "info/debug logs,\n"
                "                           counters at exit\n"
                "%s"
                "  -h, --help               show this help\n\n"
                "The command gets the value on stdin, a file that holds "
                "all of it before\nthe command starts (empty for a null "
                "value), and:\n"
                "  KRETRY_TOPIC, KRETRY_PARTITION, KRETRY_OFFSET  where it "
                "was consumed from\n"
                "  KRETRY_ATTEMPT    1 on the first delivery, 2 on the "
                "first retry, ...\n"
                "  KRETRY_TIER       tier consumed from, 0 for the source\n"
                "  KRETRY_ORIGINAL_TOPIC, _PARTITION, _OFFSET  where it "
                "first entered\n"
                "  KRETRY_KEY        the key; unset for a null key or one "
                "with a NUL byte\n"
                "  KRETRY_KEY_HEX    the key in hex (binary-safe); unset "
                "for a null key\n"
                "  KRETRY_VALUE_LEN  the value's length in bytes: what "
                "stdin holds\n"
                "  KRETRY_VALUE_NULL 1 when the value is null\n"
                "Exit 0: OK. Exit 75 (EX_TEMPFAIL): retry later. Other "
                "exit or a signal:\ndead-letter now. The last non-empty "
                "stderr line becomes the error message\n(code EXIT_<n> or "
                "SIGNAL_<n>). Its stdout and stderr pass through.\n"
                "A shell that waits for a killed program reports exit "
                "128+n: use\n--exec 'exec ./handler' to get SIGNAL_<n>.\n\n"
                "SIGINT/SIGTERM: finish the current message(s), commit, "
                "leave the group, exit 0.\nA second one stops at once: "
                "running commands and their process groups get\nSIGTERM, "
                "SIGKILL 2 s later (their messages are consumed again next "
                "time); so\ndo commands still running when the stop's "
                "bound is reached. A command never\noutlives kretry: "
                "killed outright, kretry takes every process of the\n"
                "command's process group along (SIGKILL): scripts, "
                "pipelines, background jobs;\nnot a process that left "
                "the group (setsid).\n"
                "The stop takes at most revoke.timeout.ms + 5 s (default "
                "35 s, 2 s more to end\ncommands still running) whatever "
                "the cluster does, and at most 8 s more\nonce nothing is in "
                "flight. Under Kubernetes\n(SIGKILL 30 s after "
                "SIGTERM by default) keep terminationGracePeriodSeconds\n"
                "above that bound.\n"
                "--metrics: /metrics is the Prometheus text of the stats "
                "document (every\nstats.interval.ms, 1 s unless set); "
                "/healthz 200 while the poll loop turns\n(at most "
                "revoke.timeout.ms or 3 intervals + 5 s apart) and "
                "while stopping;\n/readyz 200 once the topology check "
                "passed and the group gave this member\nits assignment, "
                "none included, until a stop begins, and while the\ncluster "
                "refuses nothing for want of an ACL (a copy, a commit, a "
                "read);\n503 otherwise.\n"
                "Exit status: 0 after a stop, 1 on a fatal error or when the "
                "stop was cut short\nat that bound or left copies "
                "unacknowledged, 64 on a usage error or a refused\n"
                "topology file.\n\n"
                "--http URL: one POST per message, the value as the body "
                "(byte for byte),\n"
                "up to --concurrency requests at once over reused "
                "connections (as many\nmore messages held, their requests "
                "built, each starting as an answer frees\nits slot). "
                "Headers:\n"
                "  ce-specversion 1.0, ce-id (correlation id), ce-source "
                "(source topic),\n"
                "  ce-type, ce-time (message time), ce-subject "
                "(partition/offset);\n"
                "  Kretry-Attempt (1 first), Kretry-Topic, "
                "Kretry-Partition, Kretry-Offset;\n"
                "  Kretry-Key (base64 with Kretry-Key-Encoding: base64 "
                "unless printable\n"
                "  ASCII); Kretry-Value-Null: true for a null value; each "
                "Kafka header as\n"
                "  Kafka-Header-NAME when name and value are valid HTTP "
                "header text.\n"
                "Answer: 2xx OK. 408 425 429 500 502 503 504, connection "
                "refused or reset,\n"
                "DNS failure, timeout: RETRY (Retry-After, seconds or "
                "HTTP-date, as the\n"
                "hint). Any other status: FAIL; redirects are not "
                "followed. Error code:\n"
                "the Kretry-Error-Code response header, else HTTP_<status>, "
                "TIMEOUT, CONNECT\n"
                "or TLS; error message: the body's first line. With "
                "--topology and neither\n"
                "--exec nor --http, the file's handler.http is the "
                "endpoint (the --http-*\n"
                "options override it). See docs/http.md.\n",
                run_http_usage, run_metrics_usage);
}

static int usage_error(const char *fmt, const char *arg) {
        return cli_usage_error(PROG, fmt, arg);
}

static int prop_add(run_opts_t *o, const char *arg) {
        if (!strchr(arg, '=') || arg[0] == '=')
                return usage_error("-X %s: expected PROPERTY=VALUE", arg);
        const char **p =
                realloc(o->props, sizeof(*p) * (size_t)(o->prop_cnt + 1));
        if (!p)
                return 1;
        o->props                = p;
        o->props[o->prop_cnt++] = arg;
        return 0;
}

static int opt_set(void *opts, int c, const char *arg) {
        run_opts_t *o = opts;
        switch (c) {
        case 'b':
                o->bootstrap = arg;
                return 0;
        case 's':
                o->source = arg;
                return 0;
        case 'g':
                o->group = arg;
                return 0;
        case 'e':
                o->exec = arg;
                return 0;
        case 't':
                o->tiers = arg;
                return 0;
        case 'n':
                o->max_attempts = arg;
                return 0;
        case 'j':
                o->jitter = arg;
                return 0;
        case 'd':
                o->dlq = arg;
                return 0;
        case 'f':
                o->topology = arg;
                return 0;
        case 'N':
                o->name = arg;
                return 0;
        case 'c':
                o->concurrency = arg;
                return 0;
        case 'X':
                return prop_add(o, arg);
        case 'v':
                o->verbose = 1;
                return 0;
        case RUN_METRICS_OPT:
                o->metrics = arg;
                return run_metrics_check(arg);
        }
        return run_http_opt(&o->http, c, arg);
}

static int has_prop(const run_opts_t *o, const char *name) {
        size_t n = strlen(name);
        for (int i = 0; i < o->prop_cnt; i++)
                if (!strncmp(o->props[i], name, n) && o->props[i][n] == '=')
                        return 1;
        return 0;
}

static int check_handler(const run_opts_t *o) {
        if (o->exec && (o->http.url || run_http_given(&o->http)))
                return usage_error("%s: one handler, not both",
                                   "--exec and --http");
        /* Without either, the file's handler.http may be the handler. */
        if (o->http.url || (o->topology && !o->exec))
                return 0;
        if (run_http_given(&o->http))
                return usage_error("%s: the --http-* options need --http URL",
                                   "--http");
        if (!o->exec || !*o->exec)
                return usage_error("%s is required", "--exec or --http");
        return 0;
}

static int check_required(const run_opts_t *o) {
        if (o->name && !o->topology)
                return usage_error("%s needs --topology", "--name");
        if (o->topology)
                return check_handler(o);
        if (!o->bootstrap && !has_prop(o, "bootstrap.servers"))
                return usage_error("%s is required", "--bootstrap");
        if (!o->source && !has_prop(o, "source.topic"))
                return usage_error("%s is required", "--source");
        if (!o->group && !has_prop(o, "group.id") &&
            !has_prop(o, "consumer.group.id"))
                return usage_error("%s is required", "--group");
        return check_handler(o);
}

/* @returns 0, -1 after --help, or an exit status. */
static int parse_args(run_opts_t *o, int argc, char **argv) {
        static const struct option longopts[] = {
                {"bootstrap", required_argument, NULL, 'b'},
                {"source", required_argument, NULL, 's'},
                {"group", required_argument, NULL, 'g'},
                {"exec", required_argument, NULL, 'e'},
                {"tiers", required_argument, NULL, 't'},
                {"max-attempts", required_argument, NULL, 'n'},
                {"jitter", required_argument, NULL, 'j'},
                {"dlq", required_argument, NULL, 'd'},
                {"topology", required_argument, NULL, 'f'},
                {"name", required_argument, NULL, 'N'},
                {"concurrency", required_argument, NULL, 'c'},
                {"verbose", no_argument, NULL, 'v'},
                {"help", no_argument, NULL, 'h'},
                {"http", required_argument, NULL, 'u'},
                {"metrics", required_argument, NULL, RUN_METRICS_OPT},
                {"http-header", required_argument, NULL, RUN_HTTP_HEADER},
                {"http-timeout", required_argument, NULL, RUN_HTTP_TIMEOUT},
                {"http-content-type", required_argument, NULL,
                 RUN_HTTP_CONTENT_TYPE},
                {"http-ce-type", required_argument, NULL, RUN_HTTP_CE_TYPE},
                {"http-body", required_argument, NULL, RUN_HTTP_BODY},
                {"http-ca", required_argument, NULL, RUN_HTTP_CA},
                {"http-cert", required_argument, NULL, RUN_HTTP_CERT},
                {"http-key", required_argument, NULL, RUN_HTTP_KEY},
                {"http-retry-status", required_argument, NULL,
                 RUN_HTTP_RETRY_STATUS},
                {"http-fail-status", required_argument, NULL,
                 RUN_HTTP_FAIL_STATUS},
                {NULL, 0, NULL, 0}};
        static const cli_getopt_t g = {PROG, ":b:s:g:e:t:n:j:d:f:N:c:X:u:vh",
                                       longopts, usage, opt_set};

        int rc = cli_getopt(&g, o, argc, argv);
        if (rc)
                return rc;
        if (optind < argc)
                return usage_error("unexpected argument \"%s\" (quote the "
                                   "--exec command as one argument)",
                                   argv[optind]);
        return check_required(o);
}

/* @p shown is the argument as the user wrote it, for the message. */
static int conf_put(kretry_conf_t *conf,
                    const char *flag,
                    const char *shown,
                    const char *name,
                    const char *value) {
        char errstr[512], masked[300];
        if (kretry_conf_set(conf, name, value, errstr, sizeof(errstr)) ==
            KRETRY_ERR_OK)
                return 0;
        if (kretry_secret_property(name)) {
                /* Neither the argument nor librdkafka's reason shows it. */
                snprintf(masked, sizeof(masked), "%s=" KRETRY_SECRET_MASK,
                         name);
                shown = masked;
                kretry_secret_scrub(errstr, sizeof(errstr), value);
        }
        fprintf(stderr, PROG ": %s %s: %s\n(see 'kretry run --help')\n", flag,
                shown, errstr);
        return KRETRY_EX_USAGE;
}

static int conf_put_x(kretry_conf_t *conf, const char *prop) {
        const char *eq = strchr(prop, '=');
        char name[256];
        if ((size_t)(eq - prop) >= sizeof(name))
                return usage_error("-X %s: property name too long", prop);
        memcpy(name, prop, (size_t)(eq - prop));
        name[eq - prop] = '\0';
        return conf_put(conf, "-X", prop, name, eq + 1);
}

/* "10" means 10%, as the help says; the property itself wants the '%'. */
static int conf_put_jitter(kretry_conf_t *conf, const char *p) {
        char buf[64];
        size_t n = strlen(p);
        if (n == 0 || n >= sizeof(buf) - 1 || p[n - 1] == '%')
                return conf_put(conf, "--jitter", p, "retry.jitter", p);
        snprintf(buf, sizeof(buf), "%s%%", p);
        return conf_put(conf, "--jitter", p, "retry.jitter", buf);
}

/* -X first, so that the dedicated flags win over a -X of the same name. */
static int conf_apply(kretry_conf_t *conf, const run_opts_t *o) {
        const struct {
                const char *flag, *name, *value;
        } f[] = {
                {"--bootstrap", "bootstrap.servers", o->bootstrap},
                {"--source", "source.topic", o->source},
                /* consumer only: the producer would warn that it ignores it */
                {"--group", "consumer.group.id", o->group},
                {"--tiers", "retry.tiers", o->tiers},
                {"--max-attempts", "retry.max.attempts", o->max_attempts},
                {"--dlq", "dlq.topic", o->dlq},
                {"--concurrency", "handler.concurrency", o->concurrency},
        };
        int rc;
        if (o->topology) {
                char errstr[4096];
                if (kretry_conf_load_topology(conf, o->topology, o->name,
                                              errstr, sizeof(errstr))) {
                        fprintf(stderr, "%s\n", errstr);
                        return KRETRY_EX_USAGE; /* the operator's file */
                }
        }
        for (int i = 0; i < o->prop_cnt; i++)
                if ((rc = conf_put_x(conf, o->props[i])))
                        return rc;
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
                if (f[i].value && (rc = conf_put(conf, f[i].flag, f[i].value,
                                                 f[i].name, f[i].value)))
                        return rc;
        if (o->jitter)
                return conf_put_jitter(conf, o->jitter);
        return 0;
}

/* The "NAME=VALUE" strings for one handler call: env_for_msg() adds at most
 * 12, and v[cnt] stays NULL as the exec module expects. */
typedef struct {
        char *v[16];
        int cnt;
} env_list_t;

static int env_add(env_list_t *e, const char *name, const char *value) {
        size_t len = strlen(name) + strlen(value) + 2;
        char *s    = malloc(len);
        if (!s)
                return -1;
        snprintf(s, len, "%s=%s", name, value);
        e->v[e->cnt++] = s;
        return 0;
}

static int env_add_i64(env_list_t *e, const char *name, int64_t v) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        return env_add(e, name, buf);
}

static void env_clear(env_list_t *e) {
        for (int i = 0; i < e->cnt; i++)
                free(e->v[i]);
        e->cnt = 0;
}

static int env_add_key(env_list_t *e, const unsigned char *key, size_t len) {
        static const char hexd[] = "0123456789abcdef";
        char *hex                = malloc(len * 2 + 1);
        if (!hex)
                return -1;
        for (size_t i = 0; i < len; i++) {
                hex[2 * i]     = hexd[key[i] >> 4];
                hex[2 * i + 1] = hexd[key[i] & 15];
        }
        hex[2 * len] = '\0';
        int rc       = env_add(e, "KRETRY_KEY_HEX", hex);
        free(hex);
        if (rc || memchr(key, '\0', len))
                return rc; /* a NUL cannot be in the environment */
        char *k = malloc(len + 1);
        if (!k)
                return -1;
        memcpy(k, key, len);
        k[len] = '\0';
        rc     = env_add(e, "KRETRY_KEY", k);
        free(k);
        return rc;
}

static int env_for_msg(env_list_t *e, const kretry_msg_t *msg) {
        size_t klen;
        const void *key    = kretry_msg_key(msg, &klen);
        const char *otopic = kretry_msg_original_topic(msg);
        if (env_add(e, "KRETRY_TOPIC", kretry_msg_topic(msg)) ||
            env_add_i64(e, "KRETRY_PARTITION", kretry_msg_partition(msg)) ||
            env_add_i64(e, "KRETRY_OFFSET", kretry_msg_offset(msg)) ||
            env_add_i64(e, "KRETRY_ATTEMPT", kretry_msg_attempt(msg)) ||
            env_add_i64(e, "KRETRY_TIER", kretry_msg_tier(msg)) ||
            env_add(e, "KRETRY_ORIGINAL_TOPIC", otopic ? otopic : "") ||
            env_add_i64(e, "KRETRY_ORIGINAL_PARTITION",
                        kretry_msg_original_partition(msg)) ||
            env_add_i64(e, "KRETRY_ORIGINAL_OFFSET",
                        kretry_msg_original_offset(msg)))
                return -1;
        if (key && env_add_key(e, key, klen))
                return -1;
        size_t vlen;
        const void *value = kretry_msg_value(msg, &vlen);
        /* stdin holds exactly this many bytes: a handler can check it got
         * the whole value. */
        if (env_add_i64(e, "KRETRY_VALUE_LEN", value ? (int64_t)vlen : 0))
                return -1;
        if (!value)
                return env_add(e, "KRETRY_VALUE_NULL", "1");
        return 0;
}

/* The answer for a command that ran. */
static kretry_action_t outcome(kretry_msg_t *msg,
                               const kretry_exec_result_t *res) {
        char code[32], text[64];
        const char *what = res->last_line;
        if (res->how == KRETRY_EXEC_EXITED && res->status == 0)
                return KRETRY_OK;
        if (res->how == KRETRY_EXEC_SIGNALED) {
                snprintf(code, sizeof(code), "SIGNAL_%d", res->status);
                snprintf(text, sizeof(text), "handler killed by signal %d (%s)",
                         res->status, strsignal(res->status));
        } else {
                snprintf(code, sizeof(code), "EXIT_%d", res->status);
                snprintf(text, sizeof(text), "handler exited with status %d",
                         res->status);
        }
        kretry_msg_set_error(msg, code, *what ? what : text);
        return res->how == KRETRY_EXEC_EXITED && res->status == EX_TEMPFAIL
                       ? KRETRY_RETRY
                       : KRETRY_FAIL;
}

/* A command that could not start says nothing about the message, so it is
 * retried, except when the message itself made the environment too big. */
static kretry_action_t
spawn_failed(kretry_msg_t *msg, int err, const char *errstr) {
        fprintf(stderr, PROG ": %s\n", errstr);
        if (err == E2BIG) {
                kretry_msg_set_error(msg, "SPAWN_E2BIG", errstr);
                return KRETRY_FAIL;
        }
        kretry_msg_set_error(msg, "SPAWN_FAILED", errstr);
        return KRETRY_RETRY;
}

static kretry_action_t handle_http(kretry_msg_t *msg, void *opaque) {
        const run_ctx_t *ctx = opaque;
        return kretry_http_handle(ctx->http, msg);
}

static kretry_action_t handle(kretry_msg_t *msg, void *opaque) {
        static const char *const unset[] = {"KRETRY_KEY", "KRETRY_KEY_HEX",
                                            "KRETRY_VALUE_NULL", NULL};
        const run_ctx_t *ctx             = opaque;
        env_list_t env                   = {.cnt = 0};
        kretry_exec_opts_t o;
        kretry_exec_result_t *res = malloc(sizeof(*res));
        char errstr[256];
        kretry_action_t act;
        int rc = ENOMEM;

        kretry_exec_opts_init(&o);
        o.input    = kretry_msg_value(msg, &o.input_len);
        o.env      = (const char *const *)env.v;
        o.unset    = unset;
        o.echo_fd  = STDERR_FILENO;
        o.pid_slot = child_slot();
        snprintf(errstr, sizeof(errstr), "cannot prepare the handler: %s",
                 strerror(ENOMEM));
        if (res && env_for_msg(&env, msg) == 0)
                rc = kretry_exec_run(ctx->cmd, &o, res, errstr, sizeof(errstr));
        act = rc ? spawn_failed(msg, rc, errstr) : outcome(msg, res);
        env_clear(&env);
        free(res);
        return act;
}

static void on_route(const char *topic,
                     int32_t partition,
                     int64_t offset,
                     kretry_route_t route,
                     int tier,
                     const char *error_class,
                     int attempt,
                     void *opaque) {
        const run_ctx_t *ctx = opaque;
        char where[32]       = "ok";
        if (!ctx->verbose)
                return;
        if (route == KRETRY_ROUTE_RETRY)
                snprintf(where, sizeof(where), "retry tier %d", tier);
        else if (route == KRETRY_ROUTE_DLQ || route == KRETRY_ROUTE_INVALID)
                snprintf(where, sizeof(where), "dlq");
        else if (route == KRETRY_ROUTE_FOREIGN)
                snprintf(where, sizeof(where), "skipped (another group's)");
        fprintf(stderr,
                PROG ": %s[%" PRId32 "]@%" PRId64 " attempt %d -> %s%s%s%s\n",
                topic, partition, offset, attempt, where,
                error_class ? " (" : "", error_class ? error_class : "",
                error_class ? ")" : "");
}

static void on_log(kretry_log_level_t level,
                   const char *facility,
                   const char *message,
                   void *opaque) {
        static const char *const names[] = {"EMERG", "ALERT",   "CRIT",
                                            "ERROR", "WARNING", "NOTICE",
                                            "INFO",  "DEBUG"};
        const run_ctx_t *ctx             = opaque;
        int lv = (int)level < 0 ? 0 : (int)level > 7 ? 7 : (int)level;
        if (lv > (ctx->verbose ? KRETRY_LOG_DEBUG : KRETRY_LOG_NOTICE))
                return;
        /* One fprintf per line: stdio locks the stream, so lines from
         * librdkafka's threads do not interleave. */
        fprintf(stderr, "%s %s: %s\n", names[lv], facility, message);
}

/* Any running command's process group still there? */
static int children_left(void) {
        for (int i = 0; i < RUN_SLOTS; i++)
                if (run_child_pids[i] > 0 &&
                    kill(-(pid_t)run_child_pids[i], 0) == 0)
                        return 1;
        return 0;
}

static void children_signal(int sig) {
        for (int i = 0; i < RUN_SLOTS; i++)
                if (run_child_pids[i] > 0)
                        kill(-(pid_t)run_child_pids[i], sig);
}

/* End the running commands and what they started in their process groups:
 * SIGTERM, then SIGKILL to what is left after RUN_KILL_GRACE_MS. Async-
 * signal-safe. A kretry that is killed outright is covered by the guard
 * (exec_guard.h), which SIGKILLs the groups of the commands running. */
static void children_end(void) {
        const struct timespec step = {0, 50 * 1000 * 1000};
        if (!children_left())
                return;
        children_signal(SIGTERM);
        for (int ms = 0; ms < RUN_KILL_GRACE_MS && children_left(); ms += 50)
                nanosleep(&step, NULL);
        children_signal(SIGKILL);
}

/* First signal: stop after the current message. Second: stop now; what was
 * in progress is consumed again next time, nothing is lost. */
static void on_signal(int sig) {
        static const char msg[] = PROG ": stopping after the current "
                                       "message (signal again to force)\n";
        if (run_stops++ == 0) {
                run_metrics_stopping(run_metrics);
                if (run_adapter)
                        kretry_adapter_stop(run_adapter);
                ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
                (void)n;
                return;
        }
        children_end();
        _exit(128 + sig);
}

static void signals_install(void) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
}

static void on_stats(const char *json, size_t len, void *opaque) {
        const run_ctx_t *ctx = opaque;
        run_metrics_publish(ctx->metrics, json, len);
}

static void stats_print(const kretry_adapter_t *adapter) {
        char buf[2048]; /* 32 tiers of large counters fit */
        kretry_adapter_stats_json(adapter, buf, sizeof(buf));
        fprintf(stderr, PROG ": counters %s\n", buf);
}

/* Block the stop signals while librdkafka starts its threads, which inherit
 * the mask: they then reach this thread, the one running the handler. */
static int serve(kretry_conf_t *conf, const run_ctx_t *ctx) {
        char errstr[4096]; /* every problem of the topology check */
        sigset_t set, old;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, &old);
        kretry_adapter_t *adapter =
                kretry_adapter_new(conf, errstr, sizeof(errstr));
        if (!adapter) {
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                fprintf(stderr, PROG ": %s\n", errstr);
                kretry_conf_destroy(conf);
                run_http_stop(ctx->http);
                return 1;
        }
        run_adapter = adapter;
        run_metrics = ctx->metrics;
        run_metrics_attach(ctx->metrics, adapter);
        signals_install();
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        kretry_err_t err = kretry_adapter_run(adapter);
        if (err == KRETRY_ERR_FATAL)
                run_metrics_failed(ctx->metrics);
        run_metrics_stopping(ctx->metrics);
        /* A signal from now on must not reach them. It is handled on this
         * thread (every other one blocks it), so it sees either. */
        run_metrics = NULL;
        run_adapter = NULL;
        /* A stop cut short at its bound may leave commands running: they
         * end now, not after kretry (their messages are consumed again). */
        children_end();
        if (err != KRETRY_ERR_OK)
                fprintf(stderr, PROG ": %s%s\n", kretry_err2str(err),
                        err == KRETRY_ERR_TIMED_OUT
                                ? " while stopping: what was not committed is "
                                  "consumed again next time"
                                : "");
        if (ctx->verbose)
                stats_print(adapter);
        /* Before the destroy, which abandons held messages: no request may
         * read a value after it. */
        run_http_stop(ctx->http);
        run_metrics_attach(ctx->metrics, NULL);
        kretry_adapter_destroy(adapter);
        return err == KRETRY_ERR_OK ? 0 : 1;
}

int cmd_run(int argc, char **argv) {
        run_opts_t o        = {0};
        kretry_conf_t *conf = NULL;
        int rc              = parse_args(&o, argc, argv);
        if (rc)
                goto done;
        static run_ctx_t ctx; /* outlives the adapter, which keeps it */
        ctx.cmd     = o.exec;
        ctx.verbose = o.verbose;
        if (!(conf = kretry_conf_new())) {
                rc = 1;
                goto done;
        }
        if ((rc = conf_apply(conf, &o))) {
                kretry_conf_destroy(conf);
                goto done;
        }
        /* Before the cluster is reached: a port in use ends the run now. */
        if (o.metrics &&
            (rc = run_metrics_start(o.metrics, conf, &ctx.metrics))) {
                kretry_conf_destroy(conf);
                goto done;
        }
        o.http.exec = o.exec;
        if ((rc = run_http_start(&o.http, o.topology, o.name, conf,
                                 has_prop(&o, "handler.thread"), &ctx.http))) {
                kretry_conf_destroy(conf);
                goto done;
        }
        if (!ctx.http && (!o.exec || !*o.exec)) {
                rc = usage_error("%s is required (or handler.http in the "
                                 "topology)",
                                 "--exec or --http");
                kretry_conf_destroy(conf);
                goto done;
        }
        /* The guard now, while kretry is small: it keeps what it forked. */
        if (!ctx.http && kretry_exec_guard_fd() == -1) {
                fprintf(stderr, PROG ": cannot start the guard: %s\n",
                        strerror(errno));
                rc = 1;
                kretry_conf_destroy(conf);
                goto done;
        }
        kretry_conf_set_handler(conf, ctx.http ? handle_http : handle, &ctx);
        kretry_conf_set_route_cb(conf, on_route);
        kretry_conf_set_log_cb(conf, on_log, &ctx);
        if (ctx.metrics)
                kretry_conf_set_stats_cb(conf, on_stats);
        rc = serve(conf, &ctx);
done:
        run_metrics_stop(ctx.metrics); /* the adapter is gone */
        ctx.metrics = NULL;
        free(o.props);
        run_http_args_free(&o.http);
        return rc == -1 ? 0 : rc;
}
