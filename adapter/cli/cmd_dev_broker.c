/*
 * kretry dev-broker: librdkafka's mock cluster as a standalone process, for
 * trying kretry (and any Kafka client) without installing Kafka. The first
 * line of stdout is the bootstrap list, so scripts can read it; everything
 * else goes to stderr. Runs until SIGINT, SIGTERM or SIGHUP.
 */
#include "cli.h"
#include "cli_util.h"
#include "parse.h"
#include "topology.h"

#include <getopt.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "kretry dev-broker"
#define MAX_BROKERS 16
#define MAX_PARTITIONS 1000
#define MAX_TOPIC_LEN 249 /* Kafka's own limit */

typedef struct {
        char *name;
        int partitions;
} topic_spec_t;

typedef struct {
        int brokers;
        int verbose;
        const char *topology;
        topic_spec_t *topics;
        int topic_cnt;
} dev_broker_opts_t;

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry dev-broker [--brokers N] "
                "[--topic NAME[:PARTITIONS]]...\n"
                "                         [--topology FILE] [--verbose]\n\n"
                "Run librdkafka's in-memory mock Kafka cluster until "
                "SIGINT/SIGTERM.\n"
                "The first line of stdout is the bootstrap list "
                "(127.0.0.1:PORT,...).\n\n"
                "options:\n"
                "  --brokers N              brokers in the cluster, 1..%d "
                "(default 1)\n"
                "  --topic NAME[:PARTITIONS]\n"
                "                           create a topic up front (default "
                "4 partitions);\n"
                "                           repeatable. Other topics are "
                "created with 4\n"
                "                           partitions the first time a "
                "client asks for them\n"
                "  --topology FILE          create every topic a topology file "
                "declares, with its\n"
                "                           partition count (a --topic of the "
                "same name wins)\n"
                "  -v, --verbose            log the cluster's requests to "
                "stderr\n"
                "  -h, --help               show this help\n\n"
                "The mock keeps data in memory only (at most 5 MiB per "
                "partition), has no\n"
                "admin API (CreateTopics, DescribeConfigs...) and no real "
                "transactions.\n"
                "A group waits session.timeout.ms - 1 s whenever a member "
                "joins or leaves it\n"
                "while it runs (44 s at librdkafka's default), and refuses "
                "commits meanwhile:\n"
                "give its consumers a short session, e.g. kretry run -X "
                "consumer.session.timeout.ms=6000\n"
                "It answers a fetch of empty partitions after "
                "fetch.wait.max.ms (500 ms by\n"
                "default) whatever arrives meanwhile: with tiers shorter "
                "than that, add\n"
                "-X consumer.fetch.wait.max.ms=10 to have retries on "
                "time.\n",
                MAX_BROKERS);
}

static int usage_error(const char *fmt, const char *arg) {
        return cli_usage_error(PROG, fmt, arg);
}

static int topic_name_ok(const char *name, size_t len) {
        if (len == 0 || len > MAX_TOPIC_LEN)
                return 0;
        if ((len == 1 && name[0] == '.') ||
            (len == 2 && !strncmp(name, "..", 2)))
                return 0;
        return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"
                            "YZ0123456789._-") >= len;
}

static int topic_add(dev_broker_opts_t *o, const char *name, int partitions) {
        for (int i = 0; i < o->topic_cnt; i++)
                if (!strcmp(o->topics[i].name, name))
                        return usage_error("topic \"%s\" given twice", name);
        topic_spec_t *t =
                realloc(o->topics, sizeof(*t) * (size_t)(o->topic_cnt + 1));
        if (!t)
                return 1;
        o->topics                    = t;
        o->topics[o->topic_cnt].name = strdup(name);
        if (!o->topics[o->topic_cnt].name)
                return 1;
        o->topics[o->topic_cnt++].partitions = partitions;
        return 0;
}

/* "NAME" or "NAME:PARTITIONS". */
static int topic_parse(dev_broker_opts_t *o, const char *arg) {
        const char *colon = strrchr(arg, ':');
        size_t len        = colon ? (size_t)(colon - arg) : strlen(arg);
        int64_t parts     = 4;
        char name[MAX_TOPIC_LEN + 1], err[128];
        if (!topic_name_ok(arg, len))
                return usage_error("--topic %s: a topic name is 1..249 of "
                                   "a-z A-Z 0-9 . _ - (and not . or ..)",
                                   arg);
        if (colon && kretry_parse_int64(colon + 1, 1, MAX_PARTITIONS, &parts,
                                        err, sizeof(err)) == -1)
                return usage_error("--topic %s: the partition count must be "
                                   "an integer 1..1000",
                                   arg);
        memcpy(name, arg, len);
        name[len] = '\0';
        return topic_add(o, name, (int)parts);
}

static int topic_known(const dev_broker_opts_t *o, const char *name) {
        for (int i = 0; i < o->topic_cnt; i++)
                if (!strcmp(o->topics[i].name, name))
                        return 1;
        return 0;
}

/*
 * Every topic a topology file declares (sources, tiers, DLQs), with its
 * topology's partition count, 4 when it declares none (as the mock's
 * auto-creation). A --topic of the same name wins: it is the more explicit.
 * An invalid file is a failure the command reports (exit 1), as in
 * `kretry topology validate`.
 */
static int topology_topics(dev_broker_opts_t *o, const char *path) {
        kretry_topology_topic_t *t = NULL;
        size_t cnt                 = 0;
        char errstr[4096];
        int rc = 0;
        if (kretry_topology_topics(path, 4, &t, &cnt, errstr, sizeof(errstr)) ==
            -1) {
                size_t n = strlen(errstr);
                fprintf(stderr, PROG ": --topology %s:\n%s%s", path, errstr,
                        n && errstr[n - 1] == '\n' ? "" : "\n");
                return 1;
        }
        for (size_t i = 0; i < cnt && !rc; i++)
                if (!topic_known(o, t[i].name))
                        rc = topic_add(o, t[i].name, t[i].partitions);
        free(t);
        return rc;
}

static void opts_clear(dev_broker_opts_t *o) {
        for (int i = 0; i < o->topic_cnt; i++)
                free(o->topics[i].name);
        free(o->topics);
}

static int opt_set(void *opts, int c, const char *arg) {
        dev_broker_opts_t *o = opts;
        int64_t n;
        char err[128];
        switch (c) {
        case 'b':
                if (kretry_parse_int64(arg, 1, MAX_BROKERS, &n, err,
                                       sizeof(err)) == -1)
                        return usage_error("--brokers %s: expected an "
                                           "integer 1..16",
                                           arg);
                o->brokers = (int)n;
                return 0;
        case 't':
                return topic_parse(o, arg);
        case 'T':
                o->topology = arg;
                return 0;
        case 'v':
                o->verbose = 1;
                return 0;
        }
        return -2;
}

static int parse_args(dev_broker_opts_t *o, int argc, char **argv) {
        static const struct option longopts[] = {
                {"brokers", required_argument, NULL, 'b'},
                {"topic", required_argument, NULL, 't'},
                {"topology", required_argument, NULL, 'T'},
                {"verbose", no_argument, NULL, 'v'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0}};
        static const cli_getopt_t g = {PROG, ":vh", longopts, usage, opt_set};

        int rc = cli_getopt(&g, o, argc, argv);
        if (rc)
                return rc;
        if (optind < argc)
                return usage_error("unexpected argument \"%s\"", argv[optind]);
        if (o->topology)
                return topology_topics(o, o->topology);
        return 0;
}

static void
log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
        (void)rk;
        fprintf(stderr, PROG ": %s %s: %s\n",
                level <= 3   ? "error"
                : level == 4 ? "warning"
                             : "info",
                fac, buf);
}

/* The mock cluster lives inside a librdkafka handle; this one only hosts it
 * and never connects anywhere. */
static rd_kafka_t *host_new(const dev_broker_opts_t *o) {
        char errstr[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set_log_cb(conf, log_cb);
        if (o->verbose) {
                rd_kafka_conf_set(conf, "debug", "mock", NULL, 0);
                rd_kafka_conf_set(conf, "log_level", "7", NULL, 0);
        } else {
                rd_kafka_conf_set(conf, "log_level", "3", NULL, 0);
        }
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk)
                fprintf(stderr, PROG ": %s\n", errstr);
        return rk;
}

static int topics_create(rd_kafka_mock_cluster_t *mc,
                         const dev_broker_opts_t *o) {
        int rf = o->brokers < 3 ? o->brokers : 3;
        for (int i = 0; i < o->topic_cnt; i++) {
                rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(
                        mc, o->topics[i].name, o->topics[i].partitions, rf);
                if (err) {
                        fprintf(stderr, PROG ": cannot create topic %s: %s\n",
                                o->topics[i].name, rd_kafka_err2str(err));
                        return -1;
                }
        }
        return 0;
}

static void announce(rd_kafka_mock_cluster_t *mc, const dev_broker_opts_t *o) {
        /* stdout carries the bootstrap list alone: a script reads one line. */
        printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
        fflush(stdout);
        fprintf(stderr, PROG ": %d broker%s at %s", o->brokers,
                o->brokers == 1 ? "" : "s",
                rd_kafka_mock_cluster_bootstraps(mc));
        for (int i = 0; i < o->topic_cnt; i++)
                fprintf(stderr, "%s %s (%d)",
                        i ? "," : "; topics:", o->topics[i].name,
                        o->topics[i].partitions);
        fprintf(stderr, "; stop with Ctrl-C\n");
}

static int serve(const dev_broker_opts_t *o, const sigset_t *stop_set) {
        rd_kafka_mock_cluster_t *mc = NULL;
        int rc                      = 1, sig;
        rd_kafka_t *rk              = host_new(o);
        if (!rk)
                return 1;
        if (!(mc = rd_kafka_mock_cluster_new(rk, o->brokers))) {
                fprintf(stderr, PROG ": cannot start the mock cluster\n");
                goto done;
        }
        if (topics_create(mc, o) == -1)
                goto done;
        announce(mc, o);
        if (sigwait(stop_set, &sig) == 0)
                rc = 0;
done:
        if (mc)
                rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(rk);
        return rc;
}

int cmd_dev_broker(int argc, char **argv) {
        dev_broker_opts_t o = {.brokers = 1};
        sigset_t stop_set, old;
        int rc = parse_args(&o, argc, argv);
        if (rc) {
                opts_clear(&o);
                return rc == -1 ? 0 : rc;
        }
        /* Blocked before librdkafka starts its threads, which inherit the
         * mask: the stop signals then reach sigwait() here and nowhere else. */
        sigemptyset(&stop_set);
        sigaddset(&stop_set, SIGINT);
        sigaddset(&stop_set, SIGTERM);
        sigaddset(&stop_set, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &stop_set, &old);
        rc = serve(&o, &stop_set);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        opts_clear(&o);
        if (rc == 0)
                fprintf(stderr, PROG ": stopped\n");
        return rc;
}
