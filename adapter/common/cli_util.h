/*
 * What the commands of both front-ends share (kretry's sub-commands,
 * kretry run's handlers, kretry ui): the exit status of a usage error and
 * its message, the getopt_long loop of their option parsing, both in the
 * command's own words, the values of --window and --timeout, and loading a
 * topology file with its diagnostics on stderr.
 */
#ifndef KRETRY_CLI_UTIL_H
#define KRETRY_CLI_UTIL_H

#include "topology.h"

#define KRETRY_EX_USAGE 64

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* "PROG: " @p fmt (formatted with @p arg), then "(see 'PROG --help')", on
 * stderr. Returns KRETRY_EX_USAGE. */
int cli_usage_error(const char *prog, const char *fmt, const char *arg);

/* A command's options, for cli_getopt(). */
typedef struct {
        const char *prog;      /* "kretry stats", for messages */
        const char *optstring; /* starts with ':' (a missing value is ':') */
        const struct option *longopts;
        void (*usage)(FILE *out);
        /* Option @p c with its value @p arg (NULL for a flag) into @p opts.
         * Returns 0, -2 for an option it does not know, or an exit status. */
        int (*set)(void *opts, int c, const char *arg);
} cli_getopt_t;

/*
 * getopt_long over @p argv, with getopt's own messages off: -h/--help
 * prints the usage on stdout and returns -1; an option without its value
 * or an unknown one is a usage error (its exit status returned); every
 * other one goes to set(), whose non-zero status is returned as is.
 * Returns 0 once the options are read, optind at the first operand.
 */
int cli_getopt(const cli_getopt_t *g, void *opts, int argc, char **argv);

/* Load and validate a topology file; its errors on stderr. Returns the
 * file (free with kretry_topology_file_destroy()) or NULL. */
kretry_topology_file_t *cli_topology_load(const char *path);

/* --window ARG: a duration up to @p max_ms into *@p out; 0, or a usage
 * error's status. */
int cli_parse_window(const char *prog,
                     const char *arg,
                     int64_t max_ms,
                     int64_t *out);

/* --timeout ARG: milliseconds 1..3600000 into *@p out; 0, or a usage
 * error's status. */
int cli_parse_timeout(const char *prog, const char *arg, int *out);

/* The socket address a server listens on: @p host (an IPv4 or IPv6
 * address, or "localhost" for 127.0.0.1) and @p port, into @p ss; returns
 * its length. The host was checked when the address was parsed. */
socklen_t
cli_sockaddr(const char *host, int port, int ipv6, struct sockaddr_storage *ss);

#endif
