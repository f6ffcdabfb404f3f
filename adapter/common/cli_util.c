#include "cli_util.h"

#include "parse.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

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

kretry_topology_file_t *cli_topology_load(const char *path) {
        kretry_diags_t d;
        char line[1500];
        kretry_diags_init(&d);
        kretry_topology_file_t *f = kretry_topology_file_load(path, &d);
        for (size_t i = 0; i < d.cnt; i++)
                if (d.items[i].level == KRETRY_DIAG_ERROR) {
                        kretry_diag_format(&d, i, path, line, sizeof(line));
                        fprintf(stderr, "%s\n", line);
                }
        kretry_diags_clear(&d);
        return f;
}

int cli_parse_window(const char *prog,
                     const char *arg,
                     int64_t max_ms,
                     int64_t *out) {
        char err[256], max[32], msg[512];
        if (!kretry_parse_duration_ms(arg, out, err, sizeof(err)) &&
            *out <= max_ms)
                return 0;
        kretry_topology_format_duration(max_ms, max, sizeof(max));
        snprintf(msg, sizeof(msg),
                 "--window %s: expected a duration up to %s (e.g. 10s, 0 for "
                 "none)",
                 arg, max);
        return cli_usage_error(prog, "%s", msg);
}

int cli_parse_timeout(const char *prog, const char *arg, int *out) {
        char err[256];
        int64_t n;
        if (kretry_parse_int64(arg, 1, 3600000, &n, err, sizeof(err)))
                return cli_usage_error(prog,
                                       "--timeout %s: expected milliseconds "
                                       "(1..3600000)",
                                       arg);
        *out = (int)n;
        return 0;
}

socklen_t cli_sockaddr(const char *host,
                       int port,
                       int ipv6,
                       struct sockaddr_storage *ss) {
        memset(ss, 0, sizeof(*ss));
        if (ipv6) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
                a->sin6_family         = AF_INET6;
                a->sin6_port           = htons((uint16_t)port);
                inet_pton(AF_INET6, host, &a->sin6_addr);
                return sizeof(*a);
        }
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family         = AF_INET;
        a->sin_port           = htons((uint16_t)port);
        inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1",
                  &a->sin_addr);
        return sizeof(*a);
}
