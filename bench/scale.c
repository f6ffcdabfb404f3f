/*
 * kretry_scale BOOTSTRAP KIND N RUNS: one point of bench/run --scale's
 * restore curves on a real cluster (bench/scale.py drives it; bench/README.md
 * "scale").
 *
 * KIND decides what the group leaves behind before the measured runs, on a
 * source of 8 partitions, N messages with N distinct keys:
 *   tier      ordering=key, the handler returns RETRY, tier delay 1 h: N
 *             copies wait in the tier, each its key's chain head;
 *   versions  versioning.header=version, the handler returns OK: N keys in
 *             the compacted changelog;
 *   dlq       ordering=key with ordering.on.dead.letter=park_key, the
 *             handler returns FAIL: N copies in the DLQ, N parked keys;
 *   dlq-few   the same with 1,000 distinct keys (key i % 1000): N copies
 *             in the DLQ, 1,000 of them parking their key, the rest parked
 *             followers: a large DLQ of few parked keys;
 *   dlq-lifted  the same DLQ as dlq written under
 *             ordering.on.dead.letter=continue (no key parked, and no park
 *             records), measured under park_key: the first run migrates
 *             the DLQ (reads it once), the later ones read the empty
 *             parked keys.
 * Then RUNS times: one probe message with a fresh key goes to the source and
 * a new adapter of the same group starts; reported per run: adapter start ->
 * assignment (the REBALANCE log line), assignment -> the probe handled, the
 * restore's own figure (the RESTORE log line) and the resident memory once
 * the probe was handled. Everything that talks to Kafka runs in a forked
 * child (the parent holds no librdkafka handle), so each run's memory is
 * its own. One JSON object on stdout: the medians and every run.
 *
 * With KRETRY_SCALE_REUSE=SOURCE (a source an earlier kretry_scale of the
 * same KIND made and filled, as its stderr names it), the setup is skipped
 * and the runs measure that group's state again: to compare engine builds
 * on one backlog.
 */
#include "bench.h"

#include <kretry/kretry.h>

#include <librdkafka/rdkafka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PARTS 8
#define MAX_RUNS 32

static const char *bootstrap, *kind;
static char src[128], group[160], tier[160], dlq[160], versions[320],
        parked[320];

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long rss_kib(void) {
        char line[256];
        long v  = -1;
        FILE *f = fopen("/proc/self/status", "r");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (!strncmp(line, "VmRSS:", 6))
                        v = strtol(line + 6, NULL, 10);
        fclose(f);
        return v;
}

static rd_kafka_t *client(rd_kafka_type_t type) {
        char err[512];
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof(err));
        if (type == RD_KAFKA_PRODUCER) {
                rd_kafka_conf_set(c, "linger.ms", "20", err, sizeof(err));
                rd_kafka_conf_set(c, "enable.idempotence", "true", err,
                                  sizeof(err));
                rd_kafka_conf_set(c, "queue.buffering.max.messages", "1000000",
                                  err, sizeof(err));
        }
        rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof(err));
        if (!rk)
                fprintf(stderr, "kretry_scale: %s\n", err);
        return rk;
}

static int create_topics(void) {
        rd_kafka_t *rk = client(RD_KAFKA_PRODUCER);
        if (!rk)
                return 1;
        const char *names[] = {src, tier, dlq, versions, parked};
        rd_kafka_NewTopic_t *nt[5];
        char err[512];
        for (int i = 0; i < 5; i++) {
                nt[i] = rd_kafka_NewTopic_new(names[i], PARTS, 1, err,
                                              sizeof(err));
                if (i >= 3)
                        rd_kafka_NewTopic_set_config(nt[i], "cleanup.policy",
                                                     "compact");
                else if (i > 0)
                        rd_kafka_NewTopic_set_config(nt[i], "max.message.bytes",
                                                     "1179648");
        }
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, nt, 5, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
        int rc               = 1;
        if (ev) {
                size_t n;
                const rd_kafka_topic_result_t **r =
                        rd_kafka_CreateTopics_result_topics(
                                rd_kafka_event_CreateTopics_result(ev), &n);
                rc = 0;
                for (size_t i = 0; i < n; i++)
                        if (rd_kafka_topic_result_error(r[i])) {
                                fprintf(stderr, "kretry_scale: %s: %s\n",
                                        rd_kafka_topic_result_name(r[i]),
                                        rd_kafka_topic_result_error_string(
                                                r[i]));
                                rc = 1;
                        }
                rd_kafka_event_destroy(ev);
        }
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy_array(nt, 5);
        rd_kafka_destroy(rk);
        sleep(2); /* visible in every broker's metadata */
        return rc;
}

/* n messages, key PREFIX%09ld (i, or i % 1000 for dlq-few's fill), a
 * 100-byte value, header version=1. */
static int produce(const char *prefix, long n) {
        rd_kafka_t *rk = client(RD_KAFKA_PRODUCER);
        if (!rk)
                return 1;
        char value[100];
        memset(value, 'v', sizeof(value));
        for (long i = 0; i < n; i++) {
                char key[64];
                long k = !strcmp(kind, "dlq-few") && !strcmp(prefix, "key")
                                 ? i % 1000
                                 : i;
                int kl = snprintf(key, sizeof(key), "%s%09ld", prefix, k);
                rd_kafka_resp_err_t e;
                while ((e = rd_kafka_producev(
                                rk, RD_KAFKA_V_TOPIC(src),
                                RD_KAFKA_V_KEY(key, (size_t)kl),
                                RD_KAFKA_V_VALUE(value, sizeof(value)),
                                RD_KAFKA_V_HEADER("version", "1", 1),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_END)) ==
                       RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        rd_kafka_poll(rk, 50);
                if (e) {
                        fprintf(stderr, "kretry_scale: produce: %s\n",
                                rd_kafka_err2str(e));
                        rd_kafka_destroy(rk);
                        return 1;
                }
                rd_kafka_poll(rk, 0);
        }
        int rc = rd_kafka_flush(rk, 120000) ? 1 : 0;
        rd_kafka_destroy(rk);
        return rc;
}

typedef struct {
        int fill;
        long routed;
        double t_start, t_assigned, t_first, restore_ms;
} state_t;

static void on_route(const char *topic,
                     int32_t partition,
                     int64_t offset,
                     kretry_route_t route,
                     int t,
                     const char *error_class,
                     int attempt,
                     void *opaque) {
        (void)topic, (void)partition, (void)offset, (void)route, (void)t;
        (void)error_class, (void)attempt;
        ((state_t *)opaque)->routed++;
}

static void
on_log(kretry_log_level_t level, const char *fac, const char *msg, void *op) {
        state_t *s = op;
        if (!strcmp(fac, "REBALANCE") && !strncmp(msg, "assigned", 8) &&
            !s->t_assigned)
                s->t_assigned = now_ms();
        else if (!strcmp(fac, "RESTORE")) {
                const char *p = strstr(msg, "rebuilt in ");
                if (p && s->restore_ms < 0)
                        s->restore_ms = atof(p + 11);
                else if (level <= KRETRY_LOG_WARNING)
                        fprintf(stderr, "kretry_scale: %s %s\n", fac, msg);
        } else if (level <= KRETRY_LOG_ERR)
                fprintf(stderr, "kretry_scale: %s %s\n", fac, msg);
}

static kretry_action_t handler(kretry_msg_t *m, void *op) {
        state_t *s = op;
        size_t kl;
        const char *k = kretry_msg_key(m, &kl);
        if (!s->fill) {
                if (k && kl > 5 && !memcmp(k, "probe", 5) && !s->t_first)
                        s->t_first = now_ms();
                return KRETRY_OK;
        }
        if (!strcmp(kind, "tier"))
                return KRETRY_RETRY;
        if (!strncmp(kind, "dlq", 3))
                return KRETRY_FAIL;
        return KRETRY_OK;
}

static kretry_adapter_t *adapter(state_t *s) {
        char err[512];
        kretry_conf_t *c       = kretry_conf_new();
        const char *props[][2] = {
                {"bootstrap.servers", bootstrap},
                {"group.id", group},
                {"source.topic", src},
                {"retry.tiers", "1h"},
                {"retry.jitter", "0%"},
                {"retry.max.attempts", "3"},
                {"dlq.topic", dlq},
                {"versioning.topic", versions},
                {"consumer.auto.offset.reset", "earliest"},
                {"consumer.fetch.wait.max.ms", "10"},
        };
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
                if (kretry_conf_set(c, props[i][0], props[i][1], err,
                                    sizeof(err)))
                        goto fail;
        if (strcmp(kind, "versions") &&
            kretry_conf_set(c, "ordering", "key", err, sizeof(err)))
                goto fail;
        if (!strcmp(kind, "versions") &&
            kretry_conf_set(c, "versioning.header", "version", err,
                            sizeof(err)))
                goto fail;
        if ((!strcmp(kind, "dlq") || !strcmp(kind, "dlq-few") ||
             (!strcmp(kind, "dlq-lifted") && !s->fill)) &&
            kretry_conf_set(c, "ordering.on.dead.letter", "park_key", err,
                            sizeof(err)))
                goto fail;
        kretry_conf_set_handler(c, handler, s);
        kretry_conf_set_route_cb(c, on_route);
        kretry_conf_set_log_cb(c, on_log, s);
        kretry_adapter_t *a = kretry_adapter_new(c, err, sizeof(err));
        if (a)
                return a;
        fprintf(stderr, "kretry_scale: adapter: %s\n", err);
        return NULL;
fail:
        fprintf(stderr, "kretry_scale: conf: %s\n", err);
        kretry_conf_destroy(c);
        return NULL;
}

/* The group's first pass: every message routed as KIND says. */
static int fill(long n) {
        state_t s           = {.fill = 1, .restore_ms = -1};
        kretry_adapter_t *a = adapter(&s);
        if (!a)
                return 1;
        double t0 = now_ms();
        while (s.routed < n && now_ms() - t0 < 1800e3)
                if (kretry_adapter_poll(a, 100) == KRETRY_ERR_FATAL)
                        break;
        fprintf(stderr, "kretry_scale: %s %ld: %ld routed in %.1f s\n", kind, n,
                s.routed, (now_ms() - t0) / 1e3);
        kretry_adapter_close(a);
        kretry_adapter_destroy(a);
        return s.routed < n;
}

static int measure(int run, int out_fd) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "probe%02d-", run);
        if (produce(prefix, 1))
                return 1;
        state_t s           = {.restore_ms = -1};
        double ld           = bench_loadavg();
        s.t_start           = now_ms();
        kretry_adapter_t *a = adapter(&s);
        if (!a)
                return 1;
        while (!s.t_first && now_ms() - s.t_start < 600e3)
                if (kretry_adapter_poll(a, 50) == KRETRY_ERR_FATAL)
                        break;
        long rss = rss_kib();
        kretry_adapter_close(a);
        kretry_adapter_destroy(a);
        if (!s.t_first || !s.t_assigned)
                return 1;
        char line[256];
        int len = snprintf(line, sizeof(line), "%.1f %.1f %.1f %ld %.2f\n",
                           s.t_assigned - s.t_start, s.t_first - s.t_assigned,
                           s.restore_ms, rss, ld);
        return write(out_fd, line, (size_t)len) != len;
}

typedef struct {
        double join_ms, first_ms, restore_ms, load;
        long rss;
} run_t;

static int in_child(int (*fn)(long, int), long arg, int *pipe_rd) {
        int p[2];
        if (pipe(p))
                return 1;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
                close(p[0]);
                _exit(fn(arg, p[1]));
        }
        close(p[1]);
        if (pipe_rd)
                *pipe_rd = p[0];
        else
                close(p[0]);
        int st;
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
                return 1;
        return WEXITSTATUS(st);
}

static int do_create(long n, int fd) {
        (void)n, (void)fd;
        return create_topics();
}
static int do_produce(long n, int fd) {
        (void)fd;
        return produce("key", n);
}
static int do_fill(long n, int fd) {
        (void)fd;
        return fill(n);
}
static int do_measure(long run, int fd) {
        return measure((int)run, fd);
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static double med(double *v, int n) {
        qsort(v, (size_t)n, sizeof(*v), cmp);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* kretry_scale BOOTSTRAP raw-idle GROUP TOPIC... [NAME=VALUE...]: the
 * baseline of the idle curve, a plain librdkafka consumer (librdkafka's
 * defaults, auto.offset.reset=latest, and the properties given: a topic
 * name has no '=') subscribed to the same topics, polling until SIGTERM. */
static int raw_idle(int argc, char **argv) {
        char err[512];
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        if (rd_kafka_conf_set(c, "bootstrap.servers", argv[1], err,
                              sizeof(err)) ||
            rd_kafka_conf_set(c, "group.id", argv[3], err, sizeof(err))) {
                fprintf(stderr, "kretry_scale: %s\n", err);
                return 1;
        }
        for (int i = 4; i < argc; i++) {
                const char *eq = strchr(argv[i], '=');
                char name[256];
                if (!eq || (size_t)(eq - argv[i]) >= sizeof(name))
                        continue;
                memcpy(name, argv[i], (size_t)(eq - argv[i]));
                name[eq - argv[i]] = '\0';
                if (rd_kafka_conf_set(c, name, eq + 1, err, sizeof(err))) {
                        fprintf(stderr, "kretry_scale: %s\n", err);
                        return 1;
                }
        }
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
        if (!rk) {
                fprintf(stderr, "kretry_scale: %s\n", err);
                return 1;
        }
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(argc - 4);
        for (int i = 4; i < argc; i++)
                if (!strchr(argv[i], '=')) /* not a property */
                        rd_kafka_topic_partition_list_add(
                                l, argv[i], RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        for (;;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 1000);
                if (m)
                        rd_kafka_message_destroy(m);
        }
}

int main(int argc, char **argv) {
        if (argc >= 5 && !strcmp(argv[2], "raw-idle"))
                return raw_idle(argc, argv);
        if (argc != 5) {
                fprintf(stderr, "usage: kretry_scale BOOTSTRAP "
                                "tier|versions|dlq|dlq-few|dlq-lifted N "
                                "RUNS\n");
                return 64;
        }
        bootstrap = argv[1];
        kind      = argv[2];
        long n    = atol(argv[3]);
        int runs  = atoi(argv[4]);
        if (strcmp(kind, "tier") && strcmp(kind, "versions") &&
            strcmp(kind, "dlq") && strcmp(kind, "dlq-few") &&
            strcmp(kind, "dlq-lifted"))
                return 64;
        if (runs < 1 || runs > MAX_RUNS || n < 1)
                return 64;
        const char *reuse = getenv("KRETRY_SCALE_REUSE");
        if (reuse && *reuse)
                snprintf(src, sizeof(src), "%s", reuse);
        else
                snprintf(src, sizeof(src), "scale-%s-%ld-%ld", kind, n,
                         (long)time(NULL));
        snprintf(group, sizeof(group), "%s-g", src);
        snprintf(tier, sizeof(tier), "%s.retry.1", src);
        snprintf(dlq, sizeof(dlq), "%s.dlq", src);
        snprintf(versions, sizeof(versions), "%s.%s.versions", group, src);
        snprintf(parked, sizeof(parked), "%s.%s.parked", group, src);
        double t0 = now_ms();
        fprintf(stderr, "kretry_scale: source %s\n", src);
        if (!(reuse && *reuse) &&
            (in_child(do_create, 0, NULL) || in_child(do_produce, n, NULL) ||
             in_child(do_fill, n, NULL))) {
                fprintf(stderr, "kretry_scale: setup failed\n");
                return 1;
        }
        double setup_s = (now_ms() - t0) / 1e3;
        run_t r[MAX_RUNS];
        int got = 0;
        for (int i = 0; i < runs; i++) {
                int fd;
                int rc        = in_child(do_measure, i, &fd);
                char buf[256] = {0};
                ssize_t len   = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (rc || len <= 0 ||
                    sscanf(buf, "%lf %lf %lf %ld %lf", &r[got].join_ms,
                           &r[got].first_ms, &r[got].restore_ms, &r[got].rss,
                           &r[got].load) != 5) {
                        fprintf(stderr, "kretry_scale: run %d failed\n", i);
                        continue;
                }
                got++;
        }
        if (!got)
                return 1;
        double v[MAX_RUNS];
        printf("{\"kind\":\"%s\",\"n\":%ld,\"partitions\":%d,"
               "\"setup_s\":%.1f,",
               kind, n, PARTS, setup_s);
        for (int i = 0; i < got; i++)
                v[i] = r[i].first_ms;
        printf("\"first_ms\":%.1f,", med(v, got));
        for (int i = 0; i < got; i++)
                v[i] = r[i].restore_ms;
        printf("\"restore_ms\":%.1f,", med(v, got));
        for (int i = 0; i < got; i++)
                v[i] = r[i].join_ms;
        printf("\"join_ms\":%.1f,", med(v, got));
        for (int i = 0; i < got; i++)
                v[i] = (double)r[i].rss;
        printf("\"rss_kib\":%.0f,\"runs\":[", med(v, got));
        for (int i = 0; i < got; i++)
                printf("%s{\"join_ms\":%.1f,\"first_ms\":%.1f,"
                       "\"restore_ms\":%.1f,\"rss_kib\":%ld,\"load\":%.2f}",
                       i ? "," : "", r[i].join_ms, r[i].first_ms,
                       r[i].restore_ms, r[i].rss, r[i].load);
        printf("]}\n");
        return 0;
}
