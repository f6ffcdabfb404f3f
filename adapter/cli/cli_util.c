#include "cli_util.h"

#include "cli.h"

#include <time.h>

int cli_usage_error(const char *prog, const char *fmt, const char *arg) {
        fprintf(stderr, "%s: ", prog);
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n(see '%s --help')\n", prog);
        return KRETRY_EX_USAGE;
}

void cli_iso_time(int64_t ms, char *dest, size_t size) {
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        if (ms < 0 || !gmtime_r(&t, &tm) ||
            !strftime(dest, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
                snprintf(dest, size, "-");
}

int cli_getopt(const cli_getopt_t *g, void *opts, int argc, char **argv) {
        int c, rc;
        opterr = 0; /* our own messages, with the command's name */
        optind = 1;
        while ((c = getopt_long(argc, argv, g->optstring, g->longopts, NULL)) !=
               -1) {
                if (c == 'h') {
                        g->usage(stdout);
                        return -1;
                }
                if (c == ':')
                        return cli_usage_error(g->prog, "%s needs a value",
                                               argv[optind - 1]);
                if ((rc = g->set(opts, c, optarg)) == -2)
                        return cli_usage_error(g->prog, "unknown option \"%s\"",
                                               argv[optind - 1]);
                if (rc)
                        return rc;
        }
        return 0;
}
