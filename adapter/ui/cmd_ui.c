/*
 * kretry ui: a topology file's DLQ as a web page — the figures of kretry
 * stats, the DLQ browser of dlq inspect, dlq replay and dlq export, served
 * by adapter/ui/ until SIGINT or SIGTERM. Loopback only unless a token is
 * set; the first line of stdout is the address to open.
 */
#include "cli_util.h"
#include "parse.h"
#include "ui.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "kretry ui"
#define UI_DEFAULT_WINDOW_MS 2000
#define UI_DEFAULT_TIMEOUT_MS 10000
#define UI_MIN_TOKEN 16

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry ui --topology FILE [--listen HOST:PORT] "
                "[--token TOKEN]\n"
                "                 [--show-values] [--bootstrap HOSTS] "
                "[--window D] [--timeout MS]\n\n"
                "Serves the topology file's dead-letter topics as a web "
                "page: per topic\n"
                "(source, tiers, DLQ) the messages waiting, oldest age, "
                "rates, drain\n"
                "estimate and alerts (kretry stats); the DLQ browser with "
                "the inspect\n"
                "filters (kretry dlq inspect); replay with a dry run and "
                "progress (kretry\n"
                "dlq replay); export as .avro (kretry dlq export); and the "
                "JSON API and\n"
                "Prometheus text behind them (docs/ui.md). Prints the "
                "address to open on\n"
                "the first line of stdout; runs until SIGINT or SIGTERM.\n\n"
                "options:\n"
                "  -f, --topology FILE   the topology file (every topology "
                "in it is served)\n"
                "  -l, --listen H:P      where to listen (default %s; port "
                "0: any free\n"
                "                        one). An address other than "
                "loopback needs a token\n"
                "  --token TOKEN         every request must carry it "
                "(Authorization: Bearer\n"
                "                        TOKEN, or ?token=TOKEN to open the "
                "page); at least %d\n"
                "                        characters; default: "
                "$KRETRY_UI_TOKEN\n"
                "  --show-values         show message values (hidden by "
                "default)\n"
                "  -b, --bootstrap HOSTS override the file's "
                "bootstrap.servers\n"
                "  -w, --window D        rate window of the figures "
                "(default 2s; up to 1m)\n"
                "  -t, --timeout MS      bound on each cluster request "
                "(default %d)\n"
                "  -h, --help            show this help\n\n"
                "Exit status: 0 stopped by a signal, 1 failure, 64 usage "
                "error.\n",
                UI_DEFAULT_LISTEN, UI_MIN_TOKEN, UI_DEFAULT_TIMEOUT_MS);
}

typedef struct {
        const char *file, *listen, *token, *bootstrap;
        int show_values;
        int64_t window_ms;
        int timeout_ms;
} ui_opts_t;

static int usage_error(const char *fmt, const char *arg) {
        return cli_usage_error(PROG, fmt, arg);
}

static int opt_set(void *opts, int c, const char *arg) {
        ui_opts_t *o = opts;
        switch (c) {
        case 'f':
                o->file = arg;
                return 0;
        case 'l':
                o->listen = arg;
                return 0;
        case 'T':
                o->token = arg;
                return 0;
        case 'b':
                o->bootstrap = arg;
                return 0;
        case 'V':
                o->show_values = 1;
                return 0;
        case 'w':
                return cli_parse_window(PROG, arg, 60000, &o->window_ms);
        case 't':
                return cli_parse_timeout(PROG, arg, &o->timeout_ms);
        }
        return -2;
}

/* @returns 0, -1 after --help, or an exit status. */
static int parse_args(ui_opts_t *o, int argc, char **argv) {
        static const struct option longopts[] = {
                {"topology", required_argument, NULL, 'f'},
                {"listen", required_argument, NULL, 'l'},
                {"token", required_argument, NULL, 'T'},
                {"show-values", no_argument, NULL, 'V'},
                {"bootstrap", required_argument, NULL, 'b'},
                {"window", required_argument, NULL, 'w'},
                {"timeout", required_argument, NULL, 't'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0}};
        static const cli_getopt_t g = {PROG, ":f:l:b:w:t:h", longopts, usage,
                                       opt_set};
        *o                          = (ui_opts_t){.listen     = UI_DEFAULT_LISTEN,
                                                  .window_ms  = UI_DEFAULT_WINDOW_MS,
                                                  .timeout_ms = UI_DEFAULT_TIMEOUT_MS};
        int rc                      = cli_getopt(&g, o, argc, argv);
        if (rc)
                return rc;
        if (optind < argc)
                return usage_error("unexpected argument \"%s\"", argv[optind]);
        if (!o->file)
                return usage_error("%s is required", "--topology");
        if (!o->token && getenv("KRETRY_UI_TOKEN") &&
            *getenv("KRETRY_UI_TOKEN"))
                o->token = getenv("KRETRY_UI_TOKEN");
        if (o->token && strlen(o->token) < UI_MIN_TOKEN)
                return usage_error("the token is too short: at least 16 "
                                   "characters%s",
                                   "");
        return 0;
}

/* Where to listen; loopback, or anything with a token. */
static int check_listen(const ui_opts_t *o, ui_listen_t *l) {
        char err[256], msg[512];
        if (ui_listen_parse(o->listen, l, err, sizeof(err))) {
                snprintf(msg, sizeof(msg), "--listen %s: %s", o->listen, err);
                return usage_error("%s", msg);
        }
        if (!l->loopback && !o->token) {
                fprintf(stderr,
                        PROG ": refusing to listen on %s without a token: "
                             "anyone who reaches it could read and replay "
                             "the DLQ. Set --token or KRETRY_UI_TOKEN, or "
                             "listen on loopback (127.0.0.1)\n",
                        o->listen);
                return 1;
        }
        return 0;
}

/* Wait for SIGINT or SIGTERM. */
static void wait_signal(void) {
        sigset_t set;
        int sig;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigwait(&set, &sig);
}

int cmd_ui(int argc, char **argv) {
        ui_opts_t o;
        ui_t ui = {0};
        char errstr[512];
        const ui_figures_pace_t pace = {UI_FIGURES_INTERVAL_MS,
                                        UI_FIGURES_IDLE_INTERVAL_MS,
                                        UI_FIGURES_WATCH_MS};
        sigset_t set;
        int rc = parse_args(&o, argc, argv);
        if (rc)
                return rc < 0 ? 0 : rc;
        if ((rc = check_listen(&o, &ui.listen)))
                return rc;
        ui.file        = o.file;
        ui.bootstrap   = o.bootstrap;
        ui.token       = o.token;
        ui.show_values = o.show_values;
        ui.timeout_ms  = o.timeout_ms;
        ui.window_ms   = o.window_ms;
        if (!(ui.f = cli_topology_load(ui.file)))
                return 1;
        /* Blocked before any thread starts, so that every thread inherits
         * the mask and the signals reach sigwait(). */
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        signal(SIGPIPE, SIG_IGN);
        pthread_mutex_init(&ui.lock, NULL);
        rc         = 1;
        ui.figures = ui_figures_start(ui.f, ui.bootstrap, ui.window_ms,
                                      ui.timeout_ms, &pace);
        if (!ui.figures) {
                fprintf(stderr, PROG ": cannot start taking figures\n");
        } else if (ui_server_start(&ui, errstr, sizeof(errstr))) {
                fprintf(stderr, PROG ": %s\n", errstr);
        } else {
                printf("http://%s%s%s:%d/\n", ui.listen.ipv6 ? "[" : "",
                       ui.listen.host, ui.listen.ipv6 ? "]" : "", ui.port);
                fflush(stdout);
                fprintf(stderr,
                        PROG ": serving %s on port %d%s%s; SIGINT or "
                             "SIGTERM stops\n",
                        o.file, ui.port, ui.token ? ", token required" : "",
                        ui.show_values ? ", values shown" : "");
                wait_signal();
                ui_server_stop(&ui);
                ui_replay_shutdown(&ui);
                rc = 0;
        }
        ui_figures_stop(ui.figures);
        pthread_mutex_destroy(&ui.lock);
        kretry_topology_file_destroy(ui.f);
        return rc;
}
