/*
 * kretry topology validate|describe|plan|apply|acls FILE: the operator's
 * side of a topology file. Loading, validation and planning are library code;
 * this file parses options, prints, and asks before it changes a cluster.
 */
#include "admin.h"
#include "cli.h"
#include "cli_util.h"
#include "ops_time.h"
#include "plan.h"
#include "topo_acls.h"
#include "topology.h"
#include "topology_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 5000
#define MAX_X 64

typedef struct {
        const char *file;
        const char *name;
        const char *bootstrap;
        int json;
        int yes;
        int timeout_ms;
        const char *principal; /* acls */
        const char *role;
        int apply;
        const char *xprops[MAX_X];
        size_t xcnt;
} opts_t;

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry topology validate FILE\n"
                "       kretry topology describe FILE [--name N] "
                "[--output text|json]\n"
                "       kretry topology plan FILE [--output text|json] "
                "[--bootstrap HOSTS] [--timeout MS]\n"
                "       kretry topology apply FILE [--yes] "
                "[--bootstrap HOSTS] [--timeout MS]\n"
                "       kretry topology acls FILE --principal User:NAME "
                "[--role ROLE] [--name N]\n"
                "                            [--apply] [--bootstrap HOSTS] "
                "[-X NAME=VALUE]... [--timeout MS]\n\n"
                "validate  check the file; errors and warnings on stderr as "
                "FILE:LINE:COL: text\n"
                "describe  the retry chain as a person reads it, with the "
                "kafka: properties\n"
                "          (secret values shown as [redacted]) and the HTTP "
                "handler's header names\n"
                "plan      what the cluster needs: topics to create, "
                "partitions to add, retention to alter\n"
                "apply     perform the plan (asks first unless --yes); never "
                "shrinks or deletes;\n"
                "          returns once the cluster shows every change (at "
                "most --timeout more)\n"
                "acls      the ACL bindings (ALLOW, any host) a principal "
                "needs, one a line with\n"
                "          what kretry does with it, then the kafka-acls.sh "
                "commands that grant\n"
                "          them; --apply creates them (CreateAcls) as the "
                "client of the file's\n"
                "          kafka: section with the -X properties over it: "
                "the admin's credentials.\n"
                "          ROLE: run (default: kretry run, or a service on the "
                "library),\n"
                "          operator (stats, dlq inspect, replay, export), ui "
                "(kretry ui without\n"
                "          replay), ui-replay (kretry ui with replay)\n\n"
                "--bootstrap overrides the file's kafka: bootstrap.servers; "
                "--timeout bounds each\n"
                "cluster request (default %d ms). The file format: "
                "topology/README.md.\n",
                DEFAULT_TIMEOUT_MS);
}

static int parse_opts(int argc, char **argv, opts_t *o) {
        *o = (opts_t){.timeout_ms = DEFAULT_TIMEOUT_MS};
        for (int i = 2; i < argc; i++) {
                const char *a = argv[i];
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (!strcmp(a, "--yes") || !strcmp(a, "-y"))
                        o->yes = 1;
                else if (!strcmp(a, "--name") && v)
                        o->name = argv[++i];
                else if (!strcmp(a, "--bootstrap") && v)
                        o->bootstrap = argv[++i];
                else if (!strcmp(a, "--timeout") && v)
                        o->timeout_ms = atoi(argv[++i]);
                else if (!strcmp(a, "--principal") && v)
                        o->principal = argv[++i];
                else if (!strcmp(a, "--role") && v)
                        o->role = argv[++i];
                else if (!strcmp(a, "--apply"))
                        o->apply = 1;
                else if (!strcmp(a, "-X") && v && o->xcnt < MAX_X)
                        o->xprops[o->xcnt++] = argv[++i];
                else if (!strcmp(a, "--output") && v &&
                         (!strcmp(v, "json") || !strcmp(v, "text")))
                        o->json = !strcmp(argv[++i], "json");
                else if (a[0] != '-' && !o->file)
                        o->file = a;
                else {
                        fprintf(stderr,
                                "kretry topology: bad argument "
                                "\"%s\"\n",
                                a);
                        return -1;
                }
        }
        if (!o->file || o->timeout_ms <= 0) {
                fprintf(stderr, "kretry topology: %s\n",
                        o->file ? "--timeout must be positive"
                                : "a topology FILE is required");
                return -1;
        }
        return 0;
}

/* Load FILE, printing every diagnostic; NULL when it has errors. */
static kretry_topology_file_t *load(const char *path) {
        kretry_diags_t d;
        char line[1500];
        kretry_diags_init(&d);
        kretry_topology_file_t *f = kretry_topology_file_load(path, &d);
        for (size_t i = 0; i < d.cnt; i++) {
                kretry_diag_format(&d, i, path, line, sizeof(line));
                fprintf(stderr, "%s\n", line);
        }
        if (!f)
                fprintf(stderr, "%s: %d error(s)\n", path, d.errors);
        kretry_diags_clear(&d);
        return f;
}

static int do_validate(const opts_t *o) {
        kretry_topology_file_t *f = load(o->file);
        if (!f)
                return 1;
        printf("%s: valid, %zu topolog%s\n", o->file, kretry_topology_count(f),
               kretry_topology_count(f) == 1 ? "y" : "ies");
        kretry_topology_file_destroy(f);
        return 0;
}

static int do_describe(const opts_t *o) {
        kretry_topology_file_t *f = load(o->file);
        if (!f)
                return 1;
        size_t n = kretry_topology_count(f), cnt = 0;
        const kretry_topology_t **sel = calloc(n, sizeof(*sel));
        for (size_t i = 0; sel && i < n; i++) {
                const kretry_topology_t *t = kretry_topology_at(f, i);
                if (!o->name || !strcmp(o->name, t->name))
                        sel[cnt++] = t;
        }
        int rc = 0;
        if (!sel || !cnt) {
                fprintf(stderr, "%s: no topology named \"%s\"\n", o->file,
                        o->name ? o->name : "");
                rc = 1;
        } else if (o->json) {
                rc = topology_describe_json(stdout, f, sel, cnt) ? 1 : 0;
        } else {
                for (size_t i = 0; i < cnt; i++) {
                        if (i)
                                fputc('\n', stdout);
                        topology_describe_text(stdout, f, sel[i]);
                }
        }
        free(sel);
        kretry_topology_file_destroy(f);
        return rc;
}

/* Connect, snapshot and compute the plan; NULL client on failure. */
static rd_kafka_t *
make_plan(const opts_t *o, kretry_topology_file_t *f, kretry_plan_t *plan) {
        char err[512];
        kretry_meta_t meta = {0};
        rd_kafka_t *rk = kretry_admin_new(f, o->bootstrap, err, sizeof(err));
        if (!rk) {
                fprintf(stderr, "kretry topology: %s\n", err);
                return NULL;
        }
        int r = kretry_admin_snapshot(rk, kretry_topology_at(f, 0),
                                      kretry_topology_count(f), o->timeout_ms,
                                      &meta, err, sizeof(err));
        if (r != 0)
                fprintf(stderr, "kretry topology: %s\n", err);
        if (r < 0 ||
            kretry_plan_compute(kretry_topology_at(f, 0),
                                kretry_topology_count(f), &meta, plan)) {
                kretry_meta_clear(&meta);
                rd_kafka_destroy(rk);
                return NULL;
        }
        kretry_meta_clear(&meta);
        return rk;
}

static int do_plan(const opts_t *o) {
        kretry_plan_t plan        = {0};
        kretry_topology_file_t *f = load(o->file);
        rd_kafka_t *rk            = f ? make_plan(o, f, &plan) : NULL;
        int rc                    = 1;
        if (rk) {
                if (o->json)
                        topology_plan_json(stdout, &plan);
                else
                        topology_plan_text(stdout, &plan);
                rc = plan.conflicts ? 1 : 0;
                rd_kafka_destroy(rk);
        }
        kretry_plan_clear(&plan);
        kretry_topology_file_destroy(f);
        return rc;
}

static int confirm(const opts_t *o, const kretry_plan_t *plan) {
        char answer[16];
        if (o->yes)
                return 1;
        if (!isatty(STDIN_FILENO)) {
                fprintf(stderr,
                        "kretry topology: not a terminal: pass --yes "
                        "to apply %d change(s)\n",
                        plan->changes);
                return 0;
        }
        fprintf(stderr, "apply %d change(s)? [y/N] ", plan->changes);
        return fgets(answer, sizeof(answer), stdin) &&
               (answer[0] == 'y' || answer[0] == 'Y');
}

static int run_apply(const opts_t *o, rd_kafka_t *rk, kretry_plan_t *plan) {
        topology_plan_text(stdout, plan);
        if (plan->conflicts) {
                fprintf(stderr, "kretry topology: conflicts: nothing "
                                "applied\n");
                return 1;
        }
        if (!plan->changes)
                return 0;
        if (!confirm(o, plan))
                return 1;
        int failed = kretry_admin_apply(rk, plan, o->timeout_ms);
        for (size_t i = 0; i < plan->cnt; i++)
                if (plan->actions[i].done)
                        printf("%s %s: %s\n",
                               kretry_plan_op_name(plan->actions[i].op),
                               plan->actions[i].topic, plan->actions[i].result);
        if (failed)
                fprintf(stderr, "kretry topology: %d action(s) failed\n",
                        failed);
        return failed ? 1 : 0;
}

/* 1 when @p applied created @p topic. */
static int created(const kretry_plan_t *applied, const char *topic) {
        for (size_t i = 0; i < applied->cnt; i++)
                if (applied->actions[i].op == KRETRY_PLAN_CREATE &&
                    applied->actions[i].done == 1 &&
                    !strcmp(applied->actions[i].topic, topic))
                        return 1;
        return 0;
}

/* A source created by @p applied takes the cluster's default
 * max.message.bytes, which the first plan could not know: once the
 * cluster shows it, its tiers and DLQ (created by @p applied too) need it
 * plus the copies' headroom. 1 when @p plan holds nothing but those
 * raises: part of what was confirmed, applied without asking again. */
static int only_new_headroom(const kretry_plan_t *plan,
                             const kretry_plan_t *applied) {
        for (size_t i = 0; i < plan->cnt; i++) {
                const kretry_plan_action_t *a = &plan->actions[i];
                if (a->op != KRETRY_PLAN_ALTER_CONFIG ||
                    !a->max_message_bytes || a->retention_ms || a->min_insync ||
                    a->compact || !created(applied, a->topic))
                        return 0;
        }
        return plan->changes > 0;
}

/* Kafka answers CreateTopics, CreatePartitions and AlterConfigs before
 * every broker's metadata and configuration show the change (KRaft applies
 * them from its log a moment later). Plan again until nothing is left, at
 * most --timeout, so that a `kretry run` started next finds what was
 * applied (with the headroom of a new source's chain, only_new_headroom);
 * 1 when something is still missing then. */
static int settle(const opts_t *o,
                  kretry_topology_file_t *f,
                  const kretry_plan_t *applied) {
        int64_t deadline = ops_mono_ms() + o->timeout_ms;
        int raised       = 0;
        for (;;) {
                kretry_plan_t plan = {0};
                rd_kafka_t *rk     = make_plan(o, f, &plan);
                int left           = rk ? plan.changes : -1;
                int failed         = 0;
                if (rk && !raised && only_new_headroom(&plan, applied)) {
                        raised = 1;
                        printf("the new source takes the cluster's default "
                               "max.message.bytes: raising its tiers' and "
                               "DLQ's by the copies' headroom\n");
                        opts_t yes = *o;
                        yes.yes    = 1;
                        failed     = run_apply(&yes, rk, &plan);
                }
                if (rk)
                        rd_kafka_destroy(rk);
                kretry_plan_clear(&plan);
                if (failed)
                        return 1;
                if (left == 0)
                        return 0;
                if (ops_mono_ms() >= deadline) {
                        fprintf(stderr,
                                "kretry topology: the cluster does not show "
                                "every change yet after %d ms: run `kretry "
                                "topology plan` again before starting kretry\n",
                                o->timeout_ms);
                        return 1;
                }
                struct timespec ts = {0, 200 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

static int do_apply(const opts_t *o) {
        kretry_plan_t plan        = {0};
        kretry_topology_file_t *f = load(o->file);
        rd_kafka_t *rk            = f ? make_plan(o, f, &plan) : NULL;
        int rc                    = rk ? run_apply(o, rk, &plan) : 1;
        int changed               = rk && plan.changes > 0;
        if (rk)
                rd_kafka_destroy(rk);
        if (rc == 0 && changed)
                rc = settle(o, f, &plan);
        kretry_plan_clear(&plan);
        kretry_topology_file_destroy(f);
        return rc;
}

/* The bindings, one a line, then the commands that grant them. */
static void print_acls(const opts_t *o,
                       const kretry_topology_file_t *f,
                       const kretry_acls_t *acls) {
        char line[1024], bootstrap[512] = "";
        for (size_t i = 0; i < kretry_topology_prop_count(f); i++)
                if (!strcmp(kretry_topology_prop_at(f, i)->name,
                            "bootstrap.servers"))
                        snprintf(bootstrap, sizeof(bootstrap), "%s",
                                 kretry_topology_prop_at(f, i)->value);
        if (o->bootstrap)
                snprintf(bootstrap, sizeof(bootstrap), "%s", o->bootstrap);
        printf("# %s, role %s: %zu ACL binding(s), ALLOW on any host\n",
               o->principal, o->role ? o->role : "run", acls->cnt);
        for (size_t i = 0; i < acls->cnt; i++) {
                const kretry_acl_t *b = &acls->items[i];
                printf("%s %s %s %s%s  # %s\n", o->principal,
                       kretry_acl_op_name(b->op),
                       kretry_acl_restype_name(b->restype), b->name,
                       b->pattern == RD_KAFKA_RESOURCE_PATTERN_PREFIXED
                               ? " (prefixed)"
                               : "",
                       b->why);
        }
        printf("# the same with Kafka's tool, as an admin (admin.properties: "
               "its client properties):\n");
        for (size_t i = 0; i < acls->cnt; i++) {
                kretry_acl_command(&acls->items[i], o->principal, bootstrap,
                                   line, sizeof(line));
                printf("%s\n", line);
        }
}

static int apply_acls(const opts_t *o,
                      const kretry_topology_file_t *f,
                      const kretry_acls_t *acls) {
        char err[512];
        rd_kafka_t *rk = kretry_admin_new_x(f, o->bootstrap, o->xprops, o->xcnt,
                                            err, sizeof(err));
        if (!rk) {
                fprintf(stderr, "kretry topology: %s\n", err);
                return 1;
        }
        char(*why)[256] = calloc(acls->cnt + 1, sizeof(*why));
        int failed      = why ? kretry_admin_create_acls(rk, acls, o->principal,
                                                         o->timeout_ms, why)
                              : 1;
        for (size_t i = 0; why && i < acls->cnt; i++) {
                char what[512];
                kretry_acl_describe(&acls->items[i], what, sizeof(what));
                if (why[i][0])
                        fprintf(stderr, "kretry topology: %s for %s: %s\n",
                                what, o->principal, why[i]);
                else
                        printf("created: %s for %s\n", what, o->principal);
        }
        if (failed)
                fprintf(stderr, "kretry topology: %d binding(s) not created\n",
                        failed);
        free(why);
        rd_kafka_destroy(rk);
        return failed ? 1 : 0;
}

static int do_acls(const opts_t *o) {
        kretry_acl_role_t role = KRETRY_ACL_ROLE_RUN;
        if (!o->principal || !strchr(o->principal, ':') ||
            (o->role && kretry_acl_role_parse(o->role, &role))) {
                fprintf(stderr, "kretry topology acls: %s\n",
                        !o->principal ? "--principal TYPE:NAME is required "
                                        "(e.g. User:svc)"
                        : !strchr(o->principal, ':')
                                ? "--principal is TYPE:NAME (e.g. User:svc)"
                                : "--role is run, operator, ui or ui-replay");
                return KRETRY_EX_USAGE;
        }
        kretry_topology_file_t *f = load(o->file);
        if (!f)
                return 1;
        kretry_acls_t acls = {0};
        int r              = kretry_topology_acls(f, o->name, role, &acls);
        int rc             = 1;
        if (r == -2)
                fprintf(stderr, "%s: no topology named \"%s\"\n", o->file,
                        o->name);
        else if (r)
                fprintf(stderr, "kretry topology: out of memory\n");
        else if (o->apply)
                rc = apply_acls(o, f, &acls);
        else {
                print_acls(o, f, &acls);
                rc = 0;
        }
        kretry_acls_clear(&acls);
        kretry_topology_file_destroy(f);
        return rc;
}

int cmd_topology(int argc, char **argv) {
        static const struct {
                const char *name;
                int (*fn)(const opts_t *o);
        } subs[] = {{"validate", do_validate},
                    {"describe", do_describe},
                    {"plan", do_plan},
                    {"apply", do_apply},
                    {"acls", do_acls}};
        opts_t o;
        /* --help anywhere ("kretry topology plan --help" too). */
        for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        usage(stdout);
                        return 0;
                }
        for (size_t i = 0; argc >= 2 && i < sizeof(subs) / sizeof(subs[0]);
             i++) {
                if (strcmp(argv[1], subs[i].name))
                        continue;
                if (parse_opts(argc, argv, &o)) {
                        usage(stderr);
                        return KRETRY_EX_USAGE;
                }
                return subs[i].fn(&o);
        }
        usage(stderr);
        return KRETRY_EX_USAGE;
}
