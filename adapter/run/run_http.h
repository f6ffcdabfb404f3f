/*
 * kretry run's --http options: parsed beside run's own, turned into an HTTP
 * client (http_handler.h) once the adapter's configuration is known.
 */
#ifndef KRETRY_RUN_HTTP_H
#define KRETRY_RUN_HTTP_H

#include "http_handler.h"
#include "kretry/kretry.h"

#include <getopt.h>

/* getopt_long values of the --http options (long options only). */
enum {
        RUN_HTTP_URL = 0x100,
        RUN_HTTP_HEADER,
        RUN_HTTP_TIMEOUT,
        RUN_HTTP_CONTENT_TYPE,
        RUN_HTTP_CE_TYPE,
        RUN_HTTP_BODY,
        RUN_HTTP_CA,
        RUN_HTTP_CERT,
        RUN_HTTP_KEY,
        RUN_HTTP_RETRY_STATUS,
        RUN_HTTP_FAIL_STATUS
};

/* The --http options as given (borrowed from argv). */
typedef struct {
        const char *exec; /* --exec: no HTTP, whatever the topology says */
        const char *url, *timeout, *content_type, *ce_type, *body;
        const char *ca, *cert, *key, *retry_status, *fail_status;
        const char **headers; /* --http-header, in order */
        int header_cnt;
} run_http_args_t;

/* Take option @p c; @returns 0, -2 when it is not an --http option, or an
 * exit status. */
int run_http_opt(run_http_args_t *a, int c, const char *arg);

/* Any --http option given? */
int run_http_given(const run_http_args_t *a);

/*
 * The HTTP client for @p conf (already loaded: topology, -X): the URL and
 * options from the flags, else from the topology's handler.http (@p
 * topology, @p name may be NULL). Sets handler.thread poll unless the
 * configuration says otherwise. *@p hp stays NULL when neither gives a URL.
 * Errors are printed; @returns 0 or an exit status.
 */
int run_http_start(const run_http_args_t *a,
                   const char *topology,
                   const char *name,
                   kretry_conf_t *conf,
                   int thread_set,
                   kretry_http_t **hp);

/* kretry_http_destroy() and what run_http_start() kept for the client.
 * Accepts NULL. */
void run_http_stop(kretry_http_t *h);

void run_http_args_free(run_http_args_t *a);

/* The --help lines of the --http options. */
extern const char run_http_usage[];

#endif
