#include "cli_util.h"

#include "cli.h"

int cli_usage_error(const char *prog, const char *fmt, const char *arg) {
        fprintf(stderr, "%s: ", prog);
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n(see '%s --help')\n", prog);
        return KRETRY_EX_USAGE;
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
