/*
 * kretry dlq inspect|replay: an operator's view of a topology's dead-letter
 * topic, and the way back out of it. Inspect reads the DLQ from its
 * beginning to its end as it was when the command started, with no group
 * and no commit; replay (dlq_replay.c) republishes what the filters select.
 * Filtering on time scans: brokers cannot seek by a header's time, and the
 * mock cluster cannot seek by timestamp either.
 */
#include "cli.h"
#include "cli_util.h"
#include "dlq_cli.h"
#include "dlq_reader.h"
#include "ops_time.h"
#include "parse.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "kretry dlq"

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry dlq inspect --topology FILE [--name N] "
                "[FILTERS] [--limit N]\n"
                "                          [--show-value] [--output "
                "table|json]\n"
                "       kretry dlq replay --topology FILE [--name N] "
                "[FILTERS] [--to source|tier:N]\n"
                "                         [--rate MSGS_PER_S] [--batch N] "
                "[--pause D] [--max N]\n"
                "                         [--dry-run] [--restart]\n"
                "       kretry dlq export --topology FILE [--name N] --out "
                "FILE.avro [FILTERS]\n\n"
                "inspect  one row per dead-lettered message: partition, "
                "offset, key, error\n"
                "         class, code and message, attempts, first failure, "
                "age. Reads the\n"
                "         DLQ up to its end at the start; commits nothing.\n"
                "replay   republish to the source (or a tier of the same "
                "topology) with key,\n"
                "         value and headers byte for byte, the retry chain "
                "reset,\n"
                "         kretry-replay-count incremented and "
                "kretry-replayed-at set.\n"
                "         Progress is committed under the group "
                "\"<group>.kretry-replay\"\n"
                "         after each batch is acknowledged: a stopped or "
                "killed replay\n"
                "         resumes where it was (repeating at most one "
                "batch). Messages\n"
                "         the filters skip count as done too; --restart "
                "reads the DLQ from\n"
                "         its beginning again.\n\n"
                "filters (all that are given must match):\n"
                "  --class C      kretry-error-class (transient, permanent, "
                "exhausted, ...)\n"
                "  --code X       kretry-error-code, the handler's code\n"
                "  --key K        the message key, exactly\n"
                "  --since T      dead-lettered at or after T: a duration "
                "ago (30m, 2d)\n"
                "                 or epoch milliseconds\n"
                "  --until T      dead-lettered before T\n\n"
                "options:\n"
                "  -f, --topology FILE  the topology file; --name picks one "
                "topology\n"
                "                       (optional when FILE declares "
                "one)\n"
                "  --bootstrap HOSTS    override the file's "
                "bootstrap.servers\n"
                "  --limit N            inspect: show at most N rows\n"
                "  --show-value         inspect: show values (hidden by "
                "default)\n"
                "  --output table|json  inspect: a table, or one JSON "
                "object per line; a\n"
                "                       class, code or error that is not "
                "UTF-8 has each\n"
                "                       such byte as U+FFFD and its exact "
                "bytes in hex\n"
                "                       beside it (\"error_hex\"); a binary "
                "key or value\n"
                "                       is \"key_hex\" or \"value_hex\" "
                "instead\n"
                "  --to source|tier:N   replay: the target (default "
                "source); nothing\n"
                "                       outside the topology is accepted\n"
                "  --rate R             replay: messages per second at most "
                "(default %d)\n"
                "  --batch N            replay: messages per batch "
                "(default %d)\n"
                "  --pause D            replay: wait between batches, e.g. "
                "1s (default 0)\n"
                "  --max N              replay: replay at most N messages\n"
                "  --dry-run            replay: list what would be "
                "replayed; write nothing\n"
                "  --restart            replay: ignore committed progress\n"
                "  --timeout MS         bound on each cluster request "
                "(default %d)\n\n"
                "Exit status: 0 done, 1 failure, 64 usage error.\n",
                DLQ_DEFAULT_RATE, DLQ_DEFAULT_BATCH, DLQ_DEFAULT_TIMEOUT_MS);
}

static int usage_error(const char *fmt, const char *arg) {
        return cli_usage_error(PROG, fmt, arg);
}

static int
parse_count(const char *flag, const char *v, int64_t min, int64_t *out) {
        char *end;
        long long n = strtoll(v, &end, 10);
        if (!*v || *end || n < min)
                return usage_error(min > 0 ? "%s needs a positive integer"
                                           : "%s needs an integer >= 0",
                                   flag);
        *out = n;
        return 0;
}

/* --class, --code, --key, --since, --until; -2 for any other option. */
static int filter_opt(dlq_opts_t *o, const char *a, const char *v) {
        char err[256], msg[320];
        int rc = strncmp(a, "--", 2)
                         ? -2
                         : dlq_filter_set(o, a + 2, v, err, sizeof(err));
        if (rc != -1)
                return rc;
        snprintf(msg, sizeof(msg), "%s %s", a, err);
        return usage_error("%s", msg);
}

static int parse_rate(const char *v, double *out) {
        char *end;
        double r = strtod(v, &end);
        if (!*v || *end || !(r > 0) || r > 1e7)
                return usage_error("--rate %s: expected messages per second "
                                   "(> 0)",
                                   v);
        *out = r;
        return 0;
}

static int parse_pause(const char *v, int64_t *out) {
        char err[256];
        if (kretry_parse_duration_ms(v, out, err, sizeof(err)))
                return usage_error("--pause: %s", err);
        return 0;
}

/* One option with its value; returns 0, -2 when unknown, or a status. */
static int opt_value(dlq_opts_t *o, const char *a, const char *v) {
        int64_t n = 0;
        int rc    = filter_opt(o, a, v);
        if (rc != -2)
                return rc;
        rc = 0;
        if (!strcmp(a, "--topology") || !strcmp(a, "-f"))
                o->file = v;
        else if (!strcmp(a, "--name") || !strcmp(a, "-N"))
                o->name = v;
        else if (!strcmp(a, "--bootstrap") || !strcmp(a, "-b"))
                o->bootstrap = v;
        else if (!strcmp(a, "--limit"))
                rc = parse_count(a, v, 1, &o->limit);
        else if (!strcmp(a, "--max"))
                rc = parse_count(a, v, 1, &o->max);
        else if (!strcmp(a, "--batch")) {
                if (!(rc = parse_count(a, v, 1, &n)))
                        o->batch = n > 100000 ? 100000 : (int)n;
        } else if (!strcmp(a, "--timeout")) {
                if (!(rc = parse_count(a, v, 1, &n)))
                        o->timeout_ms = n > 3600000 ? 3600000 : (int)n;
        } else if (!strcmp(a, "--rate"))
                rc = parse_rate(v, &o->rate);
        else if (!strcmp(a, "--pause"))
                rc = parse_pause(v, &o->pause_ms);
        else if (!strcmp(a, "--to"))
                o->to = v;
        else if (!strcmp(a, "--output")) {
                if (strcmp(v, "json") && strcmp(v, "table"))
                        return usage_error("--output %s: expected table or "
                                           "json",
                                           v);
                o->json = !strcmp(v, "json");
        } else
                return -2;
        return rc;
}

static int opt_flag(dlq_opts_t *o, const char *a) {
        if (!strcmp(a, "--show-value"))
                o->show_value = 1;
        else if (!strcmp(a, "--dry-run"))
                o->dry_run = 1;
        else if (!strcmp(a, "--restart"))
                o->restart = 1;
        else
                return -2;
        return 0;
}

static const char *const value_opts[] = {
        "--topology", "-f",      "--name", "-N",      "--bootstrap",
        "-b",         "--class", "--code", "--key",   "--since",
        "--until",    "--limit", "--max",  "--batch", "--timeout",
        "--rate",     "--pause", "--to",   "--output"};

static int takes_value(const char *a) {
        for (size_t i = 0; i < sizeof(value_opts) / sizeof(value_opts[0]); i++)
                if (!strcmp(a, value_opts[i]))
                        return 1;
        return 0;
}

static int wrong_subcommand(int replay, const char *a) {
        static const char *const inspect_only[] = {"--limit", "--show-value",
                                                   "--output"};
        static const char *const replay_only[]  = {
                 "--to",  "--rate",    "--batch",  "--pause",
                 "--max", "--dry-run", "--restart"};
        const char *const *v = replay ? inspect_only : replay_only;
        size_t n             = replay ? 3 : 7;
        for (size_t k = 0; k < n; k++)
                if (!strcmp(a, v[k]))
                        return usage_error("%s is not an option of this "
                                           "subcommand",
                                           a);
        return 0;
}

/* argv[0] is the subcommand. Returns 0, -1 after --help, or a status. */
static int parse_opts(dlq_opts_t *o, int replay, int argc, char **argv) {
        *o = (dlq_opts_t){.rate       = DLQ_DEFAULT_RATE,
                          .batch      = DLQ_DEFAULT_BATCH,
                          .timeout_ms = DLQ_DEFAULT_TIMEOUT_MS};
        kretry_dlq_filter_init(&o->filter);
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                int rc;
                if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                        usage(stdout);
                        return -1;
                }
                if ((rc = wrong_subcommand(replay, a)))
                        return rc;
                if (takes_value(a)) {
                        if (i + 1 >= argc)
                                return usage_error("%s needs a value", a);
                        rc = opt_value(o, a, argv[++i]);
                } else {
                        rc = opt_flag(o, a);
                }
                if (rc == -2)
                        return usage_error("unknown argument \"%s\"", a);
                if (rc)
                        return rc;
        }
        if (!o->file)
                return usage_error("%s is required", "--topology");
        return 0;
}

int dlq_load_target(const dlq_opts_t *o, dlq_target_t *tg) {
        tg->f = cli_topology_load(o->file);
        if (!tg->f)
                return 1;
        size_t n = kretry_topology_count(tg->f);
        tg->t    = o->name  ? kretry_topology_find(tg->f, o->name)
                   : n == 1 ? kretry_topology_at(tg->f, 0)
                            : NULL;
        return tg->t ? 0 : 2;
}

/* Load the file (diagnostics on stderr) and pick the topology. */
static int load_target(const dlq_opts_t *o, dlq_target_t *tg) {
        int rc = dlq_load_target(o, tg);
        if (rc != 2)
                return rc;
        size_t n = kretry_topology_count(tg->f);
        fprintf(stderr, PROG ": %s: ", o->file);
        if (o->name)
                fprintf(stderr,
                        "no topology named \"%s\" (the file has:", o->name);
        else
                fprintf(stderr, "holds %zu topologies: name one with --name (",
                        n);
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, "%s%s", i ? ", " : " ",
                        kretry_topology_at(tg->f, i)->name);
        fprintf(stderr, ")\n");
        return 1;
}

static int printable(const void *p, size_t n) {
        const unsigned char *s = p;
        for (size_t i = 0; i < n; i++)
                if (s[i] < 0x20 || s[i] > 0x7e)
                        return 0;
        return 1;
}

/* Bytes as text for a table cell: as they are when printable, else "0x"
 * and hex; cut at @p width with "..". */
static void cell(const void *p, size_t n, char *dest, size_t width) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *s  = p;
        char buf[256];
        size_t len = 0;
        if (!p) {
                snprintf(dest, width + 1, "-");
                return;
        }
        if (printable(p, n)) {
                len = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
                memcpy(buf, p, len);
        } else {
                buf[len++] = '0';
                buf[len++] = 'x';
                for (size_t i = 0; i < n && len + 2 < sizeof(buf); i++) {
                        buf[len++] = hex[s[i] >> 4];
                        buf[len++] = hex[s[i] & 15];
                }
        }
        buf[len] = '\0';
        if (len > width && width >= 2)
                snprintf(buf + width - 2, 3, "..");
        snprintf(dest, width + 1, "%s", buf);
}

/* An age in its two largest units: "45s", "3h12m", "2d4h". */
static void age_text(int64_t ms, char *dest, size_t size) {
        static const struct {
                const char *unit;
                int64_t ms;
        } u[]    = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
        size_t i = 0;
        if (ms < 0) {
                snprintf(dest, size, "-");
                return;
        }
        while (i < 3 && ms < u[i].ms)
                i++;
        if (i == 3 || ms % u[i].ms < u[i + 1].ms)
                snprintf(dest, size, "%lld%s", (long long)(ms / u[i].ms),
                         u[i].unit);
        else
                snprintf(dest, size, "%lld%s%lld%s", (long long)(ms / u[i].ms),
                         u[i].unit, (long long)(ms % u[i].ms / u[i + 1].ms),
                         u[i + 1].unit);
}

void dlq_print_heading(FILE *out, int show_value) {
        fprintf(out, "%-4s %-8s %-20s %-10s %-14s %-32s %8s %-20s %6s%s\n",
                "PART", "OFFSET", "KEY", "CLASS", "CODE", "ERROR", "ATTEMPTS",
                "FIRST FAILURE", "AGE", show_value ? " VALUE" : "");
}

static void print_row(FILE *out,
                      const rd_kafka_message_t *m,
                      const kretry_dlq_info_t *i,
                      int show_value,
                      int64_t age) {
        char key[21], cls[11], code[15], err[33], first[32], ag[48], att[16];
        char val[81];
        cell(m->key, m->key_len, key, 20);
        cell(i->error_class.ptr, i->error_class.len, cls, 10);
        cell(i->error_code.ptr, i->error_code.len, code, 14);
        cell(i->error.ptr, i->error.len, err, 32);
        ops_iso_time(i->chain.first_failure_ok ? i->chain.first_failure_ts : -1,
                     first, sizeof(first));
        age_text(age, ag, sizeof(ag));
        snprintf(att, sizeof(att), "%d", i->chain.attempt);
        if (!i->chain.attempt_ok)
                snprintf(att, sizeof(att), "-");
        fprintf(out, "%-4d %-8lld %-20s %-10s %-14s %-32s %8s %-20s %6s",
                (int)m->partition, (long long)m->offset, key, cls, code, err,
                att, first, ag);
        if (show_value) {
                cell(m->payload, m->len, val, 80);
                fprintf(out, " %s", val);
        }
        fputc('\n', out);
}

void dlq_print_message(FILE *out,
                       const rd_kafka_message_t *m,
                       const dlq_opts_t *o,
                       int64_t now_ms) {
        rd_kafka_headers_t *h = NULL;
        kretry_dlq_info_t info;
        rd_kafka_message_headers(m, &h);
        kretry_dlq_info_decode(h, &info);
        if (!o->json) {
                int64_t at = kretry_dlq_dead_lettered_at(
                        &info, rd_kafka_message_timestamp(m, NULL));
                print_row(out, m, &info, o->show_value,
                          at >= 0 ? (now_ms > at ? now_ms - at : 0) : -1);
                return;
        }
        json_t *j = dlq_message_json(m, &info, o->show_value, now_ms);
        char *s   = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s)
                fprintf(out, "%s\n", s);
        free(s);
        json_decref(j);
}

static int inspect(const dlq_opts_t *o, const dlq_target_t *tg) {
        char errstr[1024];
        rd_kafka_conf_t *conf =
                dlq_client_conf(tg->f, o->bootstrap, 1, errstr, sizeof(errstr));
        dlq_reader_t *r =
                conf ? dlq_reader_new(conf, tg->t->dlq, NULL, o->timeout_ms,
                                      errstr, sizeof(errstr))
                     : NULL;
        if (!r || dlq_reader_snapshot(r, 0, errstr, sizeof(errstr))) {
                fprintf(stderr, PROG " inspect: %s\n", errstr);
                dlq_reader_destroy(r);
                return 1;
        }
        int64_t now = dlq_now_ms(), seen = 0, shown = 0;
        rd_kafka_message_t *m;
        int rc;
        if (!o->json)
                dlq_print_heading(stdout, o->show_value);
        while ((!o->limit || shown < o->limit) &&
               (rc = dlq_reader_next(r, &m, errstr, sizeof(errstr))) == 1) {
                seen++;
                if (dlq_selected(o, m)) {
                        dlq_print_message(stdout, m, o, now);
                        shown++;
                }
                rd_kafka_message_destroy(m);
        }
        if (o->limit && shown >= o->limit)
                rc = 0;
        if (rc < 0)
                fprintf(stderr, PROG " inspect: %s\n", errstr);
        else
                fprintf(stderr, "%lld message%s shown, %lld read from %s%s\n",
                        (long long)shown, shown == 1 ? "" : "s",
                        (long long)seen, tg->t->dlq,
                        o->limit && shown >= o->limit ? " (--limit reached)"
                                                      : "");
        dlq_reader_destroy(r);
        return rc < 0 ? 1 : 0;
}

int cmd_dlq(int argc, char **argv) {
        dlq_opts_t o;
        dlq_target_t tg = {NULL, NULL};
        if (argc < 2) {
                usage(stderr);
                return KRETRY_EX_USAGE;
        }
        const char *sub = argv[1];
        if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
                usage(stdout);
                return 0;
        }
        if (!strcmp(sub, "export"))
                return cmd_dlq_export(argc - 1, argv + 1);
        int replay = !strcmp(sub, "replay");
        if (!replay && strcmp(sub, "inspect"))
                return usage_error("unknown subcommand \"%s\"", sub);
        int rc = parse_opts(&o, replay, argc - 1, argv + 1);
        if (rc)
                return rc < 0 ? 0 : rc;
        if ((rc = load_target(&o, &tg)) == 0)
                rc = replay ? dlq_replay(&o, &tg) : inspect(&o, &tg);
        kretry_topology_file_destroy(tg.f);
        return rc;
}
