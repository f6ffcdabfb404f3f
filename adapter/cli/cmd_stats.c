/*
 * kretry stats: a topology's backlog read from the cluster alone — per
 * topic (source, tiers, DLQ) the messages waiting for the group, the age of
 * the oldest, arrival and consume rates over a window and the drain
 * estimate — with the topology's alerts: evaluated, and --check turning a
 * firing one into exit status 2 for cron jobs and monitoring scripts. The
 * group is never joined, so running it beside the consumers changes
 * nothing. Figures: stats_calc.c; Kafka requests: stats_kafka.c; both
 * together: stats_collect.c.
 */
#include "cli.h"
#include "cli_util.h"
#include "parse.h"
#include "stats_collect.h"
#include "topology.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "kretry stats"
#define STATS_DEFAULT_WINDOW_MS 2000
#define STATS_DEFAULT_TIMEOUT_MS 5000

typedef enum { OUT_TABLE, OUT_JSON, OUT_PROMETHEUS } output_t;

typedef struct {
        const char *file, *name, *bootstrap;
        output_t output;
        int check;
        int verbose;
        int64_t window_ms;
        int timeout_ms;
} stats_opts_t;

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry stats --topology FILE [--name N] [--output "
                "table|json|prometheus]\n"
                "                    [--check] [--window D] [--bootstrap "
                "HOSTS] [--timeout MS]\n\n"
                "Per topic of the topology (source, each tier, DLQ): the "
                "messages waiting for\n"
                "the group, the age of the oldest waiting message, arrival "
                "and consume rates\n"
                "over a window, and the time to drain at those rates. Reads "
                "offsets and one\n"
                "message per partition; never joins the group, never "
                "commits.\n\n"
                "options:\n"
                "  -f, --topology FILE  the topology file\n"
                "  -N, --name NAME      the topology in FILE (optional when "
                "it declares one)\n"
                "  -o, --output FORMAT  table (default), json, or prometheus "
                "(text exposition\n"
                "                       format, for a textfile collector)\n"
                "  -c, --check          exit 2 when an alerts: threshold of "
                "the topology holds,\n"
                "                       or a copy is refused as too large\n"
                "  -w, --window D       rates over D, e.g. 10s (default "
                "2s); 0: no rates\n"
                "  -b, --bootstrap HOSTS  override the file's "
                "bootstrap.servers\n"
                "  -t, --timeout MS     bound on each cluster request "
                "(default %d)\n"
                "  -v, --verbose        pass librdkafka's own log lines "
                "through to stderr\n"
                "  -h, --help           show this help\n\n"
                "Waiting: messages after the group's committed offset, or "
                "from the start of\n"
                "the partition where it has none. On the DLQ, which nobody "
                "consumes: after\n"
                "where kretry dlq replay got to (group "
                "<group>.kretry-replay), else all of it.\n"
                "Alerts: dlq_messages holds when the DLQ has at least that "
                "many; dlq_rate when\n"
                "at least that many arrive in it a minute (needs a "
                "window); oldest_age when\n"
                "the source's oldest waiting message is older, or a tier's "
                "is older than its\n"
                "delay at +jitter plus the limit. copy_too_large, always "
                "checked, holds\n"
                "while the adapter has marked a partition's commit: the "
                "broker refuses its\n"
                "copy to a tier or the DLQ as too large, and it is stuck "
                "until that topic's\n"
                "max.message.bytes is raised; copy_denied, the same, holds "
                "while the topic\nrefuses that copy for want of an ACL, "
                "until Write on it is granted.\nSee docs/stats.md.\n\n"
                "Exit status: 0 done (with --check: no alert), 1 failure "
                "(with --check: an\n"
                "alert could not be evaluated), 2 an alert holds (--check), "
                "64 usage error.\n",
                STATS_DEFAULT_TIMEOUT_MS);
}

static int usage_error(const char *fmt, const char *arg) {
        return cli_usage_error(PROG, fmt, arg);
}

static int opt_set(void *opts, int c, const char *arg) {
        stats_opts_t *o = opts;
        switch (c) {
        case 'f':
                o->file = arg;
                return 0;
        case 'N':
                o->name = arg;
                return 0;
        case 'b':
                o->bootstrap = arg;
                return 0;
        case 'c':
                o->check = 1;
                return 0;
        case 'v':
                o->verbose = 1;
                return 0;
        case 'o':
                if (!strcmp(arg, "table"))
                        o->output = OUT_TABLE;
                else if (!strcmp(arg, "json"))
                        o->output = OUT_JSON;
                else if (!strcmp(arg, "prometheus"))
                        o->output = OUT_PROMETHEUS;
                else
                        return usage_error("--output %s: expected table, json "
                                           "or prometheus",
                                           arg);
                return 0;
        case 'w':
                return cli_parse_window(PROG, arg, 3600000, &o->window_ms);
        case 't':
                return cli_parse_timeout(PROG, arg, &o->timeout_ms);
        }
        return -2;
}

/* @returns 0, -1 after --help, or an exit status. */
static int parse_args(stats_opts_t *o, int argc, char **argv) {
        static const struct option longopts[] = {
                {"topology", required_argument, NULL, 'f'},
                {"name", required_argument, NULL, 'N'},
                {"bootstrap", required_argument, NULL, 'b'},
                {"output", required_argument, NULL, 'o'},
                {"check", no_argument, NULL, 'c'},
                {"window", required_argument, NULL, 'w'},
                {"timeout", required_argument, NULL, 't'},
                {"verbose", no_argument, NULL, 'v'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0}};
        static const cli_getopt_t g = {PROG, ":f:N:b:o:cw:t:vh", longopts,
                                       usage, opt_set};

        *o     = (stats_opts_t){.window_ms  = STATS_DEFAULT_WINDOW_MS,
                                .timeout_ms = STATS_DEFAULT_TIMEOUT_MS};
        int rc = cli_getopt(&g, o, argc, argv);
        if (rc)
                return rc;
        if (optind < argc)
                return usage_error("unexpected argument \"%s\"", argv[optind]);
        if (!o->file)
                return usage_error("%s is required", "--topology");
        return 0;
}

/* Load the file (errors on stderr) and pick the topology. */
static const kretry_topology_t *load(const stats_opts_t *o,
                                     kretry_topology_file_t **fp) {
        *fp = cli_topology_load(o->file);
        if (!*fp)
                return NULL;
        size_t n = kretry_topology_count(*fp);
        const kretry_topology_t *t =
                o->name  ? kretry_topology_find(*fp, o->name)
                : n == 1 ? kretry_topology_at(*fp, 0)
                         : NULL;
        if (t)
                return t;
        fprintf(stderr, PROG ": %s: ", o->file);
        if (o->name)
                fprintf(stderr, "no topology named \"%s\"", o->name);
        else
                fprintf(stderr, "holds %zu topologies: name one with --name",
                        n);
        fprintf(stderr, " (the file has:");
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, "%s%s", i ? ", " : " ",
                        kretry_topology_at(*fp, i)->name);
        fprintf(stderr, ")\n");
        return NULL;
}

static void render(const stats_opts_t *o, const stats_report_t *r) {
        if (o->output == OUT_TABLE) {
                stats_render_table(stdout, r);
        } else if (o->output == OUT_PROMETHEUS) {
                stats_render_prometheus(stdout, r);
        } else {
                json_t *j = stats_report_json(r);
                char *s   = json_dumps(j, JSON_PRESERVE_ORDER | JSON_INDENT(2));
                if (s)
                        printf("%s\n", s);
                free(s);
                json_decref(j);
        }
        fflush(stdout);
}

/* What the command ends with: alerts and what was not answered go to
 * stderr as well unless the table already shows them. */
static int conclude(const stats_opts_t *o, const stats_report_t *r) {
        int firing  = stats_alert_count(r, STATS_ALERT_FIRING);
        int unknown = stats_alert_count(r, STATS_ALERT_UNKNOWN);
        if (o->output != OUT_TABLE) {
                for (size_t i = 0; i < r->topic_cnt; i++)
                        if (r->topics[i].error[0])
                                fprintf(stderr, PROG ": %s: not answered: %s\n",
                                        r->topics[i].topic, r->topics[i].error);
                for (size_t i = 0; i < r->alert_cnt; i++)
                        if (r->alerts[i].state != STATS_ALERT_OK)
                                fprintf(stderr, PROG ": %s%s\n",
                                        r->alerts[i].state == STATS_ALERT_FIRING
                                                ? "ALERT "
                                                : "UNKNOWN ",
                                        r->alerts[i].text);
        }
        if (!o->check)
                return 0;
        if (!r->alert_cnt)
                fprintf(stderr,
                        PROG ": --check: topology %s declares no "
                             "alerts: only copies refused (as too large, or "
                             "for want of an ACL) are checked\n",
                        r->topology);
        return firing ? 2 : unknown ? 1 : 0;
}

int cmd_stats(int argc, char **argv) {
        stats_opts_t o;
        stats_report_t *r         = NULL;
        kretry_topology_file_t *f = NULL;
        char errstr[1024];
        int rc = parse_args(&o, argc, argv);
        if (rc)
                return rc < 0 ? 0 : rc;
        const kretry_topology_t *t = load(&o, &f);
        rc                         = 1;
        if (t &&
            !(r = stats_collect(f, t, o.bootstrap, o.window_ms, o.timeout_ms,
                                o.verbose, errstr, sizeof(errstr))))
                fprintf(stderr, PROG ": %s\n", errstr);
        if (r) {
                render(&o, r);
                rc = conclude(&o, r);
        }
        stats_report_free(r);
        kretry_topology_file_destroy(f);
        return rc;
}
