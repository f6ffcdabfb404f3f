/*
 * kretry dlq export: its options, and the outcome of dlq_export_file()
 * (adapter/ops/dlq_export.c) on stderr.
 */
#include "cli.h"
#include "dlq_cli.h"
#include "dlq_reader.h"
#include "kretry_avsc.h"
#include "parse.h"

#include <avro.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "kretry dlq export"

typedef struct {
        dlq_opts_t o;
        const char *out;
        const char *codec; /* avro-c block codec: null or deflate */
} export_opts_t;

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry dlq export --topology FILE [--name N] --out "
                "FILE.avro\n"
                "                         [--bootstrap B] [--limit N] "
                "[--codec null|deflate]\n"
                "                         [FILTERS] [--timeout MS]\n\n"
                "Write the DLQ's messages with their failure context as an "
                "Avro object\n"
                "container file (schema: schemas/kretry/dlq_context.avsc) "
                "that any Avro\n"
                "tool reads. Reads the DLQ up to its end at the start; "
                "commits nothing.\n\n"
                "  --limit N      export at most N messages\n"
                "  --codec C      block compression: null (default) or "
                "deflate\n"
                "filters (all that are given must match), as for kretry dlq "
                "inspect:\n"
                "  --class C  --code X  --key K  --since T  --until T\n");
}

static int usage_error(const char *what, const char *arg) {
        fprintf(stderr, PROG ": %s%s%s\n", what, arg ? " " : "",
                arg ? arg : "");
        usage(stderr);
        return KRETRY_EX_USAGE;
}

static int set_opt(export_opts_t *e, const char *flag, const char *v) {
        dlq_opts_t *o = &e->o;
        char reason[256];
        int64_t n;
        int rc;
        if (!strcmp(flag, "--topology"))
                o->file = v;
        else if (!strcmp(flag, "--name"))
                o->name = v;
        else if (!strcmp(flag, "--out"))
                e->out = v;
        else if (!strcmp(flag, "--bootstrap"))
                o->bootstrap = v;
        else if (!strcmp(flag, "--codec") &&
                 (!strcmp(v, "null") || !strcmp(v, "deflate")))
                e->codec = v;
        else if (!strncmp(flag, "--", 2) &&
                 (rc = dlq_filter_set(o, flag + 2, v, reason,
                                      sizeof(reason))) != -2) {
                if (rc) {
                        fprintf(stderr, PROG ": %s: %s\n", flag, reason);
                        return KRETRY_EX_USAGE;
                }
        } else if (!strcmp(flag, "--limit") || !strcmp(flag, "--timeout")) {
                if (kretry_parse_int64(v, 1, INT32_MAX, &n, reason,
                                       sizeof(reason))) {
                        fprintf(stderr, PROG ": %s: %s\n", flag, reason);
                        return KRETRY_EX_USAGE;
                }
                if (flag[2] == 'l')
                        o->limit = n;
                else
                        o->timeout_ms = (int)n;
        } else
                return usage_error("invalid option or value:", flag);
        return 0;
}

/* Returns 0, -1 after --help, or an exit status. */
static int parse(export_opts_t *e, int argc, char **argv) {
        memset(e, 0, sizeof(*e));
        kretry_dlq_filter_init(&e->o.filter);
        e->o.timeout_ms = DLQ_DEFAULT_TIMEOUT_MS;
        e->codec        = "null";
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        usage(stdout);
                        return -1;
                }
                if (i + 1 >= argc)
                        return usage_error("missing value for", argv[i]);
                int rc = set_opt(e, argv[i], argv[i + 1]);
                if (rc)
                        return rc;
                i++;
        }
        if (!e->o.file)
                return usage_error("--topology FILE is required", NULL);
        if (!e->out)
                return usage_error("--out FILE.avro is required", NULL);
        return 0;
}

/* Load the file (diagnostics on stderr) and pick the topology. */
static int load(const dlq_opts_t *o, dlq_target_t *tg) {
        int rc = dlq_load_target(o, tg);
        if (rc != 2)
                return rc;
        size_t n = kretry_topology_count(tg->f);
        fprintf(stderr, PROG ": %s: %s \"%s\"; the file has:", o->file,
                o->name ? "no topology named" : "holds several topologies:",
                o->name ? o->name : "name one with --name");
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, " %s", kretry_topology_at(tg->f, i)->name);
        fprintf(stderr, "\n");
        return 1;
}

/* The export, with its outcome on stderr. */
static int export(const export_opts_t *e, const dlq_target_t *tg) {
        int64_t written, read;
        char errstr[1024];
        if (dlq_export_file(&e->o, tg, e->out, e->codec, 1, &written, &read,
                            errstr, sizeof(errstr))) {
                fprintf(stderr, PROG ": %s\n", errstr);
                return 1;
        }
        fprintf(stderr, "%lld message%s exported to %s, %lld read from %s%s\n",
                (long long)written, written == 1 ? "" : "s", e->out,
                (long long)read, tg->t->dlq,
                e->o.limit && written >= e->o.limit ? " (--limit reached)"
                                                    : "");
        return 0;
}

int cmd_dlq_export(int argc, char **argv) {
        export_opts_t e;
        dlq_target_t tg = {NULL, NULL};
        int rc          = parse(&e, argc, argv);
        if (rc)
                return rc < 0 ? 0 : rc;
        if ((rc = load(&e.o, &tg)) == 0)
                rc = export(&e, &tg);
        kretry_topology_file_destroy(tg.f);
        return rc;
}
